package local

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace/dirfs"
	"github.com/agenthost/agenthost/sdk/workspace/owned"
)

// The plugin's configuration, the folder its sandboxes live in, and its
// health: what Configure sets up before any sandbox exists.

// DefaultMaxFileBytes is the largest file Create, WriteFile and ReadFile
// accept unless configured: far above any source file, and bounded so one
// file cannot take the plugin's memory.
const DefaultMaxFileBytes = 64 << 20

// Config is the plugin's `config { ... }` block. Zero values mean the
// defaults.
type Config struct {
	// Root holds one folder per sandbox; default
	// $AGENTHOST_DATA_DIR/sandboxes/local, or ./data/sandboxes/local.
	Root string `json:"root"`
	// ExecTimeoutS is the wall-clock cap per command (default 120); a
	// request may ask for less, not more.
	ExecTimeoutS int `json:"exec_timeout_s"`
	// OutputLimitBytes caps stdout+stderr per command (default 1 MiB).
	OutputLimitBytes int64 `json:"output_limit_bytes"`
	// MaxFileBytes caps one file at create, write and read (default 64 MiB).
	MaxFileBytes int64 `json:"max_file_bytes"`
	// ExecCPUS is RLIMIT_CPU of each command process (default 600).
	ExecCPUS int64 `json:"exec_cpu_s"`
	// ExecFileSizeBytes is RLIMIT_FSIZE of each command process (default 1 GiB).
	ExecFileSizeBytes int64 `json:"exec_file_size_bytes"`
	// UIDBase and UIDCount are the uids sandboxes run as when the plugin
	// runs as root, one per sandbox (DefaultUIDBase, DefaultUIDCount). The
	// range must belong to this plugin alone: processes of these uids are
	// killed when the plugin starts. A plugin not running as root must
	// leave them unset.
	UIDBase  int `json:"uid_base"`
	UIDCount int `json:"uid_count"`
}

func withDefaults(c Config) (Config, error) {
	if c.Root == "" {
		data := os.Getenv("AGENTHOST_DATA_DIR")
		if data == "" {
			data = "data"
		}
		c.Root = filepath.Join(data, "sandboxes", "local")
	}
	abs, err := filepath.Abs(c.Root)
	if err != nil {
		return c, plugin.Errorf(plugin.CodeInvalidArgument, "root", "sandbox root %q: %v", c.Root, err)
	}
	c.Root = abs
	if c.MaxFileBytes == 0 {
		c.MaxFileBytes = DefaultMaxFileBytes
	}
	if !dropping() {
		if (c.UIDBase != 0 || c.UIDCount != 0) && !sandboxUIDs {
			return c, plugin.Errorf(plugin.CodeInvalidArgument, "uid_base", "uid_base and uid_count need Linux; on %s commands run as the plugin's own uid", runtime.GOOS)
		}
		if c.UIDBase != 0 || c.UIDCount != 0 {
			return c, plugin.Errorf(plugin.CodeInvalidArgument, "uid_base", "uid_base and uid_count need the plugin to run as root; it runs as uid %d and its commands run as that uid", os.Geteuid())
		}
		return c, nil
	}
	if c.UIDBase == 0 {
		c.UIDBase = DefaultUIDBase
	}
	if c.UIDCount == 0 {
		c.UIDCount = DefaultUIDCount
	}
	// uids are 32-bit and 2^32-1 means "no uid" to the kernel.
	if int64(c.UIDBase)+int64(c.UIDCount) > 1<<32-1 {
		return c, plugin.Errorf(plugin.CodeInvalidArgument, "uid_count", "uid_base + uid_count must stay below 4294967295")
	}
	return c, nil
}

