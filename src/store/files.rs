//! The `files` table and the scan run's fenced writes of data: the known files for the diff,
//! ingest batches (file rows, asset claims, progress and reason counts in one transaction
//! under the scan lease), unchanged files seen again, and the end of a full scan (missing
//! files, orphaned assets, the circuit breaker) committed with the run's completion.

use super::assets::{claim, trash_if_orphan};
use super::lease::{expect_one, lost};
use super::{Store, StoreError, parse_col, scan_runs};
use crate::model::{
    BatchReport, Claim, FileStamp, FinishReport, IngestItem, ItemOutcome, KnownFile, Lease,
    MediaFacts, Millis, Provenance, RunState, TrashReason,
};
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::BTreeMap;

/// The fence that opens every scan data write: the run is ours, running and unexpired. It
/// records the progress (when given) and answers the run's library and scope.
const FENCE: &str = fenced!(
    "UPDATE scan_runs SET progress = coalesce(?4, progress), updated_at = ?3",
    "RETURNING library_id, scope"
);
/// Present files under a scope: `?2 = ''` is the whole library; otherwise the path itself
/// or anything below `scope/` (the byte range `scope/` ..< `scope0`, `0` following `/`).
const KNOWN: &str = "
    SELECT rel_path, size, mtime_ns, dev, inode, asset_id, last_reason = 'error' FROM files
     WHERE library_id = ?1 AND state = 'present'
       AND (?2 = '' OR rel_path = ?3 OR (rel_path >= ?4 AND rel_path < ?5))";
/// The present files directly in one directory (not deeper): the diff loads a directory
/// when the walk enters it, so its memory follows the walk, not the library.
const KNOWN_IN_ROOT: &str = "
    SELECT rel_path, size, mtime_ns, dev, inode, asset_id, last_reason = 'error' FROM files
     WHERE library_id = ?1 AND state = 'present' AND instr(rel_path, x'2f') = 0";
const KNOWN_IN_DIR: &str = "
    SELECT rel_path, size, mtime_ns, dev, inode, asset_id, last_reason = 'error' FROM files
     WHERE library_id = ?1 AND state = 'present' AND rel_path >= ?2 AND rel_path < ?3
       AND instr(substr(rel_path, length(?2) + 1), x'2f') = 0";
const PREVIOUS: &str = "SELECT asset_id FROM files WHERE library_id = ?1 AND rel_path = ?2";
/// Upsert of a processed file. An unreadable file (no asset given) keeps its old link.
const UPSERT: &str = "
    INSERT INTO files (library_id, rel_path, rel_path_text, size, mtime_ns, dev, inode,
                       asset_id, state, last_reason, error, first_seen_run, last_seen_run)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'present', ?9, ?10, ?11, ?11)
    ON CONFLICT (library_id, rel_path) DO UPDATE SET
        rel_path_text = excluded.rel_path_text, size = excluded.size,
        mtime_ns = excluded.mtime_ns, dev = excluded.dev, inode = excluded.inode,
        asset_id = coalesce(excluded.asset_id, files.asset_id), state = 'present',
        last_reason = excluded.last_reason, error = excluded.error,
        last_seen_run = excluded.last_seen_run, missing_since = NULL
    RETURNING id, asset_id";
const TOUCH: &str = "
    UPDATE files SET last_seen_run = ?3
     WHERE library_id = ?1 AND rel_path = ?2 AND state = 'present'";
const COUNT_REASON: &str = "
    INSERT INTO scan_run_reasons (run_id, reason, count) VALUES (?1, ?2, ?3)
    ON CONFLICT (run_id, reason) DO UPDATE SET count = count + excluded.count";
const REASONS: &str =
    "SELECT reason, count FROM scan_run_reasons WHERE run_id = ?1 ORDER BY reason";
const PRESENT: &str = "SELECT count(*) FROM files WHERE library_id = ?1 AND state = 'present'";
const UNSEEN: &str = "
    SELECT count(*) FROM files WHERE library_id = ?1 AND state = 'present'
                                 AND last_seen_run <> ?2";
