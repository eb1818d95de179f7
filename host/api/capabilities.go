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
}

type toolCap struct {
	Name              string `json:"name"`
	Toolpack          string `json:"toolpack"`
	Description       string `json:"description"`
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
	if s.deps.Plugins != nil {
		for _, st := range s.deps.Plugins.Statuses() {
			pc := pluginCap{Name: st.Name, Available: st.State == pluginmgr.StateHealthy, State: string(st.State), Reason: st.Reason, Version: st.Version}
			switch st.Kind {
			case plugin.KindEngine:
				engines = append(engines, pc)
			case plugin.KindSandbox:
				sandboxes = append(sandboxes, pc)
			}
		}
		for _, r := range s.deps.Plugins.Tools() {
			tools = append(tools, toolCap{Name: r.Spec.Name, Toolpack: r.Toolpack, Description: r.Spec.Description, DefaultPermission: string(r.Spec.DefaultPermission)})
		}
	}
	c.JSON(http.StatusOK, gin.H{
		"policy": gin.H{
			"default_engine":   s.deps.DefaultEngine,
			"default_sandbox":  s.deps.DefaultSandbox,
			"native_enabled":   os.Getenv("APPS_CODING_AGENT_NATIVE_ENABLED") == "1",
			"sandbox_required": true,
		},
		"engines":           engines,
		"sandbox_backends":  sandboxes,
		"tools":             tools,
		"event_types":       eventTypes,
		"stream_resumption": gin.H{"last_event_id": true, "after_seq": true, "heartbeat_seconds": int(s.deps.Heartbeat.Seconds())},
	})
}

// eventTypes are the events a run's stream can carry.
var eventTypes = []string{
	"run.accepted", "run.status", "assistant.delta", "tool.started", "tool.completed", "tool.failed",
	"permission.requested", "permission.resolved", "run.paused", "run.resumed",
	"revision.created", "checkpoint.created", "run.completed", "run.failed", "run.cancelled",
}
