// The Activity view: scan runs, walks and the job queue, each with its actions.
import { $, el, banner, guard } from "./dom.js";
import { api } from "./api.js";
import { fmtTime, problemCount, progressText } from "./format.js";
import { openProblems } from "./problems.js";
import { currentView, libName, state } from "./state.js";

export async function loadActivity() {
  if (!state.libraries.length) state.libraries = await api("GET", "/api/libraries").catch(() => []);
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

export function runRow(run) {
  const reasons = Object.entries(run.reasons || {}).map(([k, n]) => `${k} ${n}`).join(", ");
  const live = run.state === "running" || run.state === "accepted";
  return el("tr", { id: `run-${run.id}` },
    el("td", {}, run.id), el("td", {}, libName(run.library_id)), el("td", { class: "path" }, run.scope || "(all)"),
    el("td", {}, run.trigger + (run.watch_event ? ` (${run.watch_event})` : "")),
    el("td", {}, el("span", { class: "state " + run.state }, run.state)),
    el("td", {}, progressText(run), problemCount(run) ? [" ", el("button", { class: "problems",
      onclick: guard(() => openProblems(run)), title: "The files this scan could not read or parse, with their errors" },
      "List problems")] : null),
    el("td", {}, reasons), el("td", {}, fmtTime(run.requested_at)),
    el("td", {}, live ? el("button", { onclick: guard(async () => { await api("POST", `/api/scans/${run.id}/cancel`); loadActivity(); }) }, "Cancel") : ""));
}

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

/** A walk's new state (from an answer or a `walk` event): its row is replaced in place. */
export function updateWalk(w) {
  const row = document.getElementById(`walk-${w.kind}`);
  if (row) row.replaceWith(walkRow(w));
  else if (currentView() === "activity") loadActivity();
}
