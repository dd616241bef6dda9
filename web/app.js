// mediadex web page: plain JavaScript, no build step. Talks to the JSON API of the same
// server; every state-changing request carries the X-Mediadex header (the server refuses
// cross-site writes without it) and, when one was saved, the access token.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
const el = (tag, attrs = {}, ...kids) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat()) {
    if (kid !== undefined && kid !== null) node.append(kid.nodeType ? kid : String(kid));
  }
  return node;
};

// ---------- API ----------

async function api(method, path, body, extraHeaders = {}) {
  const headers = { "X-Mediadex": "1", ...extraHeaders };
  const token = localStorage.getItem("mediadex-token");
  if (token) headers["Authorization"] = "Bearer " + token;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status === 401 && askToken()) return api(method, path, body, extraHeaders);
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  // The cookie alone only lets the page read: a write refused for want of the token asks
  // for it too (a cookie left from an earlier visit, the saved token gone).
  const csrf = res.status === 403 && data && data.error && data.error.code === "csrf";
  if (csrf && !token && askToken()) return api(method, path, body, extraHeaders);
  if (!res.ok) {
    const msg = data && data.error ? data.error.message : `${res.status} ${res.statusText}`;
    const err = new Error(msg);
    err.code = data && data.error ? data.error.code : String(res.status);
    err.status = res.status;
    throw err;
  }
  return data;
}

function askToken() {
  const token = prompt("This mediadex needs its access token (run `mediadex token` on the server):");
  if (!token) return false;
  localStorage.setItem("mediadex-token", token.trim());
  tokenCookie();
  return true;
}

// Thumbnails and the event stream cannot send headers: for reads (GET, HEAD) only, the
// server also takes the token as this cookie (SameSite=Strict keeps other sites from it;
// a page on another port of this host is the same site, so writes need the header).
function tokenCookie() {
  const token = localStorage.getItem("mediadex-token");
  if (token) document.cookie = `mediadex_token=${encodeURIComponent(token)}; path=/; SameSite=Strict`;
}
tokenCookie();

function banner(message, kind = "error") {
  const b = $("#banner");
  b.textContent = message;
  b.className = "banner " + kind;
  b.hidden = false;
  clearTimeout(banner.timer);
  banner.timer = setTimeout(() => { b.hidden = true; }, 8000);
}

const guard = (fn) => async (...args) => {
  try { return await fn(...args); } catch (e) { banner(e.message); }
};

const uuid = () => (crypto.randomUUID ? crypto.randomUUID()
  : Date.now().toString(36) + Math.random().toString(36).slice(2));

// ---------- formatting ----------

const fmtTime = (ms) => (ms ? new Date(ms).toLocaleString() : "");
const fmtBytes = (n) => {
  if (n == null) return "";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
};
const fmtDuration = (ms) => {
  if (ms == null) return "";
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
};
const monthKey = (taken) => (taken && /^\d{4}-\d{2}/.test(taken) ? taken.slice(0, 7) : "undated");
const monthLabel = (key) => {
  if (key === "undated") return "No date";
  const [y, m] = key.split("-").map(Number);
  return new Date(y, m - 1, 1).toLocaleDateString(undefined, { year: "numeric", month: "long" });
};
const parseProgress = (p) => { try { return p ? JSON.parse(p) : null; } catch { return null; } };
const progressText = (run) => {
  const p = parseProgress(run.progress);
  if (!p) return run.reason || "";
  const parts = [`${p.files ?? 0} files`];
  if (p.changed) parts.push(`${p.changed} new or changed`);
  if (p.problems) parts.push(`${p.problems} problems`);
  return parts.join(", ") + (run.reason ? ` — ${run.reason}` : "");
};

// ---------- router ----------

const views = ["photos", "libraries", "activity", "duplicates", "trash"];
let libraries = [];

