package workspace

import (
	"testing"

	"github.com/agenthost/agenthost/sdk/internal/roundtrip"
	"github.com/stretchr/testify/assert"
)

// Every field of FileInfo and ServiceInfo survives its proto; a zero time
// stays zero.
func TestInfosRoundTrip(t *testing.T) {
	var fi FileInfo
	roundtrip.Fill(&fi)
	back := infoFromProto(infoToProto(fi))
	assert.True(t, fi.ModTime.Equal(back.ModTime))
	back.ModTime = fi.ModTime
	assert.Equal(t, fi, back)
	assert.True(t, infoFromProto(infoToProto(FileInfo{Path: "a"})).ModTime.IsZero())

	var si ServiceInfo
	roundtrip.Fill(&si)
	sback := serviceFromProto(serviceToProto(si))
	assert.True(t, si.StartedAt.Equal(sback.StartedAt))
	sback.StartedAt = si.StartedAt
	assert.Equal(t, si, sback)
	assert.True(t, serviceFromProto(serviceToProto(ServiceInfo{Name: "a"})).StartedAt.IsZero())
}
