//! A scan run's fenced writes of data, a composition: the fence on the run
//! (`scan_runs::fence_data`) opens each of them, then ingest batches (per file the asset
//! claim of DESIGN.md section 6 (`claim`: a live asset is a duplicate, a trashed one is
//! restored by id alone, a swept one is stored afresh, and a unique-index violation never
//! escapes), the file row (`files`), a Live Photo's pairing (`motion`), the RAW+JPEG pairing
//! of a file read (`stacks`), the restore of unchanged files' trashed assets, the refresh of
//! a read asset's sidecar facts (from its first copy's, `sidecars`), a forced read's
//! forgetting of a timed-out decode (`decode_timeouts`), the mark of a photo to be read
//! again whose sidecar changed or whose sidecar has no row yet, progress, reason counts and
//! the run's problems in one transaction under the scan lease), progress with the count of
//! unchanged files (which cost no row of their own), and the end of a full scan (missing
//! files from what the walk found gone, except rows a restore brought back during the run;
//! orphaned assets, and live assets no present file shows any more whatever left them so,
//! those no file row names at all included (`unshown_assets`, migration 0026); the circuit
//! breaker) committed with the run's completion. A file a move settled after the scan read
//! it is not written back, unless the scan read other bytes than the move took (a re-save
//! the move left in place). Its own statements span tables: the live assets without a
//! present file that no move is moving (`LIVE_OF_MISSING`, `LIVE_UNSHOWN`: files, assets,
//! trash intents, jobs) and the forgetting of `unshown_assets` entries a file row names
//! again (`DROP_SHOWN`).

use super::db::Db;
use super::lease::expect_one;
use super::{
    Committed, Store, StoreError, assets, check, counters, decode_timeouts, files, motion,
    problems, revive, run_end, scan_runs, sidecars, stacks,
};
use crate::model::{
    BatchReport, Claim, ContentHash, Counter, FileReason, FinishReport, IngestBatch, IngestItem,
    ItemOutcome, Lease, MOVE_JOB_KIND, MediaFacts, Millis, Provenance, RunState, ScanEnd,
    TrashReason, Unseen,
};
use std::collections::{BTreeMap, HashSet};

/// The live assets of the library's missing rows that no move is moving (no pending intent,
/// no live move job: a trash between its renames and its flip looks the same): candidates
/// for `trash_if_orphan`, which checks that no present file shows them. Read through the
/// partial index `files_missing` (migration 0021): the library's missing rows only.
pub(super) const LIVE_OF_MISSING: &str = "
    SELECT DISTINCT f.asset_id FROM files f JOIN assets a ON a.id = f.asset_id
     WHERE f.library_id = ?1 AND f.state = 'missing' AND f.asset_id IS NOT NULL
       AND a.trashed_at IS NULL
       AND NOT EXISTS (SELECT 1 FROM trash_intents t
                        WHERE t.asset_id = f.asset_id AND t.state = 'pending')
       AND NOT EXISTS (SELECT 1 FROM jobs j
                        WHERE j.unique_key = CAST(?2 AS TEXT) || ':' || f.asset_id
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
                        WHERE j.unique_key = CAST(?1 AS TEXT) || ':' || u.asset_id
                          AND j.state IN ('queued', 'running'))";
/// The entries of `unshown_assets` whose asset a file row names again, or that is gone.
const DROP_SHOWN: &str = "
    DELETE FROM unshown_assets
     WHERE NOT EXISTS (SELECT 1 FROM assets a WHERE a.id = unshown_assets.asset_id)
        OR EXISTS (SELECT 1 FROM files f WHERE f.asset_id = unshown_assets.asset_id)";

/// How many times a claim reads again after a restore matched nothing. Inside the writer's
/// IMMEDIATE transaction nothing can change between two statements, so one retry always
/// settles; the bound only turns a bug into an error instead of a loop.
const CLAIM_PASSES: usize = 4;

