//! The `scan_runs` table: admission (coalescing into the waiting run), claim, the fenced
//! worker writes, and the lease endings that make a new attempt: reclaim retires an expired
//! run as `failed` / `lease_expired` and creates its successor; a pause (a full disk) or a
//! transient failure ends it `failed` with a successor in the same fenced write; release
//! puts it back. A
//! cancel is one write per library (its waiting and running runs, a fresh successor
//! included), so it cannot miss what reclaim made of a run. The fence of a scan's data
//! writes (`fence_data`) and its reason counts are here; what a completion brings (the
//! publication, the `thumbs` job, the walk its handler asked for) is `run_end`'s, and what
//! the data writes do is `ingest`'s. A run's provenance counts (`scan_run_reasons`) are
//! kept here too.

use super::db::{self, Db, Pair};
use super::lease::{expect_one, lost};
use super::{LeasePolicy, Store, StoreError, backoff, parse_at};
use crate::model::{
    Lease, Millis, Provenance, ReclaimReport, RunState, ScanRequest, ScanRun, Target, Trigger,
    widen_scope,
};
use std::collections::BTreeMap;

macro_rules! run_cols {
    () => {
        "id, library_id, scope, trigger, watch_event, state, reason, generation, attempt, \
         run_at, lease_owner, lease_expires_at, progress, requested_at, accepted_at, \
         started_at, finished_at, updated_at, predecessor_id, forced"
    };
}

fn run_from_row(r: &db::Row<'_>) -> Result<ScanRun, StoreError> {
    Ok(ScanRun {
        id: r.get(0)?,
        library_id: r.get(1)?,
        scope: r.get(2)?,
        trigger: parse_at(r, 3, Trigger::parse)?,
        watch_event: r.get(4)?,
        state: parse_at(r, 5, RunState::parse)?,
        reason: r.get(6)?,
        generation: r.get(7)?,
        attempt: r.get(8)?,
        run_at: r.get(9)?,
        lease_owner: r.get(10)?,
        lease_expires_at: r.get(11)?,
        progress: r.get(12)?,
        requested_at: r.get(13)?,
        accepted_at: r.get(14)?,
        started_at: r.get(15)?,
        finished_at: r.get(16)?,
        updated_at: r.get(17)?,
        predecessor_id: r.get(18)?,
        forced: r.get(19)?,
    })
}

/// How admission answered a scan request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Admission {
    /// A new waiting run was created.
    Accepted,
    /// The library already had a waiting run; the request widened its scope.
    Coalesced,
    /// The idempotency key was seen before with the same request: its original run.
    Replayed,
}

/// Admission's knobs beyond the request itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AdmissionOptions {
    /// Names the request: the same key with the same request answers the original run, the
    /// same key with a different request is a conflict.
    pub idempotency_key: Option<String>,
    /// At most this many new runs per library per hour (a coalesced request adds none).
    pub hourly_limit: Option<u32>,
    /// Re-read every file in scope, changed or not (`scan --force`). Survives coalescing
    /// and retries.
    pub forced: bool,
}

const HOUR: Millis = 3_600_000;
const KEY_GET: &str =
    "SELECT library_id, scope, trigger, run_id FROM scan_requests WHERE idempotency_key = ?1";
const KEY_PUT: &str = "
    INSERT INTO scan_requests (idempotency_key, library_id, scope, trigger, run_id, created_at)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
/// Runs of a library accepted in the window, and the oldest of them (when the window frees).
const RECENT_RUNS: &str = "
    SELECT count(*), min(accepted_at) FROM scan_runs WHERE library_id = ?1 AND accepted_at > ?2";

