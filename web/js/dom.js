// Building DOM nodes, the banner, and the guard that turns a failed action into a banner.

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

export function banner(message, kind = "error") {
  const b = $("#banner");
  b.textContent = message;
  b.className = "banner " + kind;
  b.hidden = false;
  clearTimeout(banner.timer);
  banner.timer = setTimeout(() => { b.hidden = true; }, 8000);
}

export const guard = (fn) => async (...args) => {
  try { return await fn(...args); } catch (e) { banner(e.message); }
};

export const uuid = () => (crypto.randomUUID ? crypto.randomUUID()
  : Date.now().toString(36) + Math.random().toString(36).slice(2));