function route() {
  const hash = location.hash.replace(/^#\/?/, "") || "photos";
  const [view, arg] = hash.split("/");
  if (view === "asset" && arg) {
    if (!currentView()) show("photos");
    openAsset(Number(arg));
    return;
  }
  closeAssetDialog();
  show(views.includes(view) ? view : "photos");
}

function currentView() {
  return views.find((v) => !$("#view-" + v).hidden);
}

function show(view) {
  for (const v of views) $("#view-" + v).hidden = v !== view;
  for (const a of document.querySelectorAll("nav a")) {
    a.classList.toggle("active", a.dataset.view === view);
  }
  ({ photos: showPhotos, libraries: loadLibraries, activity: loadActivity,
     duplicates: loadDuplicates, trash: showTrash })[view]();
}

// ---------- the grid (paged, grouped by month) ----------

// One paged feed of assets into a grid element: keyset pages of 200, fetched as the end
// marker scrolls into view. Month sections use content-visibility so the browser skips
// laying out the ones off screen, which keeps a 100,000-photo library smooth.
class Feed {
  constructor(grid, end, query, tile) {
    Object.assign(this, { grid, end, query, tile });
    this.cursor = null; this.done = false; this.loading = false; this.count = 0;
    this.generation = (Feed.generation = (Feed.generation || 0) + 1);
    grid.replaceChildren();
    end.textContent = "";
    this.observer = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) this.more();
    }, { rootMargin: "1500px" });
    this.observer.observe(end);
  }

  stop() { this.observer.disconnect(); this.done = true; }

  async more() {
    if (this.loading || this.done) return;
    this.loading = true;
    const params = new URLSearchParams(this.query);
    params.set("limit", "200");
    if (this.cursor) params.set("cursor", this.cursor);
    try {
      const page = await api("GET", "/api/assets?" + params);
      if (this.generation !== Feed.generation && this.grid.id === "grid") return;
      for (const asset of page.items) this.add(asset);
      this.count += page.items.length;
      this.cursor = page.next_cursor;
      this.done = !this.cursor;
      this.end.textContent = this.done
        ? (this.count ? `${this.count} items` : "Nothing here yet.") : "Loading…";
    } catch (e) {
      this.end.textContent = e.message;
      this.done = true;
    } finally {
      this.loading = false;
    }
    // A short page may leave the end marker on screen: keep going.
    if (!this.done && this.end.getBoundingClientRect().top < innerHeight + 1500) this.more();
  }

  add(asset) {
    const key = monthKey(asset.taken_at);
    let section = this.grid.lastElementChild;
    if (!section || section.dataset.month !== key) {
      section = this.grid.querySelector(`section[data-month="${key}"]`) || this.grid.appendChild(
        el("section", { class: "month", "data-month": key },
          el("h3", {}, monthLabel(key)), el("div", { class: "tiles" })));
    }
    section.lastElementChild.append(this.tile(asset));
  }
}

function tile(asset, extra) {
  const ratio = asset.width && asset.height ? asset.width / asset.height : 1;
  const w = Math.round(Math.max(0.5, Math.min(2.2, ratio)) * 160);
  return el("a", { class: "tile", href: `#/asset/${asset.id}`, style: `width:${w}px`,
                   title: (asset.paths && asset.paths[0] && asset.paths[0].path) || "" },
    el("img", { src: `/api/assets/${asset.id}/thumbnail`, loading: "lazy", decoding: "async", alt: "" }),
    asset.kind === "video" ? el("span", { class: "badge" }, "▶ " + fmtDuration(asset.duration_ms)) : null,
    extra || null);
}

let feed = null;
let gridDirty = true;

function filterQuery() {
  const f = new FormData($("#filters"));
  const q = {};
  if (f.get("from")) q.from = f.get("from");
  if (f.get("before")) q.before = f.get("before");
  if (f.get("model")) q.model = f.get("model");
  if (f.get("kind")) q.kind = f.get("kind");
  if (f.get("has_gps")) q.has_gps = "true";
  if (f.get("has_faces")) q.has_faces = "true";
  return q;
}

function showPhotos() {
  if (!gridDirty && feed) return;
  gridDirty = false;
  if (feed) feed.stop();
  feed = new Feed($("#grid"), $("#grid-end"), filterQuery(), (a) => tile(a));
  feed.more();
}

function refreshGridSoon() {
  gridDirty = true;
  clearTimeout(refreshGridSoon.timer);
  refreshGridSoon.timer = setTimeout(() => { if (currentView() === "photos") showPhotos(); }, 1500);
}

// ---------- asset view ----------

const dialog = () => $("#asset");

function closeAssetDialog() {
  if (dialog().open) dialog().close();
}

