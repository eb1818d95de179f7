// Package config loads the host's configuration: an optional HCL file, then
// environment variables, then defaults, in that order of precedence reversed
// (the environment wins over the file).
package config

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/core"
	"github.com/hashicorp/hcl/v2/hclsimple"
)

// Host is the host's configuration.
type Host struct {
	// Listen is the HTTP address (AGENTHOST_LISTEN).
	Listen string `hcl:"listen,optional"`
	// DataDir holds the embedded database and local sandboxes
	// (AGENTHOST_DATA_DIR).
	DataDir string `hcl:"data_dir,optional"`
	// PluginDir is where bare plugin command names are found
	// (AGENTHOST_PLUGIN_DIR); default: the plugins folder beside the binary.
	PluginDir string `hcl:"plugin_dir,optional"`
	// PluginConfigDir holds one HCL file per plugin instance
	// (AGENTHOST_PLUGIN_CONFIG_DIR).
	PluginConfigDir string `hcl:"plugin_config_dir,optional"`
	// DatabaseURL selects PostgreSQL when it is postgres://… (DATABASE_URL);
	// empty means embedded SQLite at DataDir/agenthost.db.
	DatabaseURL string `hcl:"database_url,optional"`
	// ToolTimeoutS bounds one tool call, in seconds, unless a toolpack's
	// config sets its own (APPS_CODING_AGENT_TOOL_TIMEOUT_S; default 120).
	ToolTimeoutS int `hcl:"tool_timeout_s,optional"`
	// SandboxReuse keeps a chat session's sandbox warm between its runs
	// (APPS_CODING_AGENT_SANDBOX_REUSE=0 turns it off; on by default), for
	// SandboxTTLS seconds of idleness (APPS_CODING_AGENT_SANDBOX_TTL_S;
	// default 900).
	SandboxReuse *bool `hcl:"sandbox_reuse,optional"`
	SandboxTTLS  int   `hcl:"sandbox_ttl_s,optional"`
	// WarmServersMax caps the idle kept sandboxes that hold an agent
	// server (OpenCode's, some 500 MB each); the least recently used
	// beyond it is stopped (AGENTHOST_WARM_SERVERS_MAX; default 4, 0 keeps
	// none).
	WarmServersMax *int `hcl:"warm_servers_max,optional"`
	// WarmServersMemoryMB is the most memory those servers may hold
	// together, as the sandbox backend reports it; the least recently
	// used beyond it are stopped (AGENTHOST_WARM_SERVERS_MEMORY_MB;
	// default 2048, 0 sets no budget).
	WarmServersMemoryMB *int `hcl:"warm_servers_memory_mb,optional"`
	// MaxFileBytes, MaxWorkspaceBytes and MaxFiles bound an app's files:
	// one file, all of them together, how many (AGENTHOST_MAX_FILE_BYTES,
	// AGENTHOST_MAX_WORKSPACE_BYTES, AGENTHOST_MAX_FILES; defaults
	// core.DefaultMaxFileBytes …). Uploads, edits, sandbox commands and run
	// results are all held to them; see FileLimits.
	MaxFileBytes      int64 `hcl:"max_file_bytes,optional"`
	MaxWorkspaceBytes int64 `hcl:"max_workspace_bytes,optional"`
	MaxFiles          int   `hcl:"max_files,optional"`
	// Providers bind each provider key variable of the host's environment
	// to the base URLs it may be sent to (`provider "name" { api_key_env,
	// base_urls }` blocks, plus AGENTHOST_KEY_ENDPOINTS). A model whose
	// key and endpoint are not bound is refused.
	Providers []Provider `hcl:"provider,block"`
	// DatabaseMaxConns bounds this host's PostgreSQL connections
	// (AGENTHOST_DATABASE_MAX_CONNS; default 32, the lease heartbeat's own
	// connection included, plus one it listens on).
	DatabaseMaxConns int `hcl:"database_max_conns,optional"`
	// GCHeapFloorMB is the heap the host lets the Go collector wait for
	// while its live heap is small (AGENTHOST_GC_HEAP_FLOOR_MB; default
	// DefaultGCHeapFloorMB, 0 turns it off). GOGC in the environment turns
	// it off too.
	GCHeapFloorMB *int `hcl:"gc_heap_floor_mb,optional"`
	// HostID names this host among the hosts sharing a PostgreSQL database
	// (AGENTHOST_HOST_ID; default: the hostname and a random suffix).
	HostID string `hcl:"host_id,optional"`
	// LeaseTTLMS is how long, in milliseconds, this host's lease on its
	// runs lasts without renewal (AGENTHOST_LEASE_TTL_MS; default 5000): a
	// dead host's runs are taken over about this long after it died.
	LeaseTTLMS int `hcl:"lease_ttl_ms,optional"`
	// StoreOutageWindowMS is how long, in milliseconds, a write waits out
	// an unavailable database (a restart, a failover, a full disk) before
	// the run it serves fails with STORE_UNAVAILABLE
	// (AGENTHOST_STORE_OUTAGE_WINDOW_MS; default 30000).
	StoreOutageWindowMS int `hcl:"store_outage_window_ms,optional"`
	// CORSOrigins are the exact origins (scheme://host[:port]) whose pages
	// may call the API from a browser (AGENTHOST_CORS_ORIGINS, comma
	// separated); none by default.
	CORSOrigins []string `hcl:"cors_origins,optional"`
}

