//! The scan run handler: what a worker does with a claimed scan run. It checks the library root,
//! feeds the pipeline with what the store knows (a directory at a time) and commits each batch
//! through the run's lease guard, so a worker that lost its lease writes nothing more. Unchanged
//! files cost no write: they are counted, and the count rides on the next write (a batch of changed
//! files, a progress checkpoint at most every second, or the completion). A walked run ends with
//! the missing-file marking for a full scope (from what the walk found gone and is still not there
//! just before the completion), the circuit breaker, the adoption of the trash-folder files no move
//! explains (`adopt`) and the face walk it was given, in the same fenced transaction as its
//! completion. An unchanged file whose asset is in the trash or gone is claimed again, and one the
//! store marked to be read again (back from the trash, its sidecar changed) is read (DESIGN.md
//! section 6). A walker that failed ends the run failed (a bug); a full disk pauses it, and a
//! locked database or a root that went away during the walk retries it (a successor carries on). No
//! SQL here: everything goes through `Store`; it never asks the walks for anything itself.

use super::identity::{self, Verdict};
use super::pipeline::{
    self, Again, Batch, DirKnown, Gone, Known, KnownStamp, Settings, Sink, SinkError,
};
use crate::model::{
    ContentHash, FileReason, IngestBatch, IngestItem, KnownFile, Library, MediaFacts, MediaKind,
    NOT_MEDIA, RunOutcome, RunProblem, ScanEnd, ScanRun, Unseen, WalkRequest, path_to_bytes,
};
use crate::queue::{
    CancelReason, Failure, GuardError, ScanDone, ScanHandler, WorkContext, WorkError,
};
use crate::store::{Committed, Store, StoreError};
use std::cell::Cell;
use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How a scan behaves; from the config.
#[derive(Clone, Debug)]
pub struct ScanConfig {
    /// The circuit breaker: a full scan that would mark more than this share of the
    /// library's files missing trashes nothing and ends `suspect`.
    pub max_missing_share: f64,
    pub pipeline: Settings,
    /// The content-hash scheme stamped on what the scan hashes (this binary's, or the
    /// `MEDIADEX_CONTENT_HASH_SCHEME` testing override).
    pub content_hash_scheme: i64,
    /// The face walk a walked run's completion queues in its own transaction, to detect the
    /// run's new and restored assets (`None`: this build has no face detector). Built by
    /// `walks::follow_up`; the scan only carries it.
    pub faces: Option<WalkRequest>,
}

impl Default for ScanConfig {
    fn default() -> Self {
        ScanConfig {
            max_missing_share: 0.2,
            pipeline: Settings::default(),
            content_hash_scheme: crate::media::content_hash::SCHEME,
            faces: None,
        }
    }
}

pub struct ScanJob {
    pub store: Store,
    pub config: ScanConfig,
    /// Reads a changed file's facts: `(path, Some(bytes))` from the bytes the scan already
    /// read, `(path, None)` from the file (see `media::extract_from`).
    pub extract: fn(&Path, Option<&[u8]>) -> MediaFacts,
}

impl ScanHandler for ScanJob {
    fn run(&self, ctx: &WorkContext, run: &ScanRun) -> Result<ScanDone, WorkError> {
        let library = self
            .store
            .library(run.library_id)?
            .ok_or_else(|| WorkError::bad_data(format!("library {} is gone", run.library_id)))?;
        identity::record_if_none(&self.store, &library)?;
        let verdict = identity::check(&self.store, &library)?;
        if let Verdict::Unavailable(why) = &verdict {
            // Nothing to walk: never let an unmounted disk look like deleted photos.
            tracing::warn!(library = %library.name, %why, "scan held back");
            return Ok(ScanDone::Complete {
                outcome: RunOutcome::Suspect,
                reason: Some(why.clone()),
            });
        }
        let settings = Settings {
            forced: run.forced,
            ..self.config.pipeline.clone()
        };
        let mut known = StoreKnown {
            store: &self.store,
            library_id: library.id,
            trashed: None,
        };
        let mut sink = LeaseSink::new(ctx, &self.store, &library);
        sink.content_hash_scheme = self.config.content_hash_scheme;
        let root = PathBuf::from(&library.root);
        let walked = pipeline::run(
            &root,
            Path::new(&run.scope),
            &settings,
            &mut known,
            &mut sink,
            &self.extract,
        );
        match walked {
            Ok(summary) => {
                self.still_there(&library)?;
                let adoptions = match (run.scope.is_empty(), &verdict) {
                    (true, Verdict::Same) => super::adopt::adoptions(&self.store, &library)?,
                    _ => Vec::new(),
                };
                let end = ScanEnd {
                    max_missing_share: self.config.max_missing_share,
                    identity_ok: verdict == Verdict::Same,
                    unseen: still_gone(&root, summary.unseen),
                    unchanged: sink.unchanged,
                    progress: Some(sink.progress_text()),
                    follow_up: self.config.faces.clone(),
                    adoptions,
                };
                self.finish(ctx, &library, &verdict, end)
            }
            Err(e) => Err(self.stopped(ctx, &library, e)),
        }
    }
}

