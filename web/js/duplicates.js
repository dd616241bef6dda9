// The Duplicates view: the same photo in more than one place.
import { $, el } from "./dom.js";
import { api } from "./api.js";
import { fmtBytes } from "./format.js";
import { libName } from "./state.js";

export async function loadDuplicates() {
  const box = $("#duplicates");
  box.replaceChildren(el("p", { class: "muted" }, "Loading…"));
  let groups;
  try { groups = await api("GET", "/api/duplicates"); } catch (e) { box.replaceChildren(el("p", {}, e.message)); return; }
  if (!groups.length) { box.replaceChildren(el("p", { class: "muted" }, "No duplicates found.")); return; }
  box.replaceChildren(...groups.map((g) => el("div", { class: "dup" },
    el("div", { class: "dup-head" }, `${g.paths.length} copies · ${fmtBytes(g.size ?? g.assets[0].size)} · ${g.kind}`),
    el("div", { class: "dup-row" }, ...copies(g).map(([id, p]) => el("figure", {},
      el("a", { href: `#/asset/${id}` },
        el("img", { src: `/api/assets/${id}/thumbnail`, loading: "lazy", alt: "" })),
      el("figcaption", { class: "path" }, `${libName(p.library_id)}: ${p.path}`)))))));
}

// Each shown file with its asset: one asset for identical bytes, several for the same
// picture with other metadata (`same_content`, whose `assets` carry their own files).
function copies(g) {
  return g.assets
    ? g.assets.flatMap((a) => a.paths.map((p) => [a.asset_id, p]))
    : g.paths.map((p) => [g.asset_id, p]);
}
