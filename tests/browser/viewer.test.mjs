// The viewer in a real browser (issue 27): headless Chromium driven by playwright-core,
// against the server scripts/browser-test.sh starts. Usage as page.test.mjs.
// Checks: a photo opened from the grid steps to the next and previous tile by its buttons,
// the arrow keys and a swipe, the URL following it; Esc closes it back to the grid; a photo
// opened by a direct link closes to the grid (never about:blank); a trash from the viewer
// shows a toast whose Undo restores the photo (the API says so); a placeholder's reason (the
// asset's `preview`, staged on one photo) shows under it; a failed trash's error
// shows in front of the viewer, where it can be seen. Every wait is for a state, not a time.
import { url, shots, launch } from "./launch.mjs";
import assert from "node:assert/strict";


const browser = await launch();
const problems = [];
const open = async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  return page;
};
let page = await open();
const shot = (name) => page.screenshot({ path: `${shots}/${name}.png`, fullPage: false });
const step = (what) => console.log(`viewer-test: ${what}`);
const idOf = (href) => href.split("/").pop();
// The viewer shows asset `id`: its URL, and its picture loaded.
const showing = (id) => page.waitForFunction((id) => location.hash === `#/asset/${id}`
  && document.querySelector("dialog#asset").open
  && [...document.querySelectorAll("#asset-media img")].some((i) =>
    i.src.includes(`/api/assets/${id}/`) && i.complete && i.naturalWidth > 0), id);
const closedTo = (hash) => page.waitForFunction((hash) => location.hash === hash
  && !document.querySelector("dialog#asset").open, hash);
const api = async (id) => (await (await page.request.get(`${url}api/assets/${id}`)).json());

try {
  step("a photo opens from the grid");
  await page.goto(url + "#/photos");
  await page.locator("#grid a.tile").nth(4).waitFor();
  const ids = (await page.$$eval("#grid a.tile", (ts) => ts.slice(0, 4).map((t) => t.getAttribute("href"))))
    .map(idOf);
  await page.locator("#grid a.tile").nth(1).click();
  await showing(ids[1]);
  await shot("8-viewer");

  step("next and previous by button, the URL following");
  await page.getByRole("button", { name: "Next" }).click();
  await showing(ids[2]);
  await shot("9-viewer-next");
  await page.getByRole("button", { name: "Previous" }).click();
  await showing(ids[1]);

  step("next and previous by the arrow keys");
  await page.keyboard.press("ArrowRight");
  await showing(ids[2]);
  await page.keyboard.press("ArrowLeft");
  await showing(ids[1]);
  await page.keyboard.press("ArrowLeft");
  await showing(ids[0]);
  assert.equal(await page.getByRole("button", { name: "Previous" }).isDisabled(), true,
    "no previous before the first tile");

  step("a swipe to the left shows the next");
  await page.evaluate(() => {
    const media = document.querySelector("#asset-media");
    const at = (type, x) => media.dispatchEvent(new PointerEvent(type, {
      bubbles: true, pointerType: "touch", clientX: x, clientY: 300 }));
    at("pointerdown", 600);
    at("pointerup", 420);
  });
  await showing(ids[1]);

  step("Esc closes the viewer, after steps too, back to the grid");
  await page.keyboard.press("Escape");
  await closedTo("#/photos");
  assert.equal(await page.locator("#view-photos").isVisible(), true, "the grid is shown");

  step("a direct link's close goes to the grid, not about:blank");
  await page.close();
  page = await open();
  await page.goto(`${url}#/asset/${ids[2]}`);
  await showing(ids[2]);
  await page.getByRole("button", { name: "Close" }).click();
  await closedTo("#/photos");
  assert.ok(page.url().startsWith(url), `still on the page: ${page.url()}`);
  await page.locator("#grid a.tile").first().waitFor();

  step("a placeholder says why under it (the asset's preview)");
  assert.equal((await api(ids[0])).preview.state, "picture", "a sample photo is a picture");
  const why = "decoding timed out after 63 s";
  const one = `**/api/assets/${ids[0]}`;
  await page.route(one, async (route) => {
    const real = await route.fetch();
    const json = await real.json();
    json.preview = { state: "placeholder", cause: "timed_out", reason: why };
    await route.fulfill({ response: real, json });
  });
  await page.locator(`#grid a.tile[href="#/asset/${ids[0]}"]`).click();
  await showing(ids[0]);
  const note = page.locator("#asset-media .placeholder-why");
  await note.waitFor({ state: "visible" });
  assert.equal(await note.textContent(), why);
  await shot("10-placeholder-why");
  await page.unroute(one);
  await page.getByRole("button", { name: "Next" }).click();
  await showing(ids[1]);
  assert.equal(await page.locator("#asset-media .placeholder-why").count(), 0,
    "a picture has no note");
  await page.keyboard.press("Escape");
  await closedTo("#/photos");

  step("a failed trash says why in front of the viewer");
  await page.locator(`#grid a.tile[href="#/asset/${ids[3]}"]`).click();
  await showing(ids[3]);
  await page.route("**/api/assets/*/trash", (route) => route.fulfill({
    status: 409, contentType: "application/json",
    body: JSON.stringify({ error: { code: "read_only", message: "the library is read-only here" } }) }));
  await page.getByRole("button", { name: "Move to trash" }).click();
  const banner = page.locator("dialog#asset[open] #banner");
  await banner.waitFor({ state: "visible" });
  assert.match(await banner.textContent(), /read-only/);
  const onTop = await page.evaluate(() => {
    const r = document.querySelector("#banner").getBoundingClientRect();
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return Boolean(hit && hit.closest("#banner"));
  });
  assert.equal(onTop, true, "the error is in front of the viewer, not under its backdrop");
  await shot("10-error-in-front");
  await page.unroute("**/api/assets/*/trash");

  step("a trash shows a toast whose Undo restores the photo");
  await page.getByRole("button", { name: "Move to trash" }).click();
  const toast = page.locator("#toast");
  await toast.filter({ hasText: "Moved to trash" }).waitFor({ state: "visible" });
  await closedTo("#/photos");
  assert.equal((await api(ids[3])).trashed, true, "the server says trashed");
  await shot("11-toast-undo");
  await toast.getByRole("button", { name: "Undo" }).click();
  await toast.filter({ hasText: "Restored" }).waitFor({ state: "visible" });
  assert.equal((await api(ids[3])).trashed, false, "the server says restored");
  await page.locator(`#grid a.tile[href="#/asset/${ids[3]}"]`).waitFor();

  assert.deepEqual(problems, [], "no script errors on the page");
  step("all checks passed");
} catch (e) {
  await shot("viewer-failure").catch(() => {});
  console.error(`viewer-test: FAILED: ${e.message}`);
  if (problems.length) console.error(problems.join("\n"));
  process.exitCode = 1;
} finally {
  await browser.close();
}
