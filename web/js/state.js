// What the views share: the libraries as last loaded, and which view is on screen.
import { $ } from "./dom.js";

export const views = ["photos", "people", "libraries", "activity", "duplicates", "similar", "trash"];

export const state = { libraries: [] };

export function currentView() {
  return views.find((v) => !$("#view-" + v).hidden);
}

export const libName = (id) => (state.libraries.find((l) => l.id === id) || { name: `#${id}` }).name;
