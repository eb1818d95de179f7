// One run in a chat's timeline: the user's prompt, then every event of the
// run as it arrives. Each event is rendered by exactly one element carrying
// data-seq and data-event (a delta is a <span> in the text it extends, a
// tool's end replaces the "running" mark of its row), so the page can be
// held to the run's log: nothing missing, nothing twice.

import { h, append, button, busy, errorBox, json, ms, showError } from "./dom.js";
import { post, runPath, session } from "./api.js";

const TERMINAL = new Set(["run.completed", "run.failed", "run.cancelled"]);

const STAGES = {
  sandbox_starting: "Starting the sandbox",
  sandbox_ready: "Sandbox ready",
  engine_starting: "Starting the engine",
  applying: "Applying the result",
  warning: "Warning",
};

const PAUSES = {
  permission: "waiting for a decision",
  token_budget: "the run used its token budget",
  interrupted: "the host stopped while the run worked",
  host_lost: "the host that ran it was lost",
};

// RESULTS say what became of a finished run's files.
export const RESULTS = {
  applied: "the run's changes are the new draft",
  merged: "merged with newer changes to the draft",
  conflict: "clashes with newer changes to the draft: kept aside, the draft is unchanged",
  unchanged: "no file changed",
};

// isTerminal reports whether a status is final.
export const isTerminal = (status) => ["completed", "failed", "cancelled"].includes(status);

function mark(el, env) {
  el.dataset.seq = env.seq;
  el.dataset.event = env.event;
  return el;
}

function code(text) {
  return h("code", {}, text);
}

// changeList names the files of a {added, modified, deleted} change set.
export function changeList(ch) {
  if (!ch) return null;
  const parts = [];
  for (const k of ["added", "modified", "deleted"]) {
    if (ch[k] && ch[k].length) parts.push(`${k}: ${ch[k].join(", ")}`);
  }
  return parts.length ? h("span", { class: "changes" }, parts.join(" · ")) : null;
}

// RunView renders one run. opts: onStatus(view) when the run's status
// changes, onRestore(checkpointId) for a checkpoint's Restore button.
export class RunView {
  constructor(app, run, prompt, opts = {}) {
    this.app = app;
    this.run = run;
    this.status = run.status;
    this.opts = opts;
    this.tools = new Map();
    this.perms = new Map();
    this.badge = h("span", { class: "badge" });
    this.events = h("ol", { class: "events", "aria-label": `Events of run ${run.id}` });
    this.actions = h("div", { class: "run-actions" });
    this.el = h("li", { class: "run", dataset: { run: run.id } },
      h("div", { class: "bubble user" }, h("span", { class: "speaker" }, "You"), h("pre", { class: "prompt" }, prompt || "")),
      h("div", { class: "run-head" },
        "Run ", code(run.id), " · ", run.execution_engine || "—",
        run.resolved_model_id ? [" · model ", code(run.resolved_model_id)] : null, " · ", this.badge, " ",
        h("a", { href: `#/apps/${app}/changes/${run.id}` }, "Changes"), " · ",
        h("a", { href: `#/apps/${app}/runs/${run.id}` }, "Event log")),
      this.events, this.actions);
    this.setStatus(run.status);
  }

  setStatus(status) {
    if (!status) return;
    this.status = status;
    this.badge.textContent = status;
    this.badge.className = `badge status-${status}`;
    if (isTerminal(status) && this.resumeBtn) {
      this.resumeBtn.remove();
      this.resumeBtn = null;
    }
    if (this.opts.onStatus) this.opts.onStatus(this);
  }

  get active() {
    return !isTerminal(this.status);
  }

  // line appends a one-line event row.
  line(env, cls, ...content) {
    const li = mark(h("li", { class: `ev ${cls}` }, ...content), env);
    this.events.append(li);
    return li;
  }