/// What a claim is for: the file's bytes and the run that reads them.
pub(super) struct ClaimFor<'a> {
    pub checksum: &'a [u8; 32],
    pub size: u64,
    pub facts: &'a MediaFacts,
    /// The content hash the scan computed from the same read, stored on a new asset.
    pub content: Option<&'a ContentHash>,
    /// The asset the file pointed at before, which tells a duplicate from its own asset.
    pub previous: Option<i64>,
    /// A new asset is held by this run until a completion publishes it.
    pub run_id: i64,
}

/// Finds or makes the asset for a file's checksum (DESIGN.md section 6). A checksum not
/// seen before (most files of a first index) costs a lookup in the prefix index, which
/// brings the leaf the insert then writes into the page cache, and the insert. Inside the
/// writer's IMMEDIATE transaction nothing else can insert the checksum in between, so the
/// lookup is what keeps an asset unique per checksum (migration 0027).
pub(super) fn claim(
    db: &Db<'_>,
    want: &ClaimFor<'_>,
    now: Millis,
) -> Result<(i64, Claim), StoreError> {
    let ClaimFor {
        checksum,
        size,
        facts,
        content,
        previous,
        run_id,
    } = *want;
    let mut saw_trashed = false;
    for _ in 0..CLAIM_PASSES {
        match assets::find(db, checksum)? {
            Some((id, false)) if previous == Some(id) => return Ok((id, Claim::Kept)),
            Some((id, false)) => return Ok((id, Claim::Duplicate)),
            // A restore between its renames may yet roll back and move this very file into
            // the trash again (finding 20): the file is linked, and the asset left to the
            // move's holder or whoever carries it on; the next full scan after the move
            // ended heals what it left (`reclaim`).
            Some((id, true)) if assets::in_flight(db, id)? => {
                return Ok((id, Claim::Held));
            }
            Some((id, true)) => {
                if revive::revive(db, id)? {
                    return Ok((id, Claim::Restored));
                }
                // Restored or swept by someone else meanwhile: read again.
                saw_trashed = true;
            }
            None => {
                let id = assets::insert(db, checksum, size, facts, content, run_id, now)?;
                sidecars::note_new(db, id, &facts.notes)?;
                let claim = if saw_trashed {
                    Claim::Recreated
                } else {
                    Claim::Created
                };
                return Ok((id, claim));
            }
        }
    }
    Err(StoreError::Conflict(format!(
        "the asset claim for checksum {} did not settle",
        crate::model::hex(checksum)
    )))
}

/// The body of an ingest batch (see `Store::ingest_batch_counting`), in the caller's
/// transaction.
fn ingest(
    db: &Db<'_>,
    lease: &Lease,
    library_id: i64,
    batch: &IngestBatch,
    progress: &str,
    now: Millis,
) -> Result<BatchReport, StoreError> {
    scan_runs::fence_data(db, lease, library_id, Some(progress), now)?;
    // Before the items: a photo this batch reads itself is read with the sidecar's
    // bytes, and its write clears the mark.
    files::mark_read_again(db, library_id, &batch.read_again)?;
    let unchanged = batch.unchanged as i64;
    let mut counts = BTreeMap::from([(Provenance::Unchanged.as_str(), unchanged)]);
    let mut report = BatchReport::default();
    let known_present: HashSet<i64> = batch.known_present.iter().copied().collect();
    for item in &batch.items {
        let moved = files::moved_since_read(db, library_id, item, &known_present)?;
        // A new asset is inserted held by this run (`pending_run`).
        let outcome = match moved {
            Some(file_id) => ItemOutcome {
                file_id,
                asset_id: None,
                claim: Claim::Moved,
            },
            None => ingest_one(db, lease.id, library_id, item, now)?,
        };
        *counts
            .entry(Provenance::from(item.reason).as_str())
            .or_insert(0) += 1;
        if outcome.claim == Claim::Duplicate {
            *counts.entry(Provenance::Duplicate.as_str()).or_insert(0) += 1;
        }
        report.items.push(outcome);
    }
    files::mark_read_with_unknown(db, library_id, &batch.read_with)?;
    for &file_id in &batch.reclaim {
        report.items.extend(reclaim(db, library_id, file_id)?);
    }
    scan_runs::count_reasons(db, lease.id, &counts)?;
    count_hashed(db, &batch.items)?;
    problems::record(db, lease.id, &batch.problems)?;
    Ok(report)
}

