//! The `files` table and the scan run's fenced writes of data: the known files for the diff
//! (with what a present file's asset needs: restored from the trash, or claimed afresh),
//! ingest batches (file rows, asset claims, a Live Photo's pairing (`motion`), the RAW+JPEG
//! pairing of a file read (`stacks`), the restore of unchanged files' trashed assets, the
//! refresh of a read asset's sidecar facts (from its first copy's, `sidecars`), a forced
//! read's forgetting of a timed-out decode (`decode_timeouts`), the mark of a photo to be
//! read again (`files.read_again`, which a read clears) whose sidecar changed or whose
//! sidecar has no row yet, progress, reason counts and the run's problems in one
//! transaction under the scan lease),
//! progress with the count of unchanged files (which cost no row of their own), and the end
//! of a full scan (missing files from what the walk found gone, except rows a restore
//! brought back during the run; orphaned assets, and live assets no present file shows
//! any more whatever left them so, those no file row names at all included
//! (`unshown_assets`, migration 0026); the circuit breaker) committed with the run's
//! completion. A file a move settled after the scan read it is not written back, unless
//! the scan read other bytes than the move took (a re-save the move left in place).

use super::assets::{ClaimFor, claim, in_flight, restore, trash_if_orphan};
use super::lease::{expect_one, lost};
use super::{Committed, Store, StoreError, parse_col, problems, scan_runs, stacks};
use crate::model::{
    Asset, BatchReport, Claim, Counter, FileReason, FileStamp, FinishReport, IngestBatch,
    IngestItem, ItemOutcome, KnownDir, KnownFile, Lease, MOVE_JOB_KIND, MediaFacts, Millis,
    Provenance, RunState, ScanEnd, TrashReason, Unseen,
};
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::{BTreeMap, HashSet};

/// The fence that opens every scan data write: the run is ours, running and unexpired. It
/// records the progress (when given) and answers the run's library and scope.
const FENCE: &str = fenced!(
    "UPDATE scan_runs SET progress = coalesce(?4, progress), updated_at = ?3",
    "RETURNING library_id, scope"
);
/// The columns `known_from_row` reads: the stamp, the link, whether the last read found
/// a picture or video (a file that is none keeps `model::NOT_MEDIA` as its error, whichever
/// version wrote it), and why it must be read again though unchanged (migration 0021).
macro_rules! known_cols {
    () => {
        "id, rel_path, size, mtime_ns, dev, inode, asset_id, last_reason = 'error',
         error IS NOT 'not a photo or video', read_again"
    };
}
const PATHS: &str = "
    SELECT id, library_id, rel_path, rel_path_text, state FROM files WHERE asset_id = ?1
     ORDER BY state = 'missing', library_id, rel_path";

/// Present files under a scope: `?2 = ''` is the whole library; otherwise the path itself
/// or anything below `scope/` (the byte range `scope/` ..< `scope0`, `0` following `/`).
const KNOWN: &str = concat!(
    "SELECT ",
    known_cols!(),
    " FROM files WHERE library_id = ?1 AND state = 'present'
       AND (?2 = '' OR rel_path = ?3 OR (rel_path >= ?4 AND rel_path < ?5))"
);
/// The file rows from `?2` on, in path order (the root: no upper bound). `known_dir` reads
/// a directory's direct files from it and jumps over each sub-directory after its first
/// row, so listing a directory costs its own files plus one seek per sub-directory, not
/// its whole subtree.
const DIR_ROWS_FROM: &str = concat!(
    "SELECT ",
    known_cols!(),
    ", state = 'present' FROM files WHERE library_id = ?1 AND rel_path >= ?2 ORDER BY rel_path"
);
/// The trash, for the diff to tell a present file whose asset is trashed. Read once per scan
/// through the partial index, instead of a lookup of every known file's asset (a random
/// probe per file, a third slower listing of an unchanged library).
const TRASHED: &str = "SELECT id FROM assets WHERE trashed_at IS NOT NULL";
const DIR_ROWS_BETWEEN: &str = concat!(
    "SELECT ",
    known_cols!(),
    ", state = 'present' FROM files WHERE library_id = ?1 AND rel_path >= ?2 AND rel_path < ?3
     ORDER BY rel_path"
);
const PREVIOUS: &str = "SELECT id, asset_id FROM files WHERE library_id = ?1 AND rel_path = ?2";
/// A processed file new to the library. Not an upsert: `PREVIOUS` (in the same write
/// transaction) already told whether the row exists, and an `ON CONFLICT DO UPDATE` on a
/// table with foreign keys makes every execution keep a statement journal.
const INSERT_FILE: &str = "
    INSERT INTO files (library_id, rel_path, rel_path_text, size, mtime_ns, dev, inode,
                       asset_id, state, last_reason, error, first_seen_run, last_seen_run)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'present', ?9, ?10, ?11, ?11)";
