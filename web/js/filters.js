// The photo filters' suggestions: the camera box offers every camera the index knows (its
// make and its model; the server matches any part of make and model joined by a space,
// without case). Owns the
// #cameras datalist only; the filter form itself is read by grid.js.
import { $, el } from "./dom.js";
import { api } from "./api.js";

/** Fills the camera suggestions from `/api/cameras` (again after each scan: a new camera). */
export async function loadCameras() {
  const cameras = await api("GET", "/api/cameras").catch(() => []);
  const names = new Set();
  for (const c of cameras) {
    if (c.make) names.add(c.make);
    if (c.model) names.add(c.model);
  }
  $("#cameras").replaceChildren(...[...names].sort((a, b) => a.localeCompare(b))
    .map((n) => el("option", { value: n })));
}
