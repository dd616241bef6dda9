// The Check section of the Activity view: `mediadex check` on the page. "Check now" asks
// GET /api/check (it reads every file's stamp, so it runs only when asked) and lists each
// disagreement in words; "Repair" posts /api/check/repair (it never deletes a file) and
// lists what it did.
import { $, el, guard } from "./dom.js";
import { api } from "./api.js";

// A finding's words name its library and path already.
function findingRow(f) {
  return el("li", {}, el("span", { class: "muted" }, f.kind.replaceAll("_", " ") + ": "), f.message);
}

function show(found, repairable) {
  const box = $("#check");
  if (!found.length) {
    box.replaceChildren(el("p", {}, "The index agrees with the disk."));
    return;
  }
  box.replaceChildren(el("ul", { class: "findings" }, ...found.map(findingRow)));
  if (repairable) {
    box.append(el("button", { onclick: guard(repair),
      title: "Fix what can be fixed without losing anything: no file is ever deleted" }, "Repair"));
  }
}

async function check() {
  $("#check").replaceChildren(el("p", { class: "muted" }, "Checking…"));
  const out = await api("GET", "/api/check");
  show(out.findings, true);
}

async function repair() {
  $("#check").replaceChildren(el("p", { class: "muted" }, "Repairing…"));
  const out = await api("POST", "/api/check/repair");
  show(out.found, false);
  $("#check").append(el("h3", {}, "Done"),
    el("ul", { class: "findings" }, ...out.done.map((d) => el("li", {}, d.message))));
}

export function initCheck() {
  $("#check-now").addEventListener("click", guard(check));
}
