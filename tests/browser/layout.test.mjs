// The page's layout at a phone's, a tablet's and a desktop's width (issue 27): headless
// Chromium against the server browser-test.sh started (after page.test.mjs, same libraries).
// Usage: MEDIADEX_URL=http://127.0.0.1:PORT/ SHOTS=DIR node layout.test.mjs
// (WEB_DIR=web serves the page's files from that folder instead of the binary's copy, to try
// a CSS change without a rebuild; LAYOUT_SIZES=360x740,2560x1440 tries other screens.)
// At 390, 768 and 1440 px it checks: nothing is wider than the screen on the grid, the
// People (without people here: people.test.mjs checks it full at 390 px), Activity,
// Libraries, Duplicates, Similar and Trash views, the open viewer, the problems dialog and
// the token form, and the dialogs fit the screen; every tile on screen shows its picture within
// 1.3x of the picture's shape; the page's height at first paint is within 10% of its laid-out
// height; at 1440 px sparse months share rows; a selection's bar lies on the screen; the
// viewer's Previous, Next and Close are on the screen and work; a similar group's suggested
// Keep trashes the others with a toast on the screen, whose Undo brings them back.
// Screenshots: SHOTS/layout-WIDTH-WHAT.png.
// Every check runs and the failures are listed together at the end.
import { url, shots, launch, overflow } from "./launch.mjs";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import assert from "node:assert/strict";


// LAYOUT_SIZES=360x740,2560x1440 tries other screens.
const SIZES = process.env.LAYOUT_SIZES
  ? process.env.LAYOUT_SIZES.split(",").map((s) => s.split("x").map(Number))
  : [[390, 844], [768, 1024], [1440, 900]];
const failures = [];
const check = (ok, what) => { if (!ok) failures.push(what); };
const step = (what) => console.log(`layout-test: ${what}`);

const browser = await launch();


// In the page: whether the open dialog `sel` lies on the screen and shows its content without
// a sideways scroll, and whether its picture (if any) lies inside it.
function dialogFit(sel) {
  const d = document.querySelector(sel);
  const r = d.getBoundingClientRect();
  const out = [];
  if (r.left < -1 || r.top < -1 || r.right > innerWidth + 1 || r.bottom > innerHeight + 1) {
    out.push(`${sel} is off the screen: ${JSON.stringify(r)} on ${innerWidth}x${innerHeight}`);
  }
  if (d.scrollWidth > d.clientWidth + 1) out.push(`${sel} scrolls sideways: ${d.scrollWidth} > ${d.clientWidth}`);
  const img = d.querySelector(".frame img");
  if (img) {
    const i = img.getBoundingClientRect();
    if (i.left < r.left - 1 || i.right > r.right + 1 || i.top < r.top - 1 || i.bottom > r.bottom + 1) {
      out.push(`the picture is cut off: ${JSON.stringify(i)} in ${JSON.stringify(r)}`);
    }
    if (i.width < 50) out.push(`the picture is tiny: ${i.width}px`);
  }
  return out;
}

// In the page: each tile on screen whose shape differs from its picture's by more than 1.3x.
function badShapes(gridSel) {
  const bad = [];
  let seen = 0;
  for (const t of document.querySelectorAll(`${gridSel} a.tile`)) {
    const r = t.getBoundingClientRect();
    if (r.bottom < 0 || r.top > innerHeight || !r.width) continue;
    const img = t.querySelector("img");
    if (!img.naturalWidth) continue;
    seen++;
    const shown = r.width / r.height, photo = img.naturalWidth / img.naturalHeight;
    const off = Math.max(shown / photo, photo / shown);
    if (off > 1.3) bad.push(`${Math.round(r.width)}x${Math.round(r.height)} for ${img.naturalWidth}x${img.naturalHeight}`);
  }
  return { seen, bad };
}

