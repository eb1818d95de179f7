// Package convert maps between the generated protobuf types and the SDK's
// plain Go types, so that plugin authors never see generated code.
package convert

import (
	"github.com/agenthost/agenthost/sdk/internal/pb/pluginv1"
	"github.com/agenthost/agenthost/sdk/plugin"
)

// pluginKinds maps plugin.Kind to PluginInfo.kind_enum.
var pluginKinds = NewEnum(map[pluginv1.PluginKind]plugin.Kind{
	pluginv1.PluginKind_PLUGIN_KIND_ENGINE:   plugin.KindEngine,
	pluginv1.PluginKind_PLUGIN_KIND_SANDBOX:  plugin.KindSandbox,
	pluginv1.PluginKind_PLUGIN_KIND_TOOLPACK: plugin.KindToolpack,
})

// permissions maps plugin.Permission to ToolSpec.default_permission_enum.
var permissions = NewEnum(map[pluginv1.Permission]plugin.Permission{
	pluginv1.Permission_PERMISSION_ALLOW: plugin.PermissionAllow,
	pluginv1.Permission_PERMISSION_ASK:   plugin.PermissionAsk,
	pluginv1.Permission_PERMISSION_DENY:  plugin.PermissionDeny,
})

// InfoToProto converts plugin.Info.
func InfoToProto(i plugin.Info) *pluginv1.PluginInfo {
	return &pluginv1.PluginInfo{
		Name: i.Name, Kind: string(i.Kind), KindEnum: pluginKinds.ToProto(i.Kind), Version: i.Version,
		ApiVersion: uint32(i.APIVersion), Description: i.Description,
		Capabilities: i.Capabilities,
	}
}

// InfoFromProto converts a PluginInfo message.
func InfoFromProto(p *pluginv1.PluginInfo) plugin.Info {
	return plugin.Info{
		Name: p.GetName(), Kind: pluginKinds.FromProto(p.GetKindEnum(), p.GetKind()), Version: p.GetVersion(),
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
		DefaultPermission:     string(s.DefaultPermission),
		DefaultPermissionEnum: permissions.ToProto(s.DefaultPermission),
	}
}

// ToolSpecFromProto converts a ToolSpec message.
func ToolSpecFromProto(p *pluginv1.ToolSpec) plugin.ToolSpec {
	return plugin.ToolSpec{
		Name: p.GetName(), Description: p.GetDescription(),
		InputSchema: p.GetInputSchemaJson(), OutputSchema: p.GetOutputSchemaJson(),
		DefaultPermission: permissions.FromProto(p.GetDefaultPermissionEnum(), p.GetDefaultPermission()),
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
