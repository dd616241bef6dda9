// The asset view: the picture (the original when the browser shows its format, else the
// server's large preview) or video with its faces drawn and named (faces.js), its motion clip played on request
// (or word that this browser cannot play it, its download, and its conversion where the
// server has ffmpeg), why a placeholder stands in for the picture when the server has one,
// its facts, trash (with a toast to undo it) and restore. Stepping through the view and
// closing: nav.js.
import { $, el, banner, guard, toast } from "./dom.js";
import { api } from "./api.js";
import { fmtBytes, fmtCamera, fmtDuration, fmtTakenAt } from "./format.js";
import { markGridDirty, showPhotos } from "./grid.js";
import { initViewerNav, leaveViewer, navButtons, viewerOpens } from "./nav.js";
import { serverTools } from "./lacking.js";
import { drawFaces } from "./faces.js";
import { currentView } from "./state.js";

export const dialog = () => $("#asset");

// The asset on show (null when closed), and which opening is the latest: a slow answer for
// a photo stepped past must not replace the one stepped to.
let current = null;
let opening = 0;

export function closeAssetDialog() {
  current = null;
  opening++;
  if (dialog().open) dialog().close();
}

/** Wires the viewer's close (button, Esc), arrow keys and swipe once, at start. */
export function initViewer() {
  $("#asset-close").addEventListener("click", () => dialog().close());
  // However it closes (Esc, the button, a trash), the URL leaves the asset.
  dialog().addEventListener("close", () => { current = null; opening++; leaveViewer(); });
  initViewerNav(dialog(), $("#asset-media"), () => current);
}

const browserShows = (mime) => /^image\/(jpeg|png|webp|gif)$/.test(mime || "");

export async function openAsset(id) {
  const mine = ++opening;
  let asset;
  try { asset = await api("GET", `/api/assets/${id}`); } catch (e) { banner(e.message); return; }
  if (mine !== opening) return;
  current = id;
  const media = $("#asset-media");
  media.replaceChildren();
  const frame = el("div", { class: "frame" });
  let faces = null;
  if (asset.kind === "video") {
    // Range requests let the browser seek without fetching the whole file.
    const video = el("video", { src: `/api/assets/${id}/original`, controls: true, playsinline: true,
                                poster: `/api/assets/${id}/thumbnail`, preload: "metadata" });
    frame.append(video);
    sayWhenUnplayable(video, frame, `/api/assets/${id}/original`, asset.video_codec);
  } else {
    const src = `/api/assets/${id}/${browserShows(asset.mime) ? "original" : "preview"}`;
    const img = el("img", { src, alt: "", draggable: "false" });
    frame.append(img);
    faces = api("GET", `/api/assets/${id}/faces`).catch(() => null);
    const draw = async () => { const f = await faces; if (f && current === id) drawFaces(frame, img, f, id); };
    if (img.complete) draw(); else img.addEventListener("load", draw);
    if (asset.motion) frame.append(motionControl(id, frame));
  }
  // Why the server shows a placeholder instead of the picture (docs/json.md, a preview).
  if (asset.preview && asset.preview.state === "placeholder") {
    frame.append(el("p", { class: "placeholder-why", role: "status" }, asset.preview.reason));
  }
  media.append(frame, ...navButtons(id));
  renderFacts(asset, faces);
  if (!dialog().open) { viewerOpens(); dialog().showModal(); }
}

// Chromium and Firefox cannot decode HEVC (an iPhone's videos and Live Photo clips): such a
// clip fails, or plays as a black box with no picture. Either way the viewer says so and
// offers the file, and where the server has ffmpeg, to convert it (`playable`: the same clip
// as H.264, made on the first request, which waits for it).
function sayWhenUnplayable(video, frame, href, codec) {
  const say = async () => {
    if (frame.querySelector(".cannot-play")) return;
    const note = el("p", { class: "cannot-play", role: "status" },
      `This browser cannot play this clip${codec ? ` (${codec})` : ""}. `,
      el("a", { href, download: "" }, "Download it"), " to watch it in another player.");
    frame.append(note);
    const tools = await serverTools();
    if (!tools || !tools.converts_clips || video.dataset.converted) return;
    const convert = el("button", { class: "convert-clip" }, "Convert it to play here");
    convert.addEventListener("click", () => {
      video.dataset.converted = "1";
      if (!video.isConnected) frame.append(video); // a motion clip that failed was taken away
      note.replaceChildren("Converting the clip… a long video takes a while.");
      video.addEventListener("loadeddata", () => note.remove(), { once: true });
      video.src = href.replace(/\/(original|motion)$/, (_, what) =>
        what === "motion" ? "/motion/playable" : "/playable");
      video.load();
      video.play().catch(() => {});
    });
    note.append(" ", convert);
  };
  if (/hevc|h\.?265|hvc1|hev1/i.test(codec || "")
      && !video.canPlayType('video/mp4; codecs="hvc1.1.6.L93.B0"')) say();
  video.addEventListener("error", () => {
    const failed = frame.querySelector(".cannot-play");
    if (video.dataset.converted && failed) {
      failed.replaceChildren("The clip could not be converted here. ", el("a", { href, download: "" }, "Download it"), ".");
    } else say();
  });
  video.addEventListener("loadedmetadata", () => { if (!video.videoWidth) say(); });
}

