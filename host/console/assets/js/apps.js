// The tenant's apps: a list (newest first, a page at a time) and, for a
// token that may write, a form that creates one from a bundled template
// (GET /admin/app-templates) or from an uploaded zip, tar or tar.gz.

import { h, replace, showError, time } from "./dom.js";
import { get, page, request, session } from "./api.js";

// archiveType is the Content-Type POST /admin/apps takes for a file name.
function archiveType(name) {
  const n = name.toLowerCase();
  if (n.endsWith(".zip")) return "application/zip";
  if (n.endsWith(".tar.gz") || n.endsWith(".tgz")) return "application/gzip";
  if (n.endsWith(".tar")) return "application/x-tar";
  return "";
}

export function appsView(root) {
  const rows = h("tbody");
  const more = h("button", { type: "button", hidden: true }, "Load more");
  const err = h("div");
  let cursor = "";
  replace(root, h("div", { class: "apps" },
    h("h1", {}, "Apps"),
    session.canWrite ? createForm() : h("p", { class: "muted" }, "This token is read-only: it cannot create apps."),
    h("h2", {}, "Your apps"), err,
    h("table", { class: "list" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Name"), h("th", { scope: "col" }, "Id"),
        h("th", { scope: "col" }, "Draft revision"), h("th", { scope: "col" }, "Created"))),
      rows),
    more));
  more.addEventListener("click", load);
  load();

  async function load() {
    try {
      const p = await page("/admin/apps", cursor);
      for (const a of p.items) {
        rows.append(h("tr", {},
          h("td", {}, h("a", { href: `#/apps/${a.id}` }, a.name)), h("td", {}, h("code", {}, a.id)),
          h("td", {}, h("code", {}, a.draft_revision_id)), h("td", {}, time(a.created_at))));
      }
      if (!rows.children.length) rows.append(h("tr", {}, h("td", { colspan: 4, class: "muted" }, "No apps yet.")));
      cursor = p.next_cursor;
      more.hidden = !cursor;
    } catch (e) {
      showError(err, e);
    }
  }
}

function createForm() {
  const name = h("input", { id: "app-name", type: "text", required: true, maxlength: 200 });
  const fromTemplate = h("input", { id: "src-template", type: "radio", name: "source", value: "template", checked: true });
  const fromArchive = h("input", { id: "src-archive", type: "radio", name: "source", value: "archive" });
  const template = h("select", { id: "app-template" });
  const archive = h("input", { id: "app-archive", type: "file", accept: ".zip,.tar,.tar.gz,.tgz" });
  const submit = h("button", { type: "submit", class: "primary" }, "Create app");
  const err = h("div");
  const sync = () => {
    template.disabled = !fromTemplate.checked;
    archive.disabled = !fromArchive.checked;
  };
  fromTemplate.addEventListener("change", sync);
  fromArchive.addEventListener("change", sync);
  sync();
  get("/admin/app-templates").then((t) => {
    replace(template, t.items.map((x) => h("option", { value: x.name }, `${x.name}: ${x.description}`)));
  }).catch((e) => showError(err, e));

  const form = h("form", { class: "create-app", method: "post", "aria-labelledby": "create-title", onsubmit: async (e) => {
    e.preventDefault();
    submit.disabled = true;
    try {
      let app;
      if (fromArchive.checked) {
        const f = archive.files[0];
        if (!f) throw Object.assign(new Error("choose a .zip, .tar or .tar.gz file to upload"), { code: "INVALID_REQUEST", field: "archive" });
        const type = archiveType(f.name);
        if (!type) throw Object.assign(new Error(`${f.name} is not a .zip, .tar or .tar.gz file`), { code: "INVALID_REQUEST", field: "archive" });
        app = await request("POST", `/admin/apps?name=${encodeURIComponent(name.value)}`, { body: f, contentType: type });
      } else {
        app = await request("POST", "/admin/apps", { json: { name: name.value, template: template.value } });
      }
      location.hash = `#/apps/${app.id}`;
    } catch (e2) {
      showError(err, e2);
    } finally {
      submit.disabled = false;
    }
  } },
  h("h2", { id: "create-title" }, "New app"),
  h("div", { class: "field" }, h("label", { for: name.id }, "Name"), name),
  h("fieldset", {}, h("legend", {}, "Start from"),
    h("div", { class: "field" }, fromTemplate, h("label", { for: fromTemplate.id }, "a template"), template),
    h("div", { class: "field" }, fromArchive, h("label", { for: fromArchive.id }, "an archive (zip, tar, tar.gz)"), archive)),
  submit, err);
  template.setAttribute("aria-label", "Template");
  archive.setAttribute("aria-label", "Archive to upload");
  return form;
}
