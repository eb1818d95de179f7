package opencode

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// serviceName is the sandbox service that runs `opencode serve`.
const serviceName = "opencode"

// pluginLock is the lock file that stops OpenCode's background
// `npm install @opencode-ai/plugin` into a config folder (no flag does).
const pluginLock = `{"lockfileVersion":3,"packages":{"":{"dependencies":{"@opencode-ai/plugin":"` + Version + `"}}}}`

// startScript seeds the config folder, then becomes the server. $1 is the
// binary, $2 the port.
const startScript = `set -e
mkdir -p "$XDG_CONFIG_HOME/opencode/node_modules"
printf '%s' "$AGENTHOST_OPENCODE_LOCK" > "$XDG_CONFIG_HOME/opencode/package-lock.json"
exec "$1" serve --hostname 127.0.0.1 --port "$2"`

// server is one running `opencode serve` this engine process started.
type server struct {
	key    string // address + start time: a restarted service is a new server
	client *client
	hash   string // of the config it was started with
	// sessions maps a chat session to its OpenCode session.
	sessions map[string]string
}

// modelConfig is OpenCode's config for the run's pinned model. The host
// resolved the OpenCode model id (provider/model) from the model's
// bindings; the engine never guesses one.
func modelConfig(m engine.Model) (providerID, modelID string, provider map[string]any, err error) {
	providerID, modelID, ok := strings.Cut(m.EngineModelID, "/")
	if !ok || providerID == "" || modelID == "" {
		return "", "", nil, fmt.Errorf("model %q has no OpenCode binding of the form provider/model (got %q): add one with the model's engine bindings", m.ID, m.EngineModelID)
	}
	options := map[string]any{}
	if m.APIKeyEnv != "" {
		key := os.Getenv(m.APIKeyEnv)
		if key == "" {
			return "", "", nil, fmt.Errorf("model %q takes its key from %s, which the opencode engine does not have (list it in the plugin's env)", m.ID, m.APIKeyEnv)
		}
		options["apiKey"] = key
	}
	if m.BaseURL == "" {
		// One of OpenCode's own providers (openai, anthropic, ...).
		return providerID, modelID, map[string]any{"options": options}, nil
	}
	options["baseURL"] = m.BaseURL
	if options["apiKey"] == nil {
		options["apiKey"] = "agenthost-no-key" // local servers take any key
	}
	name := m.ProviderModel
	if name == "" {
		name = modelID
	}
	return providerID, modelID, map[string]any{
		"npm": "@ai-sdk/openai-compatible", "name": providerID, "options": options,
		"models": map[string]any{modelID: map[string]any{
			"name": name, "tool_call": true, "limit": map[string]any{"context": 128000, "output": 8192},
		}},
	}, nil
}

// serverConfig is the whole OPENCODE_CONFIG_CONTENT.
func serverConfig(c Config, providerID, modelID string, provider map[string]any) ([]byte, error) {
	perm := map[string]any{"question": "deny"}
	for k, v := range c.Permission {
		perm[k] = v
	}
	return json.Marshal(map[string]any{
		"model": providerID + "/" + modelID, "small_model": providerID + "/" + modelID,
		"autoupdate": false, "share": "disabled",
		"provider":   map[string]any{providerID: provider},
		"permission": perm,
	})
}

