package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestToolTimeout(t *testing.T) {
	t.Setenv("APPS_CODING_AGENT_TOOL_TIMEOUT_S", "")
	h, err := Load("")
	require.NoError(t, err)
	assert.Equal(t, 120, h.ToolTimeoutS, "the seed's default")

	file := filepath.Join(t.TempDir(), "host.hcl")
	require.NoError(t, os.WriteFile(file, []byte("tool_timeout_s = 30\n"), 0o644))
	h, err = Load(file)
	require.NoError(t, err)
	assert.Equal(t, 30, h.ToolTimeoutS)

	t.Setenv("APPS_CODING_AGENT_TOOL_TIMEOUT_S", "45")
	h, err = Load(file)
	require.NoError(t, err)
	assert.Equal(t, 45, h.ToolTimeoutS, "the environment wins over the file")

	for _, bad := range []string{"soon", "0", "-1", "3601"} {
		t.Setenv("APPS_CODING_AGENT_TOOL_TIMEOUT_S", bad)
		_, err = Load("")
		assert.Error(t, err, bad)
	}
}

// TestProviderBindings: provider blocks in the file and bindings from
// AGENTHOST_KEY_ENDPOINTS both reach the config; a malformed entry fails.
func TestProviderBindings(t *testing.T) {
	file := filepath.Join(t.TempDir(), "host.hcl")
	require.NoError(t, os.WriteFile(file, []byte(`provider "openai" {
  api_key_env = "OPENAI_API_KEY"
  base_urls   = ["https://api.openai.com/v1", "https://gw.example/v1"]
}
provider "ollama" {
  base_urls = ["http://127.0.0.1:11434/v1"]
}
`), 0o644))
	t.Setenv(KeyEndpointsEnv, "GW_KEY=https://a.example/v1, https://b.example/v1;=http://127.0.0.1:8000/v1")
	h, err := Load(file)
	require.NoError(t, err)
	assert.Equal(t, []Provider{
		{Name: "openai", KeyEnv: "OPENAI_API_KEY", BaseURLs: []string{"https://api.openai.com/v1", "https://gw.example/v1"}},
		{Name: "ollama", BaseURLs: []string{"http://127.0.0.1:11434/v1"}},
		{Name: KeyEndpointsEnv, KeyEnv: "GW_KEY", BaseURLs: []string{"https://a.example/v1", "https://b.example/v1"}},
		{Name: KeyEndpointsEnv, BaseURLs: []string{"http://127.0.0.1:8000/v1"}},
	}, h.Providers)

	for _, bad := range []string{"GW_KEY", "GW_KEY="} {
		t.Setenv(KeyEndpointsEnv, bad)
		_, err = Load("")
		assert.Error(t, err, bad)
	}
}

func TestFileLimits(t *testing.T) {
	for _, k := range []string{"AGENTHOST_MAX_FILE_BYTES", "AGENTHOST_MAX_WORKSPACE_BYTES", "AGENTHOST_MAX_FILES"} {
		t.Setenv(k, "")
	}
	h, err := Load("")
	require.NoError(t, err)
	assert.Equal(t, int64(64<<20), h.MaxFileBytes, "default")
	assert.Equal(t, int64(256<<20), h.MaxWorkspaceBytes, "default")
	assert.Equal(t, 20000, h.MaxFiles, "default")

	file := filepath.Join(t.TempDir(), "host.hcl")
	require.NoError(t, os.WriteFile(file, []byte("max_file_bytes = 1000\nmax_workspace_bytes = 5000\nmax_files = 7\n"), 0o644))
	h, err = Load(file)
	require.NoError(t, err)
	assert.Equal(t, int64(1000), h.FileLimits().MaxFileBytes)
	assert.Equal(t, int64(5000), h.FileLimits().MaxWorkspaceBytes)
	assert.Equal(t, 7, h.FileLimits().MaxFiles)

	t.Setenv("AGENTHOST_MAX_FILE_BYTES", "2000")
	t.Setenv("AGENTHOST_MAX_FILES", "9")
	h, err = Load(file)
	require.NoError(t, err)
	assert.Equal(t, int64(2000), h.MaxFileBytes, "the environment wins over the file")
	assert.Equal(t, 9, h.MaxFiles)

	for _, bad := range []string{"big", "0", "-5"} {
		t.Setenv("AGENTHOST_MAX_FILE_BYTES", bad)
		_, err = Load("")
		assert.Error(t, err, bad)
	}
}

