package sandbox

import (
	"testing"

	"github.com/agenthost/agenthost/sdk/internal/roundtrip"
	"github.com/stretchr/testify/assert"
)

// Every field of Info survives its proto (times to the millisecond, which
// is what the wire carries).
func TestInfoRoundTrips(t *testing.T) {
	var in Info
	roundtrip.Fill(&in)
	back := infoFromProto(infoToProto(in))
	assert.True(t, in.CreatedAt.Equal(back.CreatedAt))
	back.CreatedAt = in.CreatedAt
	assert.Equal(t, in, back)
}
