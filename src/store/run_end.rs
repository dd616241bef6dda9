//! A scan run's end with what its completion brings, a composition: the fenced end
//! (`scan_runs::end`), then, only when a completion matched, the publication of what the
//! library's runs left pending (`assets::publish`, then `pending::publish_shown`), the
//! thumbnail job of it (`jobs`) and the completion's walk request (`chains::request_in`),
//! all in the end's transaction: they exist only if the completion committed, and a crash
//! right after it loses none of them. No SQL of its own.

use super::db::Db;
use super::lease::expect_one;
use super::{Store, StoreError, assets, chains, jobs, pending, scan_runs};
use crate::model::{Lease, Millis, RunOutcome, RunState, ThumbsPayload, WalkRequest};

/// The fenced end of a run: how many rows matched (0 = the lease is stale). A completion
/// that matched also publishes what the library's runs left pending, queues the thumbnails
/// of it and writes `follow_up` (a walk request).
pub(super) fn finish(
    db: &Db<'_>,
    lease: &Lease,
    (state, reason): (RunState, Option<String>),
    follow_up: Option<&WalkRequest>,
    now: Millis,
) -> Result<usize, StoreError> {
    let n = scan_runs::end(db, lease, (state, reason), now)?;
    // Side effects of a completion follow only a fenced completion that matched. The
    // thumbnails of what it publishes and its walk request are queued in the same
    // transaction: they exist only if the completion committed, and a crash right after it
    // loses none of them.
    if n == 1 && matches!(state, RunState::Completed | RunState::Suspect) {
        let own = assets::publish(db, lease.id)?;
        let shown = pending::publish_shown(db, lease.id)?;
        if let Some((first, last)) = span(own, shown) {
            let job = ThumbsPayload::published(lease.id, first, last).job();
            jobs::insert(db, &job, now)?;
        }
        if let Some(req) = follow_up {
            chains::request_in(db, req, now)?;
        }
    }
    Ok(n)
}

/// The ids from the lowest to the highest of two optional ranges.
fn span(a: Option<(i64, i64)>, b: Option<(i64, i64)>) -> Option<(i64, i64)> {
    match (a, b) {
        (Some((lo, hi)), Some((l, h))) => Some((lo.min(l), hi.max(h))),
        (one, other) => one.or(other),
    }
}

impl Store {
    /// Ends the run as completed or suspect (fenced).
    pub fn complete_scan(
        &self,
        lease: &Lease,
        outcome: RunOutcome,
        reason: Option<&str>,
    ) -> Result<(), StoreError> {
        let state = match outcome {
            RunOutcome::Completed => RunState::Completed,
            RunOutcome::Suspect => RunState::Suspect,
        };
        let (lease, reason) = (lease.clone(), reason.map(str::to_string));
        self.write(move |db, now| {
            let n = finish(db, &lease, (state, reason.clone()), None, now)?;
            expect_one(&lease, n)
        })
    }
}
