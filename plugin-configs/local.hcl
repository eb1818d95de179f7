# The local sandbox: one working copy per sandbox under the data dir. For
# development: it confines paths but does not isolate commands (see
# plugins/sandbox-local/README.md).
plugin "local" {
  kind    = "sandbox"
  command = "agenthost-sandbox-local"
}
