package api

import (
	"net/http"
	"os"

	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/gin-gonic/gin"
)

type pluginCap struct {
	Name      string `json:"name"`
	Available bool   `json:"available"`
	State     string `json:"state"`
	Reason    string `json:"reason,omitempty"`
	Version   string `json:"version,omitempty"`
	// RuntimeSupported (engines only): the default sandbox backend offers
	// every feature the engine requires; MissingFeatures names the rest.
	RuntimeSupported *bool    `json:"runtime_supported,omitempty"`
	MissingFeatures  []string `json:"missing_features,omitempty"`
	// Isolation (sandbox backends only) is how far the backend keeps
	// commands from the host: none, uid, namespaces or unknown.
	Isolation string `json:"isolation,omitempty"`
}

type toolCap struct {
	Name        string `json:"name"`
	Toolpack    string `json:"toolpack"`
	Description string `json:"description"`
	// Permission is the one in force (the operator's override, else the
	// toolpack's default); DefaultPermission is the toolpack's own.
	Permission        string `json:"permission"`
	DefaultPermission string `json:"default_permission"`
}

// capabilities tells a frontend, deterministically (sorted), what this host
// will do for the app: which engines and sandbox backends can run now and
// why not, the policy defaults, and every tool with its permission.
func (s *Server) capabilities(c *gin.Context) {
	if _, ok := s.app(c); !ok {
		return
	}
	engines, sandboxes := []pluginCap{}, []pluginCap{}
	tools := []toolCap{}
	contractTools := false
	nativeTools := []nativeToolCap{}
	opencodeLoaded := false
	if s.deps.Plugins != nil {
		statuses := s.deps.Plugins.Statuses()
		provides := ""
		for _, st := range statuses {
			if st.Kind == plugin.KindSandbox && st.Name == s.deps.DefaultSandbox {
				provides = st.Capabilities[plugin.CapabilityProvides]
			}
		}
		for _, st := range statuses {
			pc := pluginCap{Name: st.Name, Available: st.State == pluginmgr.StateHealthy, State: string(st.State), Reason: st.Reason, Version: st.Version}
			switch st.Kind {
			case plugin.KindEngine:
				opencodeLoaded = opencodeLoaded || st.Name == "opencode"
				missing := plugin.MissingFeatures(st.Capabilities[plugin.CapabilityRequires], provides)
				supported := missing == nil
				pc.RuntimeSupported, pc.MissingFeatures = &supported, missing
				engines = append(engines, pc)
			case plugin.KindSandbox:
				pc.Isolation = plugin.IsolationOf(st.Capabilities)
				sandboxes = append(sandboxes, pc)
			}
		}
		for _, r := range s.deps.Plugins.Tools() {
			tools = append(tools, toolCap{Name: r.Spec.Name, Toolpack: r.Toolpack, Description: r.Spec.Description,
				Permission: string(r.Permission), DefaultPermission: string(r.Spec.DefaultPermission)})
			if r.Permission != plugin.PermissionDeny { // deny tools are never offered
				nativeTools = append(nativeTools, nativeToolCap{Name: r.Spec.Name, Slug: r.Spec.Name, FunctionName: r.Spec.Name})
			}
			contractTools = contractTools || r.Toolpack == "contract"
		}
	}
	defaultEngine := s.deps.DefaultEngine
	nativeEnabled := os.Getenv("APPS_CODING_AGENT_NATIVE_ENABLED") == "1"
	c.JSON(http.StatusOK, gin.H{
		// The seed's top-level fields (seed 002, "Capabilities payload").
		"default_engine":    defaultEngine,
		"native_enabled":    nativeEnabled,
		"native_tools":      nativeTools,
		"native_tool_count": len(nativeTools),
		"opencode_policy":   opencodePolicy(opencodeLoaded, contractTools),
		"policy": gin.H{
			"default_engine":   defaultEngine,
			"default_sandbox":  s.deps.DefaultSandbox,
			"native_enabled":   nativeEnabled,
			"sandbox_required": true,
		},
		"engines":           engines,
		"sandbox_backends":  sandboxes,
		"tools":             tools,
		"event_types":       eventTypes,
		"stream_resumption": gin.H{"last_event_id": true, "after_seq": true, "heartbeat_seconds": int(s.deps.Heartbeat.Seconds())},
	})
}

// nativeToolCap is one tool the native engine is offered, in the seed's
// shape (name, slug, function_name: all the tool's name here).
type nativeToolCap struct {
	Name         string `json:"name"`
	Slug         string `json:"slug"`
	FunctionName string `json:"function_name"`
}

// opencodePolicy is the seed's OpenCode tool-access summary: OpenCode runs
// its own tools; the host's contract tools are seeded into the workspace
// as project-local custom tools (.opencode/tool/*.ts) beside the contract
// document, so the allow-list is the repo's own when both are loaded.
func opencodePolicy(engineLoaded, contractTools bool) gin.H {
	seeded := engineLoaded && contractTools
	model := "upstream_opencode_defaults"
	if seeded {
		model = "project_local_custom_tools_and_context_file"
	}
	return gin.H{
		"engine_configured":              engineLoaded,
		"tooling":                        "delegated_to_upstream_opencode",
		"repo_tool_allowlist_configured": seeded,
		"workspace_permission_model":     model,
	}
}

// eventTypes are the events a run's stream can carry.
var eventTypes = []string{
	"run.accepted", "run.status", "assistant.delta", "tool.started", "tool.completed", "tool.failed",
	"permission.requested", "permission.resolved", "run.paused", "run.resumed",
	"revision.created", "checkpoint.created", "run.completed", "run.failed", "run.cancelled",
}
