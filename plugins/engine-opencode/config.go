package opencode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
)

// Version is the opencode-ai release this engine was built and tested
// against; the Makefile installs exactly this one.
const Version = "1.18.33"

// DefaultBinary is where `make` installs the opencode binary, relative to
// the host's working folder (the project root for `make run`).
const DefaultBinary = "tools/opencode/bin/opencode"

// Config is the plugin's config block.
type Config struct {
	// OpenCodePath is the opencode binary; relative paths are relative to
	// the host's working folder.
	OpenCodePath string `json:"opencode_path"`
	// ZodPath is the zod build for custom tools' arguments; without it the
	// contract tools take no arguments. Default: zod.mjs in the folder
	// above the binary's, where `make` puts it (tools/opencode/zod.mjs:
	// the zod version @opencode-ai/plugin pins, bundled into one file by
	// the opencode binary's own Bun). Relative as OpenCodePath.
	ZodPath string `json:"zod_path"`
	// StartTimeoutS bounds one server start, to its first healthy answer.
	StartTimeoutS int `json:"start_timeout_s"`
	// CancelTimeoutS is how long an aborted session may take to go idle
	// before the cancel counts as unconfirmed.
	CancelTimeoutS int `json:"cancel_timeout_s"`
	// StopGraceS is how long a server gets between SIGTERM and SIGKILL.
	StopGraceS int `json:"stop_grace_s"`
	// Permission is OpenCode's permission per tool (allow, ask, deny),
	// over DefaultPermission: ask pauses the run for the user.
	Permission map[string]string `json:"permission"`
	// RetryMax is how many times OpenCode may retry a failing model
	// request in one run (its session.status "retry" events) before the
	// run fails with MODEL_PROVIDER_ERROR; the native engine's retry_max
	// means the same. OpenCode alone would retry forever.
	RetryMax int `json:"retry_max"`
	// RetryDeadlineS bounds the time from the first retry to giving up,
	// whatever the count: OpenCode's back-off doubles (2, 4, 8, ... s).
	RetryDeadlineS int `json:"retry_deadline_s"`
	// BridgeTools names host tools OpenCode gets besides the contract
	// tools (a custom toolpack's): each becomes an OpenCode custom tool that
	// calls the host, which validates its input, applies its permission and
	// reports it as for every engine. OpenCode's own tools (edit, bash, ...)
	// cover the patch toolpack's, which is why nothing else is bridged by
	// default.
	BridgeTools []string `json:"bridge_tools"`
	// Connect lists host:port addresses the server may reach besides its
	// model server and the tool bridge (a proxy, a provider's second
	// host), when the sandbox gives services a network of their own
	// (bwrap's loopback policy); sandboxes sharing the host's network
	// ignore it.
	Connect []string `json:"connect"`
	// FailOnUnrecoveredEdit fails a run whose edit failed with no later
	// successful edit; unset, APPS_CODING_AGENT_OPENCODE_FAIL_ON_UNRECOVERED_APPLY_PATCH
	// decides (default on).
	FailOnUnrecoveredEdit *bool `json:"fail_on_unrecovered_edit"`
}

// Defaults of the retry bounds: six retries, as the native engine, which
// with OpenCode's back-off is about two minutes; five minutes at most.
const (
	DefaultRetryMax       = 6
	DefaultRetryDeadlineS = 300
)

// DefaultPermission mirrors the host's own tool policy: edits allowed,
// commands asked, the network denied.
var DefaultPermission = map[string]string{"edit": "allow", "bash": "ask", "webfetch": "deny", "websearch": "deny", "external_directory": "deny"}

func parseConfig(raw json.RawMessage) (Config, error) {
	var c Config
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return c, plugin.Errorf(plugin.CodeInvalidArgument, "config", "opencode engine config: %v", err)
		}
	}
	if c.OpenCodePath == "" {
		c.OpenCodePath = DefaultBinary
	}
	abs, err := filepath.Abs(c.OpenCodePath)
	if err != nil {
		return c, plugin.Errorf(plugin.CodeInvalidArgument, "opencode_path", "%v", err)
	}
	c.OpenCodePath = abs
	if c.ZodPath == "" {
		c.ZodPath = filepath.Join(filepath.Dir(filepath.Dir(c.OpenCodePath)), "zod.mjs")
	}
	if c.ZodPath, err = filepath.Abs(c.ZodPath); err != nil {
		return c, plugin.Errorf(plugin.CodeInvalidArgument, "zod_path", "%v", err)
	}
	if c.StartTimeoutS <= 0 {
		c.StartTimeoutS = 60
	}
	if c.CancelTimeoutS <= 0 {
		c.CancelTimeoutS = 10
	}
	if c.StopGraceS <= 0 {
		c.StopGraceS = 5
	}
	if c.RetryMax < 0 || c.RetryDeadlineS < 0 {
		return c, plugin.Errorf(plugin.CodeInvalidArgument, "retry_max", "retry_max and retry_deadline_s must not be negative")
	}
	if c.RetryMax == 0 {
		c.RetryMax = DefaultRetryMax
	}
	if c.RetryDeadlineS == 0 {
		c.RetryDeadlineS = DefaultRetryDeadlineS
	}
	// The config overrides the defaults tool by tool: naming bash alone
	// must not drop the network denials.
	perm := maps.Clone(DefaultPermission)
	maps.Copy(perm, c.Permission)
	c.Permission = perm
	for tool, p := range c.Permission {
		if p != "allow" && p != "ask" && p != "deny" {
			return c, plugin.Errorf(plugin.CodeInvalidArgument, "permission", "permission.%s = %q: want allow, ask or deny", tool, p)
		}
	}
	if c.FailOnUnrecoveredEdit == nil {
		on := os.Getenv("APPS_CODING_AGENT_OPENCODE_FAIL_ON_UNRECOVERED_APPLY_PATCH") != "0"
		c.FailOnUnrecoveredEdit = &on
	}
	return c, nil
}

func (c Config) startTimeout() time.Duration  { return time.Duration(c.StartTimeoutS) * time.Second }
func (c Config) cancelTimeout() time.Duration { return time.Duration(c.CancelTimeoutS) * time.Second }
func (c Config) stopGrace() time.Duration     { return time.Duration(c.StopGraceS) * time.Second }
func (c Config) retryDeadline() time.Duration { return time.Duration(c.RetryDeadlineS) * time.Second }

// binaryProblem says why the configured binary cannot run, or "".
func (c Config) binaryProblem() string {
	st, err := os.Stat(c.OpenCodePath)
	if err != nil {
		return fmt.Sprintf("the opencode binary is missing at %s (run `make build`, which installs opencode-ai@%s into tools/opencode, or set opencode_path)", c.OpenCodePath, Version)
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Sprintf("%s is not an executable file", c.OpenCodePath)
	}
	return ""
}