// Provider is one `provider` block: where the key in KeyEnv may go. A
// block without api_key_env lists keyless endpoints tenants may use.
type Provider struct {
	Name     string   `hcl:"name,label"`
	KeyEnv   string   `hcl:"api_key_env,optional"`
	BaseURLs []string `hcl:"base_urls"`
}

// KeyEndpointsEnv adds provider bindings from the environment:
// "VAR=url[,url…][;VAR=url…]" (VAR empty for keyless endpoints).
const KeyEndpointsEnv = "AGENTHOST_KEY_ENDPOINTS"

// DefaultWarmServersMax is how many idle agent servers a host keeps warm
// unless told otherwise (orchestrator.DefaultWarmServersMax).
const DefaultWarmServersMax = 4

// DefaultWarmServersMemoryMB is the memory budget of those servers unless
// told otherwise: four OpenCode servers' worth.
const DefaultWarmServersMemoryMB = 2048

// DefaultGCHeapFloorMB is the host's heap floor unless told otherwise: with
// a live heap of some 10 MB, a busy host collected 20 times a second at
// Go's default; with the floor, a 20-chat host spent 11% less CPU a turn.
const DefaultGCHeapFloorMB = 64

// maxGCHeapFloorMB bounds the heap floor: a TiB is past any host.
const maxGCHeapFloorMB = 1 << 20

// ParseKeyEndpoints reads the KeyEndpointsEnv format.
func ParseKeyEndpoints(v string) ([]Provider, error) {
	var out []Provider
	for _, entry := range strings.Split(v, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		key, urls, ok := strings.Cut(entry, "=")
		if !ok || strings.TrimSpace(urls) == "" {
			return nil, fmt.Errorf("%s: %q is not VAR=url[,url…]", KeyEndpointsEnv, entry)
		}
		p := Provider{Name: KeyEndpointsEnv, KeyEnv: strings.TrimSpace(key)}
		for _, u := range strings.Split(urls, ",") {
			if u = strings.TrimSpace(u); u != "" {
				p.BaseURLs = append(p.BaseURLs, u)
			}
		}
		out = append(out, p)
	}
	return out, nil

}

// FileLimits are the configured file limits, defaults filled in (a Host
// built in code without Load gets them too).
func (h Host) FileLimits() core.FileLimits {
	return core.FileLimits{MaxFileBytes: h.MaxFileBytes, MaxWorkspaceBytes: h.MaxWorkspaceBytes, MaxFiles: h.MaxFiles}.WithDefaults()
}

