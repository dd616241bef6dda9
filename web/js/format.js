// How times, sizes, durations, months, file names, cameras and scan progress read on the
// page: as a person reads them, in the page's locale (Intl), never as raw ISO text.

/** A moment (ms since the epoch) as the reader's locale writes it, e.g. "3 Dec 2026, 10:58". */
export const fmtTime = (ms) => (ms ? new Intl.DateTimeFormat(undefined,
  { dateStyle: "medium", timeStyle: "short" }).format(new Date(ms)) : "");

/** The same moment in ISO 8601, for a title attribute (the exact value behind the words). */
export const isoTime = (ms) => (ms ? new Date(ms).toISOString() : "");

/** A count with the locale's digit grouping ("1,204"). */
export const fmtCount = (n) => new Intl.NumberFormat().format(n ?? 0);

/**
 * A capture time (docs/json.md `taken_at`: RFC 3339, with an offset when the file gave one,
 * else local wall time) as the locale writes it, at the wall-clock time the photo was taken
 * there: the offset is not applied, as a person reads "taken at 14:22" where it was taken.
 */
export const fmtTakenAt = (taken) => {
  const m = taken && /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?/.exec(taken);
  if (!m) return taken || "";
  const [y, mo, d, h, mi, sec] = m.slice(1).map((x) => Number(x || 0));
  const at = new Date(Date.UTC(y, mo - 1, d, h, mi, sec));
  const style = m[4] === undefined ? { dateStyle: "long" } : { dateStyle: "long", timeStyle: "short" };
  return new Intl.DateTimeFormat(undefined, { ...style, timeZone: "UTC" }).format(at);
};

/**
 * The camera as a person names it: the model, with the make in front only when the model
 * does not already start with it ("Canon EOS 5D Mark IV", not "Canon Canon EOS 5D Mark IV";
 * "NIKON D750" for make "NIKON CORPORATION"; "Apple iPhone 12").
 */
export const fmtCamera = (make, model) => {
  const mk = (make || "").trim(), md = (model || "").trim();
  if (!md) return mk;
  if (!mk) return md;
  const first = mk.split(/\s+/)[0].toLowerCase();
  return md.toLowerCase().startsWith(first) ? md : `${mk} ${md}`;
};

export const fmtBytes = (n) => {
  if (n == null) return "";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
};

export const fmtDuration = (ms) => {
  if (ms == null) return "";
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
};

export const monthKey = (taken) => (taken && /^\d{4}-\d{2}/.test(taken) ? taken.slice(0, 7) : "undated");

export const monthLabel = (key) => {
  if (key === "undated") return "No date";
  const [y, m] = key.split("-").map(Number);
  return new Date(y, m - 1, 1).toLocaleDateString(undefined, { year: "numeric", month: "long" });
};

/** The day a photo was taken, as the reader's locale writes it ("no date" when unknown). */
export const fmtTaken = (taken) => {
  const m = taken && /^(\d{4})-(\d{2})-(\d{2})/.exec(taken);
  if (!m) return "no date";
  return new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]))
    .toLocaleDateString(undefined, { year: "numeric", month: "long", day: "numeric" });
};

/** The file name of an asset's first path ("" when it has none). */
export const fileName = (asset) => {
  const path = asset.paths && asset.paths[0] ? asset.paths[0].path : "";
  return path.slice(path.lastIndexOf("/") + 1);
};

const parseProgress = (p) => { try { return p ? JSON.parse(p) : null; } catch { return null; } };

/** How many problems a run met so far (its progress counts them). */
export const problemCount = (run) => (parseProgress(run.progress) || {}).problems || 0;

export const progressText = (run) => {
  const p = parseProgress(run.progress);
  if (!p) return run.reason || "";
  const parts = [`${fmtCount(p.files)} files`];
  if (p.changed) parts.push(`${fmtCount(p.changed)} new or changed`);
  if (p.problems) parts.push(`${fmtCount(p.problems)} ${p.problems === 1 ? "problem" : "problems"}`);
  return parts.join(", ") + (run.reason ? ` — ${run.reason}` : "");
};
