package main

import (
	"fmt"
	"io"

	"github.com/agenthost/agenthost/cmd/agenthost/client"
)

// envVar documents one environment variable that the host (or a plugin it
// launches) reads, for the Environment section of --help.
type envVar struct {
	Name string
	// Default is what applies when the variable is unset; "" for nothing.
	Default string
	Help    string
	// Every is true for what every command reads (where the config, the
	// data and the plugins are); the others matter to serve only.
	Every bool
}

// envVars is every variable an operator may set, in the order help lists
// them. host/config, host/hostapp, host/api and the shipped plugins read
// them; TestHelpListsEveryEnvVar keeps this list and the code together.
var envVars = []envVar{
	{"AGENTHOST_CONFIG", "", "host HCL file (same as --config)", true},
	{"AGENTHOST_LISTEN", "127.0.0.1:8080", "HTTP listen address", false},
	{"AGENTHOST_DATA_DIR", "./data", "embedded database and local sandboxes", true},
	{"AGENTHOST_PLUGIN_DIR", "plugins/ beside this binary", "where bare plugin command names are found", true},
	{"AGENTHOST_PLUGIN_CONFIG_DIR", "./plugin-configs", "one HCL file per plugin instance", true},
	{"DATABASE_URL", "SQLite at <data dir>/agenthost.db", "postgres://… for PostgreSQL, else a SQLite file path", true},
	{"AGENTHOST_LOG_LEVEL", "info", "host log level (trace, debug, info, warn, error)", true},
	{"AGENTHOST_PLUGIN_LOG_LEVEL", "info", "plugins' log level", true},
	{"AGENTHOST_BOOTSTRAP_TOKEN", "", "serve makes this secret an operator token (admin and platform.admin of tenant \"default\")", false},
	{"AGENTHOST_KEY_ENDPOINTS", "", "provider key bindings: VAR=url[,url…][;VAR=url…]", false},
	{"AGENTHOST_MAX_FILE_BYTES", "67108864 (64 MiB)", "largest file of an app", false},
	{"AGENTHOST_MAX_WORKSPACE_BYTES", "268435456 (256 MiB)", "all of an app's files together", false},
	{"AGENTHOST_MAX_FILES", "20000", "files in an app", false},
	{"AGENTHOST_DEFAULT_SANDBOX", "local", "sandbox backend used when a run names none", false},
	{"AGENTHOST_GC_HEAP_FLOOR_MB", "64", "heap the Go collector lets the host grow to before collecting while its live heap is small (0 turns this off; so does GOGC)", false},
	{"AGENTHOST_DATABASE_MAX_CONNS", "32", "PostgreSQL connections this host opens at most, its lease heartbeat's included (plus one it listens on)", false},
	{"AGENTHOST_HOST_ID", "hostname + random suffix", "this host's id among hosts sharing a PostgreSQL database (docs/scale-out.md)", false},
	{"AGENTHOST_LEASE_TTL_MS", "5000", "how long a host's lease on its runs lasts unrenewed; a dead host's runs are taken over after it", false},
	{"AGENTHOST_CORS_ORIGINS", "none", "browser origins allowed to call the API (exact scheme://host[:port], comma separated)", false},
	{"AGENTHOST_STORE_OUTAGE_WINDOW_MS", "30000", "how long writes wait out an unavailable database (restart, failover, full disk) before its runs fail", false},
	{"APPS_CODING_AGENT_TOOL_TIMEOUT_S", "120", "tool call time limit in seconds (1-3600)", false},
	{"APPS_CODING_AGENT_SANDBOX_REUSE", "1", "keep a chat's sandbox warm between its runs (1/0)", false},
	{"APPS_CODING_AGENT_SANDBOX_TTL_S", "900", "how long an idle kept sandbox lives, in seconds", false},
	{"AGENTHOST_WARM_SERVERS_MAX", "4", "idle kept sandboxes holding an agent server (OpenCode's) this host keeps; the least recently used beyond it is stopped (0 keeps none)", false},
	{"AGENTHOST_WARM_SERVERS_MEMORY_MB", "2048", "memory those idle agent servers may hold together, as the sandbox reports it; the least recently used beyond it are stopped (0 sets no budget)", false},
	{"APPS_CODING_AGENT_NATIVE_ENABLED", "off", "1 allows \"engine\":\"native\"", false},
	{"APPS_CODING_AGENT_DEFAULT_ENGINE", "mock", "engine used when a run names none", false},
	{"APPS_CODING_AGENT_MAX_TOOL_ITERATIONS", "8", "tool rounds per run", false},
	{"APPS_CODING_AGENT_TOKEN_BUDGET", "", "token budget per run (a run may set its own)", false},
	{"APPS_CODING_AGENT_MESSAGE_BUDGET_CHARS", "24000", "chat history a run carries, in characters", false},
	{"APPS_CODING_AGENT_HISTORY_MAX_MESSAGES", "200", "chat history a run carries, in messages (older ones are named in a note)", false},
	{"APPS_CODING_AGENT_OPENCODE_FAIL_ON_UNRECOVERED_APPLY_PATCH", "1", "fail an OpenCode run whose failed edit no later edit recovered (1/0)", false},
	{"APPS_CODING_AGENT_ENABLE_LEGACY_WRITE_FILE", "off", "1 offers the patch toolpack's coding_agent_write_file", false},
	{"APPS_CODING_AGENT_AUTO_VERIFY_PATCH", "off", "1 runs a successful patch's verification plan at once", false},
	{"OPENAI_API_KEY", "", "seeds an OpenAI model on a first start; bound to OPENAI_BASE_URL", false},
	{"OPENAI_BASE_URL", "https://api.openai.com/v1", "OpenAI-compatible endpoint (a local server needs no key)", false},
	{"OPENAI_MODEL", "gpt-4o-mini", "the seeded OpenAI model", false},
	{"ANTHROPIC_API_KEY", "", "seeds an Anthropic model on a first start; bound to ANTHROPIC_BASE_URL", false},
	{"ANTHROPIC_BASE_URL", "https://api.anthropic.com", "Anthropic endpoint", false},
	{"ANTHROPIC_MODEL", "claude-sonnet-4-5", "the seeded Anthropic model", false},
}

// clientEnvVars are what the client commands (apps, run, runs, …) read:
// which host they talk to and how they authenticate. A flag wins over
// them.
var clientEnvVars = []envVar{
	{client.EnvURL, client.DefaultURL, "the host the client commands talk to (same as --url)", false},
	{client.EnvToken, "", "the API token they send (same as --token; agenthost tokens create makes one)", false},
}

// writeEnvHelp prints the Environment section: every variable for the
// application and serve, the ones every command reads for the others.
func writeEnvHelp(w io.Writer, all bool) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Environment (wins over the --config file):")
	for _, v := range envVars {
		if all || v.Every {
			writeEnvVar(w, v)
		}
	}
}

// writeClientEnvHelp prints the client commands' Environment section.
func writeClientEnvHelp(w io.Writer) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Environment of the client commands (a flag wins over it):")
	for _, v := range clientEnvVars {
		writeEnvVar(w, v)
	}
}

// writeEnvVar prints one variable: the name on its own line, since the
// longest names would push a table's descriptions past any terminal's
// width.
func writeEnvVar(w io.Writer, v envVar) {
	fmt.Fprintf(w, "  %s\n      %s", v.Name, v.Help)
	if v.Default != "" {
		fmt.Fprintf(w, " (default: %s)", v.Default)
	}
	fmt.Fprintln(w)
}