// Waits until every tile image on screen in `gridSel` has loaded.
const tilesLoaded = (page, gridSel) => page.waitForFunction((sel) => {
  const onScreen = [...document.querySelectorAll(`${sel} a.tile img`)].filter((i) => {
    const r = i.getBoundingClientRect();
    return r.bottom > 0 && r.top < innerHeight;
  });
  return onScreen.length > 0 && onScreen.every((i) => i.complete && i.naturalWidth > 0);
}, gridSel, { timeout: 30000 });

async function noOverflow(page, width, what) {
  const o = await page.evaluate(overflow);
  check(o.scroll <= o.inner, `${width}px ${what}: the page is ${o.scroll}px wide on a ${o.inner}px screen (${o.offenders.join("; ")})`);
}

async function shapes(page, width, what, gridSel) {
  await tilesLoaded(page, gridSel);
  const s = await page.evaluate(badShapes, gridSel);
  check(s.seen > 0, `${width}px ${what}: no tile on screen`);
  check(s.bad.length === 0, `${width}px ${what}: ${s.bad.length} of ${s.seen} tiles cropped past 1.3x: ${s.bad.slice(0, 5).join(", ")}`);
}

async function grid(page, width, height, shot) {
  step(`${width}px: the grid's height at first paint`);
  await page.goto(url);
  await page.locator("#grid a.tile").first().waitFor();
  // In one synchronous turn: the height as the page first lays it out, then the height with
  // every month laid out for real (the grid skips laying out months off screen).
  const h = await page.evaluate(() => {
    const first = document.documentElement.scrollHeight;
    const tiles = document.querySelectorAll("#grid a.tile").length;
    const force = document.createElement("style");
    force.textContent = ".month { content-visibility: visible !important; }";
    document.head.append(force);
    const real = document.documentElement.scrollHeight;
    force.remove();
    return { first, real, tiles };
  });
  check(Math.abs(h.first - h.real) <= 0.1 * h.real,
    `${width}px grid: the height at first paint is ${h.first}px, laid out ${h.real}px (${h.tiles} tiles)`);
  await tilesLoaded(page, "#grid");
  await noOverflow(page, width, "grid");
  await shapes(page, width, "grid", "#grid");
  await shot("grid");

  step(`${width}px: a selection's bar`);
  await page.locator("#grid a.tile .pick").first().click();
  await page.locator("#grid a.tile").nth(1).click({ modifiers: ["Shift"] });
  await page.locator("#selection-bar").getByText("2 selected").waitFor();
  await noOverflow(page, width, "selection");
  const bar = await page.evaluate(() => {
    const r = document.querySelector("#selection-bar").getBoundingClientRect();
    return { left: r.left, right: r.right, bottom: r.bottom };
  });
  check(bar.left >= 0 && bar.right <= width && bar.bottom <= height + 1,
    `${width}px selection: the bar is off the screen: ${JSON.stringify(bar)}`);
  await shot("selection");
  await page.keyboard.press("Escape");
  await page.locator("#selection-bar").waitFor({ state: "hidden" });

  step(`${width}px: a sparse library's months`);
  await page.locator('#filters input[name="before"]').fill("2020-01-01");
  await page.locator("#filters").dispatchEvent("change");
  await page.waitForFunction(() => document.querySelectorAll("#grid section.month").length >= 20
    && [...document.querySelectorAll("#grid section.month")].every((s) => s.dataset.month < "2020"),
    null, { timeout: 30000 });
  await noOverflow(page, width, "sparse months");
  await shapes(page, width, "sparse months", "#grid");
  if (width >= 1440) {
    const rows = await page.evaluate(() => {
      const tops = [...document.querySelectorAll("#grid section.month")]
        .map((s) => Math.round(s.getBoundingClientRect().top));
      return { months: tops.length, rows: new Set(tops).size };
    });
    check(rows.rows <= rows.months / 2,
      `${width}px sparse months: ${rows.months} months take ${rows.rows} rows (they should share rows)`);
  }
  await shot("sparse");
  await page.getByRole("button", { name: "Clear" }).click();
  await page.waitForFunction(() => document.querySelector("#grid section.month")?.dataset.month >= "2023");

  step(`${width}px: the viewer`);
  await page.locator("#grid a.tile").first().click();
  await page.waitForFunction(() => {
    const img = document.querySelector("dialog#asset[open] .frame img");
    return img && img.complete && img.naturalWidth > 0;
  }, null, { timeout: 30000 });
  await noOverflow(page, width, "viewer");
  for (const f of await page.evaluate(dialogFit, "dialog#asset")) check(false, `${width}px viewer: ${f}`);
  await shot("viewer");
  await stepThrough(page, width, shot);
}

