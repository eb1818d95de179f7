package hostapp

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// lockSQLite makes this process the one host on a SQLite database: it
// holds an exclusive lock on a file beside the database for as long as it
// runs (the kernel drops it when the process dies, however it dies). A
// second host on the same file is refused with the pid of the first. The
// lock is on a file of its own: opening and closing the database file
// itself would drop SQLite's own locks on it.
func lockSQLite(dbPath string) (unlock func(), err error) {
	path := dbPath + ".host-lock"
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("SQLite host lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := "another process"
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(holder))); perr == nil {
				who = fmt.Sprintf("another agenthost process (pid %d)", pid)
			}
			return nil, fmt.Errorf("%s already serves the SQLite database %s: SQLite serves one host; run several hosts on PostgreSQL (docs/scale-out.md)", who, dbPath)
		}
		return nil, fmt.Errorf("SQLite host lock %s: %w", path, err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() { f.Close() }, nil
}