const MARK_MISSING: &str = "
    UPDATE files SET state = 'missing', missing_since = ?3
     WHERE library_id = ?1 AND state = 'present' AND last_seen_run <> ?2
     RETURNING asset_id";

/// The fence check of a scan data write; answers the run's scope. A run of another library
/// is refused (the write is rolled back with it).
fn fence(
    conn: &Connection,
    lease: &Lease,
    library_id: i64,
    progress: Option<&str>,
    now: Millis,
) -> Result<String, StoreError> {
    let (lib, scope): (i64, String) = conn
        .prepare_cached(FENCE)?
        .query_row(params![lease.id, lease.generation, now, progress], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?
        .ok_or_else(|| lost(lease))?;
    if lib != library_id {
        return Err(StoreError::Conflict(format!(
            "scan run {} belongs to library {lib}, not {library_id}",
            lease.id
        )));
    }
    Ok(scope)
}

fn count_reasons(
    conn: &Connection,
    run_id: i64,
    counts: &BTreeMap<&'static str, i64>,
) -> Result<(), StoreError> {
    let mut stmt = conn.prepare_cached(COUNT_REASON)?;
    for (reason, n) in counts.iter().filter(|(_, n)| **n > 0) {
        stmt.execute(params![run_id, reason, n])?;
    }
    Ok(())
}

/// The byte range of paths below a non-empty scope.
fn scope_bounds(scope: &str) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let exact = scope.as_bytes().to_vec();
    let mut lo = exact.clone();
    lo.push(b'/');
    let mut hi = exact.clone();
    hi.push(b'/' + 1);
    (exact, lo, hi)
}

fn known_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<KnownFile> {
    Ok(KnownFile {
        rel_path: r.get(0)?,
        stamp: FileStamp {
            size: r.get::<_, i64>(1)? as u64,
            mtime_ns: r.get(2)?,
            dev: r.get::<_, i64>(3)? as u64,
            inode: r.get::<_, i64>(4)? as u64,
        },
        asset_id: r.get(5)?,
        has_error: r.get(6)?,
    })
}

/// Stamps are stored as SQLite integers: u64 values are kept bit for bit.
fn stamp_params(s: &FileStamp) -> (i64, i64, i64, i64) {
    (s.size as i64, s.mtime_ns, s.dev as i64, s.inode as i64)
}