impl ScanJob {
    /// The fenced end of a walked run: missing files and the breaker for a full scope, and
    /// the face walk, committed with the completion (a lost lease queues nothing, and a
    /// crash right after the commit loses no follow-up).
    fn finish(
        &self,
        ctx: &WorkContext,
        library: &Library,
        verdict: &Verdict,
        end: ScanEnd,
    ) -> Result<ScanDone, WorkError> {
        // The commit completes the run: no heartbeat may follow it (it would match no row
        // and count as a lost lease after a clean scan).
        ctx.stop_heartbeat();
        let report = ctx
            .guarded(|s, l| s.finish_full_scan(l, library.id, end))
            .map_err(|e| match e {
                GuardError::Store(StoreError::DiskFull) => self.disk_full(library),
                e => WorkError::Guard(e),
            })?;
        if let (Verdict::Changed(why), Some(_)) = (verdict, &report.reason) {
            tracing::warn!(library = %library.name, %why, "full scan ended suspect");
        }
        tracing::info!(
            library = %library.name,
            state = %report.state,
            missing = report.missing_files,
            trashed = report.trashed_assets,
            adopted = report.adopted,
            "scan finished"
        );
        Ok(ScanDone::Committed)
    }
}

impl ScanJob {
    /// The scan met a full disk: it pauses (a successor carries on once space is freed).
    fn disk_full(&self, library: &Library) -> WorkError {
        let what = format!("the scan of library {}", library.name);
        WorkError::from_store(&self.store, &what, StoreError::DiskFull)
    }

    /// A root that went away while the walk ran (a share unmounted, a NAS gone offline)
    /// made the walk see less than is there: nothing it saw may complete the run. The cause
    /// passes by itself, so the run fails with a successor (whose start holds it back, as
    /// suspect, for as long as the root is not there).
    fn still_there(&self, library: &Library) -> Result<(), WorkError> {
        match identity::check(&self.store, library)? {
            Verdict::Unavailable(why) => Err(Failure::Unavailable(format!(
                "{why}: it went away while the scan ran, and nothing was marked missing"
            ))
            .into()),
            Verdict::Same | Verdict::Changed(_) => Ok(()),
        }
    }

    /// What a run that stopped before its end tells the pool: a lost lease or a cancel
    /// writes nothing; a store failure pauses (full disk), retries (locked) or fails as the
    /// store error says; a thread that could not start retries; a panic is a bug.
    fn stopped(&self, ctx: &WorkContext, library: &Library, e: SinkError) -> WorkError {
        let lease = ctx.lease();
        match e {
            SinkError::LeaseLost => GuardError::LeaseLost(lease.target, lease.id).into(),
            SinkError::Cancelled => {
                let why = ctx.token().reason().unwrap_or(CancelReason::Cancelled);
                GuardError::Cancelled(lease.target, lease.id, why).into()
            }
            SinkError::Store(StoreError::DiskFull) => self.disk_full(library),
            SinkError::Store(e) => e.into(),
            SinkError::Spawn { what, source } => Failure::Io {
                what: format!("cannot start the {what}"),
                source,
            }
            .into(),
            e @ (SinkError::ReaderPanicked | SinkError::Walker(_)) => {
                tracing::error!(library = %library.name, error = %e, "scan failed");
                Failure::Bug(e.to_string()).into()
            }
        }
    }
}

/// The store's knowledge of a directory, for the diff.
struct StoreKnown<'a> {
    store: &'a Store,
    library_id: i64,
    /// The trashed assets (one id per asset in the trash), read once, at the first directory.
    /// One trashed since is left for the next scan; one restored since is left alone by the
    /// batch's restore by id, which checks again in its own transaction.
    trashed: Option<HashSet<i64>>,
}

impl Known for StoreKnown<'_> {
    fn dir(&mut self, rel_dir: &Path) -> Result<DirKnown, SinkError> {
        if self.trashed.is_none() {
            self.trashed = Some(self.store.trashed_asset_ids()?);
        }
        let none = HashSet::new();
        let trashed = self.trashed.as_ref().unwrap_or(&none);
        let listing = self
            .store
            .known_dir(self.library_id, &path_to_bytes(rel_dir))?;
        let files = listing
            .files
            .into_iter()
            .map(|k| {
                let name = k.rel_path.rsplit(|&b| b == b'/').next().unwrap_or_default();
                let known = KnownStamp {
                    id: k.id,
                    stamp: k.stamp,
                    again: again(&k, trashed),
                };
                (os_string(name), known)
            })
            .collect();
        let subdirs = listing.subdirs.iter().map(|n| os_string(n)).collect();
        Ok(DirKnown { files, subdirs })
    }
}

