package local

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"syscall"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace/owned"
)

// Sandbox uids. A plugin running as root runs each sandbox's commands as a
// uid of that sandbox alone, taken from [uid_base, uid_base+uid_count), with
// the gid of the same number and no supplementary groups.
//
// One uid per sandbox rather than one shared by all: with a shared uid a
// command could read, edit and signal every other app's sandbox, since
// their files and processes would be its own. With its own uid, a sandbox's
// workspace (0700) is closed to the others, and the uid names every process
// the sandbox ever started, wherever it went (setsid, double fork, a plugin
// crash): Stop and the next start kill by uid, not by recorded pid.
const (
	// DefaultUIDBase is above every range Linux distributions and systemd
	// hand out (system, regular and dynamic users below 65536; containers
	// 524288–1879048191) and below systemd's reserved ranges from
	// 2147352576, so no account or container on the machine shares it.
	DefaultUIDBase = 2_000_000_000
	// DefaultUIDCount: sandboxes that can exist at once.
	DefaultUIDCount = 65536
)

// uidRange is the sandbox uids of cfg: first and one past the last.
func uidRange(c Config) (lo, hi int) { return c.UIDBase, c.UIDBase + c.UIDCount }

// dropping reports whether commands run as sandbox uids: only a root
// plugin can switch uid; any other runs them as itself. Off Linux none
// does: the uid is how Stop finds a sandbox's processes, through /proc
// (owned.KillUIDs).
func dropping() bool { return sandboxUIDs && os.Geteuid() == 0 }

// isolation is what Info reports; it cannot wait for Configure, which the
// host calls after reading Info.
func isolation() string {
	if dropping() {
		return plugin.IsolationUID
	}
	return plugin.IsolationNone
}

// ownerOf is the owner of a sandbox whose commands run as uid (0: the
// plugin's own user).
func ownerOf(uid int) owned.Owner { return owned.Owner{UID: uid, GID: uid} }

// workspaceUID is the uid a sandbox folder's workspace belongs to, or 0
// when it cannot be read or is not a sandbox uid of c.
func workspaceUID(c Config, boxDir string) int {
	fi, err := os.Lstat(filepath.Join(boxDir, workspaceDir))
	if err != nil {
		return 0
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	lo, hi := uidRange(c)
	if !ok || int(st.Uid) < lo || int(st.Uid) >= hi {
		return 0
	}
	return int(st.Uid)
}

// pickUID chooses and claims a free sandbox uid: not the owner of any folder
// under the root (staging ones included), nor claimed by a create in
// progress, nor claimed by any other plugin on the machine (UIDClaimsDir). The
// workspace's owner is the record of which uid a sandbox has. A random free
// uid rather than the lowest makes it unlikely that a new sandbox gets the
// uid of one just stopped, whose files in /tmp may remain. Called with
// p.mu held, so two creates of this process never pick the same uid; two
// plugin processes must not share a root (see README.md).
func (p *Provider) pickUID(c Config) (int, error) {
	used := map[int]bool{}
	for uid := range p.claimed {
		used[uid] = true
	}
	entries, _ := os.ReadDir(c.Root)
	for _, e := range entries {
		if uid := workspaceUID(c, filepath.Join(c.Root, e.Name())); uid != 0 {
			used[uid] = true
		}
	}
	lo, hi := uidRange(c)
	if len(used) >= hi-lo {
		return 0, plugin.Errorf(plugin.CodeUnavailable, "", "every sandbox uid in [%d, %d) is taken: stop sandboxes or raise uid_count", lo, hi)
	}
	n, err := rand.Int(rand.Reader, big.NewInt(int64(hi-lo)))
	if err != nil {
		return 0, err
	}
	// Walk from a random point to the first free uid no other plugin on
	// the machine has claimed: at most hi-lo steps.
	for i := range hi - lo {
		uid := lo + (int(n.Int64())+i)%(hi-lo)
		if used[uid] {
			continue
		}
		ok, err := claimUID(uid, c.Root)
		if err != nil {
			return 0, fmt.Errorf("claim sandbox uid %d: %w", uid, err)
		}
		if ok {
			return uid, nil
		}
	}
	return 0, plugin.Errorf(plugin.CodeUnavailable, "", "no free sandbox uid in [%d, %d)", lo, hi)
}

// killSandboxProcesses SIGKILLs what the commands of this root's previous
// plugin process left running: every process of a uid this root claimed
// (see settleClaims). Other plugins' sandboxes share the range and are
// left alone.
func killSandboxProcesses(c Config) int {
	if !dropping() {
		return 0
	}
	return settleClaims(c)
}
