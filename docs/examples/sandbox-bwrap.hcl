# The bwrap sandbox in place of the local one. To swap, replace
# plugin-configs/local.hcl with this file (same name, local.hcl): the plugin
# keeps the name "local", which is the host's default sandbox, so nothing
# else changes. Needs bubblewrap (Debian: apt-get install bubblewrap) and the
# agenthost-sandbox-bwrap binary in the plugin dir. See
# plugins/sandbox-bwrap/README.md and docs/sandboxes.md.
plugin "local" {
  kind    = "sandbox"
  command = "agenthost-sandbox-bwrap"
  # -name: the host requires the binary's name to equal this block's label.
  # -network: none | loopback | host. The host reads the plugin's features
  # before its config block, so the policy is a flag. The OpenCode engine
  # needs loopback (its server then reaches only its model server and the
  # tool bridge, by name or loopback address) or host.
  args = ["-name=local", "-network=none"]
  # config {
  #   root                 = "/srv/agenthost/sandboxes" # default: $AGENTHOST_DATA_DIR/sandboxes/bwrap; every parent needs o+x
  #   exec_timeout_s       = 120         # wall-clock cap per command
  #   output_limit_bytes   = 1048576     # stdout+stderr cap per command
  #   max_file_bytes       = 67108864    # largest file create/write/read takes
  #   exec_cpu_s           = 600         # RLIMIT_CPU
  #   exec_file_size_bytes = 1073741824  # RLIMIT_FSIZE
  #   memory_bytes         = 4294967296  # RLIMIT_AS per process of a command
  #   service_memory_bytes = 4294967296  # RLIMIT_DATA per process of a service (opencode serve)
  #   max_processes        = 512         # RLIMIT_NPROC of the sandbox uid
  #   tmp_bytes            = 268435456   # size of the private /tmp (memory)
  #   bwrap_path           = "/usr/bin/bwrap"
  #   uid                  = 60100       # host uid of commands when the plugin runs as root
  #   gid                  = 60100
  # }
}