/// What a known file still needs when its stamp is unchanged (DESIGN.md section 6: a file
/// the store marked is read again, as one whose last read failed; a present file whose
/// asset is trashed or gone is claimed again by the next plain scan).
fn again(k: &KnownFile, trashed: &HashSet<i64>) -> Again {
    if k.has_error {
        Again::Retry
    } else if let Some(why) = k.read_again {
        Again::Reread(why)
    } else if k.asset_id.is_none() && k.media {
        Again::Claim
    } else if k.asset_id.is_some_and(|id| trashed.contains(&id)) {
        Again::Restore
    } else {
        Again::Nothing
    }
}

/// What the walk found gone and is still not there now, in the store's terms. The walk saw
/// each folder at one moment; a file put back since (a restore, a move there and back, an
/// entry a changing listing skipped) is there at the completion and must not go missing.
/// Only "not found" is gone: a path that cannot be checked decides nothing. A vanished
/// folder that is back is left for the next scan to walk.
fn still_gone(root: &Path, gone: Gone) -> Unseen {
    let absent = |rel: &Path| {
        std::fs::symlink_metadata(root.join(rel))
            .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    };
    Unseen {
        files: (gone.files.into_iter())
            .filter(|(_, rel)| absent(rel))
            .map(|(id, _)| id)
            .collect(),
        dirs: (gone.dirs.iter())
            .filter(|d| absent(d))
            .map(|d| path_to_bytes(d))
            .collect(),
    }
}

/// Hands batches to the store under the run's lease, and notices a cancel from another
/// process within a fraction of a second (not only at the next heartbeat).
struct LeaseSink<'a> {
    ctx: &'a WorkContext,
    store: &'a Store,
    library_id: i64,
    content_hash_scheme: i64,
    progress: Progress,
    last_poll: Cell<Instant>,
    /// Unchanged files not yet counted in the store.
    unchanged: u64,
    last_write: Instant,
    /// The commits of batches that have run in the run's open write group, oldest first.
    uncommitted: Vec<Committed>,
}

#[derive(Debug, Default, serde::Serialize)]
struct Progress {
    files: u64,
    changed: u64,
    unchanged: u64,
    problems: u64,
    last_problem: Option<String>,
}

const CANCEL_POLL: Duration = Duration::from_millis(250);
/// A batch with nothing to write records its progress at most this often: progress is for
/// people watching, and each write is a synced commit.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

impl<'a> LeaseSink<'a> {
    fn new(ctx: &'a WorkContext, store: &'a Store, library: &Library) -> Self {
        LeaseSink {
            ctx,
            store,
            library_id: library.id,
            content_hash_scheme: crate::media::content_hash::SCHEME,
            progress: Progress::default(),
            last_poll: Cell::new(Instant::now()),
            unchanged: 0,
            last_write: Instant::now(),
            uncommitted: Vec::new(),
        }
    }

    /// Forgets the batches whose group has committed; the first that was rolled back stops
    /// the run (nothing of its group landed, and a successor reads it again).
    fn reap(&mut self) -> Result<(), SinkError> {
        let settled = self
            .uncommitted
            .iter()
            .take_while(|c| c.settled().is_some_and(|done| done.is_ok()))
            .count();
        self.uncommitted.drain(..settled);
        match self.uncommitted.first().and_then(Committed::settled) {
            Some(Err(e)) => Err(self.refused(e)),
            _ => Ok(()),
        }
    }

    fn refused(&self, e: StoreError) -> SinkError {
        if e.is_lease_lost() {
            self.ctx
                .token()
                .cancel(crate::queue::CancelReason::LeaseLost);
            SinkError::LeaseLost
        } else {
            SinkError::Store(e)
        }
    }

    fn progress_json(&mut self, batch: &Batch) -> String {
        let p = &mut self.progress;
        p.changed += batch.changed.len() as u64;
        p.unchanged += batch.unchanged;
        p.problems += batch.problems.len() as u64;
        p.files = p.changed + p.unchanged;
        if let Some((rel, error)) = batch.problems.last() {
            p.last_problem = Some(format!("{}: {error}", rel.display()));
        }
        self.progress_text()
    }

    fn progress_text(&self) -> String {
        serde_json::to_string(&self.progress).unwrap_or_else(|_| "{}".into())
    }

