// Transparency: what this host can do for the app (engines, and why one
// cannot run; sandbox backends and how far they isolate commands; tools
// and who decides each; policy) and the health of every plugin (/readyz).

import { h, replace, showError } from "./dom.js";

const ISOLATION = {
  none: "commands run as the host's own user: they can read the host's files and environment",
  uid: "each sandbox runs commands as an unprivileged uid of its own",
  namespaces: "commands run in their own user, pid, mount and network namespaces",
  unknown: "the backend does not say",
};

const yes = (b) => (b ? "yes" : "no");
const cell = (v) => h("td", {}, v === undefined || v === null || v === "" ? "—" : v);
const head = (...cols) => h("thead", {}, h("tr", {}, cols.map((c) => h("th", { scope: "col" }, c))));

export function aboutView(root, ctx) {
  const caps = h("div", {}, h("p", { class: "muted" }, "Loading capabilities…"));
  const health = h("div", {}, h("p", { class: "muted" }, "Loading health…"));
  replace(root, h("div", { class: "about" },
    h("section", { "aria-labelledby": "caps-title" }, h("h2", { id: "caps-title" }, "What the host can do for this app"), caps),
    h("section", { "aria-labelledby": "health-title" }, h("h2", { id: "health-title" }, "Plugin health"), health)));

  ctx.capabilities().then((c) => {
    replace(caps,
      h("h3", {}, "Engines"),
      h("table", { class: "list engines" }, head("Engine", "Version", "Usable", "State", "Why not"),
        h("tbody", {}, c.engines.map((e) => h("tr", { dataset: { engine: e.name } },
          cell(h("code", {}, e.name)), cell(e.version), cell(yes(e.available && e.runtime_supported !== false)), cell(e.state),
          cell([e.reason, e.missing_features && e.missing_features.length ? `the sandbox lacks ${e.missing_features.join(", ")}` : ""]
            .filter(Boolean).join("; ")))))),
      h("h3", {}, "Sandbox backends"),
      h("table", { class: "list sandboxes" }, head("Backend", "Version", "State", "Isolation", "Meaning"),
        h("tbody", {}, c.sandbox_backends.map((s) => h("tr", { dataset: { sandbox: s.name } },
          cell(h("code", {}, s.name)), cell(s.version), cell(s.reason ? `${s.state}: ${s.reason}` : s.state),
          cell(h("strong", {}, s.isolation)), cell(ISOLATION[s.isolation] || ""))))),
      h("h3", {}, "Policy"),
      h("dl", { class: "policy" },
        h("dt", {}, "Default engine"), h("dd", {}, c.policy.default_engine),
        h("dt", {}, "Default sandbox"), h("dd", {}, c.policy.default_sandbox),
        h("dt", {}, "Native engine enabled"), h("dd", {}, yes(c.policy.native_enabled)),
        h("dt", {}, "Sandbox required"), h("dd", {}, yes(c.policy.sandbox_required)),
        h("dt", {}, "Stream resumption"), h("dd", {},
          `Last-Event-ID ${yes(c.stream_resumption.last_event_id)}, after_seq ${yes(c.stream_resumption.after_seq)}, heartbeat ${c.stream_resumption.heartbeat_seconds} s`)),
      h("h3", {}, "Tools"),
      h("table", { class: "list tools" }, head("Tool", "Toolpack", "Permission", "Toolpack default", "What it does"),
        h("tbody", {}, c.tools.map((t) => h("tr", {},
          cell(h("code", {}, t.name)), cell(t.toolpack), cell(h("span", { class: `perm-${t.permission}` }, t.permission)),
          cell(t.default_permission), cell(h("details", {}, h("summary", {}, "description"), t.description)))))));
  }).catch((e) => showError(caps, e));

  // /readyz needs no token; it answers 503 with the same body when
  // something is unhealthy, which is exactly what to show.
  fetch("/readyz", { cache: "no-store", credentials: "omit" }).then(async (res) => {
    const r = await res.json();
    replace(health,
      h("p", {}, "Database: ", h("strong", {}, r.database), r.host ? [" · host ", h("code", {}, r.host.id)] : null,
        ` · ready: ${res.ok ? "yes" : "no"}`),
      h("table", { class: "list plugins" }, head("Plugin", "Kind", "Version", "State", "Reason", "Restarts", "Isolation"),
        h("tbody", {}, (r.plugins || []).map((p) => h("tr", { dataset: { plugin: p.name } },
          cell(h("code", {}, p.name)), cell(p.kind), cell(p.version), cell(h("span", { class: `state-${p.state}` }, p.state)),
          cell(p.reason), cell(String(p.restarts)), cell(p.isolation))))));
  }).catch((e) => showError(health, { code: "NETWORK_ERROR", message: String(e) }));

  return () => {};
}
