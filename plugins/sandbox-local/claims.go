package local

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// UIDClaimsDir is the machine-wide record of which sandbox uids are in use
// and by which sandbox root: one file per uid, named by it, holding the
// root's path. Every local plugin running as root on the machine uses it,
// whatever its root, so that
//   - two plugins (two hosts, or the many hosts a test suite starts) never
//     give the same uid to two sandboxes, which would let one read and
//     signal the other, and
//   - a plugin starting after a crash kills the leftovers of its own
//     sandboxes only, never those of another live plugin.
//
// The range alone cannot say whose a uid is: every plugin has the same
// default range.
const UIDClaimsDir = StateDir + "/sandbox-uids"

// StateDir holds the machine-wide state of root plugins: the uid claims
// (private) and the fallback sandbox root (which sandbox uids must pass
// through).
const StateDir = "/var/lib/agenthost"

// prepareStateDir makes StateDir passable by anyone but listable by root
// only (0711): whichever of the claims and the fallback root is made first
// must not leave it closed to the sandbox uids (a folder made as a parent
// by MkdirAll of the private claims folder would be 0700). One found closed
// (made so by an earlier version) is opened for passing only.
func prepareStateDir() error {
	if err := os.MkdirAll(StateDir, 0o711); err != nil {
		return err
	}
	fi, err := os.Stat(StateDir)
	if err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o011 != 0o011 {
		return os.Chmod(StateDir, perm|0o011)
	}
	return nil
}

// claimUID takes uid for root; false when another sandbox holds it.
func claimUID(uid int, root string) (bool, error) {
	if err := prepareStateDir(); err != nil {
		return false, err
	}
	if err := os.MkdirAll(UIDClaimsDir, 0o700); err != nil {
		return false, err
	}
	f, err := os.OpenFile(claimFile(uid), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	_, werr := f.WriteString(root + "\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(claimFile(uid))
		return false, werr
	}
	return true, nil
}

// releaseUID gives uid back, if root holds it.
func releaseUID(uid int, root string) {
	if owner, ok := claimOwner(uid); ok && owner == root {
		_ = os.Remove(claimFile(uid))
	}
}

func claimFile(uid int) string { return filepath.Join(UIDClaimsDir, strconv.Itoa(uid)) }

// claimOwner reads the root that claimed uid.
func claimOwner(uid int) (string, bool) {
	b, err := os.ReadFile(claimFile(uid))
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// claims lists every claim on the machine: uid → root.
func claims() map[int]string {
	out := map[int]string{}
	entries, _ := os.ReadDir(UIDClaimsDir)
	for _, e := range entries {
		uid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if root, ok := claimOwner(uid); ok {
			out[uid] = root
		}
	}
	return out
}

// settleClaims runs when a root plugin starts, before any command: it kills
// every process of a uid this root claimed (what its commands left running
// when the previous plugin process died) and of a uid whose root is gone
// (a plugin whose folder was removed: nobody will ever stop those), and
// releases the claims no sandbox folder of this root still owns, once the
// kill left nothing running. It returns how many signals it sent.
func settleClaims(c Config) int {
	lo, hi := uidRange(c)
	mine, gone := map[int]bool{}, map[int]bool{}
	for uid, root := range claims() {
		switch {
		case root == c.Root:
			mine[uid] = true
		case !exists(root):
			gone[uid] = true
		}
	}
	// Sandboxes made before claims existed: claim their uids now.
	entries, _ := os.ReadDir(c.Root)
	inUse := map[int]bool{}
	for _, e := range entries {
		if uid := workspaceUID(c, filepath.Join(c.Root, e.Name())); uid != 0 {
			inUse[uid] = true
			if !mine[uid] {
				if ok, _ := claimUID(uid, c.Root); ok {
					mine[uid] = true
				}
			}
		}
	}
	n, cleared := killUIDs(func(uid int) bool { return uid >= lo && uid < hi && (mine[uid] || gone[uid]) })
	if !cleared {
		// Something still runs as one of them: a uid is handed out again
		// only once nothing does (noLeftovers counts on it). The next
		// start tries again.
		return n
	}
	for uid := range gone {
		_ = os.Remove(claimFile(uid))
	}
	for uid := range mine {
		if !inUse[uid] {
			releaseUID(uid, c.Root)
		}
	}
	return n
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
