// What every browser test starts from: the server's address and the screenshot folder, from
// the environment scripts/browser-test.sh sets, and headless Chromium launched one way.
import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";
import assert from "node:assert/strict";

export const url = process.env.MEDIADEX_URL;
export const shots = process.env.SHOTS || "browser-shots";
assert.ok(url, "set MEDIADEX_URL to the server's address");
mkdirSync(shots, { recursive: true });

export const launch = () => chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});

// In the page (`page.evaluate(overflow)`): how wide the document is against the screen, and the widest offenders.
export function overflow() {
  const offenders = [];
  for (const e of document.body.querySelectorAll("*")) {
    const r = e.getBoundingClientRect();
    if (r.width && r.right > innerWidth + 1 && getComputedStyle(e).position !== "fixed") {
      offenders.push(`${e.tagName.toLowerCase()}${e.id ? "#" + e.id : ""}.${e.className || ""} right=${Math.round(r.right)}`);
    }
  }
  return { scroll: document.documentElement.scrollWidth, inner: innerWidth, offenders: offenders.slice(0, 4) };
}
