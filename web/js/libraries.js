// The Libraries view: add a folder, scan or fully rescan it, stop indexing it; a folder that
// is away (not there, unreadable) says so with the reason.
import { $, el, banner, guard, uuid } from "./dom.js";
import { api } from "./api.js";
import { progressText } from "./format.js";
import { markGridDirty } from "./grid.js";
import { state } from "./state.js";

// Each load's number: a load that a later one overtook (an add asks for two, one after its
// scan request) draws nothing, and a load draws its rows at once, so rows are never doubled.
let loads = 0;

export async function loadLibraries() {
  const mine = ++loads;
  const libraries = await api("GET", "/api/libraries").catch((e) => { banner(e.message); return []; });
  const watch = await api("GET", "/api/watch").catch(() => []);
  const rows = [];
  for (const lib of libraries) {
    const runs = await api("GET", `/api/scans?library=${lib.id}&limit=1`).catch(() => []);
    const last = runs[0];
    const w = watch.find((s) => s.library_id === lib.id);
    rows.push(el("tr", {},
      el("td", {}, lib.name),
      el("td", { class: "path" }, lib.root,
        // Away (unmounted, unreadable): its scans are held back until it is back.
        lib.available === false ? el("div", { class: "warning lib-unavailable" }, `Unavailable: ${lib.unavailable}`) : null),
      el("td", {}, w ? (w.mode === "events" ? "live" : `polling${w.reason ? " — " + w.reason : ""}`) : "—"),
      el("td", { id: `lib-scan-${lib.id}` }, last ? `${last.state} · ${progressText(last)}` : "never"),
      el("td", {},
        el("button", { onclick: guard(() => requestScan(lib.id)), title: "Look for new, changed and deleted files" }, "Scan"),
        el("button", { onclick: guard(() => requestScan(lib.id, true)), title: "Re-read every file, changed or not" }, "Full rescan"),
        el("button", { class: "danger", onclick: guard(() => removeLibrary(lib)) }, "Remove"))));
  }
  if (mine !== loads) return;
  state.libraries = libraries;
  if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: 5, class: "muted" }, "No library yet: add a folder above.")));
  $("#libraries").replaceChildren(...rows);
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
  markGridDirty();
  loadLibraries();
}

/** Wires the add-a-folder form (once, at start). */
export function initLibraries() {
  $("#add-library").addEventListener("submit", guard(async (ev) => {
    ev.preventDefault();
    const f = new FormData(ev.target);
    const body = { path: f.get("path") };
    if (f.get("name")) body.name = f.get("name");
    const lib = await api("POST", "/api/libraries", body);
    ev.target.reset();
    banner(`Added ${lib.name}; scanning it now.`, "info");
    // requestScan loads the list itself; without a scan, load it here.
    await requestScan(lib.id).catch(() => loadLibraries());
  }));
}
