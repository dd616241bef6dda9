// The Activity view, in words a person uses: what is happening now ("Scanning Photos —
// 1,204 files", "Finding faces — 40%"), the problems still open (listed until a scan reads
// the file fine or it is gone: `/api/problems`), the scans and walks with their actions, and
// Check. How the work is held (leases, schemes, workers, attempts, Force release, the job
// queue) is behind "Details". Problems of one run: problems.js; the live events: live.js.
import { $, el, banner, guard } from "./dom.js";
import { api } from "./api.js";
import { fmtCount, fmtTime, isoTime, problemCount, progressText } from "./format.js";
import { openProblems } from "./problems.js";
import { currentView, libName, state } from "./state.js";

export async function loadActivity() {
  if (!state.libraries.length) state.libraries = await api("GET", "/api/libraries").catch(() => []);
  const [runs, jobs, walks, open] = await Promise.all([
    api("GET", "/api/scans?limit=50").catch((e) => { banner(e.message); return []; }),
    api("GET", "/api/jobs").catch(() => []),
    api("GET", "/api/walks").catch(() => []),
    api("GET", "/api/problems?limit=200").catch(() => null),
  ]);
  const body = $("#runs");
  body.replaceChildren(...runs.map(runRow));
  if (!runs.length) body.append(el("tr", {}, el("td", { colspan: 7, class: "muted" }, "No scans yet.")));
  for (const run of runs) noteRun(run, false);
  renderWalks(walks);
  renderOpenProblems(open);
  $("#jobs").replaceChildren(...jobs.map(jobRow));
  renderNow();
}

function jobRow(j) {
  return el("tr", {},
    el("td", {}, j.id), el("td", {}, j.kind), el("td", {}, el("span", { class: "state " + j.state }, j.state)),
    el("td", {}, `${j.attempts}/${j.max_attempts}`), el("td", { class: "path" }, j.checkpoint || ""),
    el("td", {}, j.last_error || ""),
    el("td", {}, j.state === "queued" || j.state === "running"
      ? el("button", { onclick: guard(async () => { await api("POST", `/api/jobs/${j.id}/cancel`); loadActivity(); }) }, "Cancel") : ""));
}

// ---- Now: the live runs and walks, in one sentence each.

const nowRuns = new Map();
const nowWalks = new Map();
const isLive = (s) => s === "running" || s === "accepted" || s === "queued";

/** What a live run is doing, in words: "Scanning Photos — 1,204 files". */
export function runNow(run) {
  const where = libName(run.library_id) + (run.scope ? ` (${run.scope})` : "");
  if (run.state !== "running") return `Waiting to scan ${where}`;
  return `Scanning ${where} — ${progressText({ ...run, reason: null })}`;
}

const walkVerb = { "content-hash": "Fingerprinting picture contents", faces: "Finding faces",
                   similar: "Comparing how pictures look", embeddings: "Recognising people" };

/** What a live walk is doing, in words: "Finding faces — 40%". */
function walkNow(w) {
  const verb = walkVerb[w.kind] || `Walking ${w.kind}`;
  if (w.state !== "running") return `${verb}: waiting for its turn`;
  return w.total ? `${verb} — ${walkPct(w)}%` : verb;
}

/** A run's news (from a list or an event): the Now list follows it. */
export function noteRun(run, render = true) {
  if (isLive(run.state)) nowRuns.set(run.id, run); else nowRuns.delete(run.id);
  if (render) renderNow();
}

function renderNow() {
  const lines = [...[...nowRuns.values()].map(runNow), ...[...nowWalks.values()].map(walkNow)];
  $("#now").replaceChildren(...(lines.length ? lines : ["Nothing is running: every library is up to date."])
    .map((t) => el("li", {}, t)));
}

// ---- The problems still open.

function renderOpenProblems(open) {
  const box = $("#open-problems");
  if (!open) { box.replaceChildren(el("p", { class: "muted" }, "The problems could not be loaded.")); return; }
  if (!open.total) { box.replaceChildren(el("p", { class: "muted" }, "None: every file was read fine.")); return; }
  const n = open.total;
  box.replaceChildren(
    el("p", {}, `${fmtCount(n)} ${n === 1 ? "file or folder needs" : "files or folders need"} a look`
      + (open.items.length < n ? ` (the first ${fmtCount(open.items.length)} are listed)` : "") + "."),
    el("div", { class: "table-scroll" }, el("table", { class: "list" },
      el("thead", {}, el("tr", {}, el("th", {}, "Library"), el("th", {}, "File"), el("th", {}, "Why"))),
      el("tbody", {}, ...open.items.map((p) => el("tr", { class: "open-problem" },
        el("td", {}, libName(p.library_id)), el("td", { class: "path" }, p.path), el("td", {}, p.error)))))));
}

// ---- The scans.

const runWhat = (run) => (run.scope ? `Scan of ${run.scope}` : "Scan");
const TRIGGER = { manual: "started by you", boot: "at start", watch: "after a change in the folder",
                  schedule: "on schedule", api: "asked from the page or the API" };
const RUN_STATE = { accepted: "waiting", running: "scanning", completed: "done", suspect: "stopped to ask you",
                    failed: "failed", cancelled: "cancelled", interrupted: "interrupted" };
