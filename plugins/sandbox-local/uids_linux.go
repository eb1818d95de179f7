package local

// sandboxUIDs: a root plugin runs each sandbox as a uid of its own.
const sandboxUIDs = true

// isolationHint ends the warning logged when commands run as the plugin's
// user.
const isolationHint = "run the plugin as root for per-sandbox uids, or use the bwrap backend"
