//! The `jobs` table: enqueue (unique by a partial index), claim, and the fenced worker
//! writes (a deferral for a full disk and a transient failure's retry spend no attempt; the
//! retry counter they bump is `job_ends`'), plus
//! the operator paths (release, cancel) and reclaim of expired leases. A claim
//! leaves a walk chain of a higher scheme to the newer binary walking it while that binary
//! holds a lease (DESIGN.md section 7, mixed versions).

use super::lease::{expect_one, lost};
use super::{LeasePolicy, Store, StoreError, backoff, parse_col};
use crate::model::{Job, JobFilter, JobState, Lease, Millis, NewJob, ReclaimReport, Target};
use rusqlite::{Connection, OptionalExtension, Row, params};

macro_rules! job_cols {
    () => {
        "id, kind, unique_key, payload, state, generation, attempts, max_attempts, run_at, \
         lease_owner, lease_expires_at, checkpoint, last_error, created_at, updated_at, \
         finished_at, heartbeat_at"
    };
}

fn job_from_row(r: &Row<'_>) -> rusqlite::Result<Job> {
    Ok(Job {
        id: r.get(0)?,
        kind: r.get(1)?,
        unique_key: r.get(2)?,
        payload: r.get(3)?,
        state: parse_col(r, 4, JobState::parse)?,
        generation: r.get(5)?,
        attempts: r.get(6)?,
        max_attempts: r.get(7)?,
        run_at: r.get(8)?,
        lease_owner: r.get(9)?,
        lease_expires_at: r.get(10)?,
        checkpoint: r.get(11)?,
        last_error: r.get(12)?,
        created_at: r.get(13)?,
        updated_at: r.get(14)?,
        finished_at: r.get(15)?,
        heartbeat_at: r.get(16)?,
    })
}

/// The answer of an enqueue: the live row for the key, and whether this call created it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Enqueued {
    pub id: i64,
    pub created: bool,
}

const INSERT: &str = "
    INSERT INTO jobs (kind, unique_key, payload, max_attempts, run_at, created_at, updated_at)
    VALUES (?1, ?2, ?3, ?4, ?5 + ?6, ?5, ?5)
    ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND state IN ('queued', 'running')
    DO NOTHING
    RETURNING id";
const LIVE_BY_KEY: &str =
    "SELECT id FROM jobs WHERE unique_key = ?1 AND state IN ('queued', 'running')";
/// A queued row made due now (`Store::enqueue_now`).
const DUE_NOW: &str = "UPDATE jobs SET run_at = min(run_at, ?2) WHERE id = ?1 AND state = 'queued'";

const RENEW: &str = fenced!(
    "UPDATE jobs SET lease_expires_at = ?3 + ?4, heartbeat_at = ?3, updated_at = ?3",
    "RETURNING lease_expires_at"
);

/// A field of a walk chain row's payload (`scheme`: the scheme it walks; `by`: the process
/// that enqueued it); NULL when the payload names none or is unreadable.
macro_rules! payload_field {
    ($row:literal, $field:literal) => {
        concat!(
            "(CASE WHEN json_valid(",
            $row,
            ".payload) THEN json_extract(",
            $row,
            ".payload, '$.",
            $field,
            "') END)"
        )
    };
}

/// Whether the process `$owner` holds a lease that is live at `$now` (any running row).
macro_rules! holds_live_lease {
    ($owner:expr, $now:literal) => {
        concat!(
            "(EXISTS (SELECT 1 FROM jobs h WHERE h.state = 'running' AND h.lease_expires_at > ",
            $now,
            " AND h.lease_owner = ",
            $owner,
            ") OR EXISTS (SELECT 1 FROM scan_runs h \
             WHERE h.state = 'running' AND h.lease_expires_at > ",
            $now,
            " AND h.lease_owner = ",
            $owner,
            "))"
        )
    };
}

