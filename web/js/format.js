// How times, sizes, durations, months, file names and scan progress read on the page.

export const fmtTime = (ms) => (ms ? new Date(ms).toLocaleString() : "");

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
  const parts = [`${p.files ?? 0} files`];
  if (p.changed) parts.push(`${p.changed} new or changed`);
  if (p.problems) parts.push(`${p.problems} ${p.problems === 1 ? "problem" : "problems"}`);
  return parts.join(", ") + (run.reason ? ` — ${run.reason}` : "");
};