// Stored (un-rotated) pixel coordinates → displayed coordinates, per EXIF orientation.
function orient(x, y, w, h, W, H, o) {
  switch (o) {
    case 2: return [W - x - w, y, w, h];
    case 3: return [W - x - w, H - y - h, w, h];
    case 4: return [x, H - y - h, w, h];
    case 5: return [y, x, h, w];
    case 6: return [H - y - h, x, h, w];
    case 7: return [H - y - h, W - x - w, h, w];
    case 8: return [y, W - x - w, h, w];
    default: return [x, y, w, h];
  }
}

const browserShows = (mime) => /^image\/(jpeg|png|webp|gif)$/.test(mime || "");

async function openAsset(id) {
  let asset;
  try { asset = await api("GET", `/api/assets/${id}`); } catch (e) { banner(e.message); return; }
  const media = $("#asset-media");
  media.replaceChildren();
  const frame = el("div", { class: "frame" });
  let faces = null;
  if (asset.kind === "video") {
    // Range requests let the browser seek without fetching the whole file.
    frame.append(el("video", { src: `/api/assets/${id}/original`, controls: true, playsinline: true,
                               poster: `/api/assets/${id}/thumbnail`, preload: "metadata" }));
  } else {
    const src = browserShows(asset.mime) ? `/api/assets/${id}/original` : `/api/assets/${id}/thumbnail`;
    const img = el("img", { src, alt: "" });
    frame.append(img);
    faces = api("GET", `/api/assets/${id}/faces`).catch(() => null);
    const draw = async () => { const f = await faces; if (f) drawFaces(frame, img, f); };
    if (img.complete) draw(); else img.addEventListener("load", draw);
  }
  media.append(frame);
  renderFacts(asset, faces);
  if (!dialog().open) dialog().showModal();
}

// Boxes come in the file's stored pixels; the browser shows the picture upright.
function drawFaces(frame, img, f) {
  const W = f.stored_width, H = f.stored_height;
  if (!f.faces.length || !W || !H) return;
  const o = f.orientation || 1;
  const [dw, dh] = o >= 5 ? [H, W] : [W, H];
  const sx = img.clientWidth / dw, sy = img.clientHeight / dh;
  for (const face of f.faces) {
    const [x, y, w, h] = orient(face.x, face.y, face.w, face.h, W, H, o);
    frame.append(el("div", { class: "face", title: `face ${(face.score * 100).toFixed(0)}%`,
      style: `left:${x * sx}px;top:${y * sy}px;width:${w * sx}px;height:${h * sy}px` }));
  }
}

function renderFacts(a, faces) {
  const rows = [
    ["Taken", a.taken_at || "unknown"],
    ["Camera", [a.make, a.model].filter(Boolean).join(" ")],
    ["Size", a.width && a.height ? `${a.width} × ${a.height}` : ""],
    ["Duration", a.kind === "video" ? fmtDuration(a.duration_ms) : ""],
    ["Codec", a.video_codec],
    ["File", `${fmtBytes(a.size)} · ${a.mime || "unknown type"}`],
    ["Checksum", a.checksum ? a.checksum.slice(0, 16) + "…" : ""],
  ];
  const dl = $("#asset-facts");
  dl.replaceChildren();
  for (const [k, v] of rows) if (v) dl.append(el("dt", {}, k), el("dd", {}, v));
  if (a.lat != null && a.lon != null) {
    const href = `https://www.openstreetmap.org/?mlat=${a.lat}&mlon=${a.lon}#map=15/${a.lat}/${a.lon}`;
    dl.append(el("dt", {}, "Place"), el("dd", {},
      el("a", { href, target: "_blank", rel: "noopener" }, `${a.lat.toFixed(5)}, ${a.lon.toFixed(5)} (map)`)));
  }
  if (faces) {
    const dd = el("dd", {}, "…");
    dl.append(el("dt", {}, "Faces"), dd);
    faces.then((f) => { dd.textContent = !f ? "" : f.detector_version == null ? "not looked for yet" : String(f.faces.length); });
  }
  for (const p of a.paths || []) {
    dl.append(el("dt", {}, "Path"), el("dd", { class: "path" }, p.path + (p.state !== "present" ? ` (${p.state})` : "")));
  }
  const actions = $("#asset-actions");
  actions.replaceChildren(
    el("a", { class: "button", href: `/api/assets/${a.id}/original`, download: "" }, "Download"),
    a.trashed
      ? el("button", { onclick: guard(async () => { await api("POST", `/api/assets/${a.id}/restore`); afterTrashChange(a.id); }) }, "Restore")
      : el("button", { class: "danger", onclick: guard(async () => { await api("POST", `/api/assets/${a.id}/trash`); afterTrashChange(a.id); }) }, "Move to trash"));
}

