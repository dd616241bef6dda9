// The JSON API of the same server. Every request carries the X-Mediadex header (the server
// refuses cross-site writes without it) and, when one was saved, the access token; a request
// refused for want of the token asks for it in the token form and is sent again.
import { $ } from "./dom.js";

export async function api(method, path, body, extraHeaders = {}) {
  const headers = { "X-Mediadex": "1", ...extraHeaders };
  const token = localStorage.getItem("mediadex-token");
  if (token) headers["Authorization"] = "Bearer " + token;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status === 401 && await askToken(Boolean(token))) return api(method, path, body, extraHeaders);
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  // The cookie alone only lets the page read: a write refused for want of the token asks
  // for it too (a cookie left from an earlier visit, the saved token gone).
  const csrf = res.status === 403 && data && data.error && data.error.code === "csrf";
  if (csrf && !token && await askToken(false)) return api(method, path, body, extraHeaders);
  if (!res.ok) {
    const msg = data && data.error ? data.error.message : `${res.status} ${res.statusText}`;
    const err = new Error(msg);
    err.code = data && data.error ? data.error.code : String(res.status);
    err.status = res.status;
    if (err.code === "database_away") databaseAway(msg);
    throw err;
  }
  return data;
}

// The PostgreSQL server away (a restart, the network): one banner, kept until the server's
// health answers again, whatever the views asked meanwhile. Nothing is lost meanwhile.
let awayWatch = null;
function databaseAway(message) {
  const b = $("#database-away");
  b.textContent = "The database server is away. mediadex waits for it and loses nothing; "
    + "this page carries on once it answers.";
  b.title = message;
  b.hidden = false;
  if (awayWatch) return;
  awayWatch = setInterval(async () => {
    const back = await fetch("/healthz", { cache: "no-store" }).then((r) => r.ok, () => false);
    if (!back) return;
    clearInterval(awayWatch);
    awayWatch = null;
    b.hidden = true;
  }, 3000);
}

// One form at a time: requests refused together all wait for the same answer.
let asking = null;
// Cancelled: the requests that follow are refused without asking again.
let declined = false;

/** Shows the token form (`refused`: the token sent was not accepted, and the form says so);
 *  resolves true once a token was saved, false when cancelled or cancelled before. */
export function askToken(refused = false) {
  if (asking) return asking;
  if (declined) return Promise.resolve(false);
  asking = new Promise((resolve) => {
    const dialog = $("#token-dialog");
    const form = $("#token-form");
    form.reset();
    const error = $("#token-error");
    error.hidden = !refused;
    error.textContent = refused ? "This server did not accept that token. Check it and paste it again." : "";
    dialog.addEventListener("close", () => {
      asking = null;
      const token = dialog.returnValue === "save" ? form.elements.token.value.trim() : "";
      if (token) {
        localStorage.setItem("mediadex-token", token);
        tokenCookie();
      } else {
        declined = true;
        banner("This server needs its access token to show your photos.", "error",
          { label: "Enter the token", run: () => { declined = false; askToken().then((ok) => ok && location.reload()); } });
      }
      resolve(Boolean(token));
    }, { once: true });
    dialog.returnValue = "";
    dialog.showModal();
  });
  return asking;
}

// Thumbnails and the event stream cannot send headers: for reads (GET, HEAD) only, the
// server also takes the token as this cookie (SameSite=Strict keeps other sites from it;
// a page on another port of this host is the same site, so writes need the header).
export function tokenCookie() {
  const token = localStorage.getItem("mediadex-token");
  if (token) document.cookie = `mediadex_token=${encodeURIComponent(token)}; path=/; SameSite=Strict`;
}