/// A file that was read and is no picture or video: the scan hands it over without a
/// checksum, but not as an unreadable file (`error`).
fn not_media(item: &IngestItem) -> bool {
    item.checksum.is_none() && item.reason != FileReason::Error
}

/// The asset claim of a file that was read (DESIGN.md section 6), with the content hash
/// stamped on an asset it joined; `None` for a file that could not be read.
fn claim_read(
    db: &Db<'_>,
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
        db,
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
        assets::stamp_content(db, claimed.0, content)?;
    }
    Ok(Some(claimed))
}

/// One item of a batch: the claim (when the file was read), the file row, and the trash of
/// the asset the file showed before if nothing shows it any more (its content was replaced,
/// or it is no picture or video any more and shows no asset). An unreadable file keeps its
/// link.
pub(super) fn ingest_one(
    db: &Db<'_>,
    run_id: i64,
    library_id: i64,
    item: &IngestItem,
    now: Millis,
) -> Result<ItemOutcome, StoreError> {
    let row = files::previous(db, library_id, &item.rel_path)?;
    let previous = row.and_then(|(_, asset)| asset);
    let claimed = claim_read(db, item, previous, run_id, now)?;
    let claimed_id = claimed.map(|(id, _)| id);
    // `scan --force` is the user's "try everything again": a decode that timed out too.
    if let (FileReason::Forced, Some(id)) = (item.reason, claimed_id) {
        decode_timeouts::forget(db, id)?;
    }
    let asset_id = if not_media(item) {
        None
    } else {
        claimed_id.or(previous)
    };
    let file_id = files::write_row(
        db,
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
        stacks::pair(db, library_id, file_id, namesakes, facts, row.is_some())?;
    }
    if let Some(old) = previous.filter(|old| Some(*old) != asset_id)
        && !assets::trash_if_orphan(db, old, TrashReason::Replaced, now)?
    {
        sidecars::follow_first(db, old)?;
    }
    if let (Some(claimed), Some(facts)) = (claimed, &item.facts) {
        lend_facts(db, (library_id, file_id), namesakes, claimed, facts)?;
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
    db: &Db<'_>,
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
        sidecars::read_copy(db, id, file_id, facts, joined)?;
    }
    // A created asset was inserted with these facts already.
    if !matches!(claim, Claim::Created | Claim::Recreated) {
        motion::stamp(db, id, facts)?;
    }
    motion::pair(db, library_id, namesakes, id, facts)
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
fn reclaim(db: &Db<'_>, library_id: i64, file_id: i64) -> Result<Option<ItemOutcome>, StoreError> {
    let asset = files::present_asset(db, library_id, file_id)?;
    let Some(id) = asset.flatten() else {
        return Ok(None);
    };
    if assets::in_flight(db, id)? || !revive::revive(db, id)? {
        return Ok(None);
    }
    sidecars::follow_first(db, id)?;
    Ok(Some(ItemOutcome {
        file_id,
        asset_id: Some(id),
        claim: Claim::Restored,
    }))
}

/// Marks the unseen files and everything below the vanished directories missing (except the
/// rows a restore brought back while run `run_id` ran), and trashes the assets they were
/// the last present file of. Returns (files, assets).
fn mark_missing(
    db: &Db<'_>,
    library_id: i64,
    run_id: i64,
    unseen: &Unseen,
    now: Millis,
) -> Result<(u64, u64), StoreError> {
    let asset_ids = files::mark_unseen(db, library_id, run_id, unseen, now)?;
    let files = asset_ids.len() as u64;
    let mut candidates: Vec<i64> = asset_ids.into_iter().flatten().collect();
    candidates.sort_unstable();
    candidates.dedup();
    let mut trashed = 0;
    for id in candidates {
        if assets::trash_if_orphan(db, id, TrashReason::Missing, now)? {
            trashed += 1;
        } else {
            // A copy went: the asset takes the sidecar facts of its first one left.
            sidecars::follow_first(db, id)?;
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
fn trash_live_without_file(db: &Db<'_>, library_id: i64, now: Millis) -> Result<u64, StoreError> {
    let ids: Vec<i64> = db.all(LIVE_OF_MISSING, args!(library_id, MOVE_JOB_KIND), |r| {
        r.get(0)
    })?;
    let mut trashed = 0;
    for id in ids {
        trashed += u64::from(assets::trash_if_orphan(db, id, TrashReason::Missing, now)?);
    }
    Ok(trashed + trash_live_unshown(db, now)?)
}

/// Trashes (reason `missing`) the live assets that no file row names at all, in any
/// library (`LIVE_UNSHOWN`), and forgets the entries that need no heal any more. Returns
/// how many it trashed.
fn trash_live_unshown(db: &Db<'_>, now: Millis) -> Result<u64, StoreError> {
    let ids: Vec<i64> = db.all(LIVE_UNSHOWN, args!(MOVE_JOB_KIND), |r| r.get(0))?;
    let mut trashed = 0;
    for id in ids {
        trashed += u64::from(assets::trash_if_orphan(db, id, TrashReason::Missing, now)?);
    }
    db.execute(DROP_SHOWN, args!())?;
    Ok(trashed)
}

/// The circuit breaker: why marking `unseen` files missing must not happen, or `None`.
/// The library's present files are counted only when something would go missing, so an
/// unchanged rescan reads no table for it.
fn breaker(
    db: &Db<'_>,
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
    let present = files::present_count(db, library_id)?;
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
fn count_hashed(db: &Db<'_>, batch: &[IngestItem]) -> Result<(), StoreError> {
    let hashed = batch.iter().filter(|i| i.checksum.is_some());
    let (files, bytes) = hashed.fold((0i64, 0i64), |(f, b), i| {
        (
            f + 1,
            b.saturating_add(i64::try_from(i.stamp.size).unwrap_or(i64::MAX)),
        )
    });
    counters::bump(db, Counter::FilesHashed, files)?;
    counters::bump(db, Counter::BytesHashed, bytes)
}

impl Store {
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
        self.write(move |db, now| ingest(db, &lease, library_id, &batch, &progress, now))
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
            move |db, now| scan_runs::fence_data(db, &sealed, library_id, None, now).map(|_| ()),
            move |db, now| ingest(db, &lease, library_id, &batch, &progress, now),
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
        self.write(move |db, now| {
            scan_runs::fence_data(db, &lease, library_id, Some(&progress), now)?;
            let counts = BTreeMap::from([(Provenance::Unchanged.as_str(), unchanged as i64)]);
            scan_runs::count_reasons(db, lease.id, &counts)
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
        self.write(move |db, now| {
            let scope =
                scan_runs::fence_data(db, &lease, library_id, end.progress.as_deref(), now)?;
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
                let unseen = files::count_unseen(db, library_id, lease.id, &end.unseen)?;
                report.reason = breaker(db, library_id, &end, unseen)?;
                if report.reason.is_some() {
                    report.state = RunState::Suspect;
                } else {
                    if unseen > 0 {
                        let (files, assets) =
                            mark_missing(db, library_id, lease.id, &end.unseen, now)?;
                        (report.missing_files, report.trashed_assets) = (files, assets);
                        counts.insert(Provenance::Missing.as_str(), files as i64);
                    }
                    report.trashed_assets += trash_live_without_file(db, library_id, now)?;
                    report.adopted = check::adopt_all(db, &end.adoptions, now)?;
                }
            }
            scan_runs::count_reasons(db, lease.id, &counts)?;
            let end_as = (report.state, report.reason.clone());
            let n = run_end::finish(db, &lease, end_as, end.follow_up.as_ref(), now)?;
            expect_one(&lease, n)?;
            Ok(report)
        })
    }
}