function afterTrashChange(id) {
  gridDirty = true;
  for (const t of document.querySelectorAll(`a.tile[href="#/asset/${id}"]`)) t.remove();
  history.back();
}

// ---------- libraries ----------

async function loadLibraries() {
  libraries = await api("GET", "/api/libraries").catch((e) => { banner(e.message); return []; });
  const watch = await api("GET", "/api/watch").catch(() => []);
  const body = $("#libraries");
  body.replaceChildren();
  for (const lib of libraries) {
    const runs = await api("GET", `/api/scans?library=${lib.id}&limit=1`).catch(() => []);
    const last = runs[0];
    const w = watch.find((s) => s.library_id === lib.id);
    body.append(el("tr", {},
      el("td", {}, lib.name),
      el("td", { class: "path" }, lib.root),
      el("td", {}, w ? (w.mode === "events" ? "live" : `polling${w.reason ? " — " + w.reason : ""}`) : "—"),
      el("td", { id: `lib-scan-${lib.id}` }, last ? `${last.state} · ${progressText(last)}` : "never"),
      el("td", {},
        el("button", { onclick: guard(() => requestScan(lib.id)), title: "Look for new, changed and deleted files" }, "Scan"),
        el("button", { onclick: guard(() => requestScan(lib.id, true)), title: "Re-read every file, changed or not" }, "Full rescan"),
        el("button", { class: "danger", onclick: guard(() => removeLibrary(lib)) }, "Remove"))));
  }
  if (!libraries.length) body.append(el("tr", {}, el("td", { colspan: 5, class: "muted" }, "No library yet: add a folder above.")));
}

async function requestScan(libraryId, force = false) {
  const body = force ? { force: true } : {};
  const out = await api("POST", `/api/libraries/${libraryId}/scans`, body, { "Idempotency-Key": uuid() });
  banner(`Scan ${out.admission === "coalesced" ? "merged into the waiting one" : "requested"} (#${out.run.id}).`, "info");
  loadLibraries();
}

async function removeLibrary(lib) {
  if (!confirm(`Stop indexing “${lib.name}”? Your files are not touched.`)) return;
  await api("DELETE", `/api/libraries/${lib.id}`);
  gridDirty = true;
  loadLibraries();
}

$("#add-library").addEventListener("submit", guard(async (ev) => {
  ev.preventDefault();
  const f = new FormData(ev.target);
  const body = { path: f.get("path") };
  if (f.get("name")) body.name = f.get("name");
  const lib = await api("POST", "/api/libraries", body);
  ev.target.reset();
  banner(`Added ${lib.name}; scanning it now.`, "info");
  await requestScan(lib.id).catch(() => {});
  loadLibraries();
}));

// ---------- activity ----------

const libName = (id) => (libraries.find((l) => l.id === id) || { name: `#${id}` }).name;

async function loadActivity() {
  if (!libraries.length) libraries = await api("GET", "/api/libraries").catch(() => []);
  const [runs, jobs, walks] = await Promise.all([
    api("GET", "/api/scans?limit=50").catch((e) => { banner(e.message); return []; }),
    api("GET", "/api/jobs").catch(() => []),
    api("GET", "/api/walks").catch(() => []),
  ]);
  const body = $("#runs");
  body.replaceChildren(...runs.map(runRow));
  if (!runs.length) body.append(el("tr", {}, el("td", { colspan: 9, class: "muted" }, "No scans yet.")));
  renderWalks(walks);
  $("#jobs").replaceChildren(...jobs.map((j) => el("tr", {},
    el("td", {}, j.id), el("td", {}, j.kind), el("td", {}, el("span", { class: "state " + j.state }, j.state)),
    el("td", {}, `${j.attempts}/${j.max_attempts}`), el("td", { class: "path" }, j.checkpoint || ""),
    el("td", {}, j.last_error || ""),
    el("td", {}, j.state === "queued" || j.state === "running"
      ? el("button", { onclick: guard(async () => { await api("POST", `/api/jobs/${j.id}/cancel`); loadActivity(); }) }, "Cancel") : ""))));
}

