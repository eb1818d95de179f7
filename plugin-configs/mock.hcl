# The mock engine: deterministic, scripted by the prompt (see
# plugins/engine-mock/README.md). It is the master event sequence every engine
# is compared with.
plugin "mock" {
  kind    = "engine"
  command = "agenthost-engine-mock"
}
