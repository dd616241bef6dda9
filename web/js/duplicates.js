// The Duplicates view: the same photo in more than one place. A group of several assets (the
// same picture with other metadata) has a Keep button per picture, the suggestion marked; a
// group of byte-identical files is one asset, with a Keep button per file that trashes the
// asset's other files (docs/api.md).
import { $, el } from "./dom.js";
import { api } from "./api.js";
import { fmtBytes } from "./format.js";
import { libName } from "./state.js";
import { keepControls, keepFileControls } from "./keep.js";

export async function loadDuplicates() {
  const box = $("#duplicates");
  box.replaceChildren(el("p", { class: "muted" }, "Loading…"));
  let groups;
  try { groups = await api("GET", "/api/duplicates"); } catch (e) { box.replaceChildren(el("p", {}, e.message)); return; }
  if (!groups.length) { box.replaceChildren(el("p", { class: "muted" }, "No duplicates found.")); return; }
  box.replaceChildren(...groups.map((g) => el("div", { class: "dup", "data-kind": g.kind },
    el("div", { class: "dup-head" }, `${g.paths.length} copies · ${fmtBytes(g.size ?? g.assets[0].size)} · ${kindText(g)}`),
    el("div", { class: "dup-row" }, ...copies(g).map(([id, p, keep]) => el("figure", {},
      el("a", { href: `#/asset/${id}` },
        el("img", { src: `/api/assets/${id}/thumbnail`, loading: "lazy", alt: "" })),
      el("figcaption", { class: "path" }, `${libName(p.library_id)}: ${p.path}`),
      ...(keep ? [keep] : [])))))));
}

function kindText(g) {
  return g.kind === "identical"
    ? "identical files of one picture (keep one file, or trash the picture with every copy)"
    : "the same picture with other metadata";
}

// Each shown file with its asset and, for a group of several assets, the Keep controls under
// the first file of each asset: one asset for identical bytes, several for the same picture
// with other metadata (`same_content`, whose `assets` carry their own files).
function copies(g) {
  if (!g.assets) return g.paths.map((p) => [g.asset_id, p, keepFileControls(g.asset_id, p, g.paths.length, loadDuplicates)]);
  const live = g.assets.filter((a) => !a.trashed).map((a) => a.asset_id);
  return g.assets.flatMap((a) => a.paths.map((p, i) =>
    [a.asset_id, p, i === 0 ? keepControls(a.asset_id, live, g.suggested, loadDuplicates) : null]));
}
