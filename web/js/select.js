// Selecting many tiles of a grid (Photos, a person's page, Trash) and acting on them at once. A tile's check
// (shown on hover, always on touch screens and while anything is selected) toggles it;
// while a selection exists a click on a tile toggles it too, and a Shift-click selects the
// range from the last tile clicked, in the grid's order; Space on a focused tile toggles it
// (Shift-Space: the range), for the keyboard; Esc clears. The bar shows the
// count and the actions: download (one zip, `GET /api/download`), move to the trash or
// restore (`POST /api/assets/trash|restore`, each asset by its own leased move on the
// server), with one toast whose Undo moves the batch back. Owns #selection-bar and the
// tiles' `selected` marks; knows nothing of how a grid is fetched or laid out (grid.js).
import { $, el, banner, guard, toast } from "./dom.js";
import { api } from "./api.js";
import { fmtCount } from "./format.js";
import { markGridDirty, showPhotos } from "./grid.js";
import { currentView } from "./state.js";
import { showTrash } from "./trash.js";

/** The most ids one request takes (the server's cap on downloads and bulk moves). */
export const MAX_BATCH = 500;

const selected = new Set();
let grid = null;      // the grid element the selection is in
let anchor = null;    // the id a Shift-click's range starts from

const idOf = (tile) => Number(tile.getAttribute("href").split("/").pop());
const tilesOf = (g) => [...g.querySelectorAll("a.tile")];

/** The selection's check on a tile, for grid.js to put in every tile it makes. */
export function pickBox(label) {
  return el("span", { class: "pick", role: "checkbox", "aria-checked": "false",
                      "aria-label": `Select ${label}`, title: "Select (Shift-click: a range; Space on a focused photo)" });
}

function mark(tile, on) {
  tile.classList.toggle("selected", on);
  tile.querySelector(".pick")?.setAttribute("aria-checked", String(on));
  if (on) selected.add(idOf(tile)); else selected.delete(idOf(tile));
}

/** Whether any photo is selected. */
export const selecting = () => selected.size > 0;

/** Forgets the selection (Esc, another view, a grid fetched afresh). */
export function clearSelection() {
  if (grid) for (const t of grid.querySelectorAll("a.tile.selected")) mark(t, false);
  selected.clear();
  grid = null;
  anchor = null;
  renderBar();
}

function click(ev) {
  const tile = ev.target.closest("a.tile");
  if (!tile || ev.target.closest("button")) return;
  const onPick = Boolean(ev.target.closest(".pick"));
  if (!onPick && !ev.shiftKey && !selected.size) return; // an ordinary click opens the photo
  ev.preventDefault();
  ev.stopPropagation();
  toggle(ev.currentTarget, tile, ev.shiftKey);
}

function key(ev) {
  const tile = ev.key === " " && ev.target.closest?.("a.tile");
  if (!tile) return;
  ev.preventDefault();
  toggle(ev.currentTarget, tile, ev.shiftKey);
}

/** Toggles `tile` of grid `g`, or with `range` selects from the last one toggled to it. */
function toggle(g, tile, range) {
  if (grid !== g) { clearSelection(); grid = g; }
  const id = idOf(tile);
  if (range && anchor !== null) {
    const tiles = tilesOf(g);
    const [a, b] = [tiles.findIndex((t) => idOf(t) === anchor), tiles.indexOf(tile)].sort((x, y) => x - y);
    if (a >= 0) for (const t of tiles.slice(a, b + 1)) mark(t, true);
    else mark(tile, true);
  } else {
    mark(tile, !selected.has(id));
  }
  anchor = id;
  renderBar();
}

function renderBar() {
  const bar = $("#selection-bar");
  const n = selected.size;
  document.body.classList.toggle("selecting", n > 0);
  bar.hidden = n === 0;
  if (!n) return;
  const inTrash = grid && grid.id === "trash-grid";
  bar.replaceChildren(
    el("span", { class: "count", "aria-live": "polite" }, `${fmtCount(n)} selected`),
    el("button", { onclick: guard(download), title: `One zip of the originals (at most ${MAX_BATCH})` }, "Download"),
    inTrash
      ? el("button", { onclick: guard(() => move("restore")) }, "Restore")
      : el("button", { class: "danger", onclick: guard(() => move("trash")) }, "Move to trash"),
    el("button", { class: "link", onclick: clearSelection, title: "Esc" }, "Clear"));
}

// The zip comes as the browser's own download (streamed to disk, not held by the page); HEAD
// first, so that a refusal is said here instead of as a failed download.
async function download() {
  const ids = [...selected];
  if (ids.length > MAX_BATCH) throw new Error(`Download at most ${MAX_BATCH} at a time (${fmtCount(ids.length)} are selected).`);
  const href = `/api/download?ids=${ids.join(",")}`;
  const token = localStorage.getItem("mediadex-token");
  const res = await fetch(href, { method: "HEAD", headers: token ? { Authorization: "Bearer " + token } : {} });
  if (!res.ok) {
    throw new Error(res.status === 404 ? "Some of these are no longer in the index: reload the page and select again."
      : `The download was refused (${res.status} ${res.statusText}).`);
  }
  const a = el("a", { href, download: "", hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  toast(`Downloading ${fmtCount(ids.length)} ${ids.length === 1 ? "item" : "items"} as a zip.`);
}

/** Moves `ids` to the trash or back, a request of at most MAX_BATCH at a time: the ids moved. */
async function moveIds(to, ids) {
  const moved = [], failed = [];
  for (let i = 0; i < ids.length; i += MAX_BATCH) {
    const out = await api("POST", `/api/assets/${to}`, { ids: ids.slice(i, i + MAX_BATCH) });
    moved.push(...out.moved.map((a) => a.id));
    failed.push(...out.failed);
  }
  if (failed.length) {
    banner(`${fmtCount(failed.length)} could not be ${to === "trash" ? "moved to the trash" : "restored"}: ${failed[0].message}`);
  }
  return moved;
}

async function move(to) {
  const from = grid;
  const moved = await moveIds(to, [...selected]);
  for (const id of moved) from?.querySelector(`a.tile[href="#/asset/${id}"]`)?.remove();
  clearSelection();
  markGridDirty();
  if (!moved.length) return;
  const back = to === "trash" ? "restore" : "trash";
  const what = `${fmtCount(moved.length)} ${moved.length === 1 ? "item" : "items"}`;
  toast(to === "trash" ? `Moved ${what} to the trash.` : `Restored ${what}.`, guard(async () => {
    const again = await moveIds(back, moved);
    markGridDirty();
    if (currentView() === "photos") showPhotos();
    if (currentView() === "trash") showTrash();
    toast(back === "restore" ? `Restored ${fmtCount(again.length)}.` : `Moved ${fmtCount(again.length)} back to the trash.`);
  }));
}

/** Wires the grids' clicks and Esc (once, at start). */
export function initSelection() {
  for (const g of [$("#grid"), $("#trash-grid"), $("#person-grid")]) {
    g.addEventListener("click", click, true);
    g.addEventListener("keydown", key);
  }
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && selected.size && !document.querySelector("dialog[open]")) {
      ev.preventDefault();
      clearSelection();
    }
  });
}
