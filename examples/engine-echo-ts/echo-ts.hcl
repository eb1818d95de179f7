# The echo example engine in TypeScript. `make build` bundles it into the
# plugin dir; copy this file into plugin-configs/ to load it. Node.js is
# found on the host's PATH (or give its absolute path).
plugin "echo-ts" {
  kind    = "engine"
  command = "node"
  args    = ["${plugin_dir}/agenthost-engine-echo-ts.js"]
}
