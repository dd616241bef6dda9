// The Trash view: trashed items, each with its Restore button.
import { $, el, guard } from "./dom.js";
import { api } from "./api.js";
import { Feed, markGridDirty, tile } from "./grid.js";

let trashFeed = null;

export function showTrash() {
  if (trashFeed) trashFeed.stop();
  trashFeed = new Feed($("#trash-grid"), $("#trash-end"), { trashed: "true" }, (a) => {
    const t = tile(a, el("button", { class: "restore", onclick: guard(async (ev) => {
      ev.preventDefault(); ev.stopPropagation();
      await api("POST", `/api/assets/${a.id}/restore`);
      t.remove(); markGridDirty();
    }) }, "Restore"));
    return t;
  });
  trashFeed.more();
}