// Configure applies the config block (JSON; unknown keys are refused so a
// typo does not silently fall back to a default) and creates the root.
func (p *Provider) Configure(_ context.Context, raw json.RawMessage) error {
	var c Config
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return plugin.Errorf(plugin.CodeInvalidArgument, "config", "local sandbox config: %v", err)
		}
	}
	for field, v := range map[string]int64{
		"exec_timeout_s": int64(c.ExecTimeoutS), "output_limit_bytes": c.OutputLimitBytes,
		"max_file_bytes": c.MaxFileBytes, "exec_cpu_s": c.ExecCPUS, "exec_file_size_bytes": c.ExecFileSizeBytes,
		"uid_base": int64(c.UIDBase), "uid_count": int64(c.UIDCount),
	} {
		if v < 0 {
			return plugin.Errorf(plugin.CodeInvalidArgument, field, "%s must not be negative", field)
		}
	}
	defaultRoot := c.Root == ""
	c, err := withDefaults(c)
	if err != nil {
		return err
	}
	if err := prepareRoot(c); err != nil {
		return plugin.Errorf(plugin.CodeInvalidArgument, "root", "cannot create sandbox root: %v", err)
	}
	if defaultRoot && dropping() {
		if err := owned.Searchable(c.Root, ownerOf(c.UIDBase)); err != nil {
			// A checkout under a private home (/root is 0700): the data
			// dir's sandboxes are out of the sandbox uids' reach. A root
			// the operator did not choose moves to where they can pass.
			fallback := fallbackRoot(c.Root)
			p.log.Warn("the default sandbox root is not reachable by sandbox uids; using another", "root", c.Root, "reason", err, "instead", fallback)
			c.Root = fallback
			if err := prepareRoot(c); err != nil {
				return plugin.Errorf(plugin.CodeInvalidArgument, "root", "cannot create sandbox root: %v", err)
			}
		}
	}
	// Before anything else: a previous plugin process killed with SIGKILL
	// leaves what its commands started in the background running.
	if n := killLeftovers(c); n > 0 {
		p.log.Warn("killed processes left running by a previous plugin process", "signals", n)
	}
	for _, err := range sweepLeftovers(c.Root) {
		p.log.Warn("leftover folder not removed", "error", err)
	}
	p.mu.Lock()
	p.cfg = c
	p.mu.Unlock()
	if dropping() {
		p.log.Info("configured", "root", c.Root, "isolation", isolation(), "uid_base", c.UIDBase, "uid_count", c.UIDCount)
	} else {
		p.log.Warn("configured; commands run as the plugin's own user and can read everything it can (its environment, the host's files, other sandboxes) and signal the host: "+isolationHint,
			"root", c.Root, "isolation", isolation(), "uid", os.Geteuid())
	}
	return nil
}

// FallbackRootDir is where a root plugin keeps sandboxes when the default
// root under the data dir is not reachable by sandbox uids.
const FallbackRootDir = StateDir + "/sandboxes"

// fallbackRoot names a folder under FallbackRootDir for one default root,
// so two hosts with different data dirs do not share sandboxes.
func fallbackRoot(defaultRoot string) string {
	sum := sha256.Sum256([]byte(defaultRoot))
	return filepath.Join(FallbackRootDir, hex.EncodeToString(sum[:6]), "local")
}

// prepareRoot creates the root. As root, it is 0711: sandbox uids must pass
// through it to their workspaces, but not list the other sandboxes.
func prepareRoot(c Config) error {
	if !dropping() {
		return os.MkdirAll(c.Root, 0o755)
	}
	if strings.HasPrefix(c.Root, FallbackRootDir+"/") {
		if err := prepareStateDir(); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(c.Root, 0o711); err != nil {
		return err
	}
	return os.Chmod(c.Root, 0o711)
}

// killLeftovers kills what commands of an earlier plugin process left
// running: as root every process of the sandbox uids, whatever group or
// session it moved to; otherwise the process groups recorded under each
// sandbox folder (see dirfs.KillRecorded for what that can miss).
func killLeftovers(c Config) int {
	n := killSandboxProcesses(c)
	entries, _ := os.ReadDir(c.Root)
	for _, e := range entries {
		n += dirfs.KillRecorded(filepath.Join(c.Root, e.Name(), execsDir))
	}
	return n
}

// Health reports whether the root folder is writable and, as root,
// reachable by the sandbox uids.
func (p *Provider) Health(context.Context) plugin.Health {
	cfg := p.config()
	root := cfg.Root
	if err := os.MkdirAll(root, 0o755); err != nil {
		return plugin.Health{Reason: fmt.Sprintf("sandbox root %s is not usable: %v", root, err)}
	}
	if dropping() {
		// Any sandbox uid stands for all: none owns the root's parents.
		if err := owned.Searchable(root, ownerOf(cfg.UIDBase)); err != nil {
			return plugin.Health{Reason: fmt.Sprintf("sandbox root: %v (commands run as sandbox uids)", err)}
		}
	}
	f, err := os.CreateTemp(root, "~health-*")
	if err != nil {
		return plugin.Health{Reason: fmt.Sprintf("sandbox root %s is not writable: %v", root, err)}
	}
	f.Close()
	_ = os.Remove(f.Name())
	return plugin.Health{Healthy: true}
}

func (p *Provider) config() Config {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cfg
}
