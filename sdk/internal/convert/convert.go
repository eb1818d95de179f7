// Package convert maps between the generated protobuf types and the SDK's
// plain Go types, so that plugin authors never see generated code.
package convert

import (
	"github.com/agenthost/agenthost/sdk/internal/pb/pluginv1"
	"github.com/agenthost/agenthost/sdk/plugin"
)

// InfoToProto converts plugin.Info.
func InfoToProto(i plugin.Info) *pluginv1.PluginInfo {
	return &pluginv1.PluginInfo{
		Name: i.Name, Kind: string(i.Kind), Version: i.Version,
		ApiVersion: uint32(i.APIVersion), Description: i.Description,
		Capabilities: i.Capabilities,
	}
}

// InfoFromProto converts a PluginInfo message.
func InfoFromProto(p *pluginv1.PluginInfo) plugin.Info {
	return plugin.Info{
		Name: p.GetName(), Kind: plugin.Kind(p.GetKind()), Version: p.GetVersion(),
		APIVersion: int(p.GetApiVersion()), Description: p.GetDescription(),
		Capabilities: p.GetCapabilities(),
	}
}

// HealthToProto converts plugin.Health.
func HealthToProto(h plugin.Health) *pluginv1.HealthResponse {
	return &pluginv1.HealthResponse{Healthy: h.Healthy, Reason: h.Reason}
}

// HealthFromProto converts a HealthResponse.
func HealthFromProto(p *pluginv1.HealthResponse) plugin.Health {
	return plugin.Health{Healthy: p.GetHealthy(), Reason: p.GetReason()}
}

// ToolSpecToProto converts plugin.ToolSpec.
func ToolSpecToProto(s plugin.ToolSpec) *pluginv1.ToolSpec {
	return &pluginv1.ToolSpec{
		Name: s.Name, Description: s.Description,
		InputSchemaJson: s.InputSchema, OutputSchemaJson: s.OutputSchema,
		DefaultPermission: string(s.DefaultPermission),
	}
}

// ToolSpecFromProto converts a ToolSpec message.
func ToolSpecFromProto(p *pluginv1.ToolSpec) plugin.ToolSpec {
	return plugin.ToolSpec{
		Name: p.GetName(), Description: p.GetDescription(),
		InputSchema: p.GetInputSchemaJson(), OutputSchema: p.GetOutputSchemaJson(),
		DefaultPermission: plugin.Permission(p.GetDefaultPermission()),
	}
}

// ToolResultToProto converts plugin.ToolResult.
func ToolResultToProto(r plugin.ToolResult) *pluginv1.ToolResult {
	out := &pluginv1.ToolResult{Ok: r.OK, OutputJson: r.Output}
	if r.Error != nil {
		out.Error = &pluginv1.ToolError{
			Code: r.Error.Code, Message: r.Error.Message, Field: r.Error.Field,
			DiagnosticsJson: r.Error.Diagnostics,
		}
	}
	return out
}

// ToolResultFromProto converts a ToolResult message.
func ToolResultFromProto(p *pluginv1.ToolResult) plugin.ToolResult {
	out := plugin.ToolResult{OK: p.GetOk(), Output: p.GetOutputJson()}
	if e := p.GetError(); e != nil {
		out.Error = &plugin.ToolError{
			Code: e.GetCode(), Message: e.GetMessage(), Field: e.GetField(),
			Diagnostics: e.GetDiagnosticsJson(),
		}
	}
	return out
}
