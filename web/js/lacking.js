// The notice above the grid naming the formats this server shows only as placeholders,
// because the program that decodes them is not installed where it runs (GET /api/thumbnails,
// the list `mediadex status` prints as "no thumbnails").
import { $ } from "./dom.js";
import { api } from "./api.js";

// Which program gives each format its thumbnails, and the Debian package holding it.
const needs = {
  "image/heic": "heif-dec (package libheif-examples)",
  "image/heif": "heif-dec (package libheif-examples)",
  "image/avif": "heif-dec (package libheif-examples)",
  video: "ffmpeg",
};
const names = { "image/heic": "HEIC", "image/heif": "HEIF", "image/avif": "AVIF", video: "Videos" };

// What this server lacks and can do, asked once: the notice and the viewer's clips read it.
let tools = null;
export const serverTools = () => (tools ??= api("GET", "/api/thumbnails").catch(() => null));

export async function showLacking() {
  const out = await serverTools();
  const lacking = (out && out.no_thumbnails) || [];
  const notice = $("#lacking");
  notice.hidden = lacking.length === 0;
  if (!lacking.length) return;
  const byProgram = new Map();
  for (const format of lacking) {
    const program = needs[format] || "a decoder";
    byProgram.set(program, [...(byProgram.get(program) || []), names[format] || format]);
  }
  const parts = [...byProgram].map(([program, formats]) =>
    `${formats.join(", ")} show a placeholder: install ${program} for their thumbnails`);
  notice.textContent = parts.join(". ") + ".";
}
