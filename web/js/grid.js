// The photo grid: a paged feed of assets grouped by month, laid out as justified rows.
import { $, el } from "./dom.js";
import { api } from "./api.js";
import { fileName, fmtDuration, fmtTaken, monthKey, monthLabel } from "./format.js";
import { currentView } from "./state.js";
import { clearSelection, pickBox, selecting } from "./select.js";

// One paged feed of assets into a grid element: keyset pages of 200, fetched as the end
// marker scrolls into view. Month sections use content-visibility so the browser skips
// laying out the ones off screen, which keeps a 100,000-photo library smooth; each gets the
// size its tiles will take (monthBox), so the page is as tall as it will be from the start.
export class Feed {
  constructor(grid, end, query, tile) {
    Object.assign(this, { grid, end, query, tile });
    this.cursor = null; this.done = false; this.loading = false; this.count = 0;
    this.shapes = new Map(); // month section → its tiles' shapes, for its estimated size
    this.width = 0;
    this.generation = (Feed.generation = (Feed.generation || 0) + 1);
    clearSelection();
    grid.replaceChildren();
    end.textContent = "";
    this.observer = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) this.more();
    }, { rootMargin: "1500px" });
    this.observer.observe(end);
    // A new width (a turned phone, a resized window) changes every month's estimated size.
    this.resized = new ResizeObserver(() => {
      if (grid.clientWidth !== this.width) this.estimate(this.shapes.keys());
    });
    this.resized.observe(grid);
  }

  stop() { this.observer.disconnect(); this.resized.disconnect(); this.done = true; this.stopped = true; }

  // Sets each month's size while off screen to what its tiles take at the grid's width.
  estimate(sections) {
    this.width = this.grid.clientWidth;
    if (!this.width) return;
    const style = getComputedStyle(document.documentElement);
    const rem = parseFloat(style.fontSize) || 16;
    const metrics = { width: this.width, row: rowHeight(), gap: 4, head: 2.6 * rem,
                      min: Math.min(this.width, 8.5 * rem) };
    for (const section of sections) {
      const box = monthBox(this.shapes.get(section), metrics);
      // Rounded up: a month a fraction narrower than its tiles would push the filler after
      // them onto a line of its own and stretch its last row.
      section.style.containIntrinsicSize = `auto ${Math.ceil(box.width)}px auto ${Math.round(box.height)}px`;
    }
  }

  async more() {
    if (this.loading || this.done) return;
    this.loading = true;
    const params = new URLSearchParams(this.query);
    params.set("limit", "200");
    if (this.cursor) params.set("cursor", this.cursor);
    try {
      const page = await api("GET", "/api/assets?" + params);
      // A page for a feed replaced meanwhile (another person's, say) is not this grid's.
      if (this.stopped || (this.generation !== Feed.generation && this.grid.id === "grid")) return;
      const touched = new Set();
      for (const asset of page.items) touched.add(this.add(asset));
      this.estimate(touched);
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
    if (!this.shapes.has(section)) this.shapes.set(section, []);
    this.shapes.get(section).push(shape(asset));
    return section;
  }
}

/** The grid's row height in px, as app.css sets it for this screen (`--row-h`). */
export function rowHeight() {
  return parseFloat(getComputedStyle(document.documentElement).getPropertyValue("--row-h")) || 160;
}

// A picture's shape (width / height). Only the extremes are bounded, to 1:4 and 4:1, so that
// a tile crops at most a sliver of any but the rarest panorama.
export const shape = (asset) =>
  Math.max(0.25, Math.min(4, asset.width && asset.height ? asset.width / asset.height : 1));

// The box a month's tiles take, laid out as app.css lays them out (flex lines of tiles
// `gap` apart, each full line grown to the width by the same factor for every tile, the last
// line at the row height), under a heading of `head` px: the size the month claims while
// it is off screen. A month narrower than the grid is as wide as its tiles.
export function monthBox(shapes, { width, row, gap, head, min }) {
  // The filler after the last tile (app.css) adds one more gap.
  const natural = shapes.reduce((sum, r) => sum + r * row + gap, 0);
  if (natural <= width) return { width: Math.max(min, natural), height: head + row };
  let height = head, used = 0, sum = 0, n = 0;
  for (const r of shapes) {
    if (n && used + gap + r * row > width) {
      height += (width - gap * (n - 1)) / sum + gap;
      used = 0; sum = 0; n = 0;
    }
    used += (n ? gap : 0) + r * row; sum += r; n++;
  }
  return { width, height: height + row };
}

// A tile is its picture's shape (--r) at the row height; app.css grows every tile of a full
// row by the same factor, so no picture is cropped, and the last row of a month is not
// stretched (the filler after the tiles takes its slack), so a month of one to three photos
// shows them at their natural width (`data-width`, in px at the row height of when it was made).
export function tile(asset, extra) {
  const r = shape(asset);
  const name = fileName(asset) || `item ${asset.id}`;
  const label = `${asset.kind === "video" ? "Video" : "Photo"} ${name}, ${fmtTaken(asset.taken_at)}`;
  return el("a", { class: "tile", href: `#/asset/${asset.id}`, style: `--r:${r.toFixed(4)}`,
                   "data-width": Math.round(r * rowHeight()), "aria-label": label,
                   title: (asset.paths && asset.paths[0] && asset.paths[0].path) || "" },
    el("img", { src: `/api/assets/${asset.id}/thumbnail`, loading: "lazy", decoding: "async", alt: "" }),
    pickBox(name),
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
  // A scan that ends while photos are selected waits for the selection to end: the refresh
  // would drop it under the user's hand.
  refreshGridSoon.timer = setTimeout(() => {
    if (selecting()) refreshGridSoon();
    else if (currentView() === "photos") showPhotos();
  }, 1500);
}
