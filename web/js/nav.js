// The viewer's way through a view: previous and next in the order the open view shows its
// tiles (buttons, arrow keys, a swipe), the URL replaced rather than pushed so that one Back
// or Esc leaves the viewer; and its close, back to the view it was opened from, or to the
// grid when it was opened by a bookmark or a shared link (nothing of this page behind it).
// Knows nothing of how an asset is shown (asset.js).
import { $, el } from "./dom.js";
import { currentView } from "./state.js";

const assetHash = /^#\/?asset\/\d+/;
// Whether this page showed a view before the viewer opened: its history entry is then the
// one behind the viewer's, and closing goes back to it.
let seenView = false;
let behind = false;
// The address of the view last shown (a person's page is `#/people/ID`, not just its view).
let viewHash = null;

/** The router showed a view (not the viewer). */
export function viewShown() { seenView = true; viewHash = location.hash; }

/** The viewer opens (it was closed): remember what closing it goes back to. */
export function viewerOpens() { behind = seenView; }

/** Leaves the viewer's URL: back to the view behind it, else to the grid. */
export function leaveViewer() {
  if (!assetHash.test(location.hash)) return;
  if (behind) history.back();
  else location.replace(viewHash || "#/" + (currentView() || "photos"));
}

function tiles() {
  const view = currentView();
  return [...(view ? $("#view-" + view) : document).querySelectorAll("a[href^='#/asset/']")];
}

/** The tile `step` tiles after asset `id`'s in the open view, or null. */
function neighbourTile(id, step) {
  const list = tiles();
  const i = list.findIndex((t) => t.getAttribute("href") === `#/asset/${id}`);
  return (i < 0 ? null : list[i + step]) || null;
}

/** The id of the asset `step` tiles after `id` in the open view, or null. */
export function neighbour(id, step) {
  const t = neighbourTile(id, step);
  if (!t) return null;
  // Keeps the grid behind in step, so that its feed loads the next page as the end nears.
  t.scrollIntoView({ block: "center" });
  return Number(t.getAttribute("href").split("/").pop());
}

/** Shows the asset `step` tiles away, in place of this one in the history. */
export function go(id, step) {
  const next = neighbour(id, step);
  if (next !== null) location.replace(`#/asset/${next}`);
}

/** The previous and next buttons over the picture, disabled at either end. */
export function navButtons(id) {
  const button = (step, label, text) => el("button", {
    class: `nav ${step < 0 ? "prev" : "next"}`, "aria-label": label, title: label,
    disabled: neighbourTile(id, step) === null, onclick: () => go(id, step) }, text);
  return [button(-1, "Previous", "‹"), button(1, "Next", "›")];
}

/** Arrow keys and a horizontal swipe over `media` step through the view. */
export function initViewerNav(dialog, media, currentId) {
  // On the document: a step replaces the buttons, and the focus with them.
  document.addEventListener("keydown", (ev) => {
    if (!dialog.open || ev.target.closest?.("input, textarea, select, video")) return;
    const step = { ArrowLeft: -1, ArrowRight: 1 }[ev.key];
    if (step && currentId() !== null) { ev.preventDefault(); go(currentId(), step); }
  });
  let start = null;
  media.addEventListener("pointerdown", (ev) => { start = { x: ev.clientX, y: ev.clientY }; });
  media.addEventListener("pointercancel", () => { start = null; });
  media.addEventListener("pointerup", (ev) => {
    if (!start || currentId() === null) return;
    const dx = ev.clientX - start.x, dy = ev.clientY - start.y;
    start = null;
    if (Math.abs(dx) > 50 && Math.abs(dx) > 2 * Math.abs(dy)) go(currentId(), dx < 0 ? 1 : -1);
  });
}
