// mediadex web page: plain JavaScript modules, no build step. This module routes between the
// views and starts the page; each view lives in its own module and reads the JSON API of the
// same server through api.js.
import { $ } from "./dom.js";
import { api, tokenCookie } from "./api.js";
import { markGridDirty, showPhotos } from "./grid.js";
import { closeAssetDialog, dialog, openAsset } from "./asset.js";
import { initLibraries, loadLibraries } from "./libraries.js";
import { loadActivity } from "./activity.js";
import { initCheck } from "./check.js";
import { loadDuplicates } from "./duplicates.js";
import { loadSimilar } from "./similar.js";
import { showTrash } from "./trash.js";
import { startLive } from "./live.js";
import { showLacking } from "./lacking.js";
import { showAccess } from "./access.js";
import { loadCameras } from "./filters.js";
import { currentView, state, views } from "./state.js";

const shows = { photos: showPhotos, libraries: loadLibraries, activity: loadActivity,
                duplicates: loadDuplicates, similar: loadSimilar, trash: showTrash };

function route() {
  const hash = location.hash.replace(/^#\/?/, "") || "photos";
  const [view, arg] = hash.split("/");
  if (view === "asset" && arg) {
    if (!currentView()) show("photos");
    openAsset(Number(arg));
    return;
  }
  closeAssetDialog();
  show(views.includes(view) ? view : "photos");
}

function show(view) {
  for (const v of views) $("#view-" + v).hidden = v !== view;
  for (const a of document.querySelectorAll("nav a")) {
    a.classList.toggle("active", a.dataset.view === view);
  }
  shows[view]();
}

tokenCookie();
initLibraries();
initCheck();
$("#filters").addEventListener("change", () => { markGridDirty(); showPhotos(); });
$("#filters").addEventListener("reset", () => setTimeout(() => { markGridDirty(); showPhotos(); }));
$("#asset-close").addEventListener("click", () => history.back());
dialog().addEventListener("cancel", (ev) => { ev.preventDefault(); history.back(); });
window.addEventListener("hashchange", route);

state.libraries = await api("GET", "/api/libraries").catch(() => []);
await startLive();
route();
showLacking();
showAccess();
loadCameras();
