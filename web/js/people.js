// The People view (#/people): a card per person with a crop of their face
// (`/api/faces/{id}/crop`), their photo count and their name, renamed in place (click,
// type, Enter; Esc cancels); two cards selected are merged into one (`POST
// /api/people/{id}/merge`, a refusal said in words); a person is hidden or shown again.
// A person's page (#/people/ID): their name (renamed the same way) and their photos, the
// photo grid's Feed with the `person` filter, so tiles, the viewer and selection work as on
// Photos. Owns #view-people; the viewer's faces are faces.js's.
import { $, el, banner, guard, toast } from "./dom.js";
import { api } from "./api.js";
import { fmtCount } from "./format.js";
import { Feed, tile } from "./grid.js";

// The cards picked for a merge, in the order they were picked (the first keeps its name).
const picked = new Map();
let personFeed = null;
let shownPerson = null;

/** What the view shows under `arg`: a person's page for an id, else the list. */
export function showPeople(arg) {
  const id = Number(arg) || null;
  $("#people-home").hidden = id !== null;
  $("#person").hidden = id === null;
  // Back to the list: whatever was changed there, a person's page is read afresh after.
  if (id === null) { shownPerson = null; loadPeople(); } else showPerson(id);
}

/** The list and a person's page are shown afresh the next time they are opened. */
export function markPeopleDirty() { shownPerson = null; }

/** Wires the merge button and the hidden switch once, at start. */
export function initPeople() {
  $("#people-merge").addEventListener("click", guard(merge));
  $("#people-hidden").addEventListener("change", loadPeople);
}

export const personLabel = (p) => p.name || `Unnamed person ${p.id}`;

async function loadPeople() {
  picked.clear();
  renderPicked();
  const box = $("#people");
  box.replaceChildren(el("p", { class: "muted" }, "Loading…"));
  let people;
  try {
    people = await api("GET", "/api/people" + ($("#people-hidden").checked ? "?hidden=true" : ""));
  } catch (e) { box.replaceChildren(el("p", {}, e.message)); return; }
  if (!people.length) {
    box.replaceChildren(el("p", { class: "muted" },
      "No people yet. They appear once the face and recognition walks have seen your photos (Activity shows how far they are)."));
    return;
  }
  box.replaceChildren(...people.map(card));
}

function card(p) {
  const photos = `${fmtCount(p.photos)} ${p.photos === 1 ? "photo" : "photos"}`;
  const pick = el("input", { type: "checkbox", "aria-label": `Select ${personLabel(p)}` });
  pick.addEventListener("change", () => {
    if (pick.checked) picked.set(p.id, p); else picked.delete(p.id);
    c.classList.toggle("picked", pick.checked);
    renderPicked();
  });
  const c = el("div", { class: "person-card" + (p.hidden ? " is-hidden" : ""), "data-person": p.id },
    el("a", { class: "person-face", href: `#/people/${p.id}`, title: `Photos of ${personLabel(p)}` },
      p.cover_face == null ? el("span", { class: "no-face" }, "?")
        : el("img", { src: `/api/faces/${p.cover_face}/crop`, alt: `Face of ${personLabel(p)}`, loading: "lazy" })),
    nameEditor(p, "person-name", () => loadPeople()),
    el("span", { class: "muted person-count" }, photos),
    el("div", { class: "person-tools" },
      el("label", {}, pick, " Select"),
      el("button", { class: "link", onclick: guard(() => hide(p)) }, p.hidden ? "Show" : "Hide")));
  return c;
}

/** A person's name as a button; clicked, a box to type the new one in (Enter saves it,
 *  Esc or leaving the box unchanged cancels); `after(person)` runs once it is saved. */
export function nameEditor(p, cls, after) {
  const show = el("button", { class: `${cls} name-button` + (p.name ? "" : " unnamed"),
                              title: "Click to change the name" }, p.name || "Add a name");
  show.addEventListener("click", () => {
    const input = el("input", { class: `${cls} name-input`, value: p.name || "", "aria-label": "Name",
                                placeholder: "Name", maxlength: "200" });
    let done = false;
    const end = () => { if (!done) { done = true; input.replaceWith(show); show.focus(); } };
    const save = guard(async () => {
      if (done) return;
      const name = input.value.trim();
      if (name === (p.name || "")) { end(); return; }
      done = true;
      input.disabled = true;
      try {
        const saved = await api("POST", `/api/people/${p.id}/name`, { name });
        Object.assign(p, saved);
        show.textContent = saved.name || "Add a name";
        show.classList.toggle("unnamed", !saved.name);
        input.replaceWith(show);
        toast(saved.name ? `Named ${saved.name}.` : "Name removed.");
        after(saved);
      } catch (e) { done = false; input.disabled = false; input.focus(); throw e; }
    });
    input.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") { ev.preventDefault(); save(); }
      if (ev.key === "Escape") { ev.preventDefault(); ev.stopPropagation(); end(); }
    });
    input.addEventListener("blur", () => { if (input.value.trim() === (p.name || "")) end(); });
    show.replaceWith(input);
    input.focus();
    input.select();
  });
  return show;
}

function renderPicked() {
  const n = picked.size;
  $("#people-merge").disabled = n !== 2;
  const names = [...picked.values()].map(personLabel);
  $("#people-picked").textContent = n === 0 ? "Select two people to merge them."
    : n === 1 ? `${names[0]} selected: select one more to merge.`
    : n === 2 ? `Merge ${names[1]} into ${names[0]}?`
    : `${n} selected: merge two at a time.`;
}

// The first picked keeps their name (or takes the other's, when they had none).
async function merge() {
  if (picked.size !== 2) return;
  const [into, from] = [...picked.values()];
  try {
    const merged = await api("POST", `/api/people/${into.id}/merge`, { from: from.id });
    toast(`Merged ${personLabel(from)} into ${personLabel(merged)}.`);
  } catch (e) {
    if (e.status !== 409) throw e;
    banner(`${personLabel(into)} and ${personLabel(from)} cannot be merged: ${e.message}`);
  }
  await loadPeople();
}

async function hide(p) {
  const hidden = !p.hidden;
  await api("POST", `/api/people/${p.id}/hide`, { hidden });
  toast(hidden ? `${personLabel(p)} is hidden.` : `${personLabel(p)} shows again.`, guard(async () => {
    await api("POST", `/api/people/${p.id}/hide`, { hidden: !hidden });
    await loadPeople();
  }));
  await loadPeople();
}

async function showPerson(id) {
  // Back from the viewer to the same person: their page as it was, scrolled where it was.
  if (shownPerson === id && personFeed) return;
  shownPerson = id;
  if (personFeed) personFeed.stop();
  const head = $("#person-head");
  head.replaceChildren("…");
  personFeed = new Feed($("#person-grid"), $("#person-end"), { person: String(id) }, (a) => tile(a));
  personFeed.more();
  let p;
  try { p = await api("GET", `/api/people/${id}?limit=1`); } catch (e) {
    head.replaceChildren(e.message);
    return;
  }
  if (shownPerson !== id) return;
  const count = el("span", { class: "muted person-count" }, ` · ${fmtCount(p.photos)} ${p.photos === 1 ? "photo" : "photos"}`);
  head.replaceChildren(nameEditor(p, "person-title", () => {}), count);
}
