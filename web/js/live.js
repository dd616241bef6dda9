// Live scan progress: the header's pills, and the server-sent events that keep every view's
// runs, library cells and walks current.
import { $, el, guard } from "./dom.js";
import { api } from "./api.js";
import { progressText } from "./format.js";
import { gridIsEmpty, refreshGridSoon } from "./grid.js";
import { loadActivity, noteRun, runNow, runRow, updateWalk } from "./activity.js";
import { currentView } from "./state.js";
import { loadCameras } from "./filters.js";

const liveRuns = new Map();
const isLive = (run) => run.state === "running" || run.state === "accepted";

function renderLive() {
  const box = $("#live");
  box.replaceChildren(...[...liveRuns.values()].map((run) => el("span", { class: "pill" },
    `${runNow(run)} `,
    el("button", { class: "link", title: "Cancel this scan",
      onclick: guard(() => api("POST", `/api/scans/${run.id}/cancel`)) }, "cancel"))));
}

function onRunEvent(kind, run) {
  if (isLive(run)) liveRuns.set(run.id, run);
  else liveRuns.delete(run.id);
  renderLive();
  noteRun(run);
  const row = document.getElementById(`run-${run.id}`);
  if (row && run.reasons === undefined) {
    // Events carry the run without its reason counts: keep the row's counts.
    const counts = row.querySelector(".reasons").textContent;
    const fresh = runRow(run);
    fresh.querySelector(".reasons").textContent = counts;
    row.replaceWith(fresh);
  } else if (currentView() === "activity" && kind !== "scan_progress") {
    loadActivity();
  }
  const cell = document.getElementById(`lib-scan-${run.library_id}`);
  if (cell) cell.textContent = `${run.state} · ${progressText(run)}`;
  if (kind === "scan_finished" || (kind === "scan_progress" && currentView() === "photos" && gridIsEmpty())) {
    refreshGridSoon();
  }
  if (kind === "scan_finished") loadCameras();
}

/** Shows the runs already live, then follows the event stream. */
export async function startLive() {
  const runs = await api("GET", "/api/scans?limit=20").catch(() => []);
  for (const run of runs) if (isLive(run)) liveRuns.set(run.id, run);
  renderLive();
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
