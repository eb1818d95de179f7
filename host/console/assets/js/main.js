// The console's entry point: sign-in state and the router. Routes live in
// the URL's fragment (#/apps/{app}/chat/{chat} …), which the browser never
// sends to a server; the token never appears in a URL at all.

import { h, replace, button } from "./dom.js";
import { get, onUnauthenticated, session } from "./api.js";
import { signInView } from "./signin.js";
import { appsView } from "./apps.js";
import { forget, workspaceView } from "./workspace.js";

const main = document.getElementById("main");
const who = document.getElementById("who");
let unmount = () => {};
let generation = 0;

function renderWho() {
  const p = session.principal;
  if (!p) {
    who.replaceChildren();
    return;
  }
  replace(who,
    h("span", { class: "tenant" }, "Tenant ", h("strong", {}, p.tenant_id)), " · ",
    h("span", { class: "user" }, p.user_id), " · ",
    h("span", { class: "scopes", title: "the token's scopes" }, p.scopes.join(", ")),
    session.canWrite ? null : [" ", h("span", { class: "badge readonly" }, "read-only")],
    " ", button("Sign out", () => {
      // Whoever signs in next starts from the apps, not from this place.
      history.replaceState(null, "", "#/");
      signOut();
    }, { class: "signout" }));
}

function signOut(reason) {
  session.signOut();
  forget();
  for (let i = sessionStorage.length - 1; i >= 0; i--) {
    const k = sessionStorage.key(i);
    if (k && k.startsWith("agenthost.console.")) sessionStorage.removeItem(k);
  }
  unmount();
  unmount = () => {};
  renderWho();
  replace(main);
  signInView(main, signedIn, reason instanceof Error ? reason : null);
}

function signedIn() {
  route();
  main.focus();
}

// parse splits "#/apps/x/files/draft?path=a/b" into segments and a query.
function parse(hash) {
  const [path, query = ""] = hash.slice(2).split("?");
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(query) };
}

async function route() {
  // "#main" and other in-page anchors are not routes.
  if (location.hash && !location.hash.startsWith("#/")) return;
  const gen = ++generation;
  unmount();
  unmount = () => {};
  if (!session.principal) {
    if (!session.token) {
      signOut();
      return;
    }
    try {
      // The token given explicitly: a refusal is answered here, once.
      session.principal = await get("/admin/token", { token: session.token });
    } catch (err) {
      if (gen === generation) signOut(err);
      return;
    }
    if (gen !== generation) return;
  }
  renderWho();
  const { parts, query } = parse(location.hash || "#/");
  if (parts[0] === "apps" && parts[1]) {
    unmount = workspaceView(main, parts[1], parts.slice(2), query) || (() => {});
  } else {
    document.title = "agenthost console";
    unmount = appsView(main) || (() => {});
  }
}

// A token revoked or expired while the tab is open: back to sign-in, with
// the host's answer.
onUnauthenticated((err) => signOut(err));
window.addEventListener("hashchange", route);
route();
