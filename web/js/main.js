// mediadex web page: plain JavaScript modules, no build step. This module routes between the
// views and starts the page; each view lives in its own module and reads the JSON API of the
// same server through api.js.
import { $ } from "./dom.js";
import { api, tokenCookie } from "./api.js";
import { markGridDirty, showPhotos } from "./grid.js";
import { closeAssetDialog, initViewer, openAsset } from "./asset.js";
import { viewShown } from "./nav.js";
import { initLibraries, loadLibraries } from "./libraries.js";
import { loadActivity } from "./activity.js";
import { initCheck } from "./check.js";
import { loadDuplicates } from "./duplicates.js";
import { loadSimilar } from "./similar.js";
import { initPeople, showPeople } from "./people.js";
import { showTrash } from "./trash.js";
import { clearSelection, initSelection } from "./select.js";
import { startLive } from "./live.js";
import { showLacking } from "./lacking.js";
import { showAccess } from "./access.js";
import { loadCameras } from "./filters.js";
import { currentView, state, views } from "./state.js";

const shows = { photos: showPhotos, people: showPeople, libraries: loadLibraries, activity: loadActivity,
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
  viewShown();
  if (views.includes(view)) show(view, arg); else show("photos");
}

// `arg`: what the view shows, from the address (a person's id under People).
function show(view, arg) {
  if (view !== currentView()) clearSelection();
  for (const v of views) $("#view-" + v).hidden = v !== view;
  for (const a of document.querySelectorAll("nav a")) {
    a.classList.toggle("active", a.dataset.view === view);
    // On a phone the tabs are a strip that scrolls sideways: keep the current one in it.
    if (a.dataset.view === view) a.scrollIntoView({ block: "nearest", inline: "nearest" });
  }
  shows[view](arg);
}

tokenCookie();
initLibraries();
initCheck();
initPeople();
$("#filters").addEventListener("change", () => { markGridDirty(); showPhotos(); });
$("#filters").addEventListener("reset", () => setTimeout(() => { markGridDirty(); showPhotos(); }));
initViewer();
initSelection();
window.addEventListener("hashchange", route);

state.libraries = await api("GET", "/api/libraries").catch(() => []);
await startLive();
route();
showLacking();
showAccess();
loadCameras();