// intSetting is a whole-number setting that the host file and the
// environment both set (the environment wins), with a default when
// neither does.
type intSetting struct {
	env, hcl string
	get      func(Host) *int
	def      int
	// bad are environment values refused; badHCL, when set, is a value
	// the file is refused with.
	bad    []string
	badHCL string
}

// checkIntSetting: the default, 0 from the file, 7 from the environment
// over the file's 0, each bad value refused.
func checkIntSetting(t *testing.T, s intSetting) {
	t.Helper()
	t.Setenv(s.env, "")
	h, err := Load("")
	require.NoError(t, err)
	require.NotNil(t, s.get(h))
	assert.Equal(t, s.def, *s.get(h), "the default")

	file := filepath.Join(t.TempDir(), "host.hcl")
	require.NoError(t, os.WriteFile(file, []byte(s.hcl+" = 0\n"), 0o644))
	h, err = Load(file)
	require.NoError(t, err)
	assert.Equal(t, 0, *s.get(h), "0 from the file")

	t.Setenv(s.env, "7")
	h, err = Load(file)
	require.NoError(t, err)
	assert.Equal(t, 7, *s.get(h), "the environment wins over the file")

	for _, bad := range s.bad {
		t.Setenv(s.env, bad)
		_, err = Load("")
		assert.Error(t, err, bad)
	}
	if s.badHCL != "" {
		t.Setenv(s.env, "")
		require.NoError(t, os.WriteFile(file, []byte(s.hcl+" = "+s.badHCL+"\n"), 0o644))
		_, err = Load(file)
		assert.Error(t, err, s.badHCL)
	}
}

// TestWarmServersMax: 4 by default, 0 allowed (keep none), the file and
// the environment set it, negative or non-numbers are refused.
func TestWarmServersMax(t *testing.T) {
	checkIntSetting(t, intSetting{env: "AGENTHOST_WARM_SERVERS_MAX", hcl: "warm_servers_max",
		get: func(h Host) *int { return h.WarmServersMax }, def: DefaultWarmServersMax,
		bad: []string{"many", "-1"}, badHCL: "-2"})
}

// TestWarmServersMemory: 2048 MiB by default, 0 allowed (no budget), set
// by file or environment, negative refused.
func TestWarmServersMemory(t *testing.T) {
	checkIntSetting(t, intSetting{env: "AGENTHOST_WARM_SERVERS_MEMORY_MB", hcl: "warm_servers_memory_mb",
		get: func(h Host) *int { return h.WarmServersMemoryMB }, def: DefaultWarmServersMemoryMB,
		bad: []string{"lots", "-5"}})
}

// TestGCHeapFloor: 64 MiB by default, 0 allowed (off), set by file or
// environment, negative or absurd refused.
func TestGCHeapFloor(t *testing.T) {
	checkIntSetting(t, intSetting{env: "AGENTHOST_GC_HEAP_FLOOR_MB", hcl: "gc_heap_floor_mb",
		get: func(h Host) *int { return h.GCHeapFloorMB }, def: DefaultGCHeapFloorMB,
		bad: []string{"lots", "-5", "99999999"}, badHCL: "-1"})
}

// TestParseOrigins: allowed browser origins are exact and normalised; a
// wildcard, a path or a scheme other than http(s) is refused with a hint.
func TestParseOrigins(t *testing.T) {
	got, err := ParseOrigins([]string{" HTTPS://Builder.Example.com ", "http://localhost:5173/", ""})
	require.NoError(t, err)
	assert.Equal(t, []string{"https://builder.example.com", "http://localhost:5173"}, got)
	for _, bad := range []string{"*", "https://*.example.com", "builder.example.com", "ftp://x", "https://x/app", "https://x?y=1", "https://u@x"} {
		_, err := ParseOrigins([]string{bad})
		assert.ErrorContains(t, err, "exact origin", bad)
	}
	t.Setenv("AGENTHOST_CORS_ORIGINS", "http://a.test,http://b.test:8080")
	h, err := Load("")
	require.NoError(t, err)
	assert.Equal(t, []string{"http://a.test", "http://b.test:8080"}, h.CORSOrigins)
}
