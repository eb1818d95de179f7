// Sign-in: an API token, checked with GET /admin/token (which also says
// its tenant and scopes) and kept in this tab's sessionStorage only. The
// form never submits anywhere (the page's policy has form-action 'none'),
// so the token cannot end up in a URL.

import { h, replace, showError } from "./dom.js";
import { get, session } from "./api.js";

// signInView mounts the form into root; onDone runs once signed in. err,
// when set, is why the last session ended (e.g. a revoked token).
export function signInView(root, onDone, err) {
  const token = h("input", { id: "token", type: "password", autocomplete: "off", spellcheck: "false", required: true });
  const slot = h("div");
  const submit = h("button", { type: "submit", class: "primary" }, "Sign in");
  const form = h("form", { class: "signin", method: "post", "aria-labelledby": "signin-title", onsubmit: async (e) => {
    e.preventDefault();
    const secret = token.value.trim();
    submit.disabled = true;
    try {
      const principal = await get("/admin/token", { token: secret });
      session.signIn(secret, principal);
      token.value = "";
      onDone();
    } catch (e2) {
      showError(slot, e2);
      token.select();
    } finally {
      submit.disabled = false;
    }
  } },
  h("h1", { id: "signin-title" }, "Sign in"),
  h("p", {}, "Sign in with an agenthost API token. It stays in this browser tab (sessionStorage) until you sign out or close the tab. ",
    "On a host started with ", h("code", {}, "make run"), " the token is ", h("code", {}, "dev-token"), "."),
  h("label", { for: "token" }, "API token"), token, submit, slot);
  replace(root, form);
  if (err) showError(slot, err);
  token.focus();
}
