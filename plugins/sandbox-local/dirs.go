package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
)

// Layout of the root folder:
//
//	<root>/<id>/workspace   the working copy
//	<root>/<id>/meta.json   what Get reports after a plugin restart
//	<root>/<id>/services/   the services' state folders
//	<root>/<id>/execs/      one record per process group commands started
//	<root>/~staging-…       a sandbox being created, renamed to <id> when complete
//	<root>/~trash-…         a stopped sandbox being removed
//
// As root, <root> and <root>/<id> are root's with mode 0711 and the
// workspace (and services) belong to the sandbox's uid with mode 0700.
// '~' cannot appear in an id, so internal names never collide with one.
const (
	workspaceDir  = "workspace"
	servicesDir   = "services"
	metaFile      = "meta.json"
	execsDir      = "execs"
	stagingPrefix = "~staging-"
	trashPrefix   = "~trash-"
	// leftoverAge is how old a staging or trash folder must be before
	// Configure removes it as left over from a crash; younger ones may
	// belong to another plugin process sharing the root.
	leftoverAge = time.Hour
)

var idPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// checkID refuses ids that are not a plain folder name. "." and ".." match
// the pattern but would name the root or its parent.
func checkID(id string) error {
	if !idPattern.MatchString(id) || id == "." || id == ".." {
		return plugin.Errorf(plugin.CodeInvalidArgument, "sandbox_id", "sandbox id %q must match %s and not be . or ..", id, idPattern)
	}
	return nil
}

// meta is what a sandbox folder records about itself, so that a relaunched
// plugin describes it as before: the folder is the sandbox's only state.
type meta struct {
	ID        string            `json:"id"`
	ScopeKey  string            `json:"scope_key,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
	// MaxFileBytes is the host's per-file limit given at create (0: none),
	// kept so a relaunched plugin holds the sandbox to it still.
	MaxFileBytes int64 `json:"max_file_bytes,omitempty"`
}

// limited is cfg under the host's per-file limit hostMax (0: none): the
// host's limit replaces the plugin's own, and commands may write one byte
// past it (sandbox.CommandFileSize).
func limited(cfg Config, hostMax int64) Config {
	if hostMax > 0 {
		cfg.MaxFileBytes = hostMax
		cfg.ExecFileSizeBytes = sandbox.CommandFileSize(hostMax, cfg.ExecFileSizeBytes)
	}
	return cfg
}

func (m meta) info() sandbox.Info {
	return sandbox.Info{ID: m.ID, Status: sandbox.StatusRunning, CreatedAt: m.CreatedAt, ScopeKey: m.ScopeKey}
}

func writeMeta(dir string, m meta) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	// 0600: the sandbox uid, passing through <id>, must not read the
	// labels or the scope key of its sandbox.
	return os.WriteFile(filepath.Join(dir, metaFile), b, 0o600)
}

// readMeta reads a sandbox's record; a missing or unreadable one (a folder
// made by an older version, say) falls back to what the folder itself says.
func readMeta(dir, id string) (meta, error) {
	m := meta{ID: id}
	b, err := os.ReadFile(filepath.Join(dir, metaFile))
	if err == nil {
		err = json.Unmarshal(b, &m)
		m.ID = id
	}
	if err != nil || m.CreatedAt.IsZero() {
		if fi, serr := os.Stat(filepath.Join(dir, workspaceDir)); serr == nil {
			m.CreatedAt = fi.ModTime().UTC()
		}
	}
	return m, err
}

// removeTree removes a folder even where a command made parts of it
// read-only, and retries because processes killed a moment ago may still be
// finishing a write into it.
func removeTree(dir string) error {
	var err error
	for range 3 {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, werr error) error {
			if werr == nil && d.IsDir() {
				_ = os.Chmod(p, 0o700)
			}
			return nil
		})
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// sweepLeftovers removes staging and trash folders a crashed process left.
func sweepLeftovers(root string) []error {
	entries, err := os.ReadDir(root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return []error{err}
	}
	var errs []error
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), stagingPrefix) && !strings.HasPrefix(e.Name(), trashPrefix) {
			continue
		}
		fi, err := e.Info()
		if err != nil || time.Since(fi.ModTime()) < leftoverAge {
			continue
		}
		if err := removeTree(filepath.Join(root, e.Name())); err != nil {
			errs = append(errs, fmt.Errorf("remove leftover %s: %w", e.Name(), err))
		}
	}
	return errs
}