/// One item of a batch: the claim (when the file was read), the file row, and the trash of
/// the asset the file showed before if nothing shows it any more (its content was replaced).
pub(super) fn ingest_one(
    conn: &Connection,
    run_id: i64,
    library_id: i64,
    item: &IngestItem,
    now: Millis,
) -> Result<ItemOutcome, StoreError> {
    let previous: Option<i64> = conn
        .prepare_cached(PREVIOUS)?
        .query_row(params![library_id, item.rel_path], |r| r.get(0))
        .optional()?
        .flatten();
    let claimed = match &item.checksum {
        Some(checksum) => {
            let none = MediaFacts::default();
            let facts = item.facts.as_ref().unwrap_or(&none);
            let content = item.content_hash.as_ref();
            let claimed = claim(
                conn,
                checksum,
                item.stamp.size,
                facts,
                content,
                previous,
                now,
            )?;
            if let (Some(content), Claim::Kept | Claim::Duplicate | Claim::Restored) =
                (content, claimed.1)
            {
                super::assets::stamp_content(conn, claimed.0, content)?;
            }
            Some(claimed)
        }
        None => None,
    };
    let (size, mtime, dev, inode) = stamp_params(&item.stamp);
    let (file_id, asset_id): (i64, Option<i64>) = conn.prepare_cached(UPSERT)?.query_row(
        params![
            library_id,
            item.rel_path,
            item.rel_path_text,
            size,
            mtime,
            dev,
            inode,
            claimed.map(|(id, _)| id),
            item.reason.as_str(),
            item.error,
            run_id
        ],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    if let Some(old) = previous.filter(|old| Some(*old) != asset_id) {
        trash_if_orphan(conn, old, TrashReason::Replaced, now)?;
    }
    Ok(ItemOutcome {
        file_id,
        asset_id,
        claim: claimed.map_or(Claim::Unreadable, |(_, c)| c),
    })
}

/// Marks the library's present files this run did not see as missing and trashes the
/// assets they were the last present file of. Returns (files, assets).
fn mark_missing(
    conn: &Connection,
    library_id: i64,
    run_id: i64,
    now: Millis,
) -> Result<(u64, u64), StoreError> {
    let asset_ids: Vec<Option<i64>> = conn
        .prepare_cached(MARK_MISSING)?
        .query_map(params![library_id, run_id, now], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let files = asset_ids.len() as u64;
    let mut candidates: Vec<i64> = asset_ids.into_iter().flatten().collect();
    candidates.sort_unstable();
    candidates.dedup();
    let mut trashed = 0;
    for id in candidates {
        trashed += u64::from(trash_if_orphan(conn, id, TrashReason::Missing, now)?);
    }
    Ok((files, trashed))
}

/// The circuit breaker: why marking missing must not happen, or `None`.
fn breaker(
    conn: &Connection,
    library_id: i64,
    run_id: i64,
    max_missing_share: f64,
    identity_ok: bool,
) -> Result<Option<String>, StoreError> {
    if !identity_ok {
        return Ok(Some(
            "the library root's identity changed (device or .mediadex-library marker); \
             nothing was marked missing or trashed"
                .to_string(),
        ));
    }
    let present: i64 = conn
        .prepare_cached(PRESENT)?
        .query_row([library_id], |r| r.get(0))?;
    let unseen: i64 = conn
        .prepare_cached(UNSEEN)?
        .query_row(params![library_id, run_id], |r| r.get(0))?;
    let share = if present == 0 {
        0.0
    } else {
        unseen as f64 / present as f64
    };
    if share > max_missing_share {
        return Ok(Some(format!(
            "{unseen} of {present} files ({:.0}%) would go missing, more than the {:.0}% \
             allowed; nothing was marked missing or trashed",
            share * 100.0,
            max_missing_share * 100.0
        )));
    }
    Ok(None)
}

impl Store {
    /// The present files of a library under `scope` (library-relative, `/`-separated; `""`
    /// is the whole library), for the scan's diff. Missing files are left out: one that comes
    /// back is new to the diff and its claim restores its asset.
    pub fn known_files(&self, library_id: i64, scope: &str) -> Result<Vec<KnownFile>, StoreError> {
        let scope = scope.trim_matches('/').to_string();
        self.read(move |conn| {
            let (exact, lo, hi) = scope_bounds(&scope);
            let mut stmt = conn.prepare_cached(KNOWN)?;
            let rows = stmt.query_map(params![library_id, scope, exact, lo, hi], known_from_row)?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }

    /// The present files directly inside `dir` (library-relative bytes; empty is the root).
    pub fn known_in_dir(&self, library_id: i64, dir: &[u8]) -> Result<Vec<KnownFile>, StoreError> {
        self.read(|conn| {
            let rows: Vec<KnownFile> = if dir.is_empty() {
                let mut stmt = conn.prepare_cached(KNOWN_IN_ROOT)?;
                stmt.query_map(params![library_id], known_from_row)?
                    .collect::<Result<_, _>>()?
            } else {
                let mut lo = dir.to_vec();
                lo.push(b'/');
                let mut hi = dir.to_vec();
                hi.push(b'/' + 1);
                let mut stmt = conn.prepare_cached(KNOWN_IN_DIR)?;
                stmt.query_map(params![library_id, lo, hi], known_from_row)?
                    .collect::<Result<_, _>>()?
            };
            Ok(rows)
        })
    }

    /// Commits one batch of processed files in ONE fenced transaction: the fence check on
    /// the scan run first (with `progress`), then per item the asset claim (DESIGN.md
    /// section 6) and the file row, then the run's reason counts (each item's reason, plus
    /// `duplicate` for a file that joined a live asset). A stale lease writes nothing.
    pub fn ingest_batch(
        &self,
        lease: &Lease,
        library_id: i64,
        batch: Vec<IngestItem>,
        progress: &str,
    ) -> Result<BatchReport, StoreError> {
        let (lease, progress) = (lease.clone(), progress.to_string());
        self.write(move |conn, now| {
            fence(conn, &lease, library_id, Some(&progress), now)?;
            let mut counts = BTreeMap::new();
            let mut report = BatchReport::default();
            for item in &batch {
                let outcome = ingest_one(conn, lease.id, library_id, item, now)?;
                if let (Claim::Created | Claim::Recreated, Some(asset)) =
                    (outcome.claim, outcome.asset_id)
                {
                    super::assets::hold(conn, asset, lease.id)?;
                }
                *counts
                    .entry(Provenance::from(item.reason).as_str())
                    .or_insert(0) += 1;
                if outcome.claim == Claim::Duplicate {
                    *counts.entry(Provenance::Duplicate.as_str()).or_insert(0) += 1;
                }
                report.items.push(outcome);
            }
            count_reasons(conn, lease.id, &counts)?;
            Ok(report)
        })
    }

    /// Records files the diff found unchanged as seen by this run (fenced, one transaction),
    /// and counts them as `unchanged`. Paths the store does not know as present are skipped.
    /// Returns how many rows were touched.
    pub fn touch_unchanged(
        &self,
        lease: &Lease,
        library_id: i64,
        rel_paths: Vec<Vec<u8>>,
        progress: &str,
    ) -> Result<u64, StoreError> {
        let (lease, progress) = (lease.clone(), progress.to_string());
        self.write(move |conn, now| {
            fence(conn, &lease, library_id, Some(&progress), now)?;
            let mut stmt = conn.prepare_cached(TOUCH)?;
            let mut touched = 0u64;
            for path in &rel_paths {
                touched += stmt.execute(params![library_id, path, lease.id])? as u64;
            }
            let counts = BTreeMap::from([(Provenance::Unchanged.as_str(), touched as i64)]);
            count_reasons(conn, lease.id, &counts)?;
            Ok(touched)
        })
    }

    /// Ends a scan run that walked to its end, in one fenced transaction with the data:
    /// a full-scope run marks the library's present files it did not see `missing` and
    /// trashes the assets whose last file that was (reason `missing`), then completes.
    /// The circuit breaker: when `identity_ok` is false or the share of present files that
    /// would go missing exceeds `max_missing_share`, nothing is marked and the run ends
    /// `suspect` with the reason. A scoped run completes without marking anything missing.
    pub fn finish_full_scan(
        &self,
        lease: &Lease,
        library_id: i64,
        max_missing_share: f64,
        identity_ok: bool,
    ) -> Result<FinishReport, StoreError> {
        let lease = lease.clone();
        self.write(move |conn, now| {
            let scope = fence(conn, &lease, library_id, None, now)?;
            let mut report = FinishReport {
                state: RunState::Completed,
                reason: None,
                missing_files: 0,
                trashed_assets: 0,
            };
            if scope.is_empty() {
                report.reason =
                    breaker(conn, library_id, lease.id, max_missing_share, identity_ok)?;
                if report.reason.is_some() {
                    report.state = RunState::Suspect;
                } else {
                    let (files, assets) = mark_missing(conn, library_id, lease.id, now)?;
                    (report.missing_files, report.trashed_assets) = (files, assets);
                    let counts = BTreeMap::from([(Provenance::Missing.as_str(), files as i64)]);
                    count_reasons(conn, lease.id, &counts)?;
                }
            }
            let n = scan_runs::finish(conn, &lease, report.state, report.reason.clone(), now)?;
            expect_one(&lease, n)?;
            Ok(report)
        })
    }

    /// A run's provenance counts, reasons with none left out.
    pub fn run_reasons(&self, run_id: i64) -> Result<Vec<(Provenance, i64)>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(REASONS)?;
            let rows = stmt.query_map([run_id], |r| {
                Ok((parse_col(r, 0, Provenance::parse)?, r.get(1)?))
            })?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }
}
