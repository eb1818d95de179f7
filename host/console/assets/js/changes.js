// Changes: what each run did to the app's files (applied, merged,
// conflict, unchanged, from the run and its terminal event), the unified
// diff of its revision against its parent, and the app's checkpoints with
// Restore (a restore is a new revision on top; nothing is destroyed).

import { h, replace, showError, time, diffView, button, busy } from "./dom.js";
import { agentPath, appPath, get, page, post, runPath, session } from "./api.js";
import { RESULTS, changeList } from "./timeline.js";

// resultOf is a finished run's result: the run's context.result, else the
// one its terminal event carries.
async function resultOf(app, run) {
  const ctxResult = run.context && run.context.result;
  if (ctxResult) return ctxResult;
  if (!["completed", "failed", "cancelled"].includes(run.status)) return null;
  const p = await get(`${runPath(app, run.id)}/events?after_seq=0&limit=1000`);
  const end = p.items.find((e) => ["run.completed", "run.failed", "run.cancelled"].includes(e.event));
  return (end && end.payload && end.payload.result) || null;
}

export function changesView(root, ctx, runId) {
  const app = ctx.appId;
  const runList = h("ul", { class: "run-results" });
  const detail = h("section", { class: "change-detail", "aria-label": "Changes of the run" });
  const cps = h("tbody");
  const restored = h("div", { class: "restored", role: "status" });
  const err = h("div");
  replace(root, h("div", { class: "changes-view" },
    err,
    h("div", { class: "changes-layout" },
      h("nav", { "aria-label": "Runs" }, h("h2", {}, "Runs"), runList),
      detail),
    h("h2", { id: "checkpoints-title" }, "Checkpoints"), restored,
    h("table", { class: "list checkpoints", "aria-labelledby": "checkpoints-title" },
      h("thead", {}, h("tr", {}, ["Checkpoint", "Kind", "Label", "Revision", "Created", ""].map((t) => h("th", { scope: "col" }, t)))),
      cps)));

  (async () => {
    try {
      const runs = (await page(`${agentPath(app)}/runs`, "", 100)).items;
      replace(runList, runs.map((r) => h("li", {},
        h("a", { href: `#/apps/${app}/changes/${r.id}`, "aria-current": r.id === runId ? "page" : null },
          h("code", {}, r.id), ` · ${r.status}`,
          r.context && r.context.result ? [" · ", h("span", { class: `result kind-${r.context.result.kind}` }, r.context.result.kind)] : null))));
      if (!runs.length) runList.append(h("li", { class: "muted" }, "No runs yet."));
      const run = runs.find((r) => r.id === runId) || (runId ? await get(runPath(app, runId)) : runs[0]);
      if (run) await showRun(run);
      else replace(detail, h("p", { class: "muted" }, "No run to show."));
    } catch (e) {
      showError(err, e);
    }
  })();
  loadCheckpoints();

  async function showRun(run) {
    const result = await resultOf(app, run);
    const head = h("h2", {}, "Run ", h("code", {}, run.id));
    const facts = [h("p", {}, "Status ", h("span", { class: `badge status-${run.status}` }, run.status),
      run.error_code ? [" · ", h("code", {}, run.error_code), " ", run.error_message] : null)];
    if (!result) {
      replace(detail, head, facts, h("p", { class: "muted" }, run.status === "completed" || !["completed", "failed", "cancelled"].includes(run.status)
        ? "No result yet." : "The run changed nothing."));
      return;
    }
    facts.push(h("p", { class: "result-line" }, "Result ", h("span", { class: `result kind-${result.kind}` }, result.kind), ": ",
      RESULTS[result.kind] || "", result.revision_id ? [" · revision ", h("code", {}, result.revision_id)] : null,
      result.merged_into ? [" · merged into ", h("code", {}, result.merged_into)] : null,
      changeList(result.changes) ? [" · ", changeList(result.changes)] : null));
    if (result.conflicts && result.conflicts.length) {
      facts.push(h("ul", { class: "conflicts" }, result.conflicts.map((c) => h("li", {}, h("code", {}, c.path), ` ${c.reason || ""}`))));
    }
    const rev = result.revision_id || run.result_revision_id;
    if (!rev) {
      replace(detail, head, facts);
      return;
    }
    // The diff of the run's revision against its parent (the revision the
    // run started from).
    const d = await get(`${appPath(app)}/revisions/${encodeURIComponent(rev)}/diff`);
    replace(detail, head, facts,
      h("h3", {}, "Diff ", h("code", {}, d.from || "(empty)"), " → ", h("code", {}, d.to)),
      h("ul", { class: "diff-files" }, d.files.map((f) => h("li", {}, h("span", { class: `file-status ${f.status}` }, f.status), " ",
        h("a", { href: `#/apps/${app}/files/${d.to}?path=${encodeURIComponent(f.path)}` }, f.path)))),
      d.diff ? diffView(d.diff) : h("p", { class: "muted" }, "No line changed."),
      d.truncated ? h("p", { class: "muted" }, "The diff is cut: it is too large to show whole.") : null);
  }

  async function loadCheckpoints() {
    try {
      const p = await page(`${agentPath(app)}/checkpoints`, "", 100);
      replace(cps, p.items.map((cp) => h("tr", { dataset: { checkpoint: cp.id, kind: cp.kind } },
        h("td", {}, h("code", {}, cp.id)), h("td", {}, cp.kind), h("td", {}, cp.label),
        h("td", {}, h("code", {}, cp.revision_id), cp.is_draft ? h("span", { class: "badge" }, " draft") : null),
        h("td", {}, time(cp.created_at)),
        h("td", {}, session.canWrite && !cp.is_draft ? restoreButton(cp) : null))));
    } catch (e) {
      showError(err, e);
    }
  }

  function restoreButton(cp) {
    const btn = button("Restore", () => busy(btn, async () => {
      try {
        // The chat last open in this workspace hears of the restore (its
        // timeline shows a marker, its next run is told); without one, the
        // checkpoint's own chat does.
        const chat = ctx.lastChat();
        const r = await post(`${agentPath(app)}/checkpoints/${encodeURIComponent(cp.id)}/restore`, chat ? { chat_session_id: chat } : {});
        replace(restored, "Restored checkpoint ", h("code", {}, cp.id), ": the draft is now revision ",
          h("code", { class: "new-revision" }, r.draft_revision_id), " (checkpoint ", h("code", {}, r.checkpoint.id), "). ",
          h("a", { href: `#/apps/${app}/files/${r.draft_revision_id}` }, "See its files"),
          chat ? [" · ", h("a", { href: `#/apps/${app}/chat/${chat}` }, "back to the chat")] : null);
        showError(err, null);
        await loadCheckpoints();
      } catch (e) {
        showError(err, e);
      }
    }), { "aria-label": `Restore checkpoint ${cp.id} (${cp.label})` });
    return btn;
  }

  return () => {};
}
