//go:build !linux

package local

// sandboxUIDs: off Linux there are no per-sandbox uids, even for a root
// plugin, because nothing could find a sandbox's processes by uid to stop
// them (owned.KillUIDs needs /proc). Commands run as the plugin's user, so
// on macOS run the plugin as an unprivileged user, never as root.
const sandboxUIDs = false

// isolationHint ends the warning logged when commands run as the plugin's
// user.
const isolationHint = "this system has no per-sandbox uids (Linux only): run the plugin as an unprivileged user of its own"
