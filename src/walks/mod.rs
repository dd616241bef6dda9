//! The walk-chain machinery (DESIGN.md section 7): a walk visits every asset in id order, a
//! batch per job row, under a scheme. Each batch is selected after the cursor its row
//! carries, processed on rayon, and committed in ONE fenced transaction with the row's
//! completion and either the chain's next row (the new cursor) or, after a short batch, the
//! walk record. One chain per kind is held by the jobs' unique index (`enqueue_unique`); a
//! restart finds the interrupted chain (queued, or reclaimed from a dead lease). A payload
//! whose scheme is lower than the current one, or that has none, restarts from the
//! beginning. Mixed versions on one database: a chain of a higher scheme is left to the newer
//! binary walking it (the claim skips it while that binary holds a lease) and what a newer
//! scheme stamped is kept; only a rollback (no newer binary holds a lease) walks it again
//! under this scheme, with a loud warning. The record is clamped at start (`boot`) only.
//! Owns no SQL (the store does) and no detection or hashing rules (`faces/` and `media/` do).
//!
//! Must not import: http, ops, rusqlite

pub mod content_hash;
pub mod embeddings;
pub mod faces;
pub mod similar;

use crate::model::{
    Job, Millis, NewJob, WalkAsset, WalkCommit, WalkKindId, WalkRequest, WalkResults, WalkVisit,
};
use crate::queue::{JobDone, JobHandler, WorkContext, WorkError};
use crate::store::{Enqueued, Store, StoreError};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// One walk: what it visits and what it computes. `process` runs on rayon and must not
/// write anything; the machinery commits what it returns.
pub trait WalkKind: Send + Sync + 'static {
    fn id(&self) -> WalkKindId;
    /// The scheme this process walks under (an override, a constant, a detector version).
    fn scheme(&self) -> i64;
    fn batch_size(&self) -> usize;
    /// Bytes of files a batch may read at most (the first file of each asset counted); a
    /// batch cut by it is not short. `None`: no bound but the count.
    fn batch_bytes(&self) -> Option<u64> {
        None
    }
    /// The next batch after `after` of the assets `visit` names.
    fn select(
        &self,
        store: &Store,
        after: i64,
        visit: WalkVisit,
    ) -> Result<Vec<WalkAsset>, StoreError> {
        store.walk_batch(self.id(), visit, after, self.batch_size())
    }
    /// Computes the batch's results. An asset left out keeps its old stamp.
    fn process(&self, batch: &[WalkAsset]) -> WalkResults;
    /// A job the walk's end queues in the commit that records it (the embedding walk's
    /// recluster, which tries again the faces that joined nobody).
    fn on_complete(&self) -> Option<NewJob> {
        None
    }
}

