// Runs: every run of the app with its status, engine, model, duration,
// tokens and phase timings (context.timing_metrics_ms), and one run's raw
// record and event log as JSON, for debugging.

import { h, replace, showError, time, ms, json } from "./dom.js";
import { agentPath, allEvents, get, page, runPath } from "./api.js";

function duration(r) {
  const end = r.finished_at ? Date.parse(r.finished_at) : Date.now();
  return ms(end - Date.parse(r.created_at));
}

function timings(r) {
  const t = r.context && r.context.timing_metrics_ms;
  if (!t) return "—";
  return h("span", { class: "timings" }, Object.entries(t).map(([k, v]) => `${k} ${ms(v)}`).join(" · "));
}

export function runsView(root, ctx, runId) {
  const app = ctx.appId;
  const rows = h("tbody");
  const more = h("button", { type: "button", hidden: true }, "Load more");
  const detail = h("section", { class: "run-detail", "aria-label": "Run record and event log" });
  const err = h("div");
  let cursor = "";
  replace(root, h("div", { class: "runs-view" }, err,
    h("table", { class: "list runs" },
      h("thead", {}, h("tr", {}, ["Run", "Status", "Engine", "Model", "Created", "Duration", "Tokens in / out", "Timings"]
        .map((t) => h("th", { scope: "col" }, t)))),
      rows),
    more, detail));
  more.addEventListener("click", load);
  load();
  if (runId) showRun();

  async function load() {
    try {
      const p = await page(`${agentPath(app)}/runs`, cursor);
      for (const r of p.items) {
        rows.append(h("tr", { dataset: { run: r.id }, "aria-current": r.id === runId ? "true" : null },
          h("td", {}, h("a", { href: `#/apps/${app}/runs/${r.id}` }, h("code", {}, r.id))),
          h("td", {}, h("span", { class: `badge status-${r.status}` }, r.status), r.pause_reason ? ` (${r.pause_reason})` : "",
            r.error_code ? [" ", h("code", {}, r.error_code)] : null),
          h("td", {}, r.execution_engine),
          h("td", {}, r.resolved_model_id ? h("code", {}, r.resolved_model_id) : "—"),
          h("td", {}, time(r.created_at)),
          h("td", {}, duration(r)),
          h("td", {}, `${r.input_tokens} / ${r.output_tokens}`),
          h("td", {}, timings(r))));
      }
      if (!rows.children.length) rows.append(h("tr", {}, h("td", { colspan: 8, class: "muted" }, "No runs yet.")));
      cursor = p.next_cursor;
      more.hidden = !cursor;
    } catch (e) {
      showError(err, e);
    }
  }

  async function showRun() {
    try {
      const run = await get(runPath(app, runId));
      const events = [];
      await allEvents(app, runId, 0, (items) => events.push(...items));
      replace(detail,
        h("h2", {}, "Run ", h("code", {}, run.id)),
        h("p", {}, h("a", { href: run.chat_session_id ? `#/apps/${app}/chat/${run.chat_session_id}` : `#/apps/${app}/chat` }, "Open its chat"),
          " · ", h("a", { href: `#/apps/${app}/changes/${run.id}` }, "Its changes")),
        h("details", {}, h("summary", {}, "Run record (JSON)"), h("pre", { class: "json run-json", tabindex: "0" }, json(run))),
        h("h3", { id: "event-log-title" }, `Event log (${events.length} events)`),
        h("pre", { class: "json event-log", tabindex: "0", "aria-labelledby": "event-log-title" }, json(events)));
    } catch (e) {
      showError(err, e);
    }
  }

  return () => {};
}
