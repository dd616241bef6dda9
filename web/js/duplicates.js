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
    el("div", { class: "dup-head" }, `${g.paths.length} copies · ${fmtBytes(g.size)}${g.kind ? " · " + g.kind : ""}`),
    el("div", { class: "dup-row" }, ...g.paths.map((p) => el("figure", {},
      el("a", { href: `#/asset/${p.asset_id || g.asset_id}` },
        el("img", { src: `/api/assets/${p.asset_id || g.asset_id}/thumbnail`, loading: "lazy", alt: "" })),
      el("figcaption", { class: "path" }, `${libName(p.library_id)}: ${p.path}`)))))));
}
