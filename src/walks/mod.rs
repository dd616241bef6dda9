//! The walk-chain machinery (DESIGN.md section 7): a walk visits every asset in id order, a
//! batch per job row, under a scheme. Each batch is selected after the cursor its row
//! carries, processed on rayon, and committed in ONE fenced transaction with the row's
//! completion and either the chain's next row (the new cursor) or, after a short batch, the
//! walk record. One chain per kind is held by the jobs' unique index (`enqueue_unique`); a
//! restart finds the interrupted chain (queued, or reclaimed from a dead lease). A payload
//! whose scheme is not the current one, or that has none, restarts from the beginning.
//! Owns no SQL (the store does) and no detection or hashing rules (`media/` does).

pub mod content_hash;
pub mod faces;

use crate::model::{FileStamp, Job, NewJob, WalkAsset, WalkCommit, WalkKindId, WalkResults};
use crate::queue::{JobDone, JobHandler, WorkContext, WorkError};
use crate::store::{Enqueued, Store, StoreError};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;

/// One walk: what it visits and what it computes. `process` runs on rayon and must not
/// write anything; the machinery commits what it returns.
pub trait WalkKind: Send + Sync + 'static {
    fn id(&self) -> WalkKindId;
    /// The scheme this process walks under (an override, a constant, a detector version).
    fn scheme(&self) -> i64;
    fn batch_size(&self) -> usize;
    /// The next batch after `after` (all assets when `force`, else those lacking the stamp).
    fn select(&self, store: &Store, after: i64, force: bool) -> Result<Vec<WalkAsset>, StoreError> {
        store.walk_batch(self.id(), self.scheme(), force, after, self.batch_size())
    }
    /// Computes the batch's results. An asset left out keeps its old stamp.
    fn process(&self, batch: &[WalkAsset]) -> WalkResults;
}

/// A chain row's payload: the scheme it walks, its cursor (the last asset id committed),
/// whether it re-visits stamped assets (`--restart`), and how many assets it has visited.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payload {
    #[serde(default)]
    pub scheme: Option<i64>,
    #[serde(default)]
    pub after: i64,
    #[serde(default)]
    pub force: bool,
    #[serde(default)]
    pub done: u64,
}

impl Payload {
    /// The payload of a job row; an unreadable one reads as "no scheme" (restart).
    pub fn parse(text: &str) -> Payload {
        serde_json::from_str(text).unwrap_or_default()
    }

    pub fn fresh(scheme: i64, force: bool) -> Payload {
        Payload {
            scheme: Some(scheme),
            force,
            ..Payload::default()
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_string())
    }
}

/// The job row that starts (or continues) a chain of `kind`.
pub fn chain_job(kind: WalkKindId, payload: &Payload) -> NewJob {
    // A batch is cheap to redo; the attempts only bound a batch that keeps failing.
    NewJob::new(kind.job_kind(), payload.to_json())
        .unique(kind.job_kind())
        .max_attempts(10)
}

/// The job handler running one batch of a walk per claimed row.
pub struct WalkJob<K: WalkKind> {
    pub store: Store,
    pub kind: Arc<K>,
}

impl<K: WalkKind> WalkJob<K> {
    pub fn new(store: &Store, kind: Arc<K>) -> Self {
        WalkJob {
            store: store.clone(),
            kind,
        }
    }
}