const GET: &str = concat!("SELECT ", run_cols!(), " FROM scan_runs WHERE id = ?1");
const COUNTS: &str = "SELECT state, count(*) FROM scan_runs GROUP BY state";
const WAITING: &str = concat!(
    "SELECT ",
    run_cols!(),
    " FROM scan_runs WHERE library_id = ?1 AND state = 'accepted'"
);
const LIST: &str = concat!(
    "SELECT ",
    run_cols!(),
    " FROM scan_runs WHERE CAST(?1 AS BIGINT) IS NULL OR library_id = ?1 ORDER BY id DESC LIMIT ?2"
);
const INSERT: &str = concat!(
    "INSERT INTO scan_runs (library_id, scope, trigger, watch_event, state, attempt, run_at,
                            requested_at, accepted_at, updated_at, predecessor_id, forced)
     VALUES (?1, ?2, ?3, ?4, 'accepted', ?5, ?6, ?7, ?8, ?8, ?9, ?10)
     RETURNING ",
    run_cols!()
);
/// The scalar `min` and `max` are SQLite's; PostgreSQL says `least` and `greatest`.
const WIDEN: Pair = Pair {
    sqlite: concat!(
        "UPDATE scan_runs SET scope = ?2, requested_at = min(requested_at, ?3),
                predecessor_id = coalesce(predecessor_id, ?4), attempt = max(attempt, ?5),
                updated_at = ?6, run_at = min(run_at, ?7), forced = max(forced, ?8)
          WHERE id = ?1 RETURNING ",
        run_cols!()
    ),
    postgres: concat!(
        "UPDATE scan_runs SET scope = ?2, requested_at = least(requested_at, ?3),
                predecessor_id = coalesce(predecessor_id, ?4), attempt = greatest(attempt, ?5),
                updated_at = ?6, run_at = least(run_at, ?7), forced = greatest(forced, ?8)
          WHERE id = ?1 RETURNING ",
        run_cols!()
    ),
};
const LIBRARY_EXISTS: &str = "SELECT 1 FROM libraries WHERE id = ?1";
/// The oldest due waiting run of a library that has nothing running and that this host
/// (?4) sees (has a root for): another host's library is left to that host. On PostgreSQL
/// several hosts claim at once: the subquery locks the run it picks and skips one another
/// claim holds (`FOR UPDATE OF a SKIP LOCKED`), so two claims never take one run; a run
/// another claim committed meanwhile is re-read and left when it no longer waits.
macro_rules! claim {
    ($lock:literal) => {
        concat!(
            "UPDATE scan_runs SET state = 'running', generation = generation + 1, lease_owner = ?1,
                    lease_expires_at = ?2 + ?3, heartbeat_at = ?2, started_at = ?2, updated_at = ?2
              WHERE id = (SELECT a.id FROM scan_runs a
                           WHERE a.state = 'accepted' AND a.run_at <= ?2
                             AND EXISTS (SELECT 1 FROM library_roots h
                                          WHERE h.library_id = a.library_id AND h.host = ?4)
                             AND NOT EXISTS (SELECT 1 FROM scan_runs r
                                              WHERE r.library_id = a.library_id
                                                AND r.state = 'running')
                           ORDER BY a.run_at, a.id LIMIT 1",
            $lock,
            ")
              RETURNING ",
            run_cols!()
        )
    };
}
const CLAIM: Pair = Pair {
    sqlite: claim!(""),
    postgres: claim!(" FOR UPDATE OF a SKIP LOCKED"),
};
/// The fence that opens every scan data write: the run is ours, running and unexpired. It
/// records the progress (when given) and answers the run's library and scope.
const FENCE: &str = fenced!(
    "UPDATE scan_runs SET progress = coalesce(?4, progress), updated_at = ?3",
    "RETURNING library_id, scope"
);

const COUNT_REASON: &str = "
    INSERT INTO scan_run_reasons (run_id, reason, count) VALUES (?1, ?2, ?3)
    ON CONFLICT (run_id, reason)
    DO UPDATE SET count = scan_run_reasons.count + excluded.count";

const REASONS: &str =
    "SELECT reason, count FROM scan_run_reasons WHERE run_id = ?1 ORDER BY reason";

const RENEW: &str = fenced!(
    "UPDATE scan_runs SET lease_expires_at = ?3 + ?4, heartbeat_at = ?3, updated_at = ?3",
    "RETURNING lease_expires_at"
);
const CHECKPOINT: &str = fenced!("UPDATE scan_runs SET progress = ?4, updated_at = ?3");
const FINISH: &str = fenced!(
    "UPDATE scan_runs SET state = ?4, reason = ?5, lease_owner = NULL, lease_expires_at = NULL,
                          finished_at = ?3, updated_at = ?3"
);
/// Ends a running or waiting row without its lease: retire, interrupt. The generation
/// moves on so that any ack still in flight from the old holder matches nothing.
const END_UNFENCED: &str = "
    UPDATE scan_runs SET state = ?2, reason = ?3, generation = generation + 1,
           lease_owner = NULL, lease_expires_at = NULL, finished_at = ?4, updated_at = ?4
     WHERE id = ?1 AND state IN ('accepted', 'running')";
/// Cancels every waiting and running run of a library, in the writer like reclaim: a
/// successor that reclaim made just before is cancelled with the rest.
const CANCEL_LIBRARY: &str = concat!(
    "UPDATE scan_runs SET state = 'cancelled', reason = 'cancelled', generation = generation + 1,
            lease_owner = NULL, lease_expires_at = NULL, finished_at = ?2, updated_at = ?2
      WHERE library_id = ?1 AND state IN ('accepted', 'running')
      RETURNING ",
    run_cols!()
);
/// Whether the run, or a retry descended from it (reclaim's successors), still waits or runs.
const CHAIN_LIVE: &str = "
    WITH RECURSIVE chain (id) AS (
        SELECT CAST(?1 AS BIGINT)
        UNION SELECT r.id FROM scan_runs r JOIN chain c ON r.predecessor_id = c.id)
    SELECT EXISTS (SELECT 1 FROM scan_runs
                    WHERE id IN (SELECT id FROM chain) AND state IN ('accepted', 'running'))";
const BACK_TO_WAITING: &str = "
    UPDATE scan_runs SET state = 'accepted', generation = generation + 1, lease_owner = NULL,
           lease_expires_at = NULL, run_at = ?2, updated_at = ?2
     WHERE id = ?1 AND state = 'running'";
const BUMP_WAITING: &str =
    "UPDATE scan_runs SET generation = generation + 1, updated_at = ?2 WHERE id = ?1";
const EXPIRED: &str = concat!(
    "SELECT ",
    run_cols!(),
    " FROM scan_runs WHERE state = 'running' AND lease_expires_at <= ?1 ORDER BY id"
);
/// Finished runs past retention, except each library's newest finished and newest completed
/// run (they answer "when did this library last scan, and last scan cleanly?") and a run
/// that still holds pending assets: it ties them to its library, whose next completion
/// publishes them (DESIGN.md section 6); gone, it would leave them with no owner.
const PRUNE: &str = "
    DELETE FROM scan_runs
     WHERE state NOT IN ('accepted', 'running') AND finished_at < ?1
       AND id NOT IN (SELECT max(id) FROM scan_runs
                       WHERE state NOT IN ('accepted', 'running') GROUP BY library_id)
       AND id NOT IN (SELECT max(id) FROM scan_runs
                       WHERE state = 'completed' GROUP BY library_id)
       AND NOT EXISTS (SELECT 1 FROM assets WHERE pending_run = scan_runs.id)";

pub(super) fn get(db: &Db<'_>, id: i64) -> Result<Option<ScanRun>, StoreError> {
    db.optional(GET, args!(id), run_from_row)
}

fn waiting(db: &Db<'_>, library_id: i64) -> Result<Option<ScanRun>, StoreError> {
    db.optional(WAITING, args!(library_id), run_from_row)
}

fn end_unfenced(
    db: &Db<'_>,
    id: i64,
    state: RunState,
    reason: &str,
    now: Millis,
) -> Result<bool, StoreError> {
    let n = db.execute(END_UNFENCED, args!(id, state.as_str(), reason, now))?;
    Ok(n == 1)
}

/// Folds `pred`'s work into the library's waiting run: scope widened, the earliest request
/// time kept, `pred` named as predecessor.
fn fold_into(
    db: &Db<'_>,
    waiting: &ScanRun,
    pred: &ScanRun,
    attempt: i64,
    now: Millis,
) -> Result<ScanRun, StoreError> {
    let scope = widen_scope(&waiting.scope, &pred.scope);
    let params = args!(
        waiting.id,
        scope,
        pred.requested_at,
        pred.id,
        attempt,
        now,
        waiting.run_at,
        pred.forced
    );
    db.one(db.pick(&WIDEN), params, run_from_row)
}

/// Creates the successor of a retired run (or folds it into the run already waiting): same
/// scope, trigger, watch event and original request time; a new id.
fn successor(
    db: &Db<'_>,
    pred: &ScanRun,
    run_at: Millis,
    now: Millis,
) -> Result<ScanRun, StoreError> {
    let attempt = pred.attempt + 1;
    if let Some(w) = waiting(db, pred.library_id)? {
        return fold_into(db, &w, pred, attempt, now);
    }
    let params = args!(
        pred.library_id,
        pred.scope.as_str(),
        pred.trigger.as_str(),
        pred.watch_event.as_deref(),
        attempt,
        run_at,
        pred.requested_at,
        now,
        pred.id,
        pred.forced
    );
    db.one(INSERT, params, run_from_row)
}

/// Hands a running run back: it waits again under a new generation, or, when the library
/// already has a waiting run, it ends `interrupted` and that run absorbs its scope.
fn put_back(db: &Db<'_>, run: &ScanRun, reason: &str, now: Millis) -> Result<(), StoreError> {
    match waiting(db, run.library_id)? {
        None => {
            db.execute(BACK_TO_WAITING, args!(run.id, now))?;
        }
        Some(w) => {
            end_unfenced(db, run.id, RunState::Interrupted, reason, now)?;
            fold_into(db, &w, run, w.attempt, now)?;
        }
    }
    Ok(())
}

pub(super) fn release(db: &Db<'_>, lease: &Lease, now: Millis) -> Result<(), StoreError> {
    // The fence first: a stale holder must not hand back somebody else's run.
    let n = db.execute(
        CHECKPOINT_FENCE_ONLY,
        args!(lease.id, lease.generation, now),
    )?;
    expect_one(lease, n)?;
    let run = get(db, lease.id)?.ok_or_else(|| lost(lease))?;
    put_back(db, &run, "released", now)
}
const CHECKPOINT_FENCE_ONLY: &str = fenced!("UPDATE scan_runs SET updated_at = ?3");

pub(super) fn release_unowned(db: &Db<'_>, id: i64, now: Millis) -> Result<bool, StoreError> {
    match get(db, id)? {
        Some(run) if run.state == RunState::Running => {
            put_back(db, &run, "force_released", now)?;
            Ok(true)
        }
        Some(run) if run.state == RunState::Accepted => {
            db.execute(BUMP_WAITING, args!(id, now))?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

pub(super) fn cancel(db: &Db<'_>, id: i64, now: Millis) -> Result<bool, StoreError> {
    Ok(!cancel_run(db, id, now)?.is_empty())
}

/// Cancels a library's waiting and running runs; returns them, cancelled.
fn cancel_library(db: &Db<'_>, library_id: i64, now: Millis) -> Result<Vec<ScanRun>, StoreError> {
    let mut runs = db.all(CANCEL_LIBRARY, args!(library_id, now), run_from_row)?;
    runs.sort_by_key(|r| r.id);
    Ok(runs)
}

/// Cancelling a run cancels its library's scans while the run's work is still to do: the
/// run waits or runs, or reclaim retired it and its successor does. A run that ended any
/// other way cancels nothing (empty).
fn cancel_run(db: &Db<'_>, id: i64, now: Millis) -> Result<Vec<ScanRun>, StoreError> {
    let Some(run) = get(db, id)? else {
        return Ok(Vec::new());
    };
    let live: bool = db.one(CHAIN_LIVE, args!(id), |r| r.get(0))?;
    if !live {
        return Ok(Vec::new());
    }
    cancel_library(db, run.library_id, now)
}

pub(super) fn reclaim(
    db: &Db<'_>,
    now: Millis,
    policy: &LeasePolicy,
    report: &mut ReclaimReport,
) -> Result<(), StoreError> {
    let expired = db.all(EXPIRED, args!(now), run_from_row)?;
    for run in expired {
        end_unfenced(db, run.id, RunState::Failed, "lease_expired", now)?;
        report.runs_retired += 1;
        if run.attempt >= policy.scan_max_attempts {
            tracing::warn!(
                run = run.id,
                attempts = run.attempt,
                "scan run lost its lease too many times in a row; no further retry"
            );
            continue;
        }
        let retry_at = now + backoff(policy, run.attempt - 1);
        successor(db, &run, retry_at, now)?;
        report.run_successors += 1;
    }
    Ok(())
}

/// The fenced end of a run: how many rows matched (0 = the lease is stale). What a
/// completion brings besides is `run_end::finish`'s.
pub(super) fn end(
    db: &Db<'_>,
    lease: &Lease,
    (state, reason): (RunState, Option<String>),
    now: Millis,
) -> Result<usize, StoreError> {
    let params = args!(lease.id, lease.generation, now, state.as_str(), reason);
    db.execute(FINISH, params)
}

/// The heartbeat: extends the lease by `ttl` from `now` (fenced). Answers the new expiry.
pub(super) fn renew(
    db: &Db<'_>,
    lease: &Lease,
    now: Millis,
    ttl: Millis,
) -> Result<Millis, StoreError> {
    db.optional(RENEW, args!(lease.id, lease.generation, now, ttl), |r| {
        r.get(0)
    })?
    .ok_or_else(|| lost(lease))
}

pub(super) fn prune(db: &Db<'_>, before: Millis) -> Result<u64, StoreError> {
    Ok(db.execute(PRUNE, args!(before))? as u64)
}

/// The original run of an idempotency key, if the key was seen with this same request.
fn replay(db: &Db<'_>, key: &str, req: &ScanRequest) -> Result<Option<ScanRun>, StoreError> {
    let seen: Option<(i64, String, String, i64)> = db.optional(KEY_GET, args!(key), |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
    })?;
    let Some((library_id, scope, trigger, run_id)) = seen else {
        return Ok(None);
    };
    if (library_id, scope.as_str(), trigger.as_str())
        != (req.library_id, req.scope.as_str(), req.trigger.as_str())
    {
        return Err(StoreError::Conflict(format!(
            "the idempotency key {key:?} was used for another scan request \
             (library {library_id}, scope {scope:?}, trigger {trigger})"
        )));
    }
    get(db, run_id)?
        .map(Some)
        .ok_or_else(|| StoreError::NotFound(format!("scan run {run_id} is gone")))
}

/// Refuses a new run when the library already had `limit` runs accepted in the last hour.
fn check_hourly_limit(
    db: &Db<'_>,
    library_id: i64,
    limit: u32,
    now: Millis,
) -> Result<(), StoreError> {
    let (count, oldest): (i64, Option<Millis>) =
        db.one(RECENT_RUNS, args!(library_id, now - HOUR), |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    if count >= i64::from(limit) {
        return Err(StoreError::RateLimited {
            library_id,
            limit,
            retry_after_ms: oldest.map_or(HOUR, |t| t + HOUR - now).max(1),
        });
    }
    Ok(())
}

/// Admission without a key: coalesce into the waiting run, or create one (within the limit).
fn admit(
    db: &Db<'_>,
    req: &ScanRequest,
    options: &AdmissionOptions,
    now: Millis,
) -> Result<(ScanRun, Admission), StoreError> {
    let exists = db.optional(LIBRARY_EXISTS, args!(req.library_id), |_| Ok(()))?;
    if exists.is_none() {
        return Err(StoreError::NotFound(format!(
            "no library with id {}",
            req.library_id
        )));
    }
    if let Some(w) = waiting(db, req.library_id)? {
        let scope = widen_scope(&w.scope, &req.scope);
        // A fresh request makes a retry that is backing off due at once.
        let params = args!(
            w.id,
            scope,
            w.requested_at,
            None::<i64>,
            w.attempt,
            now,
            now,
            options.forced
        );
        let run = db.one(db.pick(&WIDEN), params, run_from_row)?;
        return Ok((run, Admission::Coalesced));
    }
    if let Some(limit) = options.hourly_limit {
        check_hourly_limit(db, req.library_id, limit, now)?;
    }
    let params = args!(
        req.library_id,
        req.scope.as_str(),
        req.trigger.as_str(),
        req.watch_event.as_deref(),
        1,
        now,
        now,
        now,
        None::<i64>,
        options.forced
    );
    let run = db.one(INSERT, params, run_from_row)?;
    Ok((run, Admission::Accepted))
}

fn run_lease(run: &ScanRun, owner: String, expires_at: Millis) -> Lease {
    Lease {
        target: Target::ScanRun,
        id: run.id,
        generation: run.generation,
        owner,
        expires_at,
    }
}

/// The fence check of a scan data write; answers the run's scope. A run of another library
/// is refused (the write is rolled back with it).
pub(super) fn fence_data(
    db: &Db<'_>,
    lease: &Lease,
    library_id: i64,
    progress: Option<&str>,
    now: Millis,
) -> Result<String, StoreError> {
    let params = args!(lease.id, lease.generation, now, progress);
    let (lib, scope): (i64, String) = db
        .optional(FENCE, params, |r| Ok((r.get(0)?, r.get(1)?)))?
        .ok_or_else(|| lost(lease))?;
    if lib != library_id {
        return Err(StoreError::Conflict(format!(
            "scan run {} belongs to library {lib}, not {library_id}",
            lease.id
        )));
    }
    Ok(scope)
}

pub(super) fn count_reasons(
    db: &Db<'_>,
    run_id: i64,
    counts: &BTreeMap<&'static str, i64>,
) -> Result<(), StoreError> {
    for (reason, n) in counts.iter().filter(|(_, n)| **n > 0) {
        db.execute(COUNT_REASON, args!(run_id, *reason, *n))?;
    }
    Ok(())
}

/// Admission in one transaction: a replayed key's run, or `admit`'s, the key kept.
fn request(
    db: &Db<'_>,
    req: &ScanRequest,
    options: &AdmissionOptions,
    now: Millis,
) -> Result<(ScanRun, Admission), StoreError> {
    if let Some(key) = &options.idempotency_key
        && let Some(run) = replay(db, key, req)?
    {
        return Ok((run, Admission::Replayed));
    }
    let (run, admission) = admit(db, req, options, now)?;
    if let Some(key) = &options.idempotency_key {
        let params = args!(
            key.as_str(),
            req.library_id,
            req.scope.as_str(),
            req.trigger.as_str(),
            run.id,
            now
        );
        db.execute(KEY_PUT, params)?;
    }
    Ok((run, admission))
}

/// Claims the oldest due waiting run this host sees, for `owner`.
fn claim(
    db: &Db<'_>,
    (owner, host): (&str, &str),
    (now, ttl): (Millis, Millis),
) -> Result<Option<ScanRun>, StoreError> {
    db.optional(db.pick(&CLAIM), args!(owner, now, ttl, host), run_from_row)
}

/// Records the run's progress (fenced).
fn checkpoint(db: &Db<'_>, lease: &Lease, progress: &str, now: Millis) -> Result<(), StoreError> {
    let n = db.execute(CHECKPOINT, args!(lease.id, lease.generation, now, progress))?;
    expect_one(lease, n)
}

/// Ends the run failed with a successor due at `retry_at` (fenced).
fn fail_with_successor(
    db: &Db<'_>,
    lease: &Lease,
    error: String,
    retry_at: impl FnOnce(&ScanRun) -> Millis,
    now: Millis,
) -> Result<(), StoreError> {
    let n = end(db, lease, (RunState::Failed, Some(error)), now)?;
    expect_one(lease, n)?;
    let run = get(db, lease.id)?.ok_or_else(|| lost(lease))?;
    successor(db, &run, retry_at(&run), now)?;
    Ok(())
}

fn counts(db: &Db<'_>) -> Result<Vec<(RunState, i64)>, StoreError> {
    db.all(COUNTS, args!(), |r| {
        Ok((parse_at(r, 0, RunState::parse)?, r.get(1)?))
    })
}

fn list(db: &Db<'_>, library_id: Option<i64>, limit: i64) -> Result<Vec<ScanRun>, StoreError> {
    db.all(LIST, args!(library_id, limit), run_from_row)
}

fn reasons(db: &Db<'_>, run_id: i64) -> Result<Vec<(Provenance, i64)>, StoreError> {
    db.all(REASONS, args!(run_id), |r| {
        Ok((parse_at(r, 0, Provenance::parse)?, r.get(1)?))
    })
}

impl Store {
    /// Admission: a new waiting run for the library, or the waiting run widened to cover
    /// this request too.
    pub fn request_scan(&self, req: ScanRequest) -> Result<(ScanRun, Admission), StoreError> {
        self.request_scan_keyed(req, AdmissionOptions::default())
    }

    /// Admission with an idempotency key and an hourly limit, in one write transaction:
    /// a key seen with the same request (library, scope, trigger) answers its original run
    /// (`Replayed`); with a different request it is `Conflict`. Otherwise as `request_scan`,
    /// except that creating a new run beyond `hourly_limit` runs of the library in the last
    /// hour is refused with `RateLimited` (coalescing into the waiting run is always allowed).
    pub fn request_scan_keyed(
        &self,
        req: ScanRequest,
        options: AdmissionOptions,
    ) -> Result<(ScanRun, Admission), StoreError> {
        self.write(move |db, now| request(db, &req, &options, now))
    }

    /// Claims the oldest due waiting run of a librar    /// Claims the oldest due waiting run of a library with nothing running, for `ttl` ms.
    pub fn claim_scan_run(&self, ttl: Millis) -> Result<Option<(Lease, ScanRun)>, StoreError> {
        let (owner, host) = (self.owner().to_string(), self.host().to_string());
        self.write(move |db, now| {
            let run = claim(db, (&owner, &host), (now, ttl))?;
            Ok(run.map(|run| (run_lease(&run, owner.clone(), now + ttl), run)))
        })
    }

    /// Records the run's progress (fenced).
    pub fn checkpoint_scan(&self, lease: &Lease, progress: &str) -> Result<(), StoreError> {
        let (lease, progress) = (lease.clone(), progress.to_string());
        self.write(move |db, now| checkpoint(db, &lease, &progress, now))
    }

    /// Ends the run as failed (fenced). Scan runs are not retried in place: a later request
    /// makes a new run.
    pub fn fail_scan(&self, lease: &Lease, error: &str) -> Result<(), StoreError> {
        self.finish_scan(lease, RunState::Failed, Some(error.to_string()))
    }

    /// Ends the run failed for a cause that passes by itself (a full disk), with a
    /// successor that waits `PAUSED_RETRY` and keeps the run's scope, trigger and request
    /// time (fenced, one transaction): the scan carries on by itself once space is freed,
    /// and what the failed attempt indexed stays.
    pub fn pause_scan(&self, lease: &Lease, error: &str) -> Result<(), StoreError> {
        let (lease, error) = (lease.clone(), error.to_string());
        self.write(move |db, now| {
            let retry_at = |_: &ScanRun| now + super::PAUSED_RETRY;
            fail_with_successor(db, &lease, error.clone(), retry_at, now)
        })
    }

    /// Ends the run failed for a transient cause (the database locked, the library gone
    /// offline mid-scan), with a successor that waits the policy's backoff for the run's
    /// attempt and keeps its scope, trigger and request time (fenced, one transaction): the
    /// failed attempt is history the user sees with its reason, and the scan carries on by
    /// itself. There is no attempt limit (unlike a lost lease, which may be a run that kills
    /// its process): each retry waits longer, up to the policy's cap.
    pub fn retry_scan(&self, lease: &Lease, error: &str) -> Result<(), StoreError> {
        let (lease, error) = (lease.clone(), error.to_string());
        let policy = self.inner.policy.clone();
        self.write(move |db, now| {
            let retry_at = |run: &ScanRun| now + backoff(&policy, run.attempt - 1);
            fail_with_successor(db, &lease, error.clone(), retry_at, now)
        })
    }

    fn finish_scan(
        &self,
        lease: &Lease,
        state: RunState,
        reason: Option<String>,
    ) -> Result<(), StoreError> {
        let lease = lease.clone();
        self.write(move |db, now| {
            let n = end(db, &lease, (state, reason.clone()), now)?;
            expect_one(&lease, n)
        })
    }

    /// Cancels the library's waiting and running runs in one write, serialised with reclaim
    /// by the writer: a successor reclaim created just before is cancelled too, and a
    /// reclaim just after finds nothing running. Returns what it cancelled, by id.
    pub fn cancel_scans(&self, library_id: i64) -> Result<Vec<ScanRun>, StoreError> {
        self.write(move |db, now| cancel_library(db, library_id, now))
    }

    /// Cancels run `id` the same way, in one write: its library's waiting and running runs,
    /// if the run or a successor reclaim made of it still waits or runs. Empty when its work
    /// had ended (or there is no such run).
    pub fn cancel_scan_run(&self, id: i64) -> Result<Vec<ScanRun>, StoreError> {
        self.write(move |db, now| cancel_run(db, id, now))
    }

    /// How many runs are in each state (states with none are left out).
    pub fn scan_run_counts(&self) -> Result<Vec<(RunState, i64)>, StoreError> {
        self.read(counts)
    }

    pub fn scan_run(&self, id: i64) -> Result<Option<ScanRun>, StoreError> {
        self.read(|db| get(db, id))
    }

    /// Run history, newest first, for one library or all.
    pub fn scan_runs(
        &self,
        library_id: Option<i64>,
        limit: i64,
    ) -> Result<Vec<ScanRun>, StoreError> {
        self.read(|db| list(db, library_id, limit))
    }

    /// A run's provenance counts, reasons with none left out.
    pub fn run_reasons(&self, run_id: i64) -> Result<Vec<(Provenance, i64)>, StoreError> {
        self.read(|db| reasons(db, run_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::db::tests::on_both_schemas;
    use crate::store::lease::fixtures;

    const ME: (&str, &str) = ("me", "host");

    fn scan(scope: &str) -> ScanRequest {
        ScanRequest {
            library_id: 1,
            scope: scope.into(),
            trigger: Trigger::Manual,
            watch_event: None,
        }
    }

    fn keyed(key: &str) -> AdmissionOptions {
        AdmissionOptions {
            idempotency_key: Some(key.into()),
            ..AdmissionOptions::default()
        }
    }

    /// Library 1, seen by this host.
    fn seen_library(db: &Db<'_>) -> Result<(), StoreError> {
        fixtures::library(db, 1)?;
        db.execute(
            "INSERT INTO library_roots (library_id, host, root) VALUES (1, 'host', '/l')",
            args!(),
        )?;
        Ok(())
    }

    fn admission_coalesces_replays_and_limits(db: &Db<'_>) -> Result<(), StoreError> {
        assert!(matches!(
            request(db, &scan(""), &AdmissionOptions::default(), 10),
            Err(StoreError::NotFound(_))
        ));
        seen_library(db)?;
        let (first, how) = request(db, &scan("a/b"), &keyed("k"), 10)?;
        assert_eq!(
            (how, first.state, first.forced),
            (Admission::Accepted, RunState::Accepted, false)
        );
        let forced = AdmissionOptions {
            forced: true,
            ..AdmissionOptions::default()
        };
        let (widened, how) = request(db, &scan("a/c"), &forced, 20)?;
        assert_eq!((how, widened.id), (Admission::Coalesced, first.id));
        assert_eq!(
            (widened.scope.as_str(), widened.forced, widened.requested_at),
            ("a", true, 10)
        );
        let (replayed, how) = request(db, &scan("a/b"), &keyed("k"), 30)?;
        assert_eq!((how, replayed.id), (Admission::Replayed, first.id));
        assert!(matches!(
            request(db, &scan("x"), &keyed("k"), 30),
            Err(StoreError::Conflict(_))
        ));
        cancel_library(db, 1, 40)?;
        let limited = AdmissionOptions {
            hourly_limit: Some(1),
            ..AdmissionOptions::default()
        };
        assert!(matches!(
            request(db, &scan(""), &limited, 50),
            Err(StoreError::RateLimited { retry_after_ms, .. }) if retry_after_ms == HOUR - 40
        ));
        assert_eq!(counts(db)?, vec![(RunState::Cancelled, 1)]);
        assert_eq!(list(db, None, 5)?.len(), 1);
        assert_eq!(list(db, Some(2), 5)?.len(), 0);
        Ok(())
    }

    fn claimed(db: &Db<'_>, now: Millis) -> Result<(ScanRun, Lease), StoreError> {
        let run = claim(db, ME, (now, 100))?.expect("a due run");
        let lease = run_lease(&run, "me".into(), now + 100);
        Ok((run, lease))
    }

    fn fenced_writes_refuse_a_stale_lease(db: &Db<'_>) -> Result<(), StoreError> {
        seen_library(db)?;
        fixtures::library(db, 2)?;
        request(db, &scan(""), &AdmissionOptions::default(), 10)?;
        assert!(
            claim(db, ("other", "elsewhere"), (10, 100))?.is_none(),
            "not its library"
        );
        let (run, lease) = claimed(db, 10)?;
        assert_eq!(
            (run.state, run.generation, run.lease_expires_at),
            (RunState::Running, 1, Some(110))
        );
        request(db, &scan(""), &AdmissionOptions::default(), 11)?;
        assert!(
            claim(db, ME, (11, 100))?.is_none(),
            "one running run per library"
        );
        let stale = Lease {
            generation: 0,
            ..lease.clone()
        };
        let lost = |e: &StoreError| matches!(e, StoreError::LeaseLost { .. });
        assert!(renew(db, &stale, 20, 100).is_err_and(|e| lost(&e)));
        assert!(checkpoint(db, &stale, "p", 20).is_err_and(|e| lost(&e)));
        assert!(fence_data(db, &stale, 1, None, 20).is_err_and(|e| lost(&e)));
        assert!(
            fence_data(db, &lease, 1, None, 110).is_err_and(|e| lost(&e)),
            "expired"
        );
        assert!(release(db, &stale, 20).is_err_and(|e| lost(&e)));
        assert_eq!(end(db, &stale, (RunState::Completed, None), 20)?, 0);
        assert_eq!(renew(db, &lease, 20, 100)?, 120);
        checkpoint(db, &lease, "half", 21)?;
        assert_eq!(fence_data(db, &lease, 1, None, 22)?, "");
        assert!(matches!(
            fence_data(db, &lease, 2, Some("p"), 22),
            Err(StoreError::Conflict(_))
        ));
        let counts = BTreeMap::from([("new", 2), ("size", 0)]);
        count_reasons(db, run.id, &counts)?;
        count_reasons(db, run.id, &counts)?;
        assert_eq!(reasons(db, run.id)?, vec![(Provenance::New, 4)]);
        assert_eq!(end(db, &lease, (RunState::Completed, None), 30)?, 1);
        assert_eq!(get(db, run.id)?.map(|r| r.state), Some(RunState::Completed));
        Ok(())
    }

    fn leases_end_into_successors(db: &Db<'_>) -> Result<(), StoreError> {
        let policy = LeasePolicy::default();
        seen_library(db)?;
        request(db, &scan("a"), &AdmissionOptions::default(), 10)?;
        let (run, lease) = claimed(db, 10)?;
        release(db, &lease, 20)?;
        let back = get(db, run.id)?.expect("the run");
        assert_eq!((back.state, back.generation), (RunState::Accepted, 2));
        assert!(release_unowned(db, run.id, 21)?);
        let (run, _) = claimed(db, 30)?;
        let mut report = ReclaimReport::default();
        reclaim(db, 129, &policy, &mut report)?;
        assert_eq!(report.runs_retired, 0);
        reclaim(db, 130, &policy, &mut report)?;
        assert_eq!((report.runs_retired, report.run_successors), (1, 1));
        let retired = get(db, run.id)?.expect("the run");
        assert_eq!(
            (retired.state, retired.reason.as_deref()),
            (RunState::Failed, Some("lease_expired"))
        );
        let next = waiting(db, 1)?.expect("its successor");
        assert_eq!(
            (next.predecessor_id, next.attempt, next.scope.as_str()),
            (Some(run.id), 2, "a")
        );
        assert_eq!(next.run_at, 130 + 2_000);
        // The retired run's work is its successor's: cancelling the retired run cancels it.
        let cancelled: Vec<i64> = cancel_run(db, run.id, 140)?.iter().map(|r| r.id).collect();
        assert_eq!(cancelled, vec![next.id]);
        assert!(!cancel(db, run.id, 150)?, "nothing of its work is left");
        assert!(!release_unowned(db, run.id, 150)?);
        assert_eq!(prune(db, 1_000)?, 1, "the newest finished run is kept");
        assert!(get(db, run.id)?.is_none());
        Ok(())
    }

    on_both_schemas!(
        admission_coalesces_replays_and_limits,
        fenced_writes_refuse_a_stale_lease,
        leases_end_into_successors,
    );
}