// Load reads file (when not empty), applies the environment and defaults,
// and makes every path absolute.
func Load(file string) (Host, error) {
	var h Host
	if file != "" {
		if err := hclsimple.DecodeFile(file, nil, &h); err != nil {
			return Host{}, fmt.Errorf("host config: %w", err)
		}
	}
	env := func(dst *string, key, def string) {
		if v := os.Getenv(key); v != "" {
			*dst = v
		}
		if *dst == "" {
			*dst = def
		}
	}
	defPluginDir := "bin/plugins"
	if exe, err := os.Executable(); err == nil {
		defPluginDir = filepath.Join(filepath.Dir(exe), "plugins")
	}
	env(&h.Listen, "AGENTHOST_LISTEN", "127.0.0.1:8080")
	env(&h.DataDir, "AGENTHOST_DATA_DIR", "data")
	env(&h.PluginDir, "AGENTHOST_PLUGIN_DIR", defPluginDir)
	env(&h.PluginConfigDir, "AGENTHOST_PLUGIN_CONFIG_DIR", "plugin-configs")
	env(&h.DatabaseURL, "DATABASE_URL", "")
	if h.ToolTimeoutS == 0 {
		h.ToolTimeoutS = 120
	}
	if v := os.Getenv("APPS_CODING_AGENT_TOOL_TIMEOUT_S"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return Host{}, fmt.Errorf("APPS_CODING_AGENT_TOOL_TIMEOUT_S=%q is not a whole number of seconds", v)
		}
		h.ToolTimeoutS = n
	}
	if h.ToolTimeoutS < 1 || h.ToolTimeoutS > 3600 {
		return Host{}, fmt.Errorf("tool_timeout_s is %d; it must be between 1 and 3600", h.ToolTimeoutS)
	}
	switch v := os.Getenv("APPS_CODING_AGENT_SANDBOX_REUSE"); v {
	case "":
	case "0", "1":
		on := v == "1"
		h.SandboxReuse = &on
	default:
		return Host{}, fmt.Errorf("APPS_CODING_AGENT_SANDBOX_REUSE=%q: use 1 or 0", v)
	}
	if h.SandboxReuse == nil {
		on := true
		h.SandboxReuse = &on
	}
	if v := os.Getenv(KeyEndpointsEnv); v != "" {
		extra, err := ParseKeyEndpoints(v)
		if err != nil {
			return Host{}, err
		}
		h.Providers = append(h.Providers, extra...)
	}
	if v := os.Getenv("APPS_CODING_AGENT_SANDBOX_TTL_S"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return Host{}, fmt.Errorf("APPS_CODING_AGENT_SANDBOX_TTL_S=%q is not a positive number of seconds", v)
		}
		h.SandboxTTLS = n
	}
	if h.SandboxTTLS == 0 {
		h.SandboxTTLS = 900
	}
	if v := os.Getenv("AGENTHOST_WARM_SERVERS_MAX"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return Host{}, fmt.Errorf("AGENTHOST_WARM_SERVERS_MAX=%q: use a whole number, 0 or more (0 keeps no agent server warm)", v)
		}
		h.WarmServersMax = &n
	}
	if h.WarmServersMax == nil {
		n := DefaultWarmServersMax
		h.WarmServersMax = &n
	} else if *h.WarmServersMax < 0 {
		return Host{}, fmt.Errorf("warm_servers_max = %d: use 0 or more (0 keeps no agent server warm)", *h.WarmServersMax)
	}
	if v := os.Getenv("AGENTHOST_WARM_SERVERS_MEMORY_MB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return Host{}, fmt.Errorf("AGENTHOST_WARM_SERVERS_MEMORY_MB=%q: use a whole number of MiB, 0 or more (0 sets no budget)", v)
		}
		h.WarmServersMemoryMB = &n
	}
	if h.WarmServersMemoryMB == nil {
		n := DefaultWarmServersMemoryMB
		h.WarmServersMemoryMB = &n
	} else if *h.WarmServersMemoryMB < 0 {
		return Host{}, fmt.Errorf("warm_servers_memory_mb = %d: use 0 or more (0 sets no budget)", *h.WarmServersMemoryMB)
	}
	for _, l := range []struct {
		dst *int64
		key string
	}{{&h.MaxFileBytes, "AGENTHOST_MAX_FILE_BYTES"}, {&h.MaxWorkspaceBytes, "AGENTHOST_MAX_WORKSPACE_BYTES"}} {
		if v := os.Getenv(l.key); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				return Host{}, fmt.Errorf("%s=%q is not a positive number of bytes", l.key, v)
			}
			*l.dst = n
		}
	}
	if v := os.Getenv("AGENTHOST_MAX_FILES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return Host{}, fmt.Errorf("AGENTHOST_MAX_FILES=%q is not a positive number", v)
		}
		h.MaxFiles = n
	}
	if h.MaxFileBytes < 0 || h.MaxWorkspaceBytes < 0 || h.MaxFiles < 0 {
		return Host{}, fmt.Errorf("max_file_bytes, max_workspace_bytes and max_files must not be negative")
	}
	env(&h.HostID, "AGENTHOST_HOST_ID", "")
	if v := os.Getenv("AGENTHOST_DATABASE_MAX_CONNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 {
			return Host{}, fmt.Errorf("AGENTHOST_DATABASE_MAX_CONNS=%q: use a whole number of at least 2", v)
		}
		h.DatabaseMaxConns = n
	}
	if v := os.Getenv("AGENTHOST_GC_HEAP_FLOOR_MB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return Host{}, fmt.Errorf("AGENTHOST_GC_HEAP_FLOOR_MB=%q: use a whole number of MiB from 0 (off) to %d", v, maxGCHeapFloorMB)
		}
		h.GCHeapFloorMB = &n
	}
	if h.GCHeapFloorMB == nil {
		n := DefaultGCHeapFloorMB
		h.GCHeapFloorMB = &n
	}
	if n := *h.GCHeapFloorMB; n < 0 || n > maxGCHeapFloorMB {
		return Host{}, fmt.Errorf("heap floor %d MiB (AGENTHOST_GC_HEAP_FLOOR_MB or gc_heap_floor_mb): use 0 (off) to %d", n, maxGCHeapFloorMB)
	}
	if h.DatabaseMaxConns == 0 {
		h.DatabaseMaxConns = 32
	}
	if v := os.Getenv("AGENTHOST_LEASE_TTL_MS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return Host{}, fmt.Errorf("AGENTHOST_LEASE_TTL_MS=%q is not a whole number of milliseconds", v)
		}
		h.LeaseTTLMS = n
	}
	if h.LeaseTTLMS == 0 {
		h.LeaseTTLMS = 5000
	}
	if h.LeaseTTLMS < 500 || h.LeaseTTLMS > 600_000 {
		return Host{}, fmt.Errorf("lease_ttl_ms is %d; it must be between 500 and 600000", h.LeaseTTLMS)
	}
	if v := os.Getenv("AGENTHOST_STORE_OUTAGE_WINDOW_MS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return Host{}, fmt.Errorf("AGENTHOST_STORE_OUTAGE_WINDOW_MS=%q is not a whole number of milliseconds", v)
		}
		h.StoreOutageWindowMS = n
	}
	if h.StoreOutageWindowMS == 0 {
		h.StoreOutageWindowMS = 30_000
	}
	if h.StoreOutageWindowMS < 100 || h.StoreOutageWindowMS > 3_600_000 {
		return Host{}, fmt.Errorf("store_outage_window_ms is %d; it must be between 100 and 3600000", h.StoreOutageWindowMS)
	}
	if v := os.Getenv("AGENTHOST_CORS_ORIGINS"); v != "" {
		h.CORSOrigins = strings.Split(v, ",")
	}
	origins, err := ParseOrigins(h.CORSOrigins)
	if err != nil {
		return Host{}, err
	}
	h.CORSOrigins = origins
	lim := h.FileLimits()
	h.MaxFileBytes, h.MaxWorkspaceBytes, h.MaxFiles = lim.MaxFileBytes, lim.MaxWorkspaceBytes, lim.MaxFiles
	for _, p := range []*string{&h.DataDir, &h.PluginDir, &h.PluginConfigDir} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return Host{}, err
		}
		*p = abs
	}
	return h, nil
}

// ParseOrigins checks and normalises allowed browser origins: each is
// scheme://host[:port] with http or https, lower case, nothing after it.
// A wildcard is refused: an operator names the frontends that may call the
// API, and a page on any other origin gets nothing.
func ParseOrigins(in []string) ([]string, error) {
	var out []string
	for _, raw := range in {
		o := strings.TrimSpace(raw)
		if o == "" {
			continue
		}
		u, err := url.Parse(o)
		bad := err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Contains(u.Host, "*") ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil
		if bad {
			return nil, fmt.Errorf("cors origin %q: give an exact origin such as https://builder.example.com or http://localhost:5173 (no wildcard, path or query)", o)
		}
		out = append(out, strings.ToLower(u.Scheme+"://"+u.Host))
	}
	return out, nil
}
