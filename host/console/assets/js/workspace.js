// An app's workspace: its name and draft, tabs for the chat, its files,
// changes, runs and what the host can do for it; each tab is a view
// module mounted into the panel below the tabs.

import { h, replace, showError } from "./dom.js";
import { agentPath, appPath, get } from "./api.js";
import { chatView } from "./chat.js";
import { filesView } from "./files.js";
import { changesView } from "./changes.js";
import { runsView } from "./runs.js";
import { aboutView } from "./about.js";

const TABS = [
  ["chat", "Chat"],
  ["files", "Files"],
  ["changes", "Changes"],
  ["runs", "Runs"],
  ["about", "Capabilities"],
];

const chatKey = (app) => `agenthost.console.chat.${app}`;

// Capabilities and models change rarely; a session reads each once.
const cache = new Map();

// forget drops what the session read (at sign-out: the next token may be
// another tenant's).
export function forget() {
  cache.clear();
}

function once(key, load) {
  if (!cache.has(key)) cache.set(key, load().catch((e) => {
    cache.delete(key);
    throw e;
  }));
  return cache.get(key);
}

// workspaceView mounts app appId's workspace with the route's rest
// (["chat", chatId], ["files", rev], …) and query; it returns what
// unmounts it.
export function workspaceView(root, appId, rest, query) {
  const tab = TABS.some(([t]) => t === rest[0]) ? rest[0] : "chat";
  const ctx = {
    appId,
    capabilities: () => once(`caps:${appId}`, () => get(`${agentPath(appId)}/capabilities`)),
    models: () => once("models", () => get("/models")),
    rememberChat: (id) => sessionStorage.setItem(chatKey(appId), id),
    lastChat: () => sessionStorage.getItem(chatKey(appId)) || "",
    app: null,
  };
  const name = h("h1", {}, appId);
  const draft = h("span", { class: "muted draft" });
  const err = h("div");
  const panel = h("div", { class: "panel", id: "panel" });
  const chatHref = ctx.lastChat() ? `#/apps/${appId}/chat/${ctx.lastChat()}` : `#/apps/${appId}/chat`;
  const nav = h("nav", { class: "tabs", "aria-label": "App" }, TABS.map(([t, label]) =>
    h("a", { href: t === "chat" ? chatHref : `#/apps/${appId}/${t}`, "aria-current": t === tab ? "page" : null }, label)));
  replace(root, h("div", { class: "workspace" },
    h("div", { class: "app-head" }, h("a", { href: "#/", class: "back" }, "← Apps"), name, draft), err, nav, panel));

  get(appPath(appId)).then((a) => {
    ctx.app = a;
    name.textContent = a.name;
    draft.textContent = `${a.id} · draft ${a.draft_revision_id}`;
    document.title = `${a.name} · agenthost console`;
  }).catch((e) => showError(err, e));

  switch (tab) {
    case "files":
      return filesView(panel, ctx, rest[1] || "draft", query.get("path") || "");
    case "changes":
      return changesView(panel, ctx, rest[1] || "");
    case "runs":
      return runsView(panel, ctx, rest[1] || "");
    case "about":
      return aboutView(panel, ctx);
    default:
      return chatView(panel, ctx, rest[1] || "");
  }
}
