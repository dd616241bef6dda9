// "Keep this, trash the others" for a group of duplicates or similar pictures: one button per
// picture, the server's suggestion marked. The others go through the leased trash
// (`POST /api/keep`), so they can be restored from the Trash view. A byte-identical group is
// one asset: its button keeps one file and moves the asset's other files (its copies) to the
// trash folder; restoring the asset puts them back (docs/api.md, "Keep one of a group").
import { el, banner, guard, toast } from "./dom.js";
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
        const gone = out.trashed.map((a) => a.id);
        toast(`Kept #${out.kept.id}; ${gone.length} moved to the trash.`, guard(async () => {
          const back = await api("POST", "/api/assets/restore", { ids: gone });
          markGridDirty();
          if (back.failed.length) banner(`${back.failed.length} could not be restored: ${back.failed[0].message}`);
          toast(`Restored ${back.moved.length}.`);
          reload();
        }));
        reload();
      }),
    }, "Keep this, trash the others"));
  }
  return el("div", { class: "keep-row" }, ...kids);
}

/**
 * The Keep button of file `p` (a path object) of asset `id` in a byte-identical group of
 * `count` files; `reload` redraws the view afterwards.
 */
export function keepFileControls(id, p, count, reload) {
  if (count < 2 || (p.state && p.state !== "present")) return el("div", { class: "keep-row" });
  return el("div", { class: "keep-row" }, el("button", {
    class: "keep",
    "data-keep-file": p.path,
    title: `Keep this file and move the other ${count - 1} copies to the trash folder`,
    onclick: guard(async () => {
      await api("POST", "/api/keep", { keep: id, file: { path: p.path, library_id: p.library_id } });
      markGridDirty();
      const copies = `${count - 1} ${count === 2 ? "copy" : "copies"}`;
      // The restore of a live photo puts back the copies its latest trash of copies took.
      toast(`Kept ${p.path}; ${copies} moved to the trash folder.`, guard(async () => {
        await api("POST", `/api/assets/${id}/restore`);
        markGridDirty();
        toast(`Put ${copies} back.`);
        reload();
      }));
      reload();
    }),
  }, "Keep this file, trash the copies"));
}