/// `?4` is a JSON array of `JobFilter`s. A filter with a `max_scheme` (a walk) leaves a
/// chain row of a higher scheme to the newer binary walking it: such a row is taken only
/// once it has been due for a whole lease period (`?3`, the hand-off: the newer binary just
/// committed the batch before it) and the process that enqueued it holds no live lease. A
/// row running under a live lease is never due; one whose lease died is requeued by reclaim.
/// A host (?5) takes only work on libraries it sees (has a root for): a move, when it sees
/// every library holding a file of its asset or an intent of it; a walk, when it sees every
/// library (a batch reads any asset's files).
const CLAIM: &str = concat!(
    "UPDATE jobs SET state = 'running', generation = generation + 1, lease_owner = ?1,
            lease_expires_at = ?2 + ?3, heartbeat_at = ?2, updated_at = ?2
      WHERE id = (SELECT j.id FROM jobs j JOIN json_each(?4) f
                      ON j.kind = json_extract(f.value, '$.kind')
                   WHERE j.state = 'queued' AND j.run_at <= ?2
                     AND (json_extract(f.value, '$.max_scheme') IS NULL
                          OR coalesce(",
    payload_field!("j", "scheme"),
    ", 0) <= json_extract(f.value, '$.max_scheme')
                          OR (j.run_at + ?3 <= ?2 AND NOT ",
    holds_live_lease!(payload_field!("j", "by"), "?2"),
    "))
                     AND NOT EXISTS (SELECT 1 FROM libraries l
                          WHERE NOT EXISTS (SELECT 1 FROM library_roots h
                                             WHERE h.library_id = l.id AND h.host = ?5)
                            AND CASE WHEN j.kind = 'move' THEN l.id IN (
                                         SELECT library_id FROM files
                                          WHERE asset_id = json_extract(j.payload, '$.asset')
                                         UNION ALL
                                         SELECT library_id FROM trash_intents
                                          WHERE move_id = json_extract(j.payload, '$.move'))
                                     ELSE json_extract(f.value, '$.max_scheme') IS NOT NULL
                                END)
                   ORDER BY j.run_at, j.id LIMIT 1)
      RETURNING ",
    job_cols!()
);
/// The newest chain row of kind `?1` walking another scheme than `?2` (a higher one when
/// `?3`) whose walker is live at `?4`: it runs under a live lease, or it was handed off less
/// than `?5` ago, or the process that enqueued it holds a live lease. Never this process
/// (`?6`). Returns the scheme and the walker.
const WALK_PEER: &str = concat!(
    "SELECT scheme, walker FROM (
        SELECT ",
    payload_field!("j", "scheme"),
    " AS scheme,
               CASE WHEN j.state = 'running' THEN j.lease_owner ELSE ",
    payload_field!("j", "by"),
    " END AS walker,
               j.state, j.lease_expires_at, j.run_at
          FROM jobs j
         WHERE j.kind = ?1 AND ",
    payload_field!("j", "scheme"),
    " <> ?2 AND (NOT ?3 OR ",
    payload_field!("j", "scheme"),
    " > ?2)
         ORDER BY j.id DESC LIMIT 1)
      WHERE walker IS NOT ?6
        AND ((state = 'running' AND lease_expires_at > ?4)
             OR (state = 'queued' AND run_at + ?5 > ?4)
             OR ",
    holds_live_lease!("walker", "?4"),
    ")"
);
const CHECKPOINT: &str = fenced!("UPDATE jobs SET checkpoint = ?4, updated_at = ?3");
const COMPLETE: &str = fenced!(
    "UPDATE jobs SET state = 'done', lease_owner = NULL, lease_expires_at = NULL,
                     finished_at = ?3, updated_at = ?3"
);
/// A failure uses up an attempt: requeued with exponential backoff, or `failed` for good.
const FAIL: &str = fenced!(
    "UPDATE jobs SET attempts = attempts + 1, generation = generation + 1,
        state = CASE WHEN attempts + 1 >= max_attempts THEN 'failed' ELSE 'queued' END,
        finished_at = CASE WHEN attempts + 1 >= max_attempts THEN ?3 END,
        run_at = ?3 + ?5, last_error = ?4, lease_owner = NULL, lease_expires_at = NULL,
        updated_at = ?3",
    "RETURNING state, attempts"
);
/// A transient failure: back to the queue after `?5` ms (the backoff of the row's earlier
/// transient retries), with its error, without spending an attempt.
const RETRY: &str = fenced!(
    "UPDATE jobs SET state = 'queued', generation = generation + 1, retries = retries + 1,
                     run_at = ?3 + ?5, last_error = ?4, lease_owner = NULL,
                     lease_expires_at = NULL, updated_at = ?3"
);
const RETRIES: &str = "SELECT retries FROM jobs WHERE id = ?1";
/// Back to the queue after `?5` ms, with its error, without spending an attempt.
const DEFER: &str = fenced!(
    "UPDATE jobs SET state = 'queued', generation = generation + 1, run_at = ?3 + ?5,
                     last_error = ?4, lease_owner = NULL, lease_expires_at = NULL,
                     updated_at = ?3"
);
const RELEASE: &str = fenced!(
    "UPDATE jobs SET state = 'queued', generation = generation + 1, lease_owner = NULL,
                     lease_expires_at = NULL, run_at = ?3, updated_at = ?3"
);
const RELEASE_UNOWNED: &str = "
    UPDATE jobs SET generation = generation + 1,
           run_at = CASE WHEN state = 'running' THEN ?2 ELSE run_at END,
           state = 'queued', lease_owner = NULL, lease_expires_at = NULL, updated_at = ?2
     WHERE id = ?1 AND state IN ('queued', 'running')";
const CANCEL: &str = "
    UPDATE jobs SET state = 'cancelled', generation = generation + 1, lease_owner = NULL,
           lease_expires_at = NULL, finished_at = ?2, updated_at = ?2
     WHERE id = ?1 AND state IN ('queued', 'running')";
const EXPIRED: &str =
    "SELECT id, attempts FROM jobs WHERE state = 'running' AND lease_expires_at <= ?1";
/// Reclaim of one expired job: the same bookkeeping as a failure, without a fence (the
/// lease is dead; the predicate re-checks expiry inside this transaction).
const REQUEUE_EXPIRED: &str = "
    UPDATE jobs SET attempts = attempts + 1, generation = generation + 1,
        state = CASE WHEN attempts + 1 >= max_attempts THEN 'failed' ELSE 'queued' END,
        finished_at = CASE WHEN attempts + 1 >= max_attempts THEN ?2 END,
        run_at = ?2 + ?3, last_error = 'lease expired (held by ' || lease_owner || ')',
        lease_owner = NULL, lease_expires_at = NULL, updated_at = ?2
     WHERE id = ?1 AND state = 'running' AND lease_expires_at <= ?2
     RETURNING state";
const PRUNE: &str =
    "DELETE FROM jobs WHERE state IN ('done', 'failed', 'cancelled') AND finished_at < ?1";
const GET: &str = concat!("SELECT ", job_cols!(), " FROM jobs WHERE id = ?1");
const LIVE_ROW_BY_KEY: &str = concat!(
    "SELECT ",
    job_cols!(),
    " FROM jobs WHERE unique_key = ?1 AND state IN ('queued', 'running')"
);
const COUNTS: &str = "SELECT state, count(*) FROM jobs GROUP BY state";
const LIST: &str = concat!(
    "SELECT ",
    job_cols!(),
    " FROM jobs ORDER BY id DESC LIMIT ?1"
);

pub(super) fn insert(conn: &Connection, job: &NewJob, now: Millis) -> Result<Enqueued, StoreError> {
    let created: Option<i64> = conn
        .prepare_cached(INSERT)?
        .query_row(
            params![
                job.kind,
                job.unique_key,
                job.payload,
                job.max_attempts,
                now,
                job.delay
            ],
            |r| r.get(0),
        )
        .optional()?;
    match created {
        Some(id) => Ok(Enqueued { id, created: true }),
        None => {
            let id = conn
                .prepare_cached(LIVE_BY_KEY)?
                .query_row([&job.unique_key], |r| r.get(0))?;
            Ok(Enqueued { id, created: false })
        }
    }
}

pub(super) fn release(conn: &Connection, lease: &Lease, now: Millis) -> Result<(), StoreError> {
    let n = conn
        .prepare_cached(RELEASE)?
        .execute(params![lease.id, lease.generation, now])?;
    expect_one(lease, n)
}

pub(super) fn release_unowned(conn: &Connection, id: i64, now: Millis) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached(RELEASE_UNOWNED)?
        .execute(params![id, now])?
        == 1)
}

pub(super) fn cancel(conn: &Connection, id: i64, now: Millis) -> Result<bool, StoreError> {
    Ok(conn.prepare_cached(CANCEL)?.execute(params![id, now])? == 1)
}

pub(super) fn reclaim(
    conn: &Connection,
    now: Millis,
    policy: &LeasePolicy,
) -> Result<ReclaimReport, StoreError> {
    let expired: Vec<(i64, i64)> = conn
        .prepare_cached(EXPIRED)?
        .query_map([now], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let mut report = ReclaimReport::default();
    let mut requeue = conn.prepare_cached(REQUEUE_EXPIRED)?;
    for (id, attempts) in expired {
        let state: String =
            requeue.query_row(params![id, now, backoff(policy, attempts)], |r| r.get(0))?;
        if state == JobState::Failed.as_str() {
            report.jobs_failed += 1;
        } else {
            report.jobs_requeued += 1;
        }
    }
    Ok(report)
}

/// The walker of another scheme live on chain rows of `kind` (see `WALK_PEER`).
pub(super) fn walk_peer(
    conn: &Connection,
    kind: &str,
    scheme: i64,
    higher_only: bool,
    (now, grace): (Millis, Millis),
    me: &str,
) -> Result<Option<(i64, String)>, StoreError> {
    Ok(conn
        .prepare_cached(WALK_PEER)?
        .query_row(params![kind, scheme, higher_only, now, grace, me], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?)
}

pub(super) fn prune(conn: &Connection, before: Millis) -> Result<u64, StoreError> {
    Ok(conn.prepare_cached(PRUNE)?.execute([before])? as u64)
}

pub(super) fn complete(conn: &Connection, lease: &Lease, now: Millis) -> Result<(), StoreError> {
    let n = conn
        .prepare_cached(COMPLETE)?
        .execute(params![lease.id, lease.generation, now])?;
    expect_one(lease, n)
}

/// Records a failed attempt (fenced): requeued after a backoff, or `failed` once the job
/// has used its attempts. Returns the state the job is left in.
pub(super) fn fail(
    conn: &Connection,
    lease: &Lease,
    error: &str,
    policy: &LeasePolicy,
    now: Millis,
) -> Result<JobState, StoreError> {
    let attempts: i64 = conn
        .prepare_cached(GET)?
        .query_row([lease.id], job_from_row)
        .optional()?
        .ok_or_else(|| lost(lease))?
        .attempts;
    let params = params![
        lease.id,
        lease.generation,
        now,
        error,
        backoff(policy, attempts)
    ];
    let (state, _attempts): (String, i64) = conn
        .prepare_cached(FAIL)?
        .query_row(params, |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?
        .ok_or_else(|| lost(lease))?;
    Ok(JobState::parse(&state).unwrap_or(JobState::Failed))
}

/// Records a transient failure (fenced): back to the queue without spending an attempt,
/// after the backoff of its transient retries so far.
pub(super) fn retry(
    conn: &Connection,
    lease: &Lease,
    error: &str,
    policy: &LeasePolicy,
    now: Millis,
) -> Result<(), StoreError> {
    let retries: i64 = conn
        .prepare_cached(RETRIES)?
        .query_row([lease.id], |r| r.get(0))
        .optional()?
        .ok_or_else(|| lost(lease))?;
    let n = conn.prepare_cached(RETRY)?.execute(params![
        lease.id,
        lease.generation,
        now,
        error,
        backoff(policy, retries)
    ])?;
    expect_one(lease, n)
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

fn job_lease(target_id: i64, generation: i64, owner: String, expires_at: Millis) -> Lease {
    Lease {
        target: Target::Job,
        id: target_id,
        generation,
        owner,
        expires_at,
    }
}

impl Store {
    /// Inserts a job. With a unique key, returns the live row for that key instead when one
    /// is queued or running (the partial unique index decides, not a prior read).
    pub fn enqueue(&self, job: NewJob) -> Result<Enqueued, StoreError> {
        self.write_lite(move |conn, now| insert(conn, &job, now))
    }

    /// `enqueue`, and when a row of the same key already waits (a delayed one, a retry's
    /// backoff), that row is made due now: a user's "do it now" on what a walk put off.
    pub fn enqueue_now(&self, job: NewJob) -> Result<Enqueued, StoreError> {
        self.write_lite(move |conn, now| {
            let enqueued = insert(conn, &job, now)?;
            if !enqueued.created {
                conn.prepare_cached(DUE_NOW)?
                    .execute(params![enqueued.id, now])?;
            }
            Ok(enqueued)
        })
    }

    /// `enqueue` with a unique key: at most one live job per key, across threads and
    /// processes.
    pub fn enqueue_unique(
        &self,
        kind: &str,
        unique_key: &str,
        payload: &str,
    ) -> Result<Enqueued, StoreError> {
        self.enqueue(NewJob::new(kind, payload).unique(unique_key))
    }

    /// Claims the oldest due job of one of `kinds` for `ttl` ms.
    pub fn claim_job(
        &self,
        kinds: &[&str],
        ttl: Millis,
    ) -> Result<Option<(Lease, Job)>, StoreError> {
        let filters: Vec<JobFilter> = kinds.iter().map(|k| JobFilter::new(*k, None)).collect();
        self.claim_jobs(&filters, ttl)
    }

    /// Claims the oldest due job that one of `filters` takes, for `ttl` ms.
    pub fn claim_jobs(
        &self,
        filters: &[JobFilter],
        ttl: Millis,
    ) -> Result<Option<(Lease, Job)>, StoreError> {
        let kinds =
            serde_json::to_string(filters).map_err(|e| StoreError::Conflict(e.to_string()))?;
        let (owner, host) = (self.owner().to_string(), self.host().to_string());
        self.write_lite(move |conn, now| {
            let job = conn
                .prepare_cached(CLAIM)?
                .query_row(params![owner, now, ttl, kinds, host], job_from_row)
                .optional()?;
            Ok(job.map(|job| {
                let expires = now + ttl;
                (job_lease(job.id, job.generation, owner, expires), job)
            }))
        })
    }

    /// Records a worker's progress on the job row (fenced).
    pub fn checkpoint_job(&self, lease: &Lease, checkpoint: &str) -> Result<(), StoreError> {
        let (lease, checkpoint) = (lease.clone(), checkpoint.to_string());
        self.write_lite(move |conn, now| {
            let n = conn.prepare_cached(CHECKPOINT)?.execute(params![
                lease.id,
                lease.generation,
                now,
                checkpoint
            ])?;
            expect_one(&lease, n)
        })
    }

    /// Marks the job done (fenced).
    pub fn complete_job(&self, lease: &Lease) -> Result<(), StoreError> {
        let lease = lease.clone();
        self.write_lite(move |conn, now| complete(conn, &lease, now))
    }

    /// Marks the job done and enqueues its follow-up in one fenced transaction: a chain
    /// advancing itself. Done comes first, so the follow-up may reuse the unique key.
    pub fn complete_job_and_enqueue(
        &self,
        lease: &Lease,
        next: NewJob,
    ) -> Result<Enqueued, StoreError> {
        let lease = lease.clone();
        self.write_lite(move |conn, now| {
            complete(conn, &lease, now)?;
            insert(conn, &next, now)
        })
    }

    /// Puts the job back to wait `PAUSED_RETRY` for a cause that passes by itself (a full
    /// disk), its error kept for the status (fenced). No attempt is spent: a job paused for
    /// days is still made once space is back.
    pub fn defer_job(&self, lease: &Lease, error: &str) -> Result<(), StoreError> {
        let (lease, error) = (lease.clone(), error.to_string());
        self.write_lite(move |conn, now| {
            let n = conn.prepare_cached(DEFER)?.execute(params![
                lease.id,
                lease.generation,
                now,
                error,
                super::PAUSED_RETRY
            ])?;
            expect_one(&lease, n)
        })
    }

    /// How many jobs are in each state (states with none are left out).
    pub fn job_counts(&self) -> Result<Vec<(JobState, i64)>, StoreError> {
        self.read_lite(|conn| {
            let mut stmt = conn.prepare_cached(COUNTS)?;
            let rows =
                stmt.query_map([], |r| Ok((parse_col(r, 0, JobState::parse)?, r.get(1)?)))?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }

    /// The queued or running job holding `unique_key`, if any.
    pub fn live_job(&self, unique_key: &str) -> Result<Option<Job>, StoreError> {
        self.read_lite(|conn| {
            Ok(conn
                .prepare_cached(LIVE_ROW_BY_KEY)?
                .query_row([unique_key], job_from_row)
                .optional()?)
        })
    }

    /// Cancels the live job of `unique_key` (if any) and enqueues `job` under that key, in
    /// one transaction: a holder of the old row writes nothing more, and the key never has
    /// two live rows. Returns the new row.
    pub fn replace_unique(&self, job: NewJob) -> Result<Enqueued, StoreError> {
        self.write_lite(move |conn, now| {
            let key = job.unique_key.clone().unwrap_or_default();
            let live: Option<i64> = conn
                .prepare_cached(LIVE_BY_KEY)?
                .query_row([&key], |r| r.get(0))
                .optional()?;
            if let Some(id) = live {
                cancel(conn, id, now)?;
            }
            insert(conn, &job, now)
        })
    }

    pub fn job(&self, id: i64) -> Result<Option<Job>, StoreError> {
        self.read_lite(|conn| {
            Ok(conn
                .prepare_cached(GET)?
                .query_row([id], job_from_row)
                .optional()?)
        })
    }

    /// The newest `limit` jobs, newest first.
    pub fn jobs(&self, limit: i64) -> Result<Vec<Job>, StoreError> {
        self.read_lite(|conn| {
            Ok(conn
                .prepare_cached(LIST)?
                .query_map([limit], job_from_row)?
                .collect::<Result<_, _>>()?)
        })
    }
}