// A Live Photo's or motion photo's clip (docs/api.md, `/motion`), played over the still on
// request and gone again when it ends, as a phone shows it.
function motionControl(id, frame) {
  const play = el("button", { class: "motion-play", title: "Play the motion clip" }, "▶ Motion");
  play.addEventListener("click", () => {
    const clip = el("video", { src: `/api/assets/${id}/motion`, autoplay: true, muted: true,
                               playsinline: true, class: "motion-clip" });
    clip.muted = true;
    const done = () => { clip.remove(); play.hidden = false; };
    clip.addEventListener("ended", done);
    clip.addEventListener("error", done);
    sayWhenUnplayable(clip, frame, `/api/assets/${id}/motion`, null);
    play.hidden = true;
    frame.append(clip);
  });
  return play;
}

// Where the date came from (docs/json.md, `taken_at_source`): a date guessed from the file's
// name or its modification time is not the camera's, and the user should see that.
const TAKEN_FROM = {
  exif: "camera (EXIF)", xmp: "embedded XMP", sidecar: "XMP sidecar", takeout: "Google Takeout",
  quicktime: "video container", filename: "file name", mtime: "file modified time, UTC",
};
function takenFrom(source) {
  return source ? ` (from ${TAKEN_FROM[source] || source})` : "";
}

// What a sidecar says (docs/json.md: `rating` -1 is "rejected", as Lightroom and darktable
// show it).
function fmtRating(r) {
  if (r == null) return "";
  return r < 0 ? "rejected" : r === 0 ? "unrated (0)" : "★".repeat(r) + "☆".repeat(5 - r);
}

// A RAW+JPEG stack (docs/json.md, `stack`): the grid shows its JPEG once; here each of its
// files is listed, with its type and a download of that file's own asset.
function renderStack(dl, a) {
  for (const m of a.stack || []) {
    const role = m.primary ? "shown" : "RAW";
    dl.append(el("dt", {}, "Stack"), el("dd", { class: "path" },
      el("a", { href: `/api/assets/${m.asset_id}/original`, download: "" }, m.path),
      ` · ${m.mime || "unknown type"} · ${role}${m.asset_id === a.id ? " (this)" : ""}`));
  }
}

function renderFacts(a, faces) {
  const rows = [
    ["Title", a.title],
    ["Description", a.description],
    ["Rating", fmtRating(a.rating)],
    ["Tags", (a.tags || []).join(", ")],
    // The ISO value stays at hand in the title, for who wants the exact time and its offset.
    ["Taken", a.taken_at ? el("span", { class: "taken", title: a.taken_at },
      fmtTakenAt(a.taken_at) + takenFrom(a.taken_at_source)) : "unknown"],
    ["Camera", fmtCamera(a.make, a.model)],
    ["Size", a.width && a.height ? `${a.width} × ${a.height}` : ""],
    ["Duration", a.kind === "video" ? fmtDuration(a.duration_ms) : ""],
    ["Codec", a.video_codec],
    ["Motion", !a.motion ? "" : a.motion.kind === "live"
      ? `Live Photo${a.motion.duration_ms ? ", " + fmtDuration(a.motion.duration_ms) : ""}`
      : "motion photo (video inside the JPEG)"],
    ["File", `${fmtBytes(a.size)} · ${a.mime || "unknown type"}`],
    ["Checksum", a.checksum ? a.checksum.slice(0, 16) + "…" : ""],
  ];
  const dl = $("#asset-facts");
  dl.replaceChildren();
  for (const [k, v] of rows) if (v) dl.append(el("dt", {}, k), el("dd", {}, v));
  if (a.lat != null && a.lon != null) {
    const href = `https://www.openstreetmap.org/?mlat=${a.lat}&mlon=${a.lon}#map=15/${a.lat}/${a.lon}`;
    dl.append(el("dt", {}, "Place"), el("dd", {},
      el("a", { href, target: "_blank", rel: "noopener" }, `${a.lat.toFixed(5)}, ${a.lon.toFixed(5)} (map)`)));
  }
  if (faces) {
    const dd = el("dd", {}, "…");
    dl.append(el("dt", {}, "Faces"), dd);
    faces.then((f) => { dd.textContent = !f ? "" : f.detector_version == null ? "not looked for yet" : String(f.faces.length); });
  }
  for (const p of a.paths || []) {
    dl.append(el("dt", {}, "Path"), el("dd", { class: "path" }, p.path + (p.state !== "present" ? ` (${p.state})` : "")));
  }
  renderStack(dl, a);
  const move = (to) => guard(async () => {
    await api("POST", `/api/assets/${a.id}/${to}`);
    afterTrashChange(a.id);
    if (to === "trash") toast("Moved to trash.", guard(() => undoTrash(a.id)));
  });
  $("#asset-actions").replaceChildren(
    el("a", { class: "button", href: `/api/assets/${a.id}/original`, download: "" }, "Download"),
    a.trashed
      ? el("button", { onclick: move("restore") }, "Restore")
      : el("button", { class: "danger", onclick: move("trash") }, "Move to trash"));
}

// The asset leaves the grids it was on, and the viewer closes.
function afterTrashChange(id) {
  markGridDirty();
  for (const t of document.querySelectorAll(`a.tile[href="#/asset/${id}"]`)) t.remove();
  dialog().close();
}

async function undoTrash(id) {
  await api("POST", `/api/assets/${id}/restore`);
  markGridDirty();
  if (currentView() === "photos") showPhotos();
  toast("Restored.");
}
