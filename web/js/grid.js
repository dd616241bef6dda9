// The photo grid: a paged feed of assets grouped by month, laid out as justified rows.
import { $, el } from "./dom.js";
import { api } from "./api.js";
import { fileName, fmtDuration, fmtTaken, monthKey, monthLabel } from "./format.js";
import { currentView } from "./state.js";

// One paged feed of assets into a grid element: keyset pages of 200, fetched as the end
// marker scrolls into view. Month sections use content-visibility so the browser skips
// laying out the ones off screen, which keeps a 100,000-photo library smooth.
export class Feed {
  constructor(grid, end, query, tile) {
    Object.assign(this, { grid, end, query, tile });
    this.cursor = null; this.done = false; this.loading = false; this.count = 0;
    this.generation = (Feed.generation = (Feed.generation || 0) + 1);
    grid.replaceChildren();
    end.textContent = "";
    this.observer = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) this.more();
    }, { rootMargin: "1500px" });
    this.observer.observe(end);
  }

  stop() { this.observer.disconnect(); this.done = true; }

  async more() {
    if (this.loading || this.done) return;
    this.loading = true;
    const params = new URLSearchParams(this.query);
    params.set("limit", "200");
    if (this.cursor) params.set("cursor", this.cursor);
    try {
      const page = await api("GET", "/api/assets?" + params);
      if (this.generation !== Feed.generation && this.grid.id === "grid") return;
      for (const asset of page.items) this.add(asset);
      this.count += page.items.length;
      this.cursor = page.next_cursor;
      this.done = !this.cursor;
      this.end.textContent = this.done
        ? (this.count ? `${this.count} items` : "Nothing here yet.") : "Loading…";
    } catch (e) {
      this.end.textContent = e.message;
      this.done = true;
    } finally {
      this.loading = false;
    }
    // A short page may leave the end marker on screen: keep going.
    if (!this.done && this.end.getBoundingClientRect().top < innerHeight + 1500) this.more();
  }

  add(asset) {
    const key = monthKey(asset.taken_at);
    let section = this.grid.lastElementChild;
    if (!section || section.dataset.month !== key) {
      section = this.grid.querySelector(`section[data-month="${key}"]`) || this.grid.appendChild(
        el("section", { class: "month", "data-month": key },
          el("h3", {}, monthLabel(key)), el("div", { class: "tiles" })));
    }
    section.lastElementChild.append(this.tile(asset));
  }
}

// A tile's natural width keeps the picture's shape at the row height (160 px). Rows grow
// in proportion to it (flex-grow = width) so a justified row keeps every shape; the last row
// of a month is not stretched (the filler after the tiles takes its slack, see app.css), so
// a month of one to three photos shows them at their natural width.
export function tile(asset, extra) {
  const ratio = asset.width && asset.height ? asset.width / asset.height : 1;
  const w = Math.round(Math.max(0.5, Math.min(2.2, ratio)) * 160);
  const name = fileName(asset) || `item ${asset.id}`;
  const label = `${asset.kind === "video" ? "Video" : "Photo"} ${name}, ${fmtTaken(asset.taken_at)}`;
  return el("a", { class: "tile", href: `#/asset/${asset.id}`, style: `width:${w}px;flex-grow:${w}`,
                   "data-width": w, "aria-label": label,
                   title: (asset.paths && asset.paths[0] && asset.paths[0].path) || "" },
    el("img", { src: `/api/assets/${asset.id}/thumbnail`, loading: "lazy", decoding: "async", alt: "" }),
    asset.kind === "video" ? el("span", { class: "badge" }, "▶ " + fmtDuration(asset.duration_ms)) : null,
    extra || null);
}

let feed = null;
let dirty = true;

/** The photo grid is shown afresh the next time it is opened. */
export function markGridDirty() { dirty = true; }

/** No photo is on the grid (yet): a running first scan should refresh it as it goes. */
export function gridIsEmpty() { return !feed || feed.count === 0; }

function filterQuery() {
  const f = new FormData($("#filters"));
  const q = {};
  if (f.get("from")) q.from = f.get("from");
  if (f.get("before")) q.before = f.get("before");
  if (f.get("camera")) q.camera = f.get("camera").trim();
  if (f.get("rating_min")) q.rating_min = f.get("rating_min");
  if (f.get("tag")) q.tag = f.get("tag").trim();
  if (f.get("kind")) q.kind = f.get("kind");
  if (f.get("has_gps")) q.has_gps = "true";
  if (f.get("has_faces")) q.has_faces = "true";
  return q;
}

export function showPhotos() {
  if (!dirty && feed) return;
  dirty = false;
  if (feed) feed.stop();
  feed = new Feed($("#grid"), $("#grid-end"), filterQuery(), (a) => tile(a));
  feed.more();
}

export function refreshGridSoon() {
  dirty = true;
  clearTimeout(refreshGridSoon.timer);
  refreshGridSoon.timer = setTimeout(() => { if (currentView() === "photos") showPhotos(); }, 1500);
}
