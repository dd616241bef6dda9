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

use super::lease::{expect_one, lost};
use super::{LeasePolicy, Store, StoreError, backoff, parse_col};
use crate::model::{
    Lease, Millis, Provenance, ReclaimReport, RunState, ScanRequest, ScanRun, Target, Trigger,
    widen_scope,
};
use rusqlite::{Connection, OptionalExtension, Row, params};
use std::collections::BTreeMap;

macro_rules! run_cols {
    () => {
        "id, library_id, scope, trigger, watch_event, state, reason, generation, attempt, \
         run_at, lease_owner, lease_expires_at, progress, requested_at, accepted_at, \
         started_at, finished_at, updated_at, predecessor_id, forced"
    };
}

fn run_from_row(r: &Row<'_>) -> rusqlite::Result<ScanRun> {
    Ok(ScanRun {
        id: r.get(0)?,
        library_id: r.get(1)?,
        scope: r.get(2)?,
        trigger: parse_col(r, 3, Trigger::parse)?,
        watch_event: r.get(4)?,
        state: parse_col(r, 5, RunState::parse)?,
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
    " FROM scan_runs WHERE ?1 IS NULL OR library_id = ?1 ORDER BY id DESC LIMIT ?2"
);
const INSERT: &str = concat!(
    "INSERT INTO scan_runs (library_id, scope, trigger, watch_event, state, attempt, run_at,
                            requested_at, accepted_at, updated_at, predecessor_id, forced)
     VALUES (?1, ?2, ?3, ?4, 'accepted', ?5, ?6, ?7, ?8, ?8, ?9, ?10)
     RETURNING ",
    run_cols!()
);
const WIDEN: &str = concat!(
    "UPDATE scan_runs SET scope = ?2, requested_at = min(requested_at, ?3),
            predecessor_id = coalesce(predecessor_id, ?4), attempt = max(attempt, ?5),
            updated_at = ?6, run_at = min(run_at, ?7), forced = max(forced, ?8)
      WHERE id = ?1 RETURNING ",
    run_cols!()
);
const LIBRARY_EXISTS: &str = "SELECT 1 FROM libraries WHERE id = ?1";
/// The oldest due waiting run of a library that has nothing running and that this host
/// (?4) sees (has a root for): another host's library is left to that host.
const CLAIM: &str = concat!(
    "UPDATE scan_runs SET state = 'running', generation = generation + 1, lease_owner = ?1,
            lease_expires_at = ?2 + ?3, heartbeat_at = ?2, started_at = ?2, updated_at = ?2
      WHERE id = (SELECT a.id FROM scan_runs a
                   WHERE a.state = 'accepted' AND a.run_at <= ?2
                     AND EXISTS (SELECT 1 FROM library_roots h
                                  WHERE h.library_id = a.library_id AND h.host = ?4)
                     AND NOT EXISTS (SELECT 1 FROM scan_runs r
                                      WHERE r.library_id = a.library_id AND r.state = 'running')
                   ORDER BY a.run_at, a.id LIMIT 1)
      RETURNING ",
    run_cols!()
);
/// The fence that opens every scan data write: the run is ours, running and unexpired. It
/// records the progress (when given) and answers the run's library and scope.
const FENCE: &str = fenced!(
    "UPDATE scan_runs SET progress = coalesce(?4, progress), updated_at = ?3",
    "RETURNING library_id, scope"
);

const COUNT_REASON: &str = "
    INSERT INTO scan_run_reasons (run_id, reason, count) VALUES (?1, ?2, ?3)
    ON CONFLICT (run_id, reason) DO UPDATE SET count = count + excluded.count";

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
        SELECT ?1
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

pub(super) fn get(conn: &Connection, id: i64) -> Result<Option<ScanRun>, StoreError> {
    Ok(conn
        .prepare_cached(GET)?
        .query_row([id], run_from_row)
        .optional()?)
}

fn waiting(conn: &Connection, library_id: i64) -> Result<Option<ScanRun>, StoreError> {
    Ok(conn
        .prepare_cached(WAITING)?
        .query_row([library_id], run_from_row)
        .optional()?)
}

fn end_unfenced(
    conn: &Connection,
    id: i64,
    state: RunState,
    reason: &str,
    now: Millis,
) -> Result<bool, StoreError> {
    let n = conn
        .prepare_cached(END_UNFENCED)?
        .execute(params![id, state.as_str(), reason, now])?;
    Ok(n == 1)
}

/// Folds `pred`'s work into the library's waiting run: scope widened, the earliest request
/// time kept, `pred` named as predecessor.
fn fold_into(
    conn: &Connection,
    waiting: &ScanRun,
    pred: &ScanRun,
    attempt: i64,
    now: Millis,
) -> Result<ScanRun, StoreError> {
    let scope = widen_scope(&waiting.scope, &pred.scope);
    Ok(conn.prepare_cached(WIDEN)?.query_row(
        params![
            waiting.id,
            scope,
            pred.requested_at,
            pred.id,
            attempt,
            now,
            waiting.run_at,
            pred.forced
        ],
        run_from_row,
    )?)
}

/// Creates the successor of a retired run (or folds it into the run already waiting): same
/// scope, trigger, watch event and original request time; a new id.
fn successor(
    conn: &Connection,
    pred: &ScanRun,
    run_at: Millis,
    now: Millis,
) -> Result<ScanRun, StoreError> {
    let attempt = pred.attempt + 1;
    if let Some(w) = waiting(conn, pred.library_id)? {
        return fold_into(conn, &w, pred, attempt, now);
    }
    Ok(conn.prepare_cached(INSERT)?.query_row(
        params![
            pred.library_id,
            pred.scope,
            pred.trigger.as_str(),
            pred.watch_event,
            attempt,
            run_at,
            pred.requested_at,
            now,
            pred.id,
            pred.forced
        ],
        run_from_row,
    )?)
}

/// Hands a running run back: it waits again under a new generation, or, when the library
/// already has a waiting run, it ends `interrupted` and that run absorbs its scope.
fn put_back(conn: &Connection, run: &ScanRun, reason: &str, now: Millis) -> Result<(), StoreError> {
    match waiting(conn, run.library_id)? {
        None => {
            conn.prepare_cached(BACK_TO_WAITING)?
                .execute(params![run.id, now])?;
        }
        Some(w) => {
            end_unfenced(conn, run.id, RunState::Interrupted, reason, now)?;
            fold_into(conn, &w, run, w.attempt, now)?;
        }
    }
    Ok(())
}

pub(super) fn release(conn: &Connection, lease: &Lease, now: Millis) -> Result<(), StoreError> {
    // The fence first: a stale holder must not hand back somebody else's run.
    let n = conn
        .prepare_cached(CHECKPOINT_FENCE_ONLY)?
        .execute(params![lease.id, lease.generation, now])?;
    expect_one(lease, n)?;
    let run = get(conn, lease.id)?.ok_or_else(|| lost(lease))?;
    put_back(conn, &run, "released", now)
}
const CHECKPOINT_FENCE_ONLY: &str = fenced!("UPDATE scan_runs SET updated_at = ?3");

pub(super) fn release_unowned(conn: &Connection, id: i64, now: Millis) -> Result<bool, StoreError> {
    match get(conn, id)? {
        Some(run) if run.state == RunState::Running => {
            put_back(conn, &run, "force_released", now)?;
            Ok(true)
        }
        Some(run) if run.state == RunState::Accepted => {
            conn.prepare_cached(BUMP_WAITING)?
                .execute(params![id, now])?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

pub(super) fn cancel(conn: &Connection, id: i64, now: Millis) -> Result<bool, StoreError> {
    Ok(!cancel_run(conn, id, now)?.is_empty())
}

/// Cancels a library's waiting and running runs; returns them, cancelled.
fn cancel_library(
    conn: &Connection,
    library_id: i64,
    now: Millis,
) -> Result<Vec<ScanRun>, StoreError> {
    let mut runs: Vec<ScanRun> = conn
        .prepare_cached(CANCEL_LIBRARY)?
        .query_map(params![library_id, now], run_from_row)?
        .collect::<Result<_, _>>()?;
    runs.sort_by_key(|r| r.id);
    Ok(runs)
}

/// Cancelling a run cancels its library's scans while the run's work is still to do: the
/// run waits or runs, or reclaim retired it and its successor does. A run that ended any
/// other way cancels nothing (empty).
fn cancel_run(conn: &Connection, id: i64, now: Millis) -> Result<Vec<ScanRun>, StoreError> {
    let Some(run) = get(conn, id)? else {
        return Ok(Vec::new());
    };
    let live: bool = conn
        .prepare_cached(CHAIN_LIVE)?
        .query_row([id], |r| r.get(0))?;
    if !live {
        return Ok(Vec::new());
    }
    cancel_library(conn, run.library_id, now)
}

pub(super) fn reclaim(
    conn: &Connection,
    now: Millis,
    policy: &LeasePolicy,
    report: &mut ReclaimReport,
) -> Result<(), StoreError> {
    let expired: Vec<ScanRun> = conn
        .prepare_cached(EXPIRED)?
        .query_map([now], run_from_row)?
        .collect::<Result<_, _>>()?;
    for run in expired {
        end_unfenced(conn, run.id, RunState::Failed, "lease_expired", now)?;
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
        successor(conn, &run, retry_at, now)?;
        report.run_successors += 1;
    }
    Ok(())
}

/// The fenced end of a run: how many rows matched (0 = the lease is stale). What a
/// completion brings besides is `run_end::finish`'s.
pub(super) fn end(
    conn: &Connection,
    lease: &Lease,
    (state, reason): (RunState, Option<String>),
    now: Millis,
) -> Result<usize, StoreError> {
    Ok(conn.prepare_cached(FINISH)?.execute(params![
        lease.id,
        lease.generation,
        now,
        state.as_str(),
        reason
    ])?)
}

/// The heartbeat: extends the lease by `ttl` from `now` (fenced). Answers the new expiry.
pub(super) fn renew(
    conn: &Connection,
    lease: &Lease,
    now: Millis,
    ttl: Millis,
) -> Result<Millis, StoreError> {
    conn.prepare_cached(RENEW)?
        .query_row(params![lease.id, lease.generation, now, ttl], |r| r.get(0))
        .optional()?
        .ok_or_else(|| lost(lease))
}

pub(super) fn prune(conn: &Connection, before: Millis) -> Result<u64, StoreError> {
    Ok(conn.prepare_cached(PRUNE)?.execute([before])? as u64)
}

/// The original run of an idempotency key, if the key was seen with this same request.
fn replay(conn: &Connection, key: &str, req: &ScanRequest) -> Result<Option<ScanRun>, StoreError> {
    let seen: Option<(i64, String, String, i64)> = conn
        .prepare_cached(KEY_GET)?
        .query_row([key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .optional()?;
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
    get(conn, run_id)?
        .map(Some)
        .ok_or_else(|| StoreError::NotFound(format!("scan run {run_id} is gone")))
}

/// Refuses a new run when the library already had `limit` runs accepted in the last hour.
fn check_hourly_limit(
    conn: &Connection,
    library_id: i64,
    limit: u32,
    now: Millis,
) -> Result<(), StoreError> {
    let (count, oldest): (i64, Option<Millis>) = conn
        .prepare_cached(RECENT_RUNS)?
        .query_row(params![library_id, now - HOUR], |r| {
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
    conn: &Connection,
    req: &ScanRequest,
    options: &AdmissionOptions,
    now: Millis,
) -> Result<(ScanRun, Admission), StoreError> {
    let exists = conn
        .prepare_cached(LIBRARY_EXISTS)?
        .query_row([req.library_id], |_| Ok(()))
        .optional()?;
    if exists.is_none() {
        return Err(StoreError::NotFound(format!(
            "no library with id {}",
            req.library_id
        )));
    }
    if let Some(w) = waiting(conn, req.library_id)? {
        let scope = widen_scope(&w.scope, &req.scope);
        let run = conn.prepare_cached(WIDEN)?.query_row(
            // A fresh request makes a retry that is backing off due at once.
            params![
                w.id,
                scope,
                w.requested_at,
                None::<i64>,
                w.attempt,
                now,
                now,
                options.forced
            ],
            run_from_row,
        )?;
        return Ok((run, Admission::Coalesced));
    }
    if let Some(limit) = options.hourly_limit {
        check_hourly_limit(conn, req.library_id, limit, now)?;
    }
    let run = conn.prepare_cached(INSERT)?.query_row(
        params![
            req.library_id,
            req.scope,
            req.trigger.as_str(),
            req.watch_event,
            1,
            now,
            now,
            now,
            None::<i64>,
            options.forced
        ],
        run_from_row,
    )?;
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

pub(super) fn count_reasons(
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
        self.write_lite(move |conn, now| {
            if let Some(key) = &options.idempotency_key
                && let Some(run) = replay(conn, key, &req)?
            {
                return Ok((run, Admission::Replayed));
            }
            let (run, admission) = admit(conn, &req, &options, now)?;
            if let Some(key) = &options.idempotency_key {
                conn.prepare_cached(KEY_PUT)?.execute(params![
                    key,
                    req.library_id,
                    req.scope,
                    req.trigger.as_str(),
                    run.id,
                    now
                ])?;
            }
            Ok((run, admission))
        })
    }

    /// Claims the oldest due waiting run of a librar    /// Claims the oldest due waiting run of a library with nothing running, for `ttl` ms.
    pub fn claim_scan_run(&self, ttl: Millis) -> Result<Option<(Lease, ScanRun)>, StoreError> {
        let (owner, host) = (self.owner().to_string(), self.host().to_string());
        self.write_lite(move |conn, now| {
            let run = conn
                .prepare_cached(CLAIM)?
                .query_row(params![owner, now, ttl, host], run_from_row)
                .optional()?;
            Ok(run.map(|run| (run_lease(&run, owner, now + ttl), run)))
        })
    }

    /// Records the run's progress (fenced).
    pub fn checkpoint_scan(&self, lease: &Lease, progress: &str) -> Result<(), StoreError> {
        let (lease, progress) = (lease.clone(), progress.to_string());
        self.write_lite(move |conn, now| {
            let n = conn.prepare_cached(CHECKPOINT)?.execute(params![
                lease.id,
                lease.generation,
                now,
                progress
            ])?;
            expect_one(&lease, n)
        })
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
        self.write_lite(move |conn, now| {
            let n = end(conn, &lease, (RunState::Failed, Some(error)), now)?;
            expect_one(&lease, n)?;
            let run = get(conn, lease.id)?.ok_or_else(|| lost(&lease))?;
            successor(conn, &run, now + super::PAUSED_RETRY, now)?;
            Ok(())
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
        self.write_lite(move |conn, now| {
            let n = end(conn, &lease, (RunState::Failed, Some(error)), now)?;
            expect_one(&lease, n)?;
            let run = get(conn, lease.id)?.ok_or_else(|| lost(&lease))?;
            successor(conn, &run, now + backoff(&policy, run.attempt - 1), now)?;
            Ok(())
        })
    }

    fn finish_scan(
        &self,
        lease: &Lease,
        state: RunState,
        reason: Option<String>,
    ) -> Result<(), StoreError> {
        let lease = lease.clone();
        self.write_lite(move |conn, now| {
            let n = end(conn, &lease, (state, reason), now)?;
            expect_one(&lease, n)
        })
    }

    /// Cancels the library's waiting and running runs in one write, serialised with reclaim
    /// by the writer: a successor reclaim created just before is cancelled too, and a
    /// reclaim just after finds nothing running. Returns what it cancelled, by id.
    pub fn cancel_scans(&self, library_id: i64) -> Result<Vec<ScanRun>, StoreError> {
        self.write_lite(move |conn, now| cancel_library(conn, library_id, now))
    }

    /// Cancels run `id` the same way, in one write: its library's waiting and running runs,
    /// if the run or a successor reclaim made of it still waits or runs. Empty when its work
    /// had ended (or there is no such run).
    pub fn cancel_scan_run(&self, id: i64) -> Result<Vec<ScanRun>, StoreError> {
        self.write_lite(move |conn, now| cancel_run(conn, id, now))
    }

    /// How many runs are in each state (states with none are left out).
    pub fn scan_run_counts(&self) -> Result<Vec<(RunState, i64)>, StoreError> {
        self.read_lite(|conn| {
            let mut stmt = conn.prepare_cached(COUNTS)?;
            let rows =
                stmt.query_map([], |r| Ok((parse_col(r, 0, RunState::parse)?, r.get(1)?)))?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }

    pub fn scan_run(&self, id: i64) -> Result<Option<ScanRun>, StoreError> {
        self.read_lite(|conn| get(conn, id))
    }

    /// Run history, newest first, for one library or all.
    pub fn scan_runs(
        &self,
        library_id: Option<i64>,
        limit: i64,
    ) -> Result<Vec<ScanRun>, StoreError> {
        self.read_lite(|conn| {
            Ok(conn
                .prepare_cached(LIST)?
                .query_map(params![library_id, limit], run_from_row)?
                .collect::<Result<_, _>>()?)
        })
    }

    /// A run's provenance counts, reasons with none left out.
    pub fn run_reasons(&self, run_id: i64) -> Result<Vec<(Provenance, i64)>, StoreError> {
        self.read_lite(|conn| {
            let mut stmt = conn.prepare_cached(REASONS)?;
            let rows = stmt.query_map([run_id], |r| {
                Ok((parse_col(r, 0, Provenance::parse)?, r.get(1)?))
            })?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }
}
