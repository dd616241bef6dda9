// The Similar view: groups of pictures that look alike (near copies, bursts), by their
// perceptual hashes; the API pages them, this view reads every page. Each picture has a Keep
// button (keep.js), the group's suggestion marked.
import { $, el } from "./dom.js";
import { api } from "./api.js";
import { libName } from "./state.js";
import { keepControls } from "./keep.js";

export async function loadSimilar() {
  const box = $("#similar");
  box.replaceChildren(el("p", { class: "muted" }, "Loading…"));
  const groups = [];
  let distance = null;
  try {
    let cursor = null;
    do {
      const page = await api("GET", "/api/similar?limit=200" + (cursor ? `&cursor=${cursor}` : ""));
      distance = page.distance;
      groups.push(...page.items);
      cursor = page.next_cursor;
    } while (cursor);
  } catch (e) { box.replaceChildren(el("p", {}, e.message)); return; }
  if (!groups.length) {
    box.replaceChildren(el("p", { class: "muted" }, `No similar pictures within ${distance} bits.`));
    return;
  }
  box.replaceChildren(...groups.map((g) => el("div", { class: "dup" },
    el("div", { class: "dup-head" }, `${g.assets.length} similar pictures`),
    el("div", { class: "dup-row" }, ...g.assets.map((a, _, all) => el("figure", {},
      el("a", { href: `#/asset/${a.id}` },
        el("img", { src: `/api/assets/${a.id}/thumbnail`, loading: "lazy", alt: "" })),
      el("figcaption", { class: "path" },
        a.paths.length ? `${libName(a.paths[0].library_id)}: ${a.paths[0].path}` : `asset ${a.id}`),
      keepControls(a.id, all.map((o) => o.id), g.suggested, loadSimilar)))))));
}
