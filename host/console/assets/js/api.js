// The console's only way to the host: its public REST API, with the token
// from sessionStorage in an Authorization header. The token never goes
// into a URL; streams use stream tickets (see follow.js).

const TOKEN_KEY = "agenthost.console.token";

// ApiError is a failed answer: detail.code and detail.message of the
// API's error envelope (or a code of the console's own when the host did
// not answer with one).
export class ApiError extends Error {
  constructor(status, code, message, field, requestId) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field || "";
    this.requestId = requestId || "";
  }
}

// session is who is signed in: the token and what GET /admin/token said
// of it (tenant_id, user_id, scopes).
export const session = {
  principal: null,
  get token() {
    return sessionStorage.getItem(TOKEN_KEY) || "";
  },
  signIn(token, principal) {
    sessionStorage.setItem(TOKEN_KEY, token);
    this.principal = principal;
  },
  signOut() {
    sessionStorage.removeItem(TOKEN_KEY);
    this.principal = null;
  },
  // can mirrors the host's rule: a tenant's admin holds every tenant scope.
  can(scope) {
    const s = (this.principal && this.principal.scopes) || [];
    return s.includes(scope) || (s.includes("admin") && scope !== "platform.admin");
  },
  get canWrite() {
    return this.can("apps.write");
  },
};

// onUnauthenticated is called when the host says the token is no good
// (revoked or expired while the tab was open).
let unauthenticated = () => {};
export function onUnauthenticated(fn) {
  unauthenticated = fn;
}

// request sends one API call. opts: json (a body to send as JSON), body and
// contentType (a raw body), token (instead of the session's), raw (return
// the Response itself). It throws ApiError for any answer but 2xx.
export async function request(method, path, opts = {}) {
  const headers = { Authorization: `Bearer ${opts.token || session.token}` };
  let body = opts.body;
  if (opts.json !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(opts.json);
  } else if (opts.contentType) {
    headers["Content-Type"] = opts.contentType;
  }
  let res;
  try {
    res = await fetch(path, { method, headers, body, cache: "no-store", credentials: "omit" });
  } catch (e) {
    throw new ApiError(0, "NETWORK_ERROR", `the host did not answer (${e.message})`);
  }
  if (!res.ok) {
    let d = {};
    try {
      d = (await res.json()).detail || {};
    } catch {
      // not the error envelope: keep the status alone
    }
    const err = new ApiError(res.status, d.code || `HTTP_${res.status}`, d.message || res.statusText, d.field, d.request_id);
    if (res.status === 401 && !opts.token) unauthenticated(err);
    throw err;
  }
  if (opts.raw) return res;
  if (res.status === 204) return null;
  return res.json();
}

export const get = (path, opts) => request("GET", path, opts);
export const post = (path, json) => request("POST", path, json === undefined ? {} : { json });

// Paths of an app's resources.
export const appPath = (app) => `/admin/apps/${encodeURIComponent(app)}`;
export const agentPath = (app) => `${appPath(app)}/coding-agent`;
export const runPath = (app, run) => `${agentPath(app)}/runs/${encodeURIComponent(run)}`;

// filePath is the URL of a file of a revision; each segment is escaped.
export function filePath(app, rev, path) {
  return `${appPath(app)}/revisions/${encodeURIComponent(rev)}/files/${path.split("/").map(encodeURIComponent).join("/")}`;
}

// page reads one page of a list endpoint (?limit=&cursor=).
export function page(path, cursor = "", limit = 50) {
  const sep = path.includes("?") ? "&" : "?";
  return get(`${path}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
}

// allEvents reads a run's event log after seq `after`, page by page, until
// it is exhausted; onPage gets each page's items.
export async function allEvents(app, run, after, onPage) {
  const limit = 500;
  for (;;) {
    const p = await get(`${runPath(app, run)}/events?after_seq=${after}&limit=${limit}`);
    if (p.items.length) {
      onPage(p.items);
      after = p.next_after_seq;
    }
    // A short page is the end of the log for now.
    if (p.items.length < limit || p.done) return after;
  }
}
