// The app's files at any revision: pick the draft or a revision, browse
// its tree, read a file. Files are shown as text in a <pre> (never as a
// page); binary files are named with their size.

import { h, replace, showError, bytes, time } from "./dom.js";
import { appPath, filePath, page, get, request } from "./api.js";

// tree turns a manifest's paths into nested folders: {dirs: Map, files: []}.
function tree(files) {
  const root = { dirs: new Map(), files: [] };
  for (const f of files) {
    const parts = f.path.split("/");
    let node = root;
    for (const dir of parts.slice(0, -1)) {
      if (!node.dirs.has(dir)) node.dirs.set(dir, { dirs: new Map(), files: [] });
      node = node.dirs.get(dir);
    }
    node.files.push({ ...f, name: parts.at(-1) });
  }
  return root;
}

export function filesView(root, ctx, rev, path) {
  const app = ctx.appId;
  const picker = h("select", { id: "revision" }, h("option", { value: "draft" }, "draft (the app as it is now)"));
  const info = h("p", { class: "muted rev-info" });
  const treeEl = h("nav", { class: "file-tree", "aria-label": "Files" });
  const viewer = h("section", { class: "file-view", "aria-label": "File" });
  const err = h("div");
  replace(root, h("div", { class: "files" },
    h("div", { class: "toolbar" }, h("label", { for: picker.id }, "Revision"), picker, info),
    err, h("div", { class: "files-layout" }, treeEl, viewer)));
  picker.addEventListener("change", () => {
    location.hash = `#/apps/${app}/files/${picker.value}`;
  });

  const link = (p) => `#/apps/${app}/files/${rev}?path=${encodeURIComponent(p)}`;

  function renderDir(node, prefix) {
    const ul = h("ul", {});
    for (const [name, sub] of [...node.dirs].sort(([a], [b]) => a.localeCompare(b))) {
      const full = prefix + name + "/";
      ul.append(h("li", { class: "dir" },
        h("details", { open: path.startsWith(full) || prefix === "" ? true : null }, h("summary", {}, `${name}/`), renderDir(sub, full))));
    }
    for (const f of node.files.sort((a, b) => a.name.localeCompare(b.name))) {
      const full = prefix + f.name;
      ul.append(h("li", { class: "file" },
        h("a", { href: link(full), "aria-current": full === path ? "page" : null, title: `${bytes(f.size)} · sha256 ${f.sha256}` }, f.name)));
    }
    return ul;
  }

  (async () => {
    try {
      const [revs, cur] = await Promise.all([
        page(`${appPath(app)}/revisions`, "", 200),
        get(`${appPath(app)}/revisions/${encodeURIComponent(rev)}`),
      ]);
      for (const r of revs.items) {
        picker.append(h("option", { value: r.id, selected: r.id === rev ? true : null },
          `${r.id} · ${r.source}${r.is_draft ? " · draft" : ""}${r.applied ? "" : " · not applied"} · ${r.message || ""}`));
      }
      const r = cur.revision;
      replace(info, h("code", {}, r.id), ` · ${r.source} · ${r.file_count} files, ${bytes(r.total_size)} · `, time(r.created_at),
        r.parent_id ? [" · parent ", h("a", { href: `#/apps/${app}/files/${r.parent_id}` }, h("code", {}, r.parent_id))] : null);
      replace(treeEl, cur.files.length ? renderDir(tree(cur.files), "") : h("p", { class: "muted" }, "No files."));
      if (path) await show(cur.files.find((f) => f.path === path));
      else replace(viewer, h("p", { class: "muted" }, "Choose a file."));
    } catch (e) {
      showError(err, e);
    }
  })();

  async function show(entry) {
    if (!entry) {
      replace(viewer, h("p", { class: "muted" }, `No file ${path} in this revision.`));
      return;
    }
    const res = await request("GET", filePath(app, rev, path), { raw: true });
    const type = res.headers.get("Content-Type") || "";
    const head = h("h2", { class: "file-name" }, path, h("span", { class: "muted" }, ` ${bytes(entry.size)}`));
    if (type.startsWith("application/octet-stream")) {
      replace(viewer, head, h("p", { class: "muted" }, "A binary file: not shown."));
      return;
    }
    replace(viewer, head, h("pre", { class: "file-text", tabindex: "0", "aria-label": `Contents of ${path}` }, await res.text()));
  }

  return () => {};
}
