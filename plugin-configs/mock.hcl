# The mock engine: deterministic, scripted by the prompt (see
# plugins/engine-mock/README.md). It is the master event sequence every engine
# is compared with.
plugin "mock" {
  kind    = "engine"
  command = "agenthost-engine-mock"
  # One core for its Go code: its work per call is small, and idle cores
  # woken for each call cost more CPU than they save (see README, Plugins).
  max_procs = 1
}
