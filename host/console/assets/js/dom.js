// A tiny DOM helper: every node is built with h(), so text is always set as
// text (never parsed as HTML) and the Content-Security-Policy needs no
// inline anything.

// h builds an element: h("button", {class: "x", onclick: fn}, "text", child).
// Attributes whose name starts with "on" are listeners; null, undefined and
// false leave an attribute (or a child) out; true sets an empty attribute.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

// append adds children (nodes, strings, numbers, nested arrays) to el.
export function append(el, ...children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

// replace empties el and fills it with children.
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

// errorBox shows an API error with its code and message (and the field and
// request id when there are any), for screen readers too (role=alert).
export function errorBox(err) {
  const code = err && err.code ? err.code : "ERROR";
  const msg = err && err.message ? err.message : String(err);
  return h("div", { class: "error", role: "alert" },
    h("code", { class: "code" }, code), " ", h("span", { class: "message" }, msg),
    err && err.field ? h("span", { class: "field" }, ` (field: ${err.field})`) : null,
    err && err.requestId ? h("span", { class: "muted" }, ` request ${err.requestId}`) : null);
}

// showError puts an error into a slot element (replacing what was there),
// or clears the slot when err is null.
export function showError(slot, err) {
  if (err) replace(slot, errorBox(err));
  else slot.replaceChildren();
}

// time renders an ISO timestamp as local date and time.
export function time(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  return h("time", { datetime: iso, title: iso }, d.toLocaleString());
}

// ms renders a duration in milliseconds.
export function ms(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return "—";
  if (n < 1000) return `${Math.round(n)} ms`;
  if (n < 60000) return `${(n / 1000).toFixed(1)} s`;
  return `${Math.floor(n / 60000)} min ${Math.round((n % 60000) / 1000)} s`;
}

// bytes renders a size.
export function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / (1 << 20)).toFixed(1)} MiB`;
}

// json pretty-prints a value for a <pre>.
export function json(v) {
  return JSON.stringify(v, null, 2);
}

// button is a real <button type=button> with a click handler.
export function button(label, onclick, attrs = {}) {
  return h("button", { type: "button", ...attrs, onclick }, label);
}

// busy disables a control while an async action runs, and re-enables it
// after unless the action returns false (the control is gone or done).
export async function busy(ctl, fn) {
  ctl.disabled = true;
  let keep = true;
  try {
    keep = (await fn()) !== false;
  } finally {
    if (keep) ctl.disabled = false;
  }
}

// diffView renders a unified diff line by line, each line classed by its
// kind (add, del, hunk, meta) so that it reads like a terminal's.
export function diffView(text) {
  const pre = h("pre", { class: "diff", tabindex: "0", "aria-label": "Unified diff" });
  for (const line of text.split("\n")) {
    if (line === "") continue;
    let kind = "ctx";
    if (line.startsWith("+++") || line.startsWith("---")) kind = "meta";
    else if (line.startsWith("@@")) kind = "hunk";
    else if (line.startsWith("+")) kind = "add";
    else if (line.startsWith("-")) kind = "del";
    else if (line.startsWith("Binary files")) kind = "meta";
    pre.append(h("span", { class: `line ${kind}` }, line), "\n");
  }
  return pre;
}
