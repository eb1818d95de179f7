// Package config loads the host's configuration: an optional HCL file, then
// environment variables, then defaults, in that order of precedence reversed
// (the environment wins over the file).
package config

import (
	"fmt"
	"os"
	"path/filepath"

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
	for _, p := range []*string{&h.DataDir, &h.PluginDir, &h.PluginConfigDir} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return Host{}, err
		}
		*p = abs
	}
	return h, nil
}