function runRow(run) {
  const reasons = Object.entries(run.reasons || {}).map(([k, n]) => `${k} ${n}`).join(", ");
  const live = run.state === "running" || run.state === "accepted";
  return el("tr", { id: `run-${run.id}` },
    el("td", {}, run.id), el("td", {}, libName(run.library_id)), el("td", { class: "path" }, run.scope || "(all)"),
    el("td", {}, run.trigger + (run.watch_event ? ` (${run.watch_event})` : "")),
    el("td", {}, el("span", { class: "state " + run.state }, run.state)),
    el("td", {}, progressText(run)), el("td", {}, reasons), el("td", {}, fmtTime(run.requested_at)),
    el("td", {}, live ? el("button", { onclick: guard(async () => { await api("POST", `/api/scans/${run.id}/cancel`); loadActivity(); }) }, "Cancel") : ""));
}

// ---------- walks ----------

const walkNames = { "content-hash": "Content hash", faces: "Faces" };
const walkState = { none: "not walked", queued: "waiting", running: "running", done: "complete" };

function renderWalks(walks) {
  const body = $("#walks");
  body.replaceChildren(...walks.map(walkRow));
  if (!walks.length) body.append(el("tr", {}, el("td", { colspan: 6, class: "muted" }, "This server runs no walks.")));
}

function walkProgress(w) {
  if (w.total == null) return w.state === "done" ? "every asset" : "";
  const pct = w.total ? Math.min(100, Math.round((w.done / w.total) * 100)) : 100;
  return [el("span", { class: "bar", title: `${pct}%` }, el("span", { style: `width:${pct}%` })),
          `${w.done} / ${w.total}`];
}

function walkRow(w) {
  const live = w.state === "queued" || w.state === "running";
  const act = (path, body) => guard(async () => {
    const out = await api("POST", `/api/walks/${w.kind}/${path}`, body);
    updateWalk(out);
  });
  return el("tr", { id: `walk-${w.kind}`, "data-kind": w.kind },
    el("td", {}, walkNames[w.kind] || w.kind),
    el("td", {}, `${w.current_scheme}`,
      el("span", { class: "muted" }, ` (walked to the end: ${w.record.scheme || "never"})`),
      w.rollback ? el("div", { class: "warning", title: "A newer mediadex walked this database; this one re-stamps under its own scheme." },
        `⚠ rollback: scheme ${w.record.seen} was run here by a newer mediadex`) : null),
    el("td", {}, el("span", { class: "state " + w.state }, walkState[w.state] || w.state),
      w.restart ? el("span", { class: "muted" }, " (restart)") : null),
    el("td", {}, walkProgress(w)),
    el("td", { class: "path" }, w.state === "running"
      ? `${w.lease_owner || "?"} · heartbeat ${Math.round((w.heartbeat_age_ms || 0) / 1000)} s ago` : ""),
    el("td", {},
      live ? null : el("button", { onclick: act("start"), title: "Visit the assets that lack this scheme's stamp" }, "Start"),
      el("button", { onclick: act("start", { restart: true }), title: "Visit every asset again, stamped or not" }, "Restart"),
      w.state === "running" ? el("button", { class: "danger",
        onclick: (ev) => { if (confirm(`Take the ${walkNames[w.kind] || w.kind} walk from its worker?`)) act("release")(ev); },
        title: "Take the walk away from its worker (it is stuck or its process is gone); another worker picks it up" }, "Force release") : null));
}

// A walk's new state (from an answer or a `walk` event): its row is replaced in place.
function updateWalk(w) {
  const row = document.getElementById(`walk-${w.kind}`);
  if (row) row.replaceWith(walkRow(w));
  else if (currentView() === "activity") loadActivity();
}

// ---------- duplicates ----------

