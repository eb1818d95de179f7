# The contract toolpack: the selected runtime agent's integration contract,
# read from the document the host writes into each run's workspace.
plugin "contract" {
  kind    = "toolpack"
  command = "agenthost-toolpack-contract"
}