  // apply renders one event; the caller delivers each event once, in order.
  apply(env) {
    const p = env.payload || {};
    switch (env.event) {
      case "run.accepted":
        this.line(env, "status", `Accepted · engine ${p.engine || "—"} · sandbox ${p.sandbox_backend || "—"}`);
        this.setStatus("queued");
        break;
      case "run.status":
        this.line(env, "status", STAGES[p.stage] || p.stage || "status", p.message ? `: ${p.message}` : "",
          p.left_out ? ` (left out: ${p.left_out.map((l) => l.path).join(", ")})` : "");
        if (this.status === "queued") this.setStatus("running");
        break;
      case "assistant.delta":
        this.delta(env, p.text || "");
        break;
      case "tool.started":
        this.toolStarted(env, p);
        break;
      case "tool.completed":
      case "tool.failed":
        this.toolEnded(env, p);
        break;
      case "permission.requested":
        this.permission(env, p);
        break;
      case "permission.resolved":
        this.resolved(env, p);
        break;
      case "run.paused":
        this.paused(env, p);
        break;
      case "run.resumed":
        this.line(env, "status", "Resumed", p.from_saved_state ? " from its saved state" : "");
        this.dropResume();
        this.setStatus("running");
        break;
      case "revision.created":
        this.line(env, "revision", "Revision ", code(p.revision_id), p.applied ? " is the new draft" : " kept aside (not applied)",
          changeList(p.changes) ? [" · ", changeList(p.changes)] : null);
        break;
      case "checkpoint.created":
        this.checkpoint(env, p);
        break;
      default:
        if (TERMINAL.has(env.event)) this.finished(env, p);
        else this.line(env, "other", env.event, " ", h("code", {}, JSON.stringify(p)));
    }
  }

  delta(env, text) {
    let block = this.events.lastElementChild;
    if (!block || !block.classList.contains("say")) {
      block = h("li", { class: "ev say" }, h("span", { class: "speaker" }, "Agent"), h("p", { class: "text" }));
      this.events.append(block);
    }
    block.querySelector(".text").append(mark(h("span", {}, text), env));
    if (this.status === "queued") this.setStatus("running");
  }

  toolStarted(env, p) {
    const state = h("span", { class: "tool-state running" }, "running…");
    const dur = h("span", { class: "tool-dur" });
    const out = h("div", { class: "tool-out" });
    const row = this.line(env, "tool",
      h("details", {},
        h("summary", {}, "Tool ", h("span", { class: "tool-name" }, p.tool), " ", state, " ", dur),
        h("h4", {}, "Input"), h("pre", { class: "tool-in" }, json(p.input)), out));
    row.dataset.call = p.tool_call_id;
    this.tools.set(p.tool_call_id, { row, state, dur, out, ts: env.ts });
  }

  toolEnded(env, p) {
    const ok = env.event === "tool.completed";
    const t = this.tools.get(p.tool_call_id);
    const state = mark(h("span", { class: `tool-state ${ok ? "ok" : "failed"}` }, ok ? "completed" : `failed ${p.error_code || ""}`), env);
    if (!t) {
      // The log always starts a call before it ends it; show it anyway.
      this.line(env, "tool", "Tool ", p.tool, " ", state.textContent).dataset.call = p.tool_call_id;
      return;
    }
    t.state.replaceWith(state);
    t.dur.textContent = ms(Date.parse(env.ts) - Date.parse(t.ts));
    t.row.classList.add(ok ? "ok" : "failed");
    if (ok) append(t.out, h("h4", {}, "Output"), h("pre", { class: "tool-output" }, json(p.output)));
    else append(t.out, h("h4", {}, "Error"), errorBox({ code: p.error_code, message: p.error_message, field: p.field }));
  }

  permission(env, p) {
    const slot = h("div");
    let actions;
    if (session.canWrite) {
      // The buttons stay disabled after a decision is taken:
      // permission.resolved replaces them.
      const decide = (decision) => async () => {
        allow.disabled = deny.disabled = true;
        try {
          await post(`${runPath(this.app, this.run.id)}/resume`, { decision });
          showError(slot, null);
        } catch (err) {
          showError(slot, err);
          allow.disabled = deny.disabled = false;
        }
      };
      const allow = button("Allow", decide("allow"), { class: "allow" });
      const deny = button("Deny", decide("deny"), { class: "deny" });
      actions = h("div", { class: "perm-actions" }, allow, deny);
    } else {
      actions = h("p", { class: "muted" }, "This token is read-only: someone who may write decides.");
    }
    const card = this.line(env, "card perm",
      h("h3", {}, "Permission requested"),
      h("p", { class: "perm-title" }, p.title || p.action),
      h("p", { class: "muted" }, "Action ", code(p.action || "—")),
      p.details ? h("pre", {}, json(p.details)) : null, actions, slot);
    card.setAttribute("role", "group");
    card.setAttribute("aria-label", `Permission requested: ${p.title || p.action}`);
    this.perms.set(p.permission_id, { card, actions });
  }