// In the page: whether the viewer shows asset `id` (its URL, and its picture loaded).
const showing = (page, id) => page.waitForFunction((id) => location.hash === `#/asset/${id}`
  && document.querySelector("dialog#asset").open
  && [...document.querySelectorAll("#asset-media img")].some((i) =>
    i.src.includes(`/api/assets/${id}/`) && i.complete && i.naturalWidth > 0), id, { timeout: 30000 });

// The open viewer (on the first tile) steps to the next and back by its buttons, each reachable
// on the screen, and its Close goes back to the grid.
async function stepThrough(page, width, shot) {
  step(`${width}px: the viewer's previous, next and close`);
  const ids = (await page.$$eval("#grid a.tile", (ts) => ts.slice(0, 2).map((t) => t.getAttribute("href"))))
    .map((h) => h.split("/").pop());
  await showing(page, ids[0]);
  for (const name of ["Previous", "Next", "Close"]) {
    const box = await page.getByRole("button", { name }).boundingBox();
    check(box && box.x >= 0 && box.x + box.width <= width + 1 && box.width >= 24,
      `${width}px viewer: its ${name} button is not on the screen or too small: ${JSON.stringify(box)}`);
  }
  await page.getByRole("button", { name: "Next" }).click();
  await showing(page, ids[1]);
  await noOverflow(page, width, "viewer's next");
  await shot("viewer-next");
  await page.getByRole("button", { name: "Previous" }).click();
  await showing(page, ids[0]);
  await page.getByRole("button", { name: "Close" }).click();
  // Opened from the grid at the page's own address, the close goes back to that address.
  await page.waitForFunction(() => !location.hash.startsWith("#/asset/")
    && !document.querySelector("dialog#asset").open && document.querySelector("#view-photos").offsetParent !== null);
}

// The Similar view's first group: its suggested picture's "Keep this, trash the others" moves
// the others to the trash with a toast on the screen, whose Undo brings them back (so each
// width finds the group again).
async function keepBest(page, width, shot) {
  step(`${width}px: keep the suggested picture of a similar group, then Undo`);
  await page.evaluate(() => document.querySelector("#token-dialog").close());
  // The three near copies browser-test.sh planted (the landscapes make one group of hundreds).
  // The similar walk may still be on its way through 2,500 photos: the view is opened afresh
  // until their group shows (the view reads the groups once, when it opens).
  const keep = page.locator("#similar .dup", { hasText: "Similar/SIM_" }).locator("button.keep.primary");
  for (let tries = 0; ; tries++) {
    await page.goto(`${url}#/activity`);
    await page.goto(`${url}#/similar`);
    await page.waitForFunction(() => !document.querySelector("#similar").textContent.includes("Loading…"));
    if (await keep.count()) break;
    check(tries < 90, `${width}px keep: the planted group never showed in the Similar view`);
    if (tries >= 90) return;
    await page.waitForTimeout(2000);
  }
  const group = await keep.evaluate((b) => [...b.closest(".dup")
    ?.querySelectorAll("button.keep") ?? []].map((k) => Number(k.dataset.keep)));
  const kept = Number(await keep.getAttribute("data-keep"));
  const live = async (id) => !(await (await page.request.get(`${url}api/assets/${id}`)).json()).trashed;
  await keep.click();
  const toast = page.locator("#toast", { hasText: `Kept #${kept}` });
  await toast.waitFor({ timeout: 30000 });
  await noOverflow(page, width, "keep toast");
  const t = await toast.boundingBox();
  check(t && t.x >= 0 && t.x + t.width <= width + 1, `${width}px keep: the toast is off the screen: ${JSON.stringify(t)}`);
  const others = group.filter((id) => id !== kept);
  check(others.length > 0, `${width}px keep: the group has no other picture`);
  for (const id of others) check(!(await live(id)), `${width}px keep: #${id} is not in the trash`);
  check(await live(kept), `${width}px keep: the kept #${kept} is not live`);
  await shot("keep-toast");
  await toast.getByRole("button", { name: "Undo" }).click();
  await page.locator("#toast", { hasText: `Restored ${others.length}` }).waitFor({ timeout: 30000 });
  for (const id of others) check(await live(id), `${width}px keep: Undo did not bring #${id} back`);
}

