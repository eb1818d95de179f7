# The contract toolpack: the selected runtime agent's integration contract,
# read from the document the host writes into each run's workspace.
plugin "contract" {
  kind    = "toolpack"
  command = "agenthost-toolpack-contract"
  # One core for its Go code: its work per call is small, and idle cores
  # woken for each call cost more CPU than they save (see README, Plugins).
  max_procs = 1
}