func newSecret() string {
	var b [18]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// startError is a server that would not start or answer.
type startError struct {
	msg  string
	info workspace.ServiceInfo
}

func (e *startError) Error() string { return e.msg }

// ensureServer answers the sandbox's running server when this process
// started it with the same config, and starts one otherwise.
func (e *Engine) ensureServer(ctx context.Context, cfg Config, svc workspace.Services, config []byte, extraEnv, connect []string) (*server, error) {
	sum := sha256.Sum256(append(append([]byte{}, config...), strings.Join(append(append([]string{}, extraEnv...), connect...), "\n")...))
	hash := hex.EncodeToString(sum[:])
	password := newSecret()
	// The sandbox binds the binary's real folder (make links it).
	bin, err := filepath.EvalSymlinks(cfg.OpenCodePath)
	if err != nil {
		return nil, &startError{msg: "opencode binary: " + err.Error()}
	}
	spec := workspace.ServiceSpec{
		Name: serviceName,
		Argv: []string{"sh", "-c", startScript, "opencode", bin, workspace.PlaceholderPort},
		Env: append([]string{
			"HOME=" + workspace.PlaceholderState + "/home",
			"XDG_CONFIG_HOME=" + workspace.PlaceholderState + "/config",
			"XDG_DATA_HOME=" + workspace.PlaceholderState + "/data",
			"XDG_STATE_HOME=" + workspace.PlaceholderState + "/state",
			"XDG_CACHE_HOME=" + workspace.PlaceholderState + "/cache",
			"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1",
			"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_SHARE=1",
			"AGENTHOST_OPENCODE_LOCK=" + pluginLock,
			"OPENCODE_CONFIG_CONTENT=" + string(config),
			"OPENCODE_SERVER_PASSWORD=" + password,
		}, extraEnv...),
		ReadOnlyPaths: []string{filepath.Dir(bin)},
		Connect:       connect,
	}
	for attempt := 0; attempt < 2; attempt++ {
		info, err := svc.StartService(ctx, spec)
		if err != nil {
			return nil, fmt.Errorf("start opencode in the sandbox: %w", err)
		}
		key := info.Address + "@" + info.StartedAt.UTC().Format(time.RFC3339Nano)
		if !info.Started {
			e.mu.Lock()
			s := e.servers[key]
			e.mu.Unlock()
			if s != nil && s.hash == hash {
				return s, nil
			}
			// Started by an earlier engine process (its password is
			// gone) or with another model: replace it.
			if err := svc.StopService(ctx, serviceName, cfg.stopGrace()); err != nil {
				return nil, fmt.Errorf("stop the sandbox's previous opencode: %w", err)
			}
			continue
		}
		if info.Address == "" {
			_ = svc.StopService(context.WithoutCancel(ctx), serviceName, cfg.stopGrace())
			return nil, errors.New("the sandbox gave opencode no reachable address")
		}
		s := &server{key: key, hash: hash, sessions: map[string]string{},
			client: &client{base: "http://" + info.Address, password: password, http: e.http}}
		if err := waitHealthy(ctx, cfg, svc, s.client); err != nil {
			_ = svc.StopService(context.WithoutCancel(ctx), serviceName, cfg.stopGrace())
			return nil, err
		}
		e.mu.Lock()
		e.servers[key] = s
		e.mu.Unlock()
		return s, nil
	}
	return nil, errors.New("the sandbox kept answering an opencode this engine cannot use")
}

// waitHealthy polls /global/health with short requests (one sent during
// start-up with no timeout was seen to hang for minutes) until the server
// answers, exits, or the start timeout passes.
func waitHealthy(ctx context.Context, cfg Config, svc workspace.Services, c *client) error {
	deadline := time.Now().Add(cfg.startTimeout())
	var last error
	for {
		h, err := c.health(ctx, time.Second)
		if err == nil && h.Healthy {
			return nil
		}
		if err == nil {
			err = errors.New("it reports itself unhealthy")
		}
		last = err
		info, serr := svc.ServiceStatus(ctx, serviceName)
		if serr == nil && !info.Running {
			return &startError{msg: fmt.Sprintf("opencode exited during start-up (exit %d %s): %s", info.ExitCode, info.Signal, tailText(info.OutputTail)), info: info}
		}
		if time.Now().After(deadline) {
			return &startError{msg: fmt.Sprintf("opencode did not become healthy within %s: %v", cfg.startTimeout(), last), info: info}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(150 * time.Millisecond):
		}
	}
}

// forget drops a server that died, so the next run starts a new one.
func (e *Engine) forget(s *server) {
	e.mu.Lock()
	delete(e.servers, s.key)
	e.mu.Unlock()
}

func tailText(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return s
}

// startFailure is the run's result for a server that would not start:
// the exit status and output tail in diagnostics when it ran at all.
func startFailure(err error) engine.Result {
	res := engine.Failed(CodeStartFailed, err.Error())
	var se *startError
	if errors.As(err, &se) && !se.info.StartedAt.IsZero() {
		res.Diagnostics, _ = json.Marshal(map[string]any{"exit_code": se.info.ExitCode, "signal": se.info.Signal, "output_tail": tailText(se.info.OutputTail)})
	}
	if plugin.HasCode(err, plugin.CodeUnsupported) {
		res.ErrorCode = CodeUnsupportedSandbox
	}
	return res
}

// providerHosts are the API servers of OpenCode's own providers, for a
// model with no base URL: what its server must reach.
var providerHosts = map[string]string{
	"openai": "api.openai.com:443", "anthropic": "api.anthropic.com:443",
	"openrouter": "openrouter.ai:443", "google": "generativelanguage.googleapis.com:443",
	"mistral": "api.mistral.ai:443", "groq": "api.groq.com:443", "deepseek": "api.deepseek.com:443",
	"xai": "api.x.ai:443",
}

// connectList is what the server connects to (workspace.ServiceSpec.Connect):
// the model's server, the tool bridge and the configured extras.
func connectList(cfg Config, m engine.Model, providerID, bridgeURL string) ([]string, error) {
	var out []string
	add := func(raw string) error {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return fmt.Errorf("%q is not a URL with a host", raw)
		}
		port := u.Port()
		if port == "" {
			port = "80"
			if u.Scheme == "https" {
				port = "443"
			}
		}
		out = append(out, net.JoinHostPort(u.Hostname(), port))
		return nil
	}
	switch {
	case m.BaseURL != "":
		if err := add(m.BaseURL); err != nil {
			return nil, fmt.Errorf("model %q base URL: %w", m.ID, err)
		}
	case providerHosts[providerID] != "":
		out = append(out, providerHosts[providerID])
	}
	if bridgeURL != "" {
		if err := add(bridgeURL); err != nil {
			return nil, err
		}
	}
	return append(out, cfg.Connect...), nil
}