/// A chain row's payload: the scheme it walks, its cursor (the last asset id committed),
/// whether it re-visits stamped assets (`--restart`), how many assets it has visited, the
/// process that enqueued it (`by`, a lease owner: while that one holds a lease, an older
/// binary leaves the row alone), and whether it walks a rollback (it re-stamps what a newer
/// scheme stamped), and the assets it still has to visit after the cursor (`left`: counted
/// by the start that scheduled the chain, else by its first batch, and lowered by each
/// batch since, so that a status of a running walk counts nothing; assets added meanwhile
/// are visited but not counted). A live row may also carry `revisit`, the lowest asset made
/// live behind its cursor while it was live (a restore): the store writes it and reads it
/// at the row's commit, which takes the chain back there (`Store::commit_walk_batch`).
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rollback: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left: Option<i64>,
    /// On a row without a scheme: the scheme the walk record said was walked to the end when
    /// the row was queued. A claimer of that scheme keeps the row's cursor (`after`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<i64>,
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

    /// Names the process enqueuing the row.
    pub fn by(self, owner: &str) -> Payload {
        Payload {
            by: Some(owner.to_string()),
            ..self
        }
    }

    /// The assets a chain with this payload visits.
    pub fn visit(&self, current: i64) -> WalkVisit {
        WalkVisit {
            scheme: self.scheme.unwrap_or(current),
            force: self.force,
            rollback: self.rollback,
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
    fn max_scheme(&self) -> Option<i64> {
        Some(self.kind.scheme())
    }

    fn run(&self, ctx: &WorkContext, job: &Job) -> Result<JobDone, WorkError> {
        let kind = self.kind.as_ref();
        let scheme = kind.scheme();
        let payload = walk_payload(kind.id(), scheme, job);
        ctx.ensure_live()?;
        let left = match payload.left {
            Some(left) => left,
            None => (self.store).walk_left(kind.id(), payload.visit(scheme), payload.after)?,
        };
        let mut batch = kind.select(&self.store, payload.after, payload.visit(scheme))?;
        let mut short = batch.len() < kind.batch_size();
        if kind
            .batch_bytes()
            .is_some_and(|bytes| cut_to_bytes(&mut batch, bytes))
        {
            short = false;
        }
        let results = kind.process(&batch);
        let skipped = batch.len() - results.len();
        if skipped > 0 {
            tracing::warn!(walk = %kind.id(), skipped, "assets whose file could not be read keep their old stamp");
        }
        let next = Payload {
            after: batch.last().map_or(payload.after, |a| a.id),
            done: payload.done + batch.len() as u64,
            left: Some(left.saturating_sub(batch.len() as i64).max(0)),
            ..payload.clone().by(self.store.owner())
        };
        let commit = WalkCommit {
            kind: kind.id(),
            results,
            next: chain_job(kind.id(), &next),
            complete_scheme: short.then_some(scheme),
            rollback: payload.rollback,
            then: kind.on_complete(),
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

/// Keeps the assets of `batch` whose files (the first of each) add up to at most `bytes`,
/// the first one always. Answers whether it left any out: the next row starts with them.
fn cut_to_bytes(batch: &mut Vec<WalkAsset>, bytes: u64) -> bool {
    let mut total = 0u64;
    let keep = batch
        .iter()
        .position(|a| {
            total = total.saturating_add(a.files.first().map_or(0, |f| f.stamp.size));
            total > bytes
        })
        .map_or(batch.len(), |at| at.max(1));
    let cut = keep < batch.len();
    batch.truncate(keep);
    cut
}

/// The payload this binary walks `job` under: the row's own; the row's cursor under this
/// scheme when the row has no scheme but was queued after a walk to the end under this one
/// (a re-detection's: `store::chains::faces_replaced`); or a fresh one from the beginning when
/// the row walks another scheme or none. A row of a higher scheme reaches
/// this binary only once no newer binary holds a lease on it (the claim's rule): a rollback,
/// which re-stamps what the newer scheme stamped.
fn walk_payload(kind: WalkKindId, scheme: i64, job: &Job) -> Payload {
    let payload = Payload::parse(&job.payload);
    match payload.scheme {
        Some(s) if s == scheme => payload,
        Some(s) if s > scheme => {
            tracing::warn!(
                walk = %kind,
                scheme,
                from = s,
                "ROLLBACK: no mediadex walking {kind} scheme {s} holds a lease any more; this \
                 one walks the chain again from the beginning under scheme {scheme} and \
                 re-stamps what the newer one did"
            );
            Payload {
                rollback: true,
                ..Payload::fresh(scheme, payload.force)
            }
        }
        None if payload.since == Some(scheme) => Payload {
            scheme: Some(scheme),
            since: None,
            ..payload
        },
        from => {
            tracing::info!(
                walk = %kind,
                from = ?from,
                to = scheme,
                "walk chain of an older scheme: starting again from the beginning"
            );
            Payload::fresh(scheme, payload.force)
        }
    }
}

/// What boot found for one walk kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Boot {
    pub kind: WalkKindId,
    /// The record after the clamp.
    pub record: crate::model::WalkRecord,
    /// A binary with a higher scheme ran on this database and none holds a lease now (a
    /// rollback): the walk goes again under this scheme, re-stamping what it stamped.
    pub rollback: bool,
    /// A binary with a higher scheme walking this kind, live now (mixed versions).
    pub newer: Option<WalkPeer>,
    /// The chain enqueued or found, when the walk has work.
    pub chain: Option<Enqueued>,
}

/// At start: clamps the record to this binary's scheme and raises `seen`, then schedules a
/// chain through the one-chain index when the record is below the scheme or some asset
/// lacks its stamp. Two processes booting at once make one chain. When `seen` is above this
/// scheme, a newer binary ran here: while it is live (it holds a lease, or handed its chain
/// off less than `ttl` ago) its chain and stamps are left alone; otherwise it is a rollback,
/// warned loudly, and the chain re-stamps what the newer scheme stamped.
pub fn boot(store: &Store, kind: WalkKindId, scheme: i64, ttl: Millis) -> Result<Boot, StoreError> {
    let (record, newer_ran) = start(store, kind, scheme)?;
    let newer = if newer_ran {
        store
            .walk_peer(kind, scheme, true, ttl)?
            .map(WalkPeer::from)
    } else {
        None
    };
    let rollback = newer_ran && newer.is_none();
    warn_at_start(kind, scheme, &record, newer.as_ref());
    let visit = WalkVisit {
        scheme,
        force: false,
        rollback,
    };
    let left = store.walk_left(kind, visit, 0)?;
    let chain = if record.scheme < scheme || left > 0 {
        Some(schedule(store, kind, scheme, rollback, left)?)
    } else {
        None
    };
    Ok(Boot {
        kind,
        record,
        rollback,
        newer,
        chain,
    })
}

/// The start clamp: clamps the record to `scheme` and raises `seen`. Returns the record and
/// whether a binary of a higher scheme ran here (`seen` above `scheme`); whether that one
/// is still live is `boot`'s question.
pub fn start(
    store: &Store,
    kind: WalkKindId,
    scheme: i64,
) -> Result<(crate::model::WalkRecord, bool), StoreError> {
    let record = store.start_walk_record(kind, scheme)?;
    let newer_ran = record.seen > scheme;
    Ok((record, newer_ran))
}

fn warn_at_start(
    kind: WalkKindId,
    scheme: i64,
    record: &crate::model::WalkRecord,
    newer: Option<&WalkPeer>,
) {
    match newer {
        Some(peer) => tracing::warn!(
            walk = %kind,
            scheme,
            "{}; this one leaves its chain and its stamps alone",
            peer.describe(kind)
        ),
        None if record.seen > scheme => tracing::warn!(
            walk = %kind,
            scheme,
            seen = record.seen,
            "ROLLBACK: a newer mediadex walked this database under {kind} scheme {}; this one \
             walks scheme {scheme} and re-stamps what the newer one did",
            record.seen
        ),
        None => {}
    }
}

/// Enqueues a chain at start, with the `left` the start counted. In a rollback, a live
/// chain that would keep the newer scheme's stamps (any but a rollback chain of this
/// scheme) is replaced.
fn schedule(
    store: &Store,
    kind: WalkKindId,
    scheme: i64,
    rollback: bool,
    left: i64,
) -> Result<Enqueued, StoreError> {
    let payload = Payload {
        rollback,
        left: Some(left),
        ..Payload::fresh(scheme, false).by(store.owner())
    };
    let job = chain_job(kind, &payload);
    let live = if rollback {
        store.live_job(kind.job_kind())?
    } else {
        None
    };
    match live.map(|j| Payload::parse(&j.payload)) {
        Some(p) if p.scheme != Some(scheme) || !p.rollback => store.replace_unique(job),
        _ => store.enqueue(job),
    }
}

/// Asks for a walk now: the live chain when there is one, else a new one from the start.
/// `restart` replaces any live chain with one that re-visits every asset. The record is not
/// clamped (only `seen` is raised): clamping here would let an older binary, asking after
/// each of its scans and restores, lower what a newer one walked to the end.
pub fn request(
    store: &Store,
    kind: WalkKindId,
    scheme: i64,
    restart: bool,
) -> Result<Enqueued, StoreError> {
    ask(store, kind, Payload::fresh(scheme, restart), restart)
}

/// What `request` asks for without a restart, as a value a completion writes in its own
/// transaction (`WalkRequest`): the follow-up then exists exactly when the completion does.
pub fn follow_up(store: &Store, kind: WalkKindId, scheme: i64) -> WalkRequest {
    WalkRequest {
        kind,
        scheme,
        job: chain_job(kind, &Payload::fresh(scheme, false).by(store.owner())),
        with: Vec::new(),
    }
}

/// Enqueues a chain walking `payload` (the live chain takes its place), or with `replace`
/// cancels the live chain for it. Raises the record's `seen` (never its `scheme`).
pub fn ask(
    store: &Store,
    kind: WalkKindId,
    payload: Payload,
    replace: bool,
) -> Result<Enqueued, StoreError> {
    if let Some(scheme) = payload.scheme {
        store.raise_walk_seen(kind, scheme)?;
    }
    let job = chain_job(kind, &payload.by(store.owner()));
    if replace {
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
    /// Another mediadex walking this kind under another scheme, live on this database.
    pub other: Option<WalkPeer>,
}

impl WalkState {
    /// A newer mediadex ran here and none is live now.
    pub fn rollback(&self) -> bool {
        self.seen > self.current && self.other.as_ref().is_none_or(|o| o.scheme <= self.current)
    }
}

/// A process walking a kind under another scheme than this one's, while it holds a lease.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WalkPeer {
    pub scheme: i64,
    /// Its lease owner, `host:pid:boot-nonce`, and the pid it names.
    pub owner: String,
    pub pid: Option<String>,
}

impl From<(i64, String)> for WalkPeer {
    fn from((scheme, owner): (i64, String)) -> Self {
        let pid = owner.rsplit(':').nth(1).map(str::to_string);
        WalkPeer { scheme, owner, pid }
    }
}

impl WalkPeer {
    /// What `status` says of it.
    pub fn describe(&self, kind: WalkKindId) -> String {
        format!(
            "another mediadex with {kind} scheme {} is using this database (pid {})",
            self.scheme,
            self.pid.as_deref().unwrap_or("?")
        )
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChainState {
    pub job_id: i64,
    pub state: crate::model::JobState,
    pub scheme: Option<i64>,
    pub cursor: i64,
    pub done: u64,
    /// Assets still to visit after the cursor (under the chain's scheme): the chain's own
    /// count (`Payload::left`), or counted here while its first batch has not run.
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
            let left = match p.left {
                Some(left) => left,
                None => store.walk_left(kind, p.visit(current), p.after)?,
            };
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
        // A snapshot: a peer between two batches (no grace) holds no lease for a moment.
        other: store
            .walk_peer(kind, current, false, 0)?
            .map(WalkPeer::from),
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