/// A processed file the library had a row for, with the link `ingest_one` decided. The
/// read is the one `read_again` asked for. A file read lends its asset nothing until
/// `sidecars::read_copy` finds it one of several copies (migration 0022); one that could
/// not be read (?11 false) keeps its link and what it lent.
const UPDATE_FILE: &str = "
    UPDATE files SET rel_path_text = ?2, size = ?3, mtime_ns = ?4, dev = ?5, inode = ?6,
                     asset_id = ?7, state = 'present', last_reason = ?8,
                     error = ?9, last_seen_run = ?10, missing_since = NULL, read_again = NULL,
                     beside = CASE WHEN ?11 THEN NULL ELSE beside END
     WHERE id = ?1";
/// A known photo whose sidecar's new stamp this batch stores: its re-read may come in a
/// later batch or run (migration 0021). A mark already there stays (either reads it).
const MARK_READ_AGAIN: &str = "
    UPDATE files SET read_again = 'sidecar'
     WHERE library_id = ?1 AND rel_path = ?2 AND state = 'present' AND read_again IS NULL";
/// Whether the library has a present row at ?2.
const PRESENT_AT: &str = "SELECT EXISTS (SELECT 1 FROM files WHERE library_id = ?1 AND rel_path = ?2 AND state = 'present')";
/// The live assets of the library's missing rows that no move is moving (no pending intent,
/// no live move job: a trash between its renames and its flip looks the same): candidates
/// for `trash_if_orphan`, which checks that no present file shows them. Read through the
/// partial index `files_missing` (migration 0021): the library's missing rows only.
const LIVE_OF_MISSING: &str = "
    SELECT DISTINCT f.asset_id FROM files f JOIN assets a ON a.id = f.asset_id
     WHERE f.library_id = ?1 AND f.state = 'missing' AND f.asset_id IS NOT NULL
       AND a.trashed_at IS NULL
       AND NOT EXISTS (SELECT 1 FROM trash_intents t
                        WHERE t.asset_id = f.asset_id AND t.state = 'pending')
       AND NOT EXISTS (SELECT 1 FROM jobs j
                        WHERE j.unique_key = ?2 || ':' || f.asset_id
                          AND j.state IN ('queued', 'running'))";
/// The live, published assets that lost their last file row to a relink
/// (`unshown_assets`, migration 0026) and still have none, that no move is moving: no
/// library's missing rows name them (finding 18).
const LIVE_UNSHOWN: &str = "
    SELECT u.asset_id FROM unshown_assets u JOIN assets a ON a.id = u.asset_id
     WHERE a.trashed_at IS NULL AND a.pending_run IS NULL
       AND NOT EXISTS (SELECT 1 FROM files f WHERE f.asset_id = u.asset_id)
       AND NOT EXISTS (SELECT 1 FROM trash_intents t
                        WHERE t.asset_id = u.asset_id AND t.state = 'pending')
       AND NOT EXISTS (SELECT 1 FROM jobs j
                        WHERE j.unique_key = ?1 || ':' || u.asset_id
                          AND j.state IN ('queued', 'running'))";
/// The entries of `unshown_assets` whose asset a file row names again, or that is gone.
const DROP_SHOWN: &str = "
    DELETE FROM unshown_assets
     WHERE NOT EXISTS (SELECT 1 FROM assets a WHERE a.id = unshown_assets.asset_id)
        OR EXISTS (SELECT 1 FROM files f WHERE f.asset_id = unshown_assets.asset_id)";
/// The row at an item's path, if something marked it missing, when it still has the stamp
/// the scan read (?3..?6; see `moved_since_read`).
const MISSING_ROW: &str = "
    SELECT id FROM files WHERE library_id = ?1 AND rel_path = ?2 AND state = 'missing'
       AND size = ?3 AND mtime_ns = ?4 AND dev = ?5 AND inode = ?6";
/// The asset a present file of the library shows, for restoring it by id.
const PRESENT_ASSET: &str =
    "SELECT asset_id FROM files WHERE id = ?1 AND library_id = ?2 AND state = 'present'";
const COUNT_REASON: &str = "
    INSERT INTO scan_run_reasons (run_id, reason, count) VALUES (?1, ?2, ?3)
    ON CONFLICT (run_id, reason) DO UPDATE SET count = count + excluded.count";
const REASONS: &str =
    "SELECT reason, count FROM scan_run_reasons WHERE run_id = ?1 ORDER BY reason";
const PRESENT: &str = "SELECT count(*) FROM files WHERE library_id = ?1 AND state = 'present'";
/// What the completion of run ?3 would mark missing (see `MARK_FILE_MISSING`).
const FILE_PRESENT: &str = "
    SELECT count(*) FROM files WHERE id = ?2 AND library_id = ?1 AND state = 'present'
                                 AND revived_in_run IS NOT ?3";
const PRESENT_UNDER: &str = "
    SELECT count(*) FROM files WHERE library_id = ?1 AND rel_path >= ?2 AND rel_path < ?3
                                 AND state = 'present' AND revived_in_run IS NOT ?4";
/// A row that came back from `missing` while run ?4 was running (`files_revived`) is not
/// marked by it: the walk may have passed its folder before the restore put the file back.
const MARK_FILE_MISSING: &str = "
    UPDATE files SET state = 'missing', missing_since = ?3
     WHERE id = ?2 AND library_id = ?1 AND state = 'present' AND revived_in_run IS NOT ?4
     RETURNING asset_id";
