// The viewer's face boxes (asset.js shows the picture): each box turned from the file's
// stored pixels to the upright picture and named from `/api/assets/{id}/people`: a face in
// a person shows their name, a face in no one asks "Who is this?". A box's name, clicked,
// opens a menu: the people to choose from, typed to narrow them, and "New person" (`POST
// /api/faces/{id}/person`), and for a face in a person "Not NAME" (`POST
// /api/faces/{id}/not`). Owns the .face boxes and the .face-menu in the viewer's frame.
import { el, guard, toast } from "./dom.js";
import { api } from "./api.js";
import { markPeopleDirty, personLabel } from "./people.js";

// Stored (un-rotated) pixel coordinates → displayed coordinates, per EXIF orientation.
function orient(x, y, w, h, W, H, o) {
  switch (o) {
    case 2: return [W - x - w, y, w, h];
    case 3: return [W - x - w, H - y - h, w, h];
    case 4: return [x, H - y - h, w, h];
    case 5: return [y, x, h, w];
    case 6: return [H - y - h, x, h, w];
    case 7: return [H - y - h, W - x - w, h, w];
    case 8: return [y, W - x - w, h, w];
    default: return [x, y, w, h];
  }
}

/** Draws asset `id`'s faces (`f`: its `/api/assets/{id}/faces`) over `img` in `frame`, each
 *  named when who it is can be read (else the bare boxes, as before People). */
export async function drawFaces(frame, img, f, id) {
  const W = f.stored_width, H = f.stored_height;
  if (!f.faces.length || !W || !H) return;
  const people = await api("GET", `/api/assets/${id}/people`).catch(() => null);
  if (!img.isConnected) return;
  for (const old of frame.querySelectorAll(".face, .face-menu")) old.remove();
  const o = f.orientation || 1;
  const [dw, dh] = o >= 5 ? [H, W] : [W, H];
  const sx = img.clientWidth / dw, sy = img.clientHeight / dh;
  const redraw = () => drawFaces(frame, img, f, id);
  for (const face of people || f.faces) {
    const [x, y, w, h] = orient(face.x, face.y, face.w, face.h, W, H, o);
    const box = el("div", { class: "face", "data-face": face.face_id,
      style: `left:${x * sx}px;top:${y * sy}px;width:${w * sx}px;height:${h * sy}px` });
    if (people) {
      // Near the picture's bottom the name goes above the box, so it stays on the picture.
      const above = (y + h) * sy > img.clientHeight - 28;
      box.append(nameTag(frame, face, above, redraw));
    } else {
      box.title = `face ${(face.score * 100).toFixed(0)}%`;
    }
    frame.append(box);
  }
}

function nameTag(frame, face, above, redraw) {
  const known = face.person != null;
  const text = face.name || (known ? `Unnamed person ${face.person}` : "Who is this?");
  const tag = el("button", { class: "face-name" + (known ? "" : " unknown") + (above ? " above" : ""),
                             title: known ? "Who is this? Change or say it is not them" : "Say who this is" }, text);
  tag.addEventListener("click", (ev) => { ev.stopPropagation(); openMenu(frame, tag, face, redraw); });
  tag.addEventListener("pointerdown", (ev) => ev.stopPropagation());
  return tag;
}

// The menu under (or over) the box's name, kept inside the frame.
async function openMenu(frame, tag, face, redraw) {
  for (const old of frame.querySelectorAll(".face-menu")) old.remove();
  const filter = el("input", { class: "face-filter", placeholder: "Name, or search people", "aria-label": "Who is this" });
  const list = el("div", { class: "face-people" }, el("span", { class: "muted" }, "Loading…"));
  const act = (fn) => guard(async () => { await fn(); markPeopleDirty(); menu.remove(); await redraw(); });
  const menu = el("div", { class: "face-menu", role: "dialog", "aria-label": "Who is this?" },
    el("div", { class: "face-menu-head" }, el("strong", {}, "Who is this?"),
      el("button", { class: "link", "aria-label": "Close", onclick: () => menu.remove() }, "×")),
    face.person != null
      ? el("button", { class: "face-not danger", onclick: act(() => notThem(face)) },
          `Not ${face.name || `unnamed person ${face.person}`}`)
      : null,
    filter, list,
    el("button", { class: "face-new", onclick: act(() => newPerson(face, filter.value.trim())) }, "New person"));
  menu.addEventListener("pointerdown", (ev) => ev.stopPropagation());
  menu.addEventListener("keydown", (ev) => {
    // Esc closes the menu, not the viewer.
    if (ev.key === "Escape") { ev.preventDefault(); ev.stopPropagation(); menu.remove(); tag.focus(); }
  });
  frame.append(menu);
  place(frame, tag, menu);
  filter.focus();
  let people = [];
  try { people = (await api("GET", "/api/people")).filter((p) => p.id !== face.person); } catch (e) {
    list.replaceChildren(el("span", {}, e.message));
    return;
  }
  const render = () => {
    const q = filter.value.trim().toLowerCase();
    const shown = people.filter((p) => !q || personLabel(p).toLowerCase().includes(q)).slice(0, 30);
    list.replaceChildren(...(shown.length ? shown.map((p) =>
      el("button", { class: "face-person", onclick: act(() => isThem(face, p)) },
        p.cover_face == null ? null : el("img", { src: `/api/faces/${p.cover_face}/crop`, alt: "" }),
        personLabel(p))) : [el("span", { class: "muted" }, q ? "No one by that name." : "No one else yet.")]));
  };
  filter.addEventListener("input", render);
  filter.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter") return;
    ev.preventDefault();
    // Enter takes the one person the name matches exactly, else makes them.
    const typed = filter.value.trim();
    const same = people.find((p) => p.name && p.name.toLowerCase() === typed.toLowerCase());
    if (same) act(() => isThem(face, same))();
    else if (typed) act(() => newPerson(face, typed))();
  });
  render();
}

function place(frame, tag, menu) {
  const f = frame.getBoundingClientRect(), t = tag.getBoundingClientRect();
  const width = Math.min(menu.offsetWidth, f.width);
  const left = Math.max(0, Math.min(t.left - f.left, f.width - width));
  const below = t.bottom - f.top + 4;
  const top = below + menu.offsetHeight > f.height ? Math.max(0, t.top - f.top - menu.offsetHeight - 4) : below;
  Object.assign(menu.style, { left: `${left}px`, top: `${top}px`, maxWidth: `${f.width}px` });
}

async function isThem(face, p) {
  await api("POST", `/api/faces/${face.face_id}/person`, { person: p.id });
  toast(`This is ${personLabel(p)}.`);
}

async function newPerson(face, name) {
  let p = await api("POST", `/api/faces/${face.face_id}/person`, { person: null });
  if (name) p = await api("POST", `/api/people/${p.id}/name`, { name });
  toast(name ? `This is ${name}.` : "This face is a new person now.");
}

async function notThem(face) {
  await api("POST", `/api/faces/${face.face_id}/not`, { person: face.person });
  toast(`Taken out of ${face.name || `unnamed person ${face.person}`}: it will not be put there again.`);
}
