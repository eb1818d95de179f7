package convert

import (
	"testing"

	"github.com/agenthost/agenthost/sdk/internal/pb/pluginv1"
	"github.com/agenthost/agenthost/sdk/internal/roundtrip"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/stretchr/testify/assert"
)

// Every field of the shared plugin types survives its proto.
func TestConversionsRoundTrip(t *testing.T) {
	// Fill gives the closed sets (Kind, DefaultPermission) a string outside
	// the set, which travels in the string field alone; each value of the
	// set, which travels in the enum too, is tried as well.
	var info plugin.Info
	roundtrip.Fill(&info)
	assert.Equal(t, info, InfoFromProto(InfoToProto(info)))
	for _, k := range []plugin.Kind{plugin.KindEngine, plugin.KindSandbox, plugin.KindToolpack} {
		info.Kind = k
		assert.Equal(t, info, InfoFromProto(InfoToProto(info)))
	}

	var h plugin.Health
	roundtrip.Fill(&h)
	assert.Equal(t, h, HealthFromProto(HealthToProto(h)))

	var spec plugin.ToolSpec
	roundtrip.Fill(&spec)
	assert.Equal(t, spec, ToolSpecFromProto(ToolSpecToProto(spec)))
	for _, perm := range []plugin.Permission{plugin.PermissionAllow, plugin.PermissionAsk, plugin.PermissionDeny} {
		spec.DefaultPermission = perm
		assert.Equal(t, spec, ToolSpecFromProto(ToolSpecToProto(spec)))
	}

	var ok plugin.ToolResult
	roundtrip.Fill(&ok)
	ok.Error = nil // a result is a success or a failure
	assert.Equal(t, ok, ToolResultFromProto(ToolResultToProto(ok)))
	failed := plugin.ToolResult{}
	roundtrip.Fill(&failed)
	failed.OK, failed.Output = false, nil
	assert.Equal(t, failed, ToolResultFromProto(ToolResultToProto(failed)))
}

// PluginInfo carries the kind twice: writers set the string and the enum,
// readers prefer a known enum and fall back to the string.
func TestInfoKindStringAndEnum(t *testing.T) {
	for k, e := range map[plugin.Kind]pluginv1.PluginKind{
		plugin.KindEngine:   pluginv1.PluginKind_PLUGIN_KIND_ENGINE,
		plugin.KindSandbox:  pluginv1.PluginKind_PLUGIN_KIND_SANDBOX,
		plugin.KindToolpack: pluginv1.PluginKind_PLUGIN_KIND_TOOLPACK,
	} {
		p := InfoToProto(plugin.Info{Name: "p", Kind: k})
		assert.Equal(t, string(k), p.GetKind(), "writers set the string")
		assert.Equal(t, e, p.GetKindEnum(), "writers set the enum")
		assert.Equal(t, k, InfoFromProto(roundtrip.OverTheWire(t, p)).Kind)
	}
	p := InfoToProto(plugin.Info{Kind: "gateway"})
	assert.Equal(t, "gateway", p.GetKind(), "a kind outside the set travels in the string")
	assert.Equal(t, pluginv1.PluginKind_PLUGIN_KIND_UNSPECIFIED, p.GetKindEnum())

	tests := []struct {
		name string
		in   *pluginv1.PluginInfo
		want plugin.Kind
	}{
		{"only the string (an older peer)", &pluginv1.PluginInfo{Kind: "sandbox"}, plugin.KindSandbox},
		{"only the enum", &pluginv1.PluginInfo{KindEnum: pluginv1.PluginKind_PLUGIN_KIND_TOOLPACK}, plugin.KindToolpack},
		{"an unknown enum number falls back to the string", &pluginv1.PluginInfo{Kind: "engine", KindEnum: 42}, plugin.KindEngine},
		{"the enum wins over the string", &pluginv1.PluginInfo{Kind: "engine", KindEnum: pluginv1.PluginKind_PLUGIN_KIND_SANDBOX}, plugin.KindSandbox},
		{"a string outside the set comes through", &pluginv1.PluginInfo{Kind: "gateway"}, "gateway"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, InfoFromProto(roundtrip.OverTheWire(t, tc.in)).Kind)
		})
	}
}

// ToolSpec carries the default permission twice, under the same rule.
func TestToolSpecPermissionStringAndEnum(t *testing.T) {
	for perm, e := range map[plugin.Permission]pluginv1.Permission{
		plugin.PermissionAllow: pluginv1.Permission_PERMISSION_ALLOW,
		plugin.PermissionAsk:   pluginv1.Permission_PERMISSION_ASK,
		plugin.PermissionDeny:  pluginv1.Permission_PERMISSION_DENY,
	} {
		p := ToolSpecToProto(plugin.ToolSpec{Name: "t", DefaultPermission: perm})
		assert.Equal(t, string(perm), p.GetDefaultPermission(), "writers set the string")
		assert.Equal(t, e, p.GetDefaultPermissionEnum(), "writers set the enum")
		assert.Equal(t, perm, ToolSpecFromProto(roundtrip.OverTheWire(t, p)).DefaultPermission)
	}
	p := ToolSpecToProto(plugin.ToolSpec{Name: "t"})
	assert.Empty(t, p.GetDefaultPermission(), "no permission stays unset")
	assert.Equal(t, pluginv1.Permission_PERMISSION_UNSPECIFIED, p.GetDefaultPermissionEnum())

	tests := []struct {
		name string
		in   *pluginv1.ToolSpec
		want plugin.Permission
	}{
		{"only the string (an older peer)", &pluginv1.ToolSpec{DefaultPermission: "deny"}, plugin.PermissionDeny},
		{"only the enum", &pluginv1.ToolSpec{DefaultPermissionEnum: pluginv1.Permission_PERMISSION_ASK}, plugin.PermissionAsk},
		{"an unknown enum number falls back to the string", &pluginv1.ToolSpec{DefaultPermission: "allow", DefaultPermissionEnum: 42}, plugin.PermissionAllow},
		{"the enum wins over the string", &pluginv1.ToolSpec{DefaultPermission: "allow", DefaultPermissionEnum: pluginv1.Permission_PERMISSION_DENY}, plugin.PermissionDeny},
		{"neither set", &pluginv1.ToolSpec{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ToolSpecFromProto(roundtrip.OverTheWire(t, tc.in)).DefaultPermission)
		})
	}
}