    fn write<T>(
        &self,
        op: impl FnOnce(&Store, &crate::model::Lease) -> Result<T, StoreError>,
    ) -> Result<T, SinkError> {
        self.ctx.guarded(op).map_err(|e| match e {
            GuardError::LeaseLost(..) => SinkError::LeaseLost,
            GuardError::Cancelled(..) => SinkError::Cancelled,
            GuardError::Store(e) => SinkError::Store(e),
        })
    }
}

impl Sink for LeaseSink<'_> {
    fn commit(&mut self, batch: Batch) -> Result<(), SinkError> {
        let progress = self.progress_json(&batch);
        let library_id = self.library_id;
        self.unchanged += batch.unchanged;
        // Problems are written with the batch that met them, never held for a later write.
        if !batch.changed.is_empty() || !batch.reclaim.is_empty() || !batch.problems.is_empty() {
            let scheme = self.content_hash_scheme;
            let read_with = (batch.changed.iter())
                .filter(|o| !o.beside_from.is_empty())
                .map(|o| {
                    let from = o.beside_from.iter().map(|p| path_to_bytes(p)).collect();
                    (path_to_bytes(&o.rel), from)
                })
                .collect();
            let ingest = IngestBatch {
                problems: batch.problems.iter().map(run_problem).collect(),
                items: (batch.changed.into_iter())
                    .map(|o| ingest_item(o, scheme))
                    .collect(),
                reclaim: batch.reclaim,
                read_again: batch.read_again.iter().map(|p| path_to_bytes(p)).collect(),
                known_present: batch.known_present,
                read_with,
                unchanged: std::mem::take(&mut self.unchanged),
            };
            let (_, committed) =
                self.write(|s, l| s.ingest_batch_grouped(l, library_id, ingest, &progress))?;
            self.uncommitted.push(committed);
            self.reap()?;
        } else if self.last_write.elapsed() >= CHECKPOINT_EVERY {
            let unchanged = std::mem::take(&mut self.unchanged);
            self.write(|s, l| s.scan_progress(l, library_id, &progress, unchanged))?;
        } else {
            return Ok(());
        }
        self.last_write = Instant::now();
        Ok(())
    }

    /// Every batch on disk before the run goes on to its end: the group commits now.
    fn flush(&mut self) -> Result<(), SinkError> {
        if self.uncommitted.is_empty() {
            return Ok(());
        }
        self.store.settle().map_err(SinkError::Store)?;
        for committed in std::mem::take(&mut self.uncommitted) {
            committed.wait().map_err(|e| self.refused(e))?;
        }
        Ok(())
    }

    fn cancelled(&self) -> bool {
        if self.ctx.ensure_live().is_err() {
            return true;
        }
        if self.last_poll.get().elapsed() < CANCEL_POLL {
            return false;
        }
        self.last_poll.set(Instant::now());
        let lease = self.ctx.lease();
        let still_ours = self
            .store
            .scan_run(lease.id)
            .map(|r| r.is_some_and(|r| r.generation == lease.generation && r.lease_owner.is_some()))
            .unwrap_or(true);
        if !still_ours {
            self.ctx
                .token()
                .cancel(crate::queue::CancelReason::Cancelled);
        }
        !still_ours
    }
}

fn run_problem((rel, error): &(PathBuf, String)) -> RunProblem {
    RunProblem {
        rel_path: path_to_bytes(rel),
        rel_path_text: rel.to_string_lossy().replace('\\', "/"),
        error: error.clone(),
    }
}

/// A file that could not be read is retried next scan (`error`); a file that is not a
/// photo or video is kept as a file row without an asset and not read again until it
/// changes.
fn ingest_item(o: pipeline::Observed, content_hash_scheme: i64) -> IngestItem {
    let not_media = o
        .facts
        .as_ref()
        .is_some_and(|f| f.kind.is_none_or(|k| k == MediaKind::Other));
    let (reason, checksum, error) = match (o.checksum, not_media) {
        (None, _) => (FileReason::Error, None, o.error),
        (Some(_), true) => (o.reason, None, Some(NOT_MEDIA.to_string())),
        (Some(sum), false) => (o.reason, Some(sum), o.error),
    };
    IngestItem {
        rel_path: path_to_bytes(&o.rel),
        rel_path_text: o.rel.to_string_lossy().replace('\\', "/"),
        stamp: o.stamp,
        reason,
        checksum,
        content_hash: checksum.and(o.content_hash).map(|hash| ContentHash {
            scheme: content_hash_scheme,
            hash,
        }),
        facts: if not_media { None } else { o.facts },
        error,
        namesake: o.namesake,
    }
}

fn os_string(bytes: &[u8]) -> OsString {
    crate::model::path_from_bytes(bytes).into_os_string()
}
