// People in a real browser (issue 28 item 5): headless Chromium against the second server
// scripts/browser-test.sh starts on a library of astronauts and a rocket (sample-library
// --faces), whose face and embedding walks run on their own.
// Usage: MEDIADEX_URL=http://127.0.0.1:PORT/ SHOTS=DIR node people.test.mjs
// (WEB_DIR=web serves the page's files from that folder, as layout.test.mjs does.)
// Checks: the People view lists the astronaut with a face crop that loaded (a JPEG); a name
// typed in place and Enter is saved (the API says so), Esc leaves it; a refused merge is
// said in words; two people (the second made by moving a face with the API) merged by
// selecting both are one; the person's page shows their photos; the viewer names the face
// box, "Not NAME" takes the face out of them (the API says so) and "New person" with a name
// puts it in a new one; at 390 px the People view, a person's page and the viewer's face
// menu are no wider than the screen. Every wait is for a state (the page's or the API's).
import { url, shots, launch, overflow } from "./launch.mjs";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import assert from "node:assert/strict";

const ASTRONAUTS = Number(process.env.PEOPLE_PHOTOS || 4);
const browser = await launch();
const problems = [];
const step = (what) => console.log(`people-test: ${what}`);
const json = async (r) => {
  assert.ok(r.ok(), `${r.url()}: ${r.status()} ${await r.text()}`);
  return r.status() === 204 ? null : r.json();
};

// Serves the page's own files from WEB_DIR, the API from the server (layout.test.mjs).
async function fromDisk(page) {
  const dir = process.env.WEB_DIR;
  if (!dir) return;
  const types = { html: "text/html", css: "text/css", js: "text/javascript" };
  await page.route(/\/(index\.html|app\.css|viewer\.css|js\/[a-z]+\.js)?(\?.*)?(#.*)?$/, (route) => {
    const path = new URL(route.request().url()).pathname.replace(/^\/$/, "/index.html");
    if (path.startsWith("/api/")) return route.continue();
    route.fulfill({ body: readFileSync(join(dir, path)), contentType: types[path.split(".").pop()] });
  });
}

async function open(width, height) {
  const context = await browser.newContext({ viewport: { width, height } });
  const page = await context.newPage();
  page.on("pageerror", (e) => problems.push(`${width}px page error: ${e.message}`));
  await fromDisk(page);
  return page;
}

// Polls `probe` (an API read) until `ok` holds of its answer, asking for a recluster each
// time when `recluster`: the walks run on their own, and the recluster at their end is put
// off a minute unless asked for.
async function until(page, what, probe, ok, { recluster = false, seconds = 240 } = {}) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    if (recluster) await page.request.post(`${url}api/people/recluster`, { headers: { "X-Mediadex": "1" } });
    const got = await probe().catch((e) => ({ error: e.message }));
    if (ok(got)) return got;
    assert.ok(Date.now() < deadline, `${what}: still ${JSON.stringify(got).slice(0, 300)}`);
    await page.waitForTimeout(500);
  }
}

async function noOverflow(page, what) {
  const o = await page.evaluate(overflow);
  assert.ok(o.scroll <= o.inner, `${what}: the page is ${o.scroll}px wide on a ${o.inner}px screen (${o.offenders.join("; ")})`);
}

const cropLoaded = (page, sel) => page.waitForFunction((sel) => {
  const img = document.querySelector(sel);
  return img && img.complete && img.naturalWidth > 0;
}, sel, { timeout: 30000 });

