# The OpenCode engine: a real `opencode serve` (opencode-ai 1.18.33, which
# `make build` installs into tools/opencode) inside each run's sandbox, one
# per sandbox, reused by the next runs of a chat-scoped sandbox. Runs pick it
# with "engine": "opencode"; its model is the run's pinned model, through
# the model's "opencode" binding (provider/model). See
# plugins/engine-opencode/README.md.
#
# A model's provider binding names the environment variable holding its
# key; list every one your models name, so the engine can hand it to
# OpenCode.
plugin "opencode" {
  kind    = "engine"
  command = "agenthost-engine-opencode"
  env     = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "APPS_CODING_AGENT_OPENCODE_FAIL_ON_UNRECOVERED_APPLY_PATCH"]
  # config {
  #   opencode_path    = "tools/opencode/bin/opencode"  # relative to the host's working folder
  #   start_timeout_s  = 60
  #   cancel_timeout_s = 10     # an abort not confirmed by then fails the run
  #   stop_grace_s     = 5      # SIGTERM, then SIGKILL
  #   permission = { edit = "allow", bash = "ask", webfetch = "deny" }  # ask pauses the run
  #   fail_on_unrecovered_edit = true  # default: the environment variable above, else true
  # }
}