  resolved(env, p) {
    const d = h("p", { class: `decision ${p.allow ? "allow" : "deny"}` }, p.allow ? "Allowed" : "Denied", p.reason ? `: ${p.reason}` : "");
    const pending = this.perms.get(p.permission_id);
    if (!pending) {
      this.line(env, "status", d);
      return;
    }
    pending.actions.remove();
    pending.card.append(mark(d, env));
  }

  paused(env, p) {
    this.line(env, "status paused", "Paused: ", PAUSES[p.reason] || p.reason || "paused", p.message ? ` (${p.message})` : "");
    this.setStatus("paused");
    if (p.reason !== "permission" && session.canWrite) this.offerResume();
  }

  // offerResume shows Resume for a run paused for another reason than a
  // permission (its token budget, a host restart): it continues with {}.
  offerResume() {
    if (this.resumeBtn) return;
    const slot = h("div");
    const btn = button("Resume run", () => busy(btn, async () => {
      try {
        await post(`${runPath(this.app, this.run.id)}/resume`, {});
        showError(slot, null);
        return false;
      } catch (err) {
        showError(slot, err);
      }
    }), { class: "resume" });
    this.resumeBtn = h("div", { class: "resume-box" }, btn, slot);
    this.actions.append(this.resumeBtn);
  }

  dropResume() {
    if (this.resumeBtn) this.resumeBtn.remove();
    this.resumeBtn = null;
  }

  checkpoint(env, p) {
    const li = this.line(env, "checkpoint", "Checkpoint ", code(p.checkpoint_id), ` (${p.kind})`, p.label ? ` ${p.label}` : "");
    if (session.canWrite && this.opts.onRestore) {
      const btn = button("Restore", () => busy(btn, () => this.opts.onRestore(p.checkpoint_id)), {
        class: "small", "aria-label": `Restore checkpoint ${p.checkpoint_id}`,
      });
      li.append(" ", btn);
    }
  }

  finished(env, p) {
    const status = p.status || env.event.slice("run.".length);
    const r = p.result;
    const content = [h("strong", {}, status === "completed" ? "Completed" : status === "failed" ? "Failed" : "Cancelled")];
    if (r) {
      content.push(" · ", h("span", { class: `result kind-${r.kind}` }, r.kind), ": ", RESULTS[r.kind] || "");
      if (r.revision_id) content.push(" · revision ", code(r.revision_id));
      if (changeList(r.changes)) content.push(" · ", changeList(r.changes));
      if (r.conflicts && r.conflicts.length) {
        content.push(h("ul", { class: "conflicts" }, r.conflicts.map((c) => h("li", {}, code(c.path), ` ${c.reason || ""}`))));
      }
    }
    if (p.error_code) content.push(errorBox({ code: p.error_code, message: p.error_message }));
    if (r) content.push(" ", h("a", { href: `#/apps/${this.app}/changes/${this.run.id}` }, "View changes"));
    this.line(env, `result-row end-${status}`, ...content);
    this.dropResume();
    for (const { actions } of this.perms.values()) actions.remove();
    this.setStatus(status);
  }
}

// restoreMarker is the timeline's mark of a checkpoint restored in the
// chat: the checkpoint the files came back from and the new revision.
export function restoreMarker(from, revisionId, at) {
  return h("li", { class: "marker restore", dataset: { restore: revisionId } },
    h("span", {}, "Restored checkpoint "), code(from), h("span", {}, ": the draft is now revision "), code(revisionId),
    at ? [" · ", new Date(at).toLocaleString()] : null);
}
