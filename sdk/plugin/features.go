package plugin

import (
	"slices"
	"strings"
)

// Capability keys of Info.Capabilities that the host reads to decide whether
// an engine can run on a sandbox backend (the seed's "unsupported runtime").
// Each value is a comma-separated list of feature names.
const (
	// CapabilityRequires, on an engine, lists the sandbox features it needs.
	CapabilityRequires = "requires"
	// CapabilityProvides, on a sandbox backend, lists the features it offers.
	CapabilityProvides = "provides"
	// CapabilityNeedsModel, "true" on an engine, says it cannot run without
	// a pinned model: the host refuses such a run when none resolves
	// (CODING_AGENT_MODEL_UNAVAILABLE) instead of starting it to fail.
	CapabilityNeedsModel = "needs_model"
)

// Sandbox features an engine may require. A backend lists only what it
// really offers: the host refuses a run (CODING_AGENT_ENGINE_UNSUPPORTED_RUNTIME)
// rather than let an engine discover the gap halfway through.
const (
	// FeatureExec: commands can run in the sandbox (Workspace.Exec).
	FeatureExec = "exec"
	// FeatureLoopback: a server started through Exec is reachable by the
	// plugin processes on 127.0.0.1 (an engine driving its own agent server).
	FeatureLoopback = "loopback"
	// FeatureNetwork: commands may open outbound connections.
	FeatureNetwork = "network"
	// FeatureServices: the workspace runs long-lived processes
	// (workspace.Services), stopped with the sandbox.
	FeatureServices = "services"
)

// Features splits a capability value into its feature names, trimmed, empty
// ones dropped, sorted and unique.
func Features(list string) []string {
	var out []string
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

// MissingFeatures returns the features in requires (a capability value) that
// provides lacks, sorted; nil when nothing is missing.
func MissingFeatures(requires, provides string) []string {
	have := Features(provides)
	var missing []string
	for _, f := range Features(requires) {
		if !slices.Contains(have, f) {
			missing = append(missing, f)
		}
	}
	return missing
}

// CapabilityStableSandboxes, "true" on a sandbox backend, promises that a
// sandbox it created or rediscovered lives until that same plugin process
// stops it or exits: nothing outside the process removes one (a local
// folder, say; not an allocation on a cluster that may lose it). The host
// then reuses a chat's warm sandbox without asking the backend whether it
// is still there, as long as the process that held it still runs.
const CapabilityStableSandboxes = "stable_sandboxes"

// CapabilityIsolation, on a sandbox backend, says how far its commands are
// kept from the host: one of the Isolation values. The host shows it in
// /readyz, `agenthost plugins check` and an app's capabilities, and logs a
// warning at start-up for a backend that does not use namespaces. A backend
// that does not report it is shown as IsolationUnknown.
const CapabilityIsolation = "isolation"

// Isolation levels a sandbox backend reports under CapabilityIsolation.
const (
	// IsolationNone: commands run as the host's own user. They can read
	// what the host can (its environment through /proc, its database, the
	// other sandboxes) and signal its processes.
	IsolationNone = "none"
	// IsolationUID: commands run as an unprivileged uid of their own, so
	// they cannot read the host's or other sandboxes' private files or
	// signal their processes, but they share the host's filesystem view,
	// network (loopback services included), /tmp and process list.
	IsolationUID = "uid"
	// IsolationNamespaces: commands run in namespaces of their own (mount,
	// pid, and so on) as an unprivileged uid, seeing only what the backend
	// mounts.
	IsolationNamespaces = "namespaces"
	// IsolationUnknown is how the host shows a backend that reports none.
	IsolationUnknown = "unknown"
)

// IsolationOf returns the isolation a sandbox backend's capabilities
// report, or IsolationUnknown.
func IsolationOf(caps map[string]string) string {
	if v := strings.TrimSpace(caps[CapabilityIsolation]); v != "" {
		return v
	}
	return IsolationUnknown
}
