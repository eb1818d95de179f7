package convert

import (
	"testing"

	"github.com/agenthost/agenthost/sdk/internal/roundtrip"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/stretchr/testify/assert"
)

// Every field of the shared plugin types survives its proto.
func TestConversionsRoundTrip(t *testing.T) {
	var info plugin.Info
	roundtrip.Fill(&info)
	assert.Equal(t, info, InfoFromProto(InfoToProto(info)))

	var h plugin.Health
	roundtrip.Fill(&h)
	assert.Equal(t, h, HealthFromProto(HealthToProto(h)))

	var spec plugin.ToolSpec
	roundtrip.Fill(&spec)
	assert.Equal(t, spec, ToolSpecFromProto(ToolSpecToProto(spec)))

	var ok plugin.ToolResult
	roundtrip.Fill(&ok)
	ok.Error = nil // a result is a success or a failure
	assert.Equal(t, ok, ToolResultFromProto(ToolResultToProto(ok)))
	failed := plugin.ToolResult{}
	roundtrip.Fill(&failed)
	failed.OK, failed.Output = false, nil
	assert.Equal(t, failed, ToolResultFromProto(ToolResultToProto(failed)))
}