let page = await open(1280, 900);
const get = (path) => page.request.get(url + path.replace(/^\//, "")).then(json);
const post = (path, body) => page.request.post(url + path.replace(/^\//, ""),
  { headers: { "X-Mediadex": "1" }, data: body }).then(json);
const shot = (p, name) => p.screenshot({ path: `${shots}/people-${name}.png` });

try {
  step(`the walks find the astronaut in ${ASTRONAUTS} photos`);
  const people = await until(page, "one person of every astronaut", () => get("/api/people"),
    (ps) => Array.isArray(ps) && ps.length === 1 && ps[0].photos === ASTRONAUTS, { recluster: true });
  const astronaut = people[0].id;

  step("the People view lists them with a face crop");
  await page.goto(`${url}#/people`);
  const card = page.locator(`#people .person-card[data-person="${astronaut}"]`);
  await card.waitFor();
  await cropLoaded(page, `#people .person-card[data-person="${astronaut}"] .person-face img`);
  const src = await card.locator(".person-face img").getAttribute("src");
  assert.match(src, /^\/api\/faces\/\d+\/crop$/);
  const crop = await page.request.get(url + src.slice(1));
  assert.equal(crop.headers()["content-type"], "image/jpeg", "the crop is a picture, not the placeholder");
  assert.match(await card.textContent(), new RegExp(`${ASTRONAUTS} photos`));
  await shot(page, "1-list");

  step("a name typed in place is saved; Esc leaves it");
  await card.locator("button.person-name").click();
  await card.locator("input.name-input").fill("Astronaut");
  await card.locator("input.name-input").press("Enter");
  await until(page, "the name saved", () => get(`/api/people/${astronaut}?limit=1`), (p) => p.name === "Astronaut");
  await page.locator(`#people .person-card[data-person="${astronaut}"] button.person-name`, { hasText: "Astronaut" }).waitFor();
  await page.locator(`#people .person-card[data-person="${astronaut}"] button.person-name`).click();
  const box = page.locator(`#people .person-card[data-person="${astronaut}"] input.name-input`);
  await box.fill("Somebody else");
  await box.press("Escape");
  await page.locator(`#people .person-card[data-person="${astronaut}"] button.person-name`, { hasText: "Astronaut" }).waitFor();
  assert.equal((await get(`/api/people/${astronaut}?limit=1`)).name, "Astronaut", "Esc saved nothing");

  step("a second person, by moving a face with the API");
  const photos = (await get(`/api/people/${astronaut}?limit=10`)).items.map((a) => a.id);
  const moved = (await get(`/api/assets/${photos[0]}/people`))[0].face_id;
  const second = (await post(`/api/faces/${moved}/person`, { person: null })).id;
  await page.goto(`${url}#/photos`);
  await page.goto(`${url}#/people`);
  await page.locator("#people .person-card").nth(1).waitFor();

  step("a refused merge is said in words");
  const pick = (id) => page.locator(`#people .person-card[data-person="${id}"] input[type=checkbox]`).check();
  await pick(astronaut);
  await pick(second);
  await page.route("**/api/people/*/merge", (r) => r.fulfill({ status: 409, contentType: "application/json",
    body: JSON.stringify({ error: { code: "conflict", message: "both are in photo 7" } }) }));
  await page.locator("#people-merge").click();
  await page.locator("#banner", { hasText: "cannot be merged: both are in photo 7" }).waitFor();
  await page.unroute("**/api/people/*/merge");
  assert.equal((await get("/api/people")).length, 2, "the refused merge changed nothing");

  step("two people selected and merged are one");
  await pick(astronaut);
  await pick(second);
  await page.locator("#people-merge").click();
  const merged = await until(page, "one person after the merge", () => get("/api/people"), (ps) => ps.length === 1);
  assert.equal(merged[0].id, astronaut, "merged into the first selected");
  assert.equal(merged[0].photos, ASTRONAUTS);
  await page.locator("#people .person-card").nth(1).waitFor({ state: "detached" });
  await shot(page, "2-merged");

  step("the person's page shows their photos");
  await page.locator(`#people .person-card[data-person="${astronaut}"] .person-face`).click();
  await page.waitForFunction((id) => location.hash === `#/people/${id}`, astronaut);
  await page.locator("#person-head", { hasText: "Astronaut" }).waitFor();
  await page.waitForFunction((n) => document.querySelectorAll("#person-grid a.tile").length === n, ASTRONAUTS);
  await shot(page, "3-person");

  step("the viewer names the face; Not Astronaut takes it out");
  const first = page.locator("#person-grid a.tile").first();
  const asset = Number((await first.getAttribute("href")).split("/").pop());
  await first.click();
  const tag = page.locator("dialog#asset .face .face-name");
  await tag.filter({ hasText: "Astronaut" }).waitFor();
  await shot(page, "4-viewer-named");
  await tag.click();
  await page.locator(".face-menu .face-not", { hasText: "Not Astronaut" }).click();
  const out = await until(page, "the face out of the astronaut", () => get(`/api/assets/${asset}/people`),
    (fs) => Array.isArray(fs) && fs.length === 1 && fs[0].person !== astronaut);
  assert.equal(out[0].person, null, "the face waits, in no one");
  await tag.filter({ hasText: "Who is this?" }).waitFor();

  step("New person with a name puts the face in them");
  await tag.click();
  await page.locator(".face-menu .face-filter").fill("Test pilot");
  await page.locator(".face-menu .face-new").click();
  const named = await until(page, "the face in a new person", () => get(`/api/assets/${asset}/people`),
    (fs) => Array.isArray(fs) && fs[0].name === "Test pilot");
  assert.equal(named[0].confirmed, true);
  await tag.filter({ hasText: "Test pilot" }).waitFor();
  await shot(page, "5-viewer-new-person");
  await page.keyboard.press("Escape");
  await page.close();

  step("390 px: the People view, a person's page and the face menu fit the screen");
  page = await open(390, 844);
  await page.goto(`${url}#/people`);
  await page.locator("#people .person-card").nth(1).waitFor();
  await cropLoaded(page, "#people .person-card .person-face img");
  await noOverflow(page, "390px People view");
  await shot(page, "390-list");
  await page.goto(`${url}#/people/${astronaut}`);
  await page.locator("#person-grid a.tile").first().waitFor();
  await noOverflow(page, "390px person's page");
  await page.locator("#person-grid a.tile").first().click();
  await page.locator("dialog#asset .face .face-name").click();
  await page.locator(".face-menu .face-person").first().waitFor();
  await noOverflow(page, "390px face menu");
  const menu = await page.locator(".face-menu").boundingBox();
  assert.ok(menu.x >= 0 && menu.x + menu.width <= 391, `390px face menu off the screen: ${JSON.stringify(menu)}`);
  await shot(page, "390-face-menu");

  assert.deepEqual(problems, [], "no script errors on the page");
  step("all checks passed");
} catch (e) {
  await shot(page, "failure").catch(() => {});
  console.error(`people-test: FAILED: ${e.message}`);
  if (problems.length) console.error(problems.join("\n"));
  process.exitCode = 1;
} finally {
  await browser.close();
}