impl<K: WalkKind> JobHandler for WalkJob<K> {
    fn run(&self, ctx: &WorkContext, job: &Job) -> Result<JobDone, WorkError> {
        let kind = self.kind.as_ref();
        let scheme = kind.scheme();
        let mut payload = Payload::parse(&job.payload);
        if payload.scheme != Some(scheme) {
            tracing::info!(
                walk = %kind.id(),
                from = ?payload.scheme,
                to = scheme,
                "walk chain of another scheme: starting again from the beginning"
            );
            payload = Payload::fresh(scheme, payload.force);
        }
        ctx.ensure_live()?;
        let batch = kind
            .select(&self.store, payload.after, payload.force)
            .map_err(|e| WorkError::Failed(e.to_string()))?;
        let short = batch.len() < kind.batch_size();
        let results = kind.process(&batch);
        let skipped = batch.len() - results.len();
        if skipped > 0 {
            tracing::warn!(walk = %kind.id(), skipped, "assets whose file could not be read keep their old stamp");
        }
        let next = Payload {
            after: batch.last().map_or(payload.after, |a| a.id),
            done: payload.done + batch.len() as u64,
            ..payload.clone()
        };
        let commit = WalkCommit {
            kind: kind.id(),
            results,
            next: (!short).then(|| chain_job(kind.id(), &next)),
            complete_scheme: short.then_some(scheme),
        };
        // The commit completes this row: no heartbeat may follow it. It is the claim's final
        // write (`ack`): a batch finished while the process stops is kept, not redone.
        ctx.stop_heartbeat();
        ctx.ack(|s, l| s.commit_walk_batch(l, commit))?;
        if short {
            tracing::info!(walk = %kind.id(), scheme, visited = next.done, "walk complete");
        }
        Ok(JobDone::Committed)
    }
}

/// What boot found for one walk kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Boot {
    pub kind: WalkKindId,
    /// The record after the clamp.
    pub record: crate::model::WalkRecord,
    /// A binary with a higher scheme ran on this database (a rollback).
    pub rollback: bool,
    /// The chain enqueued or found, when the walk has work.
    pub chain: Option<Enqueued>,
}

/// At start: clamps the record to this binary's scheme and raises `seen` (warning loudly on
/// a rollback), then schedules a chain through `enqueue_unique` when the record is below the
/// scheme or some asset lacks its stamp. Two processes booting at once make one chain.
pub fn boot(store: &Store, kind: WalkKindId, scheme: i64) -> Result<Boot, StoreError> {
    let (record, rollback) = start(store, kind, scheme)?;
    let behind = record.scheme < scheme || store.walk_left(kind, scheme, false, 0)? > 0;
    let chain = if behind {
        Some(store.enqueue(chain_job(kind, &Payload::fresh(scheme, false)))?)
    } else {
        None
    };
    Ok(Boot {
        kind,
        record,
        rollback,
        chain,
    })
}

/// Clamps the record to `scheme` and raises `seen`; warns loudly when a newer binary ran
/// here (a rollback). Returns the record and whether it was a rollback.
pub fn start(
    store: &Store,
    kind: WalkKindId,
    scheme: i64,
) -> Result<(crate::model::WalkRecord, bool), StoreError> {
    let record = store.start_walk_record(kind, scheme)?;
    let rollback = record.seen > scheme;
    if rollback {
        tracing::warn!(
            walk = %kind,
            scheme,
            seen = record.seen,
            "ROLLBACK: a newer mediadex walked this database under {kind} scheme {}; this one \
             walks scheme {scheme} and re-stamps what the newer one did",
            record.seen
        );
    }
    Ok((record, rollback))
}

/// Asks for a walk now: the live chain when there is one, else a new one from the start.
/// `restart` replaces any live chain with one that re-visits every asset.
pub fn request(
    store: &Store,
    kind: WalkKindId,
    scheme: i64,
    restart: bool,
) -> Result<Enqueued, StoreError> {
    start(store, kind, scheme)?;
    let job = chain_job(kind, &Payload::fresh(scheme, restart));
    if restart {
        store.replace_unique(job)
    } else {
        store.enqueue(job)
    }
}

