// Package privtmp gives a host process a temporary folder of its own, and
// removes the folders of host processes that died without removing theirs.
//
// The host and its plugins talk over Unix sockets that go-plugin makes in
// the temporary folder (the plugins' listeners, and the host's broker
// listeners for the callbacks it serves). A process that ends normally
// removes its sockets; one killed with SIGKILL cannot, and a plugin gets
// SIGKILL when its host dies. Every crash left a dozen sockets in /tmp for
// good. In a folder of the host process's own, what a crash leaves goes
// with that folder when the next host starts.
package privtmp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	// livePrefix names the folder of a host process that holds it: its
	// lock is free only once that process is gone.
	livePrefix = "agenthost-tmp-"
	// newPrefix names a folder that is not locked yet: Open makes it,
	// locks it and only then renames it live, so a sweep never takes a
	// folder in the moment between its creation and its lock.
	newPrefix = "agenthost-tmp-new-"
	// newGrace is how old an unlocked new folder must be to be swept: a
	// process that died between making it and locking it.
	newGrace = time.Minute
)

// Dir is a host process's temporary folder, locked for as long as the
// process holds it (the kernel drops the lock when the process dies,
// however it dies).
type Dir struct {
	path string
	lock *os.File
}

// Open sweeps base (the system's temporary folder) of the folders of dead
// host processes, then makes and locks a folder of this process's own in
// it. Folders it cannot remove (another user's) are left alone.
func Open(base string) (*Dir, error) {
	Sweep(base)
	fresh, err := os.MkdirTemp(base, newPrefix)
	if err != nil {
		return nil, fmt.Errorf("make a temporary folder: %w", err)
	}
	lock, err := lockDir(fresh)
	if err != nil {
		_ = os.Remove(fresh)
		return nil, fmt.Errorf("lock temporary folder %s: %w", fresh, err)
	}
	live := filepath.Join(base, livePrefix+strings.TrimPrefix(filepath.Base(fresh), newPrefix))
	if err := os.Rename(fresh, live); err != nil {
		lock.Close()
		_ = os.Remove(fresh)
		return nil, fmt.Errorf("name temporary folder %s: %w", live, err)
	}
	return &Dir{path: live, lock: lock}, nil
}

// Path is the folder's path.
func (d *Dir) Path() string { return d.path }

// Close removes the folder and everything in it, then drops the lock. Call
// it once nothing uses the folder any more (the plugins are stopped).
func (d *Dir) Close() error {
	err := os.RemoveAll(d.path)
	d.lock.Close()
	return err
}

// Sweep removes from base the folders of host processes that are gone, and
// returns their paths. A folder is gone when its lock can be taken; a
// folder still being made is never swept.
func Sweep(base string) []string {
	entries, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, livePrefix) {
			continue
		}
		p := filepath.Join(base, name)
		if strings.HasPrefix(name, newPrefix) {
			info, err := e.Info()
			if err != nil || time.Since(info.ModTime()) < newGrace {
				continue
			}
		}
		if sweepOne(p) {
			removed = append(removed, p)
		}
	}
	return removed
}

// sweepOne removes p if its holder is gone: the lock is taken while the
// folder is removed, so two hosts starting at once do not both act on it.
func sweepOne(p string) bool {
	lock, err := lockDir(p)
	if err != nil {
		return false // held by a live process, gone already, or not ours
	}
	defer lock.Close()
	return os.RemoveAll(p) == nil
}

// lockDir opens the folder p and takes its lock without waiting.
func lockDir(p string) (*os.File, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is held by a live process", p)
		}
		return nil, err
	}
	return f, nil
}