async function views(page, width, shot) {
  const waits = {
    people: "#people > *", activity: "#runs tr", libraries: "#libraries tr", duplicates: "#duplicates > *",
    similar: "#similar > *", trash: "#trash-end:not(:empty)",
  };
  for (const [view, sel] of Object.entries(waits)) {
    step(`${width}px: the ${view} view`);
    await page.goto(`${url}#/${view}`);
    await page.locator(sel).first().waitFor({ timeout: 30000 });
    await page.waitForFunction((v) => !document.querySelector(`#view-${v}`).textContent.includes("Loading…"),
      view, { timeout: 30000 });
    await noOverflow(page, width, view);
    await shot(view);
  }

  step(`${width}px: the problems dialog`);
  await page.goto(`${url}#/activity`);
  await page.getByRole("button", { name: "List problems" }).first().click();
  await page.locator("dialog#problems-dialog[open] #problems tr").first().waitFor();
  await noOverflow(page, width, "problems dialog");
  for (const f of await page.evaluate(dialogFit, "dialog#problems-dialog")) check(false, `${width}px problems: ${f}`);
  await shot("problems");
  await page.locator("#problems-close").click();

  step(`${width}px: the token form`);
  await page.evaluate(() => document.querySelector("#token-dialog").showModal());
  await noOverflow(page, width, "token form");
  for (const f of await page.evaluate(dialogFit, "dialog#token-dialog")) check(false, `${width}px token form: ${f}`);
  await shot("token");
}

// Serves the page's own files from WEB_DIR, the API from the server.
async function fromDisk(page) {
  const dir = process.env.WEB_DIR;
  if (!dir) return;
  const types = { html: "text/html", css: "text/css", js: "text/javascript" };
  await page.route(/\/(index\.html|app\.css|js\/[a-z]+\.js)?(\?.*)?(#.*)?$/, (route) => {
    const path = new URL(route.request().url()).pathname.replace(/^\/$/, "/index.html");
    if (path.startsWith("/api/")) return route.continue();
    route.fulfill({ body: readFileSync(join(dir, path)), contentType: types[path.split(".").pop()] });
  });
}

const errors = [];
try {
  for (const [width, height] of SIZES) {
    const context = await browser.newContext({ viewport: { width, height } });
    const page = await context.newPage();
    page.on("pageerror", (e) => errors.push(`${width}px page error: ${e.message}`));
    await fromDisk(page);
    const shot = (what) => page.screenshot({ path: `${shots}/layout-${width}-${what}.png` });
    try {
      await grid(page, width, height, shot);
      await views(page, width, shot);
      await keepBest(page, width, shot);
    } catch (e) {
      await shot("failure").catch(() => {});
      failures.push(`${width}px: ${e.message.split("\n")[0]}`);
    }
    await context.close();
  }
  for (const e of errors) failures.push(e);
  if (failures.length) {
    console.error(`layout-test: FAILED (${failures.length}):\n  ${failures.join("\n  ")}`);
    process.exitCode = 1;
  } else {
    step("all checks passed");
  }
} finally {
  await browser.close();
}
