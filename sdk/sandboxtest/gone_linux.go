package sandboxtest

import (
	"fmt"
	"os"
	"strings"
)

// processGone reports whether pid has ended: no /proc entry, or a zombie
// waiting for a reaper (in a container pid 1 may never reap it).
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	return strings.HasPrefix(s[strings.LastIndexByte(s, ')')+1:], " Z")
}
