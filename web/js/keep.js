// "Keep this, trash the others" for a group of duplicates or similar pictures: one button per
// picture, the server's suggestion marked. The others go through the leased trash
// (`POST /api/keep`), so they can be restored from the Trash view.
import { el, banner, guard } from "./dom.js";
import { api } from "./api.js";
import { markGridDirty } from "./grid.js";

/**
 * The Keep button and the suggestion mark of picture `id` in a group whose live pictures are
 * `live` (ids); `reload` redraws the view afterwards.
 */
export function keepControls(id, live, suggested, reload) {
  const others = live.filter((o) => o !== id);
  const kids = [];
  if (id === suggested) kids.push(el("span", { class: "pill suggested", title: "The most pixels, then the biggest file, then the most metadata" }, "Suggested"));
  if (others.length && live.includes(id)) {
    kids.push(el("button", {
      class: id === suggested ? "keep primary" : "keep",
      "data-keep": String(id),
      title: `Keep this one and move the other ${others.length} to the trash`,
      onclick: guard(async () => {
        const out = await api("POST", "/api/keep", { keep: id, trash: others });
        markGridDirty();
        banner(`Kept #${out.kept.id}; ${out.trashed.length} moved to the trash (restore them from Trash).`, "info");
        reload();
      }),
    }, "Keep this, trash the others"));
  }
  return el("div", { class: "keep-row" }, ...kids);
}