async function loadDuplicates() {
  const box = $("#duplicates");
  box.replaceChildren(el("p", { class: "muted" }, "Loading…"));
  let groups;
  try { groups = await api("GET", "/api/duplicates"); } catch (e) { box.replaceChildren(el("p", {}, e.message)); return; }
  if (!groups.length) { box.replaceChildren(el("p", { class: "muted" }, "No duplicates found.")); return; }
  box.replaceChildren(...groups.map((g) => el("div", { class: "dup" },
    el("div", { class: "dup-head" }, `${g.paths.length} copies · ${fmtBytes(g.size)}${g.kind ? " · " + g.kind : ""}`),
    el("div", { class: "dup-row" }, ...g.paths.map((p) => el("figure", {},
      el("a", { href: `#/asset/${p.asset_id || g.asset_id}` },
        el("img", { src: `/api/assets/${p.asset_id || g.asset_id}/thumbnail`, loading: "lazy", alt: "" })),
      el("figcaption", { class: "path" }, `${libName(p.library_id)}: ${p.path}`)))))));
}

// ---------- trash ----------

let trashFeed = null;

function showTrash() {
  if (trashFeed) trashFeed.stop();
  trashFeed = new Feed($("#trash-grid"), $("#trash-end"), { trashed: "true" }, (a) => {
    const t = tile(a, el("button", { class: "restore", onclick: guard(async (ev) => {
      ev.preventDefault(); ev.stopPropagation();
      await api("POST", `/api/assets/${a.id}/restore`);
      t.remove(); gridDirty = true;
    }) }, "Restore"));
    return t;
  });
  trashFeed.more();
}

// ---------- live scan progress ----------

const liveRuns = new Map();

function renderLive() {
  const box = $("#live");
  box.replaceChildren(...[...liveRuns.values()].map((run) => el("span", { class: "pill" },
    `${run.state === "running" ? "Scanning" : "Waiting"} ${libName(run.library_id)}${run.scope ? "/" + run.scope : ""}: ${progressText(run)} `,
    el("button", { class: "link", title: "Cancel this scan",
      onclick: guard(() => api("POST", `/api/scans/${run.id}/cancel`)) }, "cancel"))));
}

function onRunEvent(kind, run) {
  if (run.state === "running" || run.state === "accepted") liveRuns.set(run.id, run);
  else liveRuns.delete(run.id);
  renderLive();
  const row = document.getElementById(`run-${run.id}`);
  if (row && run.reasons === undefined) {
    // Events carry the run without its reason counts: keep the row's counts.
    const counts = row.children[6].textContent;
    const fresh = runRow(run);
    fresh.children[6].textContent = counts;
    row.replaceWith(fresh);
  } else if (currentView() === "activity" && kind !== "scan_progress") {
    loadActivity();
  }
  const cell = document.getElementById(`lib-scan-${run.library_id}`);
  if (cell) cell.textContent = `${run.state} · ${progressText(run)}`;
  if (kind === "scan_finished" || (kind === "scan_progress" && currentView() === "photos" && feed && feed.count === 0)) {
    refreshGridSoon();
  }
}

function connectEvents() {
  const source = new EventSource("/api/events");
  for (const kind of ["scan_queued", "scan_started", "scan_progress", "scan_finished"]) {
    source.addEventListener(kind, (ev) => {
      try { onRunEvent(kind, JSON.parse(ev.data)); } catch { /* a malformed event is skipped */ }
    });
  }
  source.addEventListener("walk", (ev) => {
    try { updateWalk(JSON.parse(ev.data)); } catch { /* a malformed event is skipped */ }
  });
  source.addEventListener("resync", () => { if (currentView() === "activity") loadActivity(); });
}

// ---------- start ----------

$("#filters").addEventListener("change", () => { gridDirty = true; showPhotos(); });
$("#filters").addEventListener("reset", () => setTimeout(() => { gridDirty = true; showPhotos(); }));
$("#asset-close").addEventListener("click", () => history.back());
dialog().addEventListener("cancel", (ev) => { ev.preventDefault(); history.back(); });
window.addEventListener("hashchange", route);

(async function start() {
  libraries = await api("GET", "/api/libraries").catch(() => []);
  const runs = await api("GET", "/api/scans?limit=20").catch(() => []);
  for (const run of runs) if (run.state === "running" || run.state === "accepted") liveRuns.set(run.id, run);
  renderLive();
  connectEvents();
  route();
})();
