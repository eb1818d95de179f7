# The echo example engine. Build it into the plugin dir and copy this file
# into plugin-configs/:
#   go build -o bin/plugins/ ./examples/engine-echo/cmd/agenthost-engine-echo
#   cp examples/engine-echo/echo.hcl plugin-configs/
plugin "echo" {
  kind    = "engine"
  command = "agenthost-engine-echo"
}
