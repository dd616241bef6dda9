// Building DOM nodes, the banner and the toast (each shown in front of the dialog that is
// open, whose action they are about), and the guard that turns a failed action into a banner.

export const $ = (sel, root = document) => root.querySelector(sel);

export const el = (tag, attrs = {}, ...kids) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat()) {
    if (kid !== undefined && kid !== null) node.append(kid.nodeType ? kid : String(kid));
  }
  return node;
};

// A modal dialog keeps the page under its backdrop: a message about its action is shown
// inside the topmost open one, else in its place on the page.
function front(node, home) {
  const open = [...document.querySelectorAll("dialog[open]")];
  const host = open.length ? open[open.length - 1] : null;
  if (host && node.parentNode !== host) host.append(node);
  else if (!host && node.parentNode !== home.parentNode) home.before(node);
}

export function banner(message, kind = "error", action = null) {
  const b = $("#banner");
  front(b, $("#main"));
  b.replaceChildren(message, action ? el("button", { class: "link", onclick: action.run }, action.label) : "");
  b.className = "banner " + kind;
  b.hidden = false;
  clearTimeout(banner.timer);
  banner.timer = setTimeout(() => { b.hidden = true; }, 8000);
}

/** A short word after an action, with its undo when `undo` is given (clicked, it runs once). */
export function toast(message, undo = null) {
  const t = $("#toast");
  front(t, $("#main"));
  const button = undo && el("button", { onclick: async () => { t.hidden = true; await undo(); } }, "Undo");
  t.replaceChildren(el("span", {}, message), button || "");
  // Above the selection bar when it shows, so that the toast never covers its buttons.
  const bar = $("#selection-bar");
  t.style.bottom = bar && !bar.hidden ? `calc(${bar.offsetHeight}px + 1.6rem)` : "";
  t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.hidden = true; }, 10000);
}

export const guard = (fn) => async (...args) => {
  try { return await fn(...args); } catch (e) { banner(e.message); }
};

export const uuid = () => (crypto.randomUUID ? crypto.randomUUID()
  : Date.now().toString(36) + Math.random().toString(36).slice(2));