/// The walk state `mediadex status` shows for one kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WalkState {
    pub kind: WalkKindId,
    /// The scheme this binary walks under.
    pub current: i64,
    /// The record: last scheme walked to the end, highest scheme ever run (0 if none).
    pub scheme: i64,
    pub seen: i64,
    pub completed_at: Option<i64>,
    /// The live chain: its row, state, scheme, cursor and progress; `None` when idle.
    pub chain: Option<ChainState>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChainState {
    pub job_id: i64,
    pub state: crate::model::JobState,
    pub scheme: Option<i64>,
    pub cursor: i64,
    pub done: u64,
    /// Assets still to visit after the cursor (under the chain's scheme).
    pub left: i64,
    /// It re-visits stamped assets too (`--restart`).
    pub restart: bool,
    /// The row's lease generation, holder and last heartbeat (the last two while running).
    pub generation: i64,
    pub lease_owner: Option<String>,
    pub heartbeat_at: Option<crate::model::Millis>,
}

pub fn state(store: &Store, kind: WalkKindId, current: i64) -> Result<WalkState, StoreError> {
    let record = store.walk_record(kind)?;
    let chain = match store.live_job(kind.job_kind())? {
        Some(job) => {
            let p = Payload::parse(&job.payload);
            let left = store.walk_left(kind, p.scheme.unwrap_or(current), p.force, p.after)?;
            Some(ChainState {
                job_id: job.id,
                state: job.state,
                scheme: p.scheme,
                cursor: p.after,
                done: p.done,
                left,
                restart: p.force,
                generation: job.generation,
                lease_owner: job.lease_owner,
                heartbeat_at: job.heartbeat_at,
            })
        }
        None => None,
    };
    Ok(WalkState {
        kind,
        current,
        scheme: record.as_ref().map_or(0, |r| r.scheme),
        seen: record.as_ref().map_or(0, |r| r.seen),
        completed_at: record.and_then(|r| r.completed_at),
        chain,
    })
}

/// What a force-release of a walk found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    /// The running chain row was put back under a new generation: claimable again, and any
    /// write of its former holder is fenced off.
    Released(i64),
    /// No chain of that kind is waiting or running.
    NoChain,
    /// The chain waits for a worker: no lease to release.
    NotRunning(i64),
    /// The row ended (its batch committed) before the release landed.
    Finished(i64),
}

/// Operator force: releases the running chain row of `kind` through the queue's fenced
/// release path (`release_unowned`, as `/api/jobs/{id}/release` does).
pub fn release(store: &Store, kind: WalkKindId) -> Result<Release, StoreError> {
    let Some(job) = store.live_job(kind.job_kind())? else {
        return Ok(Release::NoChain);
    };
    if job.state != crate::model::JobState::Running {
        return Ok(Release::NotRunning(job.id));
    }
    if store.release_unowned(crate::model::Target::Job, job.id)? {
        Ok(Release::Released(job.id))
    } else {
        Ok(Release::Finished(job.id))
    }
}

/// Where an asset's file may be, in the order to try, with the stamp the scan recorded: a
/// present file where it is; a missing one in its library's trash folder (a user trash
/// moved it: a rename keeps the stamp), then where it was.
pub fn candidates(asset: &WalkAsset) -> Vec<(PathBuf, FileStamp)> {
    let mut out = Vec::new();
    for f in &asset.files {
        let root = PathBuf::from(&f.root);
        if !f.present {
            let moved = crate::model::trash_path(asset.id, &f.rel_path);
            out.push((root.join(path_from_bytes(&moved)), f.stamp));
        }
        out.push((root.join(path_from_bytes(&f.rel_path)), f.stamp));
    }
    out
}

/// Whether the file at `path` still has the stamp the scan recorded: then, by the scan's own
/// rule (an unchanged stamp is an unchanged file), it still holds the asset's bytes.
pub fn unchanged(path: &std::path::Path, stamp: &FileStamp) -> bool {
    unchanged_as_one_of(path, std::slice::from_ref(stamp))
}

/// Whether the file at `path` has one of `stamps` (an asset's files as scans recorded them).
pub fn unchanged_as_one_of(path: &std::path::Path, stamps: &[FileStamp]) -> bool {
    std::fs::metadata(path).is_ok_and(|m| stamps.contains(&crate::scan::walk::stamp(&m)))
}

#[cfg(unix)]
fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

#[cfg(not(unix))]
fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
}
