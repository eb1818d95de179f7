// The chat panel: the app's chat sessions, and the open one's timeline
// (each run's prompt and events, restores in between) with the composer.
// Opening a chat (also after a reload) reads each run's events from the
// log and follows the runs still going from their last seq.

import { h, replace, busy, showError } from "./dom.js";
import { agentPath, get, page, post, runPath, session } from "./api.js";
import { RunView, restoreMarker } from "./timeline.js";
import { Follower } from "./follow.js";
import { Composer } from "./composer.js";

const LIVE = { loading: "loading events…", live: "● live", reconnecting: "reconnecting…", done: "", closed: "" };

// chatView mounts the chat panel of ctx's app into root, chatId open (or
// none: the first message starts a chat). It returns what unmounts it.
export function chatView(root, ctx, chatId) {
  const app = ctx.appId;
  const followers = [];
  const views = [];
  const list = h("ul", { class: "chat-list" });
  const listErr = h("div");
  const timeline = h("ol", { class: "timeline", "aria-label": "Chat timeline" });
  const scroller = h("div", { class: "timeline-scroll", tabindex: "0", "aria-label": "Chat timeline" }, timeline);
  const live = h("span", { class: "live", role: "status" });
  const err = h("div");
  // Trouble following a stream is shown while the follower retries, and
  // goes once it follows again.
  const streamErr = h("div");
  const title = h("h2", {}, chatId ? "Chat" : "New chat");
  let gone = false;

  const composer = session.canWrite ? new Composer(ctx, {
    onSend: send,
    onCancel: (view) => post(`${runPath(app, view.run.id)}/cancel`),
  }) : null;

  const newTitle = h("input", { id: "new-chat-title", type: "text", maxlength: 200, placeholder: "optional" });
  const newChat = session.canWrite ? h("form", { class: "new-chat", method: "post", onsubmit: createChat },
    h("label", { for: newTitle.id }, "Title of a new chat"), newTitle, h("button", { type: "submit" }, "New chat")) : null;

  replace(root, h("div", { class: "chat-layout" },
    h("aside", { class: "chats", "aria-label": "Chat sessions" }, h("h2", {}, "Chats"), newChat, listErr, list),
    h("section", { class: "chat-main" },
      h("div", { class: "chat-head" }, title, live),
      err, streamErr, scroller,
      composer ? composer.el : h("p", { class: "muted" }, "This token is read-only: it can watch runs, not start them."))));

  loadChats();
  if (chatId) {
    ctx.rememberChat(chatId);
    openChat();
  } else {
    timeline.append(h("li", { class: "muted empty" }, "No chat open: pick one, start a new chat, or send a message."));
  }

  async function createChat(e) {
    e.preventDefault();
    const btn = e.target.querySelector("button");
    await busy(btn, async () => {
      try {
        const body = newTitle.value.trim() ? { title: newTitle.value.trim() } : {};
        const chat = await post(`${agentPath(app)}/chat-sessions`, body);
        location.hash = `#/apps/${app}/chat/${chat.id}`;
      } catch (e2) {
        showError(listErr, e2);
      }
    });
  }

  async function loadChats() {
    try {
      const p = await page(`${agentPath(app)}/chat-sessions`, "", 100);
      replace(list, p.items.map((c) => h("li", {},
        h("a", { href: `#/apps/${app}/chat/${c.id}`, "aria-current": c.id === chatId ? "page" : null },
          c.title || "Untitled chat"))));
      if (!p.items.length) list.append(h("li", { class: "muted" }, "No chats yet."));
    } catch (e) {
      showError(listErr, e);
    }
  }

  // The newest event stays in view unless the reader scrolled up to read.
  const atBottom = () => scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 40;
  const toBottom = () => {
    scroller.scrollTop = scroller.scrollHeight;
  };

  function activeChanged() {
    const active = views.filter((v) => v.active).at(-1) || null;
    if (composer) composer.setActive(active);
  }

  // addRun puts a run into the timeline and returns its follower.
  function addRun(run, prompt) {
    const view = new RunView(app, run, prompt, { onStatus: activeChanged, onRestore: restore });
    views.push(view);
    timeline.append(view.el);
    const f = new Follower(app, run.id, {
      onEvent: (env) => {
        const stick = atBottom();
        view.apply(env);
        if (stick) toBottom();
      },
      onState: (s) => {
        live.textContent = LIVE[s] ?? s;
        live.dataset.state = s;
        if (s === "live" || s === "done") showError(streamErr, null);
      },
      onError: (e) => showError(streamErr, e),
    });
    followers.push(f);
    activeChanged();
    return f;
  }

  async function openChat() {
    try {
      const [chat, cps] = await Promise.all([
        get(`${agentPath(app)}/chat-sessions/${encodeURIComponent(chatId)}`),
        page(`${agentPath(app)}/checkpoints?chat_session_id=${encodeURIComponent(chatId)}`, "", 200),
      ]);
      title.textContent = chat.title || "Untitled chat";
      // The chat's user turns name their runs; restores made for this chat
      // go between them by time.
      const items = [];
      for (const m of chat.messages || []) {
        if (m.role === "user" && m.run_id) items.push({ at: Date.parse(m.created_at), run: m.run_id, prompt: m.content });
      }
      for (const cp of cps.items) {
        if (cp.kind === "restore") items.push({ at: Date.parse(cp.created_at), cp });
      }
      items.sort((a, b) => a.at - b.at);
      const runs = await Promise.all(items.filter((i) => i.run).map((i) => get(runPath(app, i.run))));
      if (gone) return;
      const byId = new Map(runs.map((r) => [r.id, r]));
      const started = [];
      for (const it of items) {
        if (it.cp) timeline.append(restoreMarker(it.cp.label.replace(/^restored /, ""), it.cp.revision_id, it.cp.created_at));
        else started.push(addRun(byId.get(it.run), it.prompt));
      }
      if (!items.length) timeline.append(h("li", { class: "muted empty" }, "No messages yet."));
      // What the log holds first, every run; then the live stream of those
      // still going, from their last seq.
      await Promise.all(started.map((f) => f.catchUp()));
      if (gone) return;
      toBottom();
      for (const f of started) if (!f.done) f.open();
    } catch (e) {
      showError(err, e);
    }
  }

  async function send(req) {
    if (chatId) req.chat_session_id = chatId;
    const run = await post(`${agentPath(app)}/runs`, req);
    if (!chatId) {
      // The run started a chat: open it (its page follows the run).
      location.hash = `#/apps/${app}/chat/${run.chat_session_id}`;
      return;
    }
    const empty = timeline.querySelector(".empty");
    if (empty) empty.remove();
    addRun(run, req.prompt).start().catch((e) => showError(err, e));
    toBottom();
  }

  // restore makes a checkpoint the draft again and marks it in the chat.
  async function restore(checkpointId) {
    try {
      const r = await post(`${agentPath(app)}/checkpoints/${encodeURIComponent(checkpointId)}/restore`,
        chatId ? { chat_session_id: chatId } : {});
      timeline.append(restoreMarker(checkpointId, r.draft_revision_id, r.checkpoint.created_at));
      showError(err, null);
      toBottom();
    } catch (e) {
      showError(err, e);
    }
  }

  return () => {
    gone = true;
    for (const f of followers) f.close();
  };
}
