# The patch toolpack: file reading and editing tools for engines.
plugin "patch" {
  kind    = "toolpack"
  command = "agenthost-toolpack-patch"
  # One core for its Go code: its work per call is small, and idle cores
  # woken for each call cost more CPU than they save (see README, Plugins).
  max_procs = 1
  # Policy switches the pack reads from the host's environment (the config
  # block's legacy_write_file / auto_verify_patch win over them).
  env = ["APPS_CODING_AGENT_ENABLE_LEGACY_WRITE_FILE", "APPS_CODING_AGENT_AUTO_VERIFY_PATCH"]
  # Who decides each tool, overriding the pack's defaults (allow | ask | deny):
  # permissions = { coding_agent_run_command = "allow" }
}