// The reasons a run ended that name the protocol, in words.
const RUN_REASON = { lease_expired: "its worker stopped answering; a new scan carries on",
                     released: "set aside at shutdown; a new scan carries on",
                     force_released: "taken from its worker", cancelled: "" };

export function runRow(run) {
  const reasons = Object.entries(run.reasons || {}).map(([k, n]) => `${k} ${fmtCount(n)}`).join(", ");
  const live = run.state === "running" || run.state === "accepted";
  const why = run.reason in RUN_REASON ? RUN_REASON[run.reason] : run.reason;
  return el("tr", { id: `run-${run.id}` },
    el("td", {}, libName(run.library_id)),
    el("td", { title: `scan #${run.id}` }, runWhat(run), el("span", { class: "muted" },
      ` ${TRIGGER[run.trigger] || run.trigger}${run.watch_event ? ` (${run.watch_event})` : ""}`)),
    el("td", {}, el("span", { class: "state " + run.state }, RUN_STATE[run.state] || run.state)),
    el("td", {}, progressText({ ...run, reason: why }), problemCount(run) ? [" ", el("button", { class: "problems",
      onclick: guard(() => openProblems(run)), title: "The files this scan could not read or parse, with their errors" },
      "List problems")] : null),
    el("td", { class: "reasons" }, reasons),
    el("td", { title: isoTime(run.requested_at) }, fmtTime(run.requested_at)),
    el("td", {}, live ? el("button", { onclick: guard(async () => { await api("POST", `/api/scans/${run.id}/cancel`); loadActivity(); }) }, "Cancel") : ""));
}

// ---- The walks: a row in words with its actions, and its internals under Details.

const walkNames = { "content-hash": "Content hash", faces: "Faces", similar: "Similar" };
const walkState = { none: "not walked", queued: "waiting", running: "running", done: "complete" };

function renderWalks(walks) {
  nowWalks.clear();
  for (const w of walks) if (isLive(w.state)) nowWalks.set(w.kind, w);
  const body = $("#walks");
  body.replaceChildren(...walks.map(walkRow));
  if (!walks.length) body.append(el("tr", {}, el("td", { colspan: 4, class: "muted" }, "This server runs no walks.")));
  $("#walk-internals").replaceChildren(...walks.map(walkInternals));
}

const walkPct = (w) => (w.total ? Math.min(100, Math.round((w.done / w.total) * 100)) : 100);

function walkProgress(w) {
  if (w.total == null) return w.state === "done" ? "every picture" : "";
  const pct = walkPct(w);
  return [el("span", { class: "bar", title: `${pct}%` }, el("span", { style: `width:${pct}%` })),
          `${fmtCount(w.done)} of ${fmtCount(w.total)}`];
}

const act = (w, path, body) => guard(async () => {
  const out = await api("POST", `/api/walks/${w.kind}/${path}`, body);
  updateWalk(out);
});

function walkRow(w) {
  const live = w.state === "queued" || w.state === "running";
  return el("tr", { id: `walk-${w.kind}`, "data-kind": w.kind },
    el("td", {}, walkNames[w.kind] || w.kind,
      w.rollback ? el("div", { class: "warning", title: "A newer mediadex walked this database; this one re-stamps under its own scheme." },
        "⚠ a newer mediadex walked this library: see Details") : null),
    el("td", {}, el("span", { class: "state " + w.state }, walkState[w.state] || w.state),
      w.restart ? el("span", { class: "muted" }, " (again from the start)") : null),
    el("td", {}, walkProgress(w)),
    el("td", {},
      live ? null : el("button", { onclick: act(w, "start"), title: "Visit the pictures this walk has not seen yet" }, "Start"),
      el("button", { onclick: act(w, "start", { restart: true }), title: "Visit every picture again" }, "Restart")));
}

function walkInternals(w) {
  return el("tr", { id: `walk-int-${w.kind}` },
    el("td", {}, walkNames[w.kind] || w.kind),
    el("td", {}, `${w.current_scheme}`,
      el("span", { class: "muted" }, ` (walked to the end: ${w.record.scheme || "never"})`),
      w.rollback ? el("div", { class: "warning" }, `rollback: scheme ${w.record.seen} was run here by a newer mediadex`) : null),
    el("td", { class: "path" }, w.state === "running"
      ? `${w.lease_owner || "?"} · heartbeat ${Math.round((w.heartbeat_age_ms || 0) / 1000)} s ago` : ""),
    el("td", {}, w.state === "running" ? el("button", { class: "danger",
      onclick: (ev) => { if (confirm(`Take the ${walkNames[w.kind] || w.kind} walk from its worker?`)) act(w, "release")(ev); },
      title: "Take the walk away from its worker (it is stuck or its process is gone); another worker picks it up" }, "Force release") : null));
}

/** A walk's new state (from an answer or a `walk` event): its rows are replaced in place. */
export function updateWalk(w) {
  if (isLive(w.state)) nowWalks.set(w.kind, w); else nowWalks.delete(w.kind);
  const row = document.getElementById(`walk-${w.kind}`);
  if (row) {
    row.replaceWith(walkRow(w));
    document.getElementById(`walk-int-${w.kind}`)?.replaceWith(walkInternals(w));
    renderNow();
  } else if (currentView() === "activity") loadActivity();
}