const MARK_MISSING_UNDER: &str = "
    UPDATE files SET state = 'missing', missing_since = ?4
     WHERE library_id = ?1 AND rel_path >= ?2 AND rel_path < ?3 AND state = 'present'
       AND revived_in_run IS NOT ?5
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

/// The body of an ingest batch (see `Store::ingest_batch_counting`), in the caller's
/// transaction.
fn ingest(
    conn: &Connection,
    lease: &Lease,
    library_id: i64,
    batch: IngestBatch,
    progress: &str,
    now: Millis,
) -> Result<BatchReport, StoreError> {
    fence(conn, lease, library_id, Some(progress), now)?;
    // Before the items: a photo this batch reads itself is read with the sidecar's
    // bytes, and its write clears the mark.
    mark_read_again(conn, library_id, &batch.read_again)?;
    let unchanged = batch.unchanged as i64;
    let mut counts = BTreeMap::from([(Provenance::Unchanged.as_str(), unchanged)]);
    let mut report = BatchReport::default();
    let known_present: HashSet<i64> = batch.known_present.iter().copied().collect();
    for item in &batch.items {
        let moved = moved_since_read(conn, library_id, item, &known_present)?;
        // A new asset is inserted held by this run (`pending_run`).
        let outcome = match moved {
            Some(file_id) => ItemOutcome {
                file_id,
                asset_id: None,
                claim: Claim::Moved,
            },
            None => ingest_one(conn, lease.id, library_id, item, now)?,
        };
        *counts
            .entry(Provenance::from(item.reason).as_str())
            .or_insert(0) += 1;
        if outcome.claim == Claim::Duplicate {
            *counts.entry(Provenance::Duplicate.as_str()).or_insert(0) += 1;
        }
        report.items.push(outcome);
    }
    mark_read_with_unknown(conn, library_id, &batch.read_with)?;
    for file_id in batch.reclaim {
        report
            .items
            .extend(self::reclaim(conn, library_id, file_id)?);
    }
    count_reasons(conn, lease.id, &counts)?;
    count_hashed(conn, &batch.items)?;
    problems::record(conn, lease.id, &batch.problems)?;
    Ok(report)
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

/// The byte range of the paths below directory `dir` (`dir/` ..< `dir0`).
fn below(dir: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut lo = dir.to_vec();
    lo.push(b'/');
    let mut hi = dir.to_vec();
    hi.push(b'/' + 1);
    (lo, hi)
}

fn known_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<KnownFile> {
    Ok(KnownFile {
        id: r.get(0)?,
        rel_path: r.get(1)?,
        stamp: FileStamp {
            size: r.get::<_, i64>(2)? as u64,
            mtime_ns: r.get(3)?,
            dev: r.get::<_, i64>(4)? as u64,
            inode: r.get::<_, i64>(5)? as u64,
        },
        asset_id: r.get(6)?,
        has_error: r.get(7)?,
        media: r.get(8)?,
        read_again: match r.get::<_, Option<String>>(9)? {
            Some(_) => Some(parse_col(r, 9, FileReason::parse)?),
            None => None,
        },
    })
}

/// Lists one directory (see `DIR_ROWS_FROM`): its present files and the names of its
/// sub-directories with file rows, each sub-directory skipped after its first row.
fn list_dir(conn: &Connection, library_id: i64, dir: &[u8]) -> Result<KnownDir, StoreError> {
    let (prefix, hi) = if dir.is_empty() {
        (Vec::new(), None)
    } else {
        let (lo, hi) = below(dir);
        (lo, Some(hi))
    };
    let mut listing = KnownDir::default();
    let mut from = prefix.clone();
    loop {
        let mut stmt;
        let mut rows = match &hi {
            None => {
                stmt = conn.prepare_cached(DIR_ROWS_FROM)?;
                stmt.query(params![library_id, from])?
            }
            Some(hi) => {
                stmt = conn.prepare_cached(DIR_ROWS_BETWEEN)?;
                stmt.query(params![library_id, from, hi])?
            }
        };
        let mut jump = None;
        while let Some(row) = rows.next()? {
            let path: Vec<u8> = row.get(1)?;
            let rest = path.get(prefix.len()..).unwrap_or_default();
            if let Some(slash) = rest.iter().position(|&b| b == b'/') {
                let name = rest[..slash].to_vec();
                // Next: the first path after everything below `prefix/name/`.
                let mut next = prefix.clone();
                next.extend_from_slice(&name);
                next.push(b'/' + 1);
                listing.subdirs.push(name);
                jump = Some(next);
                break;
            }
            if row.get::<_, bool>(10)? {
                listing.files.push(known_from_row(row)?);
            }
        }
        match jump {
            Some(next) => from = next,
            None => return Ok(listing),
        }
    }
}

/// Stamps are stored as SQLite integers: u64 values are kept bit for bit.
fn stamp_params(s: &FileStamp) -> (i64, i64, i64, i64) {
    (s.size as i64, s.mtime_ns, s.dev as i64, s.inode as i64)
}

/// A file that was read and is no picture or video: the scan hands it over without a
/// checksum, but not as an unreadable file (`error`).
fn not_media(item: &IngestItem) -> bool {
    item.checksum.is_none() && item.reason != FileReason::Error
}

/// Writes the file row of `item` linked to `asset`: an update of row `existing`, or an
/// insert. Answers its id.
fn write_row(
    conn: &Connection,
    existing: Option<i64>,
    library_id: i64,
    item: &IngestItem,
    asset: Option<i64>,
    run_id: i64,
) -> Result<i64, StoreError> {
    let (size, mtime, dev, inode) = stamp_params(&item.stamp);
    let (text, reason, error) = (&item.rel_path_text, item.reason.as_str(), &item.error);
    let Some(id) = existing else {
        conn.prepare_cached(INSERT_FILE)?.execute(params![
            library_id,
            item.rel_path,
            text,
            size,
            mtime,
            dev,
            inode,
            asset,
            reason,
            error,
            run_id
        ])?;
        return Ok(conn.last_insert_rowid());
    };
    let read = item.checksum.is_some();
    conn.prepare_cached(UPDATE_FILE)?.execute(params![
        id, text, size, mtime, dev, inode, asset, reason, error, run_id, read
    ])?;
    Ok(id)
}

/// The asset claim of a file that was read (DESIGN.md section 6), with the content hash
/// stamped on an asset it joined; `None` for a file that could not be read.
fn claim_read(
    conn: &Connection,
    item: &IngestItem,
    previous: Option<i64>,
    run_id: i64,
    now: Millis,
) -> Result<Option<(i64, Claim)>, StoreError> {
    let Some(checksum) = &item.checksum else {
        return Ok(None);
    };
    let none = MediaFacts::default();
    let content = item.content_hash.as_ref();
    let claimed = claim(
        conn,
        &ClaimFor {
            checksum,
            size: item.stamp.size,
            facts: item.facts.as_ref().unwrap_or(&none),
            content,
            previous,
            run_id,
        },
        now,
    )?;
    if let (Some(content), Claim::Kept | Claim::Duplicate | Claim::Restored | Claim::Held) =
        (content, claimed.1)
    {
        super::assets::stamp_content(conn, claimed.0, content)?;
    }
    Ok(Some(claimed))
}

/// One item of a batch: the claim (when the file was read), the file row, and the trash of
/// the asset the file showed before if nothing shows it any more (its content was replaced,
/// or it is no picture or video any more and shows no asset). An unreadable file keeps its
/// link.
pub(super) fn ingest_one(
    conn: &Connection,
    run_id: i64,
    library_id: i64,
    item: &IngestItem,
    now: Millis,
) -> Result<ItemOutcome, StoreError> {
    let row: Option<(i64, Option<i64>)> = conn
        .prepare_cached(PREVIOUS)?
        .query_row(params![library_id, item.rel_path], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?;
    let previous = row.and_then(|(_, asset)| asset);
    let claimed = claim_read(conn, item, previous, run_id, now)?;
    let claimed_id = claimed.map(|(id, _)| id);
    // `scan --force` is the user's "try everything again": a decode that timed out too.
    if let (FileReason::Forced, Some(id)) = (item.reason, claimed_id) {
        super::decode_timeouts::forget(conn, id)?;
    }
    let asset_id = if not_media(item) {
        None
    } else {
        claimed_id.or(previous)
    };
    let file_id = write_row(
        conn,
        row.map(|(id, _)| id),
        library_id,
        item,
        asset_id,
        run_id,
    )?;
    // A file whose folder holds no namesake (`IngestItem::namesake`) has no partner to look
    // up by name, in a stack or a Live Photo.
    let namesakes = item.namesake.then_some(&item.rel_path[..]);
    if item.checksum.is_some() {
        let facts = item.facts.as_ref();
        stacks::pair(conn, library_id, file_id, namesakes, facts, row.is_some())?;
    }
    if let Some(old) = previous.filter(|old| Some(*old) != asset_id)
        && !trash_if_orphan(conn, old, TrashReason::Replaced, now)?
    {
        super::sidecars::follow_first(conn, old)?;
    }
    if let (Some(claimed), Some(facts)) = (claimed, &item.facts) {
        lend_facts(conn, (library_id, file_id), namesakes, claimed, facts)?;
    }
    Ok(ItemOutcome {
        file_id,
        asset_id,
        claim: claimed.map_or(Claim::Unreadable, |(_, c)| c),
    })
}

/// What a read of file `file_id` brings to the asset it claimed: what lies beside it now (a
/// sidecar created, changed or deleted since) to the asset, or to its copy's share of it
/// (finding 13), and its Live pairing. A file linked to an asset whose restore is in flight
/// (`Held`) lends it its facts now: the restore that flips it reads nothing.
fn lend_facts(
    conn: &Connection,
    (library_id, file_id): (i64, i64),
    namesakes: Option<&[u8]>,
    (id, claim): (i64, Claim),
    facts: &MediaFacts,
) -> Result<(), StoreError> {
    if matches!(
        claim,
        Claim::Kept | Claim::Restored | Claim::Held | Claim::Duplicate
    ) {
        let joined = claim == Claim::Duplicate;
        super::sidecars::read_copy(conn, id, file_id, facts, joined)?;
    }
    // A created asset was inserted with these facts already.
    if !matches!(claim, Claim::Created | Claim::Recreated) {
        super::motion::stamp(conn, id, facts)?;
    }
    super::motion::pair(conn, library_id, namesakes, id, facts)
}

/// Restores the trashed asset of file `file_id`, seen present and unchanged by the scan
/// (DESIGN.md section 6: the index heals itself). By id alone, and only while the row is
/// still present: a trash that moved the file since keeps its asset trashed. `None` when
/// there was nothing to restore (restored or swept meanwhile: a swept asset leaves the row
/// without a link, and the next scan stores the file afresh). Nor while a move is in
/// flight for it (finding 20): a restore between its renames may yet roll back and move
/// this very file into the trash again, so its holder, or whoever carries it on, ends it,
/// and the next full scan heals what it left, as the trashing direction does
/// (`LIVE_OF_MISSING`).
fn reclaim(
    conn: &Connection,
    library_id: i64,
    file_id: i64,
) -> Result<Option<ItemOutcome>, StoreError> {
    let asset: Option<Option<i64>> = conn
        .prepare_cached(PRESENT_ASSET)?
        .query_row(params![file_id, library_id], |r| r.get(0))
        .optional()?;
    let Some(id) = asset.flatten() else {
        return Ok(None);
    };
    if in_flight(conn, id)? || !restore(conn, id)? {
        return Ok(None);
    }
    super::sidecars::follow_first(conn, id)?;
    Ok(Some(ItemOutcome {
        file_id,
        asset_id: Some(id),
        claim: Claim::Restored,
    }))
}

/// The row of `item` when a move settled it after the scan read the file (issue 25 defect
/// 10): the store listed it present when the scan met it (`known_present`), and it is
/// missing now. Only a move (the user's trash, in this transaction's past) marks a row
/// missing while its library's run runs: writing the read back would undo the trash, or
/// make a phantom asset of a file that is in the trash folder. The next scan sees the path
/// as it is then. A move marks a row missing with the stamp it began with (a rename keeps
/// it): a read of another stamp read other bytes than the move's (a photo re-saved since
/// the index last read it, which the move found changed and left where it is, finding
/// 17), and is written like any read.
fn moved_since_read(
    conn: &Connection,
    library_id: i64,
    item: &IngestItem,
    known_present: &HashSet<i64>,
) -> Result<Option<i64>, StoreError> {
    if known_present.is_empty() {
        return Ok(None);
    }
    let (size, mtime, dev, inode) = stamp_params(&item.stamp);
    let read = params![library_id, item.rel_path, size, mtime, dev, inode];
    let missing: Option<i64> = conn
        .prepare_cached(MISSING_ROW)?
        .query_row(read, |r| r.get(0))
        .optional()?;
    Ok(missing.filter(|id| known_present.contains(id)))
}

/// Marks the present photos at `paths` to be read again for their sidecar.
fn mark_read_again(
    conn: &Connection,
    library_id: i64,
    paths: &[Vec<u8>],
) -> Result<(), StoreError> {
    let mut stmt = conn.prepare_cached(MARK_READ_AGAIN)?;
    for path in paths {
        stmt.execute(params![library_id, path])?;
    }
    Ok(())
}

/// Marks the photos of `read_with` to be read again whose facts come from a sidecar or
/// JSON that has no present row after the batch's items (issue 25 finding 15): its row
/// comes in a later batch, and a run cut before that commits would leave the photo with
/// facts that nothing takes away when the file goes (a gone file is known by its row).
/// A later batch of the same run that stores it reads the photo again and clears the
/// mark; a photo read in the file's own batch is not marked.
fn mark_read_with_unknown(
    conn: &Connection,
    library_id: i64,
    read_with: &[(Vec<u8>, Vec<Vec<u8>>)],
) -> Result<(), StoreError> {
    let mut present = conn.prepare_cached(PRESENT_AT)?;
    let mut unknown = Vec::new();
    for (photo, from) in read_with {
        for path in from {
            if !present.query_row(params![library_id, path], |r| r.get::<_, bool>(0))? {
                unknown.push(photo.clone());
                break;
            }
        }
    }
    mark_read_again(conn, library_id, &unknown)
}

/// How many of the unseen files and of the files below vanished directories run `run_id`
/// would mark missing (see `MARK_FILE_MISSING`).
fn count_unseen(
    conn: &Connection,
    library_id: i64,
    run_id: i64,
    unseen: &Unseen,
) -> Result<i64, StoreError> {
    let mut n = 0i64;
    if unseen.files.is_empty() && unseen.dirs.is_empty() {
        return Ok(n);
    }
    let mut one = conn.prepare_cached(FILE_PRESENT)?;
    for id in &unseen.files {
        n += one.query_row(params![library_id, id, run_id], |r| r.get::<_, i64>(0))?;
    }
    let mut under = conn.prepare_cached(PRESENT_UNDER)?;
    for dir in &unseen.dirs {
        let (lo, hi) = below(dir);
        n += under.query_row(params![library_id, lo, hi, run_id], |r| r.get::<_, i64>(0))?;
    }
    Ok(n)
}

/// Marks the unseen files and everything below the vanished directories missing (except the
/// rows a restore brought back while run `run_id` ran), and trashes the assets they were
/// the last present file of. Returns (files, assets).
fn mark_missing(
    conn: &Connection,
    library_id: i64,
    run_id: i64,
    unseen: &Unseen,
    now: Millis,
) -> Result<(u64, u64), StoreError> {
    let mut asset_ids: Vec<Option<i64>> = Vec::new();
    let mut one = conn.prepare_cached(MARK_FILE_MISSING)?;
    for id in &unseen.files {
        let rows = one.query_map(params![library_id, id, now, run_id], |r| r.get(0))?;
        for asset in rows {
            asset_ids.push(asset?);
        }
    }
    let mut under = conn.prepare_cached(MARK_MISSING_UNDER)?;
    for dir in &unseen.dirs {
        let (lo, hi) = below(dir);
        let rows = under.query_map(params![library_id, lo, hi, now, run_id], |r| r.get(0))?;
        for asset in rows {
            asset_ids.push(asset?);
        }
    }
    let files = asset_ids.len() as u64;
    let mut candidates: Vec<i64> = asset_ids.into_iter().flatten().collect();
    candidates.sort_unstable();
    candidates.dedup();
    let mut trashed = 0;
    for id in candidates {
        if trash_if_orphan(conn, id, TrashReason::Missing, now)? {
            trashed += 1;
        } else {
            // A copy went: the asset takes the sidecar facts of its first one left.
            super::sidecars::follow_first(conn, id)?;
        }
    }
    Ok((files, trashed))
}

/// Trashes (reason `missing`) the live assets whose files in this library are missing and
/// that no present file shows anywhere (DESIGN.md section 6, "the index heals itself, both
/// ways"): what a move that broke half way, or a file row marked missing by any other
/// writer, left live without a file. One whose file is elsewhere in the library was linked
/// to it by this run's claim, and is left alone. So are those with no file row at all
/// (`trash_live_unshown`). Returns how many it trashed.
fn trash_live_without_file(
    conn: &Connection,
    library_id: i64,
    now: Millis,
) -> Result<u64, StoreError> {
    let ids: Vec<i64> = conn
        .prepare_cached(LIVE_OF_MISSING)?
        .query_map(params![library_id, MOVE_JOB_KIND], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let mut trashed = 0;
    for id in ids {
        trashed += u64::from(trash_if_orphan(conn, id, TrashReason::Missing, now)?);
    }
    Ok(trashed + trash_live_unshown(conn, now)?)
}

/// Trashes (reason `missing`) the live assets that no file row names at all, in any
/// library (`LIVE_UNSHOWN`), and forgets the entries that need no heal any more. Returns
/// how many it trashed.
fn trash_live_unshown(conn: &Connection, now: Millis) -> Result<u64, StoreError> {
    let ids: Vec<i64> = conn
        .prepare_cached(LIVE_UNSHOWN)?
        .query_map([MOVE_JOB_KIND], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let mut trashed = 0;
    for id in ids {
        trashed += u64::from(trash_if_orphan(conn, id, TrashReason::Missing, now)?);
    }
    conn.prepare_cached(DROP_SHOWN)?.execute([])?;
    Ok(trashed)
}

/// The circuit breaker: why marking `unseen` files missing must not happen, or `None`.
/// The library's present files are counted only when something would go missing, so an
/// unchanged rescan reads no table for it.
fn breaker(
    conn: &Connection,
    library_id: i64,
    end: &ScanEnd,
    unseen: i64,
) -> Result<Option<String>, StoreError> {
    if !end.identity_ok {
        return Ok(Some(
            "the library root's identity changed (device or .mediadex-library marker); \
             nothing was marked missing or trashed"
                .to_string(),
        ));
    }
    if unseen == 0 {
        return Ok(None);
    }
    let present: i64 = conn
        .prepare_cached(PRESENT)?
        .query_row([library_id], |r| r.get(0))?;
    let share = unseen as f64 / present.max(1) as f64;
    if share > end.max_missing_share {
        return Ok(Some(format!(
            "{unseen} of {present} files ({:.0}%) would go missing, more than the {:.0}% \
             allowed; nothing was marked missing or trashed",
            share * 100.0,
            end.max_missing_share * 100.0
        )));
    }
    Ok(None)
}

/// Files and bytes read and hashed by a batch, counted in its own transaction (a rolled
/// back batch counts nothing).
fn count_hashed(conn: &Connection, batch: &[IngestItem]) -> Result<(), StoreError> {
    let hashed = batch.iter().filter(|i| i.checksum.is_some());
    let (files, bytes) = hashed.fold((0i64, 0i64), |(f, b), i| {
        (
            f + 1,
            b.saturating_add(i64::try_from(i.stamp.size).unwrap_or(i64::MAX)),
        )
    });
    super::counters::bump(conn, Counter::FilesHashed, files)?;
    super::counters::bump(conn, Counter::BytesHashed, bytes)
}

/// The asset's paths, present first (as `PATHS` orders them).
pub(super) fn load_paths(conn: &Connection, asset: &mut Asset) -> Result<(), StoreError> {
    asset.paths = conn
        .prepare_cached(PATHS)?
        .query_map([asset.id], |r| super::rows::path_from_row(r, 0))?
        .collect::<Result<_, _>>()?;
    Ok(())
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

    /// What the store knows directly inside `dir` (library-relative bytes; empty is the
    /// root): its present files and the names of its sub-directories with file rows.
    pub fn known_dir(&self, library_id: i64, dir: &[u8]) -> Result<KnownDir, StoreError> {
        self.read(|conn| list_dir(conn, library_id, dir))
    }

    /// The ids of the trashed assets (as many as the trash holds).
    pub fn trashed_asset_ids(&self) -> Result<HashSet<i64>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(TRASHED)?;
            let rows = stmt.query_map([], |r| r.get(0))?;
            Ok(rows.collect::<Result<_, _>>()?)
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
        items: Vec<IngestItem>,
        progress: &str,
    ) -> Result<BatchReport, StoreError> {
        let batch = IngestBatch {
            items,
            ..IngestBatch::default()
        };
        self.ingest_batch_counting(lease, library_id, batch, progress)
    }

    /// `ingest_batch`, also marking the photos `batch.read_again` to be read again (their
    /// sidecar's new stamp is among the items), restoring the trashed assets of the present
    /// files `batch.reclaim` (ids of files the run saw unchanged, see `reclaim`), counting
    /// the `batch.unchanged` files the run saw since its last write (they cost no row of
    /// their own) and appending `batch.problems` to the run's problem list, all in the one
    /// fenced transaction.
    pub fn ingest_batch_counting(
        &self,
        lease: &Lease,
        library_id: i64,
        batch: IngestBatch,
        progress: &str,
    ) -> Result<BatchReport, StoreError> {
        let (lease, progress) = (lease.clone(), progress.to_string());
        self.write(move |conn, now| ingest(conn, &lease, library_id, batch, &progress, now))
    }

    /// `ingest_batch_counting` as one operation of the run's write group (`writer`): it
    /// answers once the batch has run, and shares its transaction with the run's next
    /// batches until the group's limits (`GroupLimits`) or any other write commit it;
    /// `Committed` says when it is on disk. The group commits only if the run's fence
    /// still holds at that moment: all of its batches land, or none.
    pub fn ingest_batch_grouped(
        &self,
        lease: &Lease,
        library_id: i64,
        batch: IngestBatch,
        progress: &str,
    ) -> Result<(BatchReport, Committed), StoreError> {
        let (lease, progress) = (lease.clone(), progress.to_string());
        let sealed = lease.clone();
        let weight = (batch.items.len() + batch.reclaim.len()) as u64;
        self.write_grouped(
            lease.id,
            weight,
            move |conn, now| fence(conn, &sealed, library_id, None, now).map(|_| ()),
            move |conn, now| ingest(conn, &lease, library_id, batch, &progress, now),
        )
    }

    /// Records a scan's progress and counts `unchanged` files it saw since its last write
    /// (fenced, one transaction). An unchanged file has no row of its own to write: the
    /// missing marking works from what the walk did not see (`Unseen`), not from stamps.
    pub fn scan_progress(
        &self,
        lease: &Lease,
        library_id: i64,
        progress: &str,
        unchanged: u64,
    ) -> Result<(), StoreError> {
        let (lease, progress) = (lease.clone(), progress.to_string());
        self.write(move |conn, now| {
            fence(conn, &lease, library_id, Some(&progress), now)?;
            let counts = BTreeMap::from([(Provenance::Unchanged.as_str(), unchanged as i64)]);
            count_reasons(conn, lease.id, &counts)
        })
    }

    /// Ends a scan run that walked to its end, in one fenced transaction with the data:
    /// the remaining `unchanged` count and progress; for a full-scope run, the files the
    /// walk found gone (`end.unseen`) are marked `missing` and the assets whose last file
    /// that was are trashed (reason `missing`), and so is any live asset of the library
    /// that no present file shows any more (`trash_live_without_file`: the index heals
    /// both ways), and the trash-folder files no move explains are adopted as trashed
    /// assets (`end.adoptions`); then the run completes. A row a restore brought back while
    /// this run ran is not marked: the restore holds.
    /// The circuit breaker: when `identity_ok` is false or the share of present files that
    /// would go missing exceeds `max_missing_share`, nothing is marked and the run ends
    /// `suspect` with the reason. A scoped run completes without marking anything missing.
    pub fn finish_full_scan(
        &self,
        lease: &Lease,
        library_id: i64,
        end: ScanEnd,
    ) -> Result<FinishReport, StoreError> {
        let lease = lease.clone();
        self.write(move |conn, now| {
            let scope = fence(conn, &lease, library_id, end.progress.as_deref(), now)?;
            let mut counts =
                BTreeMap::from([(Provenance::Unchanged.as_str(), end.unchanged as i64)]);
            let mut report = FinishReport {
                state: RunState::Completed,
                reason: None,
                missing_files: 0,
                trashed_assets: 0,
                adopted: 0,
            };
            if scope.is_empty() {
                let unseen = count_unseen(conn, library_id, lease.id, &end.unseen)?;
                report.reason = breaker(conn, library_id, &end, unseen)?;
                if report.reason.is_some() {
                    report.state = RunState::Suspect;
                } else {
                    if unseen > 0 {
                        let (files, assets) =
                            mark_missing(conn, library_id, lease.id, &end.unseen, now)?;
                        (report.missing_files, report.trashed_assets) = (files, assets);
                        counts.insert(Provenance::Missing.as_str(), files as i64);
                    }
                    report.trashed_assets += trash_live_without_file(conn, library_id, now)?;
                    report.adopted = super::check::adopt_all(conn, &end.adoptions, now)?;
                }
            }
            count_reasons(conn, lease.id, &counts)?;
            let end_as = (report.state, report.reason.clone());
            let n = scan_runs::finish(conn, &lease, end_as, end.follow_up.as_ref(), now)?;
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

#[cfg(test)]
mod plan_tests {
    use super::{INSERT_FILE, PREVIOUS, UPDATE_FILE};
    use crate::clock::FakeClock;
    use crate::store::assets::INSERT;
    use crate::store::{Store, StoreOptions, stacks};
    use rusqlite::params;

    /// A new database with every migration applied (by the writer, whose connection the
    /// tests explain their statements on).
    fn fresh_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = FakeClock::new(1_800_000_000_000);
        let store =
            Store::open(&dir.path().join("m.db"), clock, StoreOptions::default()).expect("open");
        (dir, store)
    }

    /// The addresses of `opcode` in the program of `sql`.
    fn opcodes(conn: &rusqlite::Connection, sql: &str, opcode: &str) -> Vec<i64> {
        let mut stmt = conn.prepare(&format!("EXPLAIN {sql}")).expect("explain");
        // Unbound parameters are NULL: EXPLAIN only compiles the statement.
        let mut rows = stmt.raw_query();
        let mut at = Vec::new();
        while let Some(r) = rows.next().expect("row") {
            if r.get::<_, String>(1).expect("opcode") == opcode {
                at.push(r.get::<_, i64>(0).expect("address"));
            }
        }
        at
    }

    fn ephemeral_tables(conn: &rusqlite::Connection, sql: &str) -> Vec<i64> {
        opcodes(conn, sql, "OpenEphemeral")
    }

    #[test]
    fn the_known_files_tell_a_file_that_is_no_media_by_the_error_the_scan_keeps() {
        let quoted = format!("'{}'", crate::model::NOT_MEDIA);
        for sql in [super::KNOWN, super::DIR_ROWS_FROM, super::DIR_ROWS_BETWEEN] {
            assert!(sql.contains(&quoted), "{sql}");
        }
    }

    /// The statements a first index runs for every file must not build a temporary table per
    /// execution: SQLite does that for a `RETURNING` clause and for a CHECK with an `IN` list
    /// of more than two constants, and it cost a third of the writer's time.
    #[test]
    fn the_per_file_statements_open_no_ephemeral_table_on_the_writer() {
        let (_dir, store) = fresh_store();
        // On the writer's own connection: the one that ran the migrations.
        let found = store
            .write(|conn, _| {
                Ok([
                    ("insert asset", INSERT),
                    ("previous", PREVIOUS),
                    ("insert file", INSERT_FILE),
                    ("update file", UPDATE_FILE),
                    ("stack partners", stacks::PARTNERS),
                    ("stack insert", stacks::INSERT),
                    ("stack unpair", stacks::UNPAIR),
                ]
                .map(|(name, sql)| (name, ephemeral_tables(conn, sql))))
            })
            .expect("explain on the writer");
        for (name, at) in found {
            assert!(at.is_empty(), "{name}: OpenEphemeral at {at:?}");
        }
    }

    /// The completion's look for live assets without a file reads the library's missing
    /// rows through their partial index, never the library's every file.
    #[test]
    fn a_full_completion_finds_live_assets_without_a_file_from_the_missing_rows_alone() {
        let (_dir, store) = fresh_store();
        let plan = store
            .write(|conn, _| {
                let mut stmt =
                    conn.prepare(&format!("EXPLAIN QUERY PLAN {}", super::LIVE_OF_MISSING))?;
                let rows = stmt.query_map(params![1, "move"], |r| r.get::<_, String>(3))?;
                Ok(rows.collect::<Result<Vec<_>, _>>()?)
            })
            .expect("plan");
        assert!(
            plan.iter()
                .any(|step| step.contains("INDEX files_missing (library_id=?")),
            "{plan:?}"
        );
    }

    /// A trigger on a table makes every insert into it a multi-row write, which SQLite runs
    /// in a statement journal inside the batch's transaction: each page the insert is the
    /// first to change (the row's leaf and one per index, 16 KiB each) is copied there, and
    /// past 64 KiB into a temp file. For the asset insert of a first index (live_kinds'
    /// insert trigger, migration 0017) that was 9 page writes per asset and 5x its CPU.
    #[test]
    fn the_first_index_inserts_run_no_trigger_on_the_writer() {
        let (_dir, store) = fresh_store();
        let found = store
            .write(|conn, _| {
                Ok([("insert asset", INSERT), ("insert file", INSERT_FILE)]
                    .map(|(name, sql)| (name, opcodes(conn, sql, "Program"))))
            })
            .expect("explain on the writer");
        for (name, at) in found {
            assert!(at.is_empty(), "{name}: a trigger program at {at:?}");
        }
    }
}
