# The patch toolpack: file reading and editing tools for engines.
plugin "patch" {
  kind    = "toolpack"
  command = "agenthost-toolpack-patch"
}
