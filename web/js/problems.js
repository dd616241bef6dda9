// A scan run's problems (the files and folders it could not list, read or parse, each with
// its error), opened from the run list in a dialog, a page at a time.
import { $, el, guard } from "./dom.js";
import { api } from "./api.js";

const PAGE = 200;

export async function openProblems(run) {
  const dialog = $("#problems-dialog");
  $("#problems-title").textContent = `Problems of scan ${run.id}`;
  $("#problems").replaceChildren();
  $("#problems-close").onclick = () => dialog.close();
  await loadPage(run.id, 0);
  if (!dialog.open) dialog.showModal();
}

async function loadPage(id, after) {
  const page = await api("GET", `/api/scans/${id}/problems?after=${after}&limit=${PAGE}`);
  $("#problems").append(...page.items.map((p) =>
    el("tr", {}, el("td", { class: "path" }, p.path), el("td", {}, p.error))));
  $("#problems-note").textContent = page.truncated
    ? `The run kept its first ${page.total} problems; it met more.`
    : `${page.total} ${page.total === 1 ? "problem" : "problems"}`;
  const more = $("#problems-more");
  more.hidden = page.next_cursor == null;
  more.onclick = guard(() => loadPage(id, page.next_cursor));
}
