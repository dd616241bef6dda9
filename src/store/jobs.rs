//! The `jobs` table: enqueue (unique by a partial index), claim, and the fenced worker
//! writes (a deferral for a full disk and a transient failure's retry spend no attempt; the
//! retry counter they bump is `job_ends`'), plus
//! the operator paths (release, cancel) and reclaim of expired leases. A claim
//! leaves a walk chain of a higher scheme to the newer binary walking it while that binary
//! holds a lease (DESIGN.md section 7, mixed versions).

use super::db::{self, Db, Pair};
use super::lease::{expect_one, lost};
use super::{LeasePolicy, Store, StoreError, backoff, parse_at};
use crate::model::{Job, JobFilter, JobState, Lease, Millis, NewJob, ReclaimReport, Target};

macro_rules! job_cols {
    () => {
        "id, kind, unique_key, payload, state, generation, attempts, max_attempts, run_at, \
         lease_owner, lease_expires_at, checkpoint, last_error, created_at, updated_at, \
         finished_at, heartbeat_at"
    };
}

fn job_from_row(r: &db::Row<'_>) -> Result<Job, StoreError> {
    Ok(Job {
        id: r.get(0)?,
        kind: r.get(1)?,
        unique_key: r.get(2)?,
        payload: r.get(3)?,
        state: parse_at(r, 4, JobState::parse)?,
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

/// The casts tell PostgreSQL the sum's operands (it refuses `unknown + unknown`).
const INSERT: &str = "
    INSERT INTO jobs (kind, unique_key, payload, max_attempts, run_at, created_at, updated_at)
    VALUES (?1, ?2, ?3, ?4, CAST(?5 AS BIGINT) + CAST(?6 AS BIGINT), ?5, ?5)
    ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND state IN ('queued', 'running')
    DO NOTHING
    RETURNING id";
const LIVE_BY_KEY: &str =
    "SELECT id FROM jobs WHERE unique_key = ?1 AND state IN ('queued', 'running')";
/// A queued row made due now (`Store::enqueue_now`); a CASE, since the scalar `min` is
/// SQLite's alone.
const DUE_NOW: &str = "
    UPDATE jobs SET run_at = CASE WHEN run_at < ?2 THEN run_at ELSE ?2 END
     WHERE id = ?1 AND state = 'queued'";

const RENEW: &str = fenced!(
    "UPDATE jobs SET lease_expires_at = ?3 + ?4, heartbeat_at = ?3, updated_at = ?3",
    "RETURNING lease_expires_at"
);

/// A field of a walk chain row's payload (`scheme`: the scheme it walks; `by`: the process
/// that enqueued it); NULL when the payload names none or is unreadable. PostgreSQL 15 has
/// no `json_valid` and stops the statement at a payload that is no JSON: its twin
/// (`pg_payload_field`) reads only a payload that opens an object, which every walk row's
/// does (the program writes them); `$cast` is the field's type there.
macro_rules! pg_payload_field {
    ($row:literal, $field:literal, $cast:literal) => {
        concat!(
            "(CASE WHEN ",
            $row,
            ".payload LIKE '{%' THEN CAST(CAST(",
            $row,
            ".payload AS jsonb) ->> '",
            $field,
            "' AS ",
            $cast,
            ") END)"
        )
    };
}
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
///
/// The JSON is read with each engine's functions (`json_each` / `jsonb_array_elements`),
/// hence a `Pair`. On PostgreSQL several hosts claim at once: the subquery locks the row it
/// picks and skips one another claim holds (`FOR UPDATE OF j SKIP LOCKED`), so two claims
/// never take one row and a claim is not held up behind another's choice; a row another
/// claim committed meanwhile is re-read and left when it no longer waits.
const CLAIM: Pair = Pair {
    sqlite: concat!(
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
    ),
    postgres: concat!(
        "UPDATE jobs SET state = 'running', generation = generation + 1, lease_owner = ?1,
                lease_expires_at = ?2 + ?3, heartbeat_at = ?2, updated_at = ?2
          WHERE id = (SELECT j.id FROM jobs j
                        JOIN jsonb_array_elements(CAST(CAST(?4 AS TEXT) AS jsonb)) f (value)
                          ON j.kind = f.value ->> 'kind'
                       WHERE j.state = 'queued' AND j.run_at <= ?2
                         AND (f.value ->> 'max_scheme' IS NULL
                              OR coalesce(",
        pg_payload_field!("j", "scheme", "BIGINT"),
        ", 0) <= CAST(f.value ->> 'max_scheme' AS BIGINT)
                              OR (j.run_at + ?3 <= ?2 AND NOT ",
        holds_live_lease!(pg_payload_field!("j", "by", "TEXT"), "?2"),
        "))
                         AND NOT EXISTS (SELECT 1 FROM libraries l
                              WHERE NOT EXISTS (SELECT 1 FROM library_roots h
                                                 WHERE h.library_id = l.id AND h.host = ?5)
                                AND CASE WHEN j.kind = 'move' THEN l.id IN (
                                             SELECT library_id FROM files
                                              WHERE asset_id = CAST(CAST(j.payload AS jsonb)
                                                                    ->> 'asset' AS BIGINT)
                                             UNION ALL
                                             SELECT library_id FROM trash_intents
                                              WHERE move_id = CAST(CAST(j.payload AS jsonb)
                                                                   ->> 'move' AS BIGINT))
                                         ELSE f.value ->> 'max_scheme' IS NOT NULL
                                    END)
                       ORDER BY j.run_at, j.id LIMIT 1
                       FOR UPDATE OF j SKIP LOCKED)
          RETURNING ",
        job_cols!()
    ),
};
/// The newest chain row of kind `?1` walking another scheme than `?2` (a higher one when
/// `?3`) whose walker is live at `?4`: it runs under a live lease, or it was handed off less
/// than `?5` ago, or the process that enqueued it holds a live lease. Never this process
/// (`?6`). Returns the scheme and the walker.
///
/// A `Pair` for the payload's JSON; PostgreSQL's also compares the flag `?3` as the integer
/// it is bound as, and names its derived table.
const WALK_PEER: Pair = Pair {
    sqlite: concat!(
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
    ),
    postgres: concat!(
        "SELECT scheme, walker FROM (
            SELECT ",
        pg_payload_field!("j", "scheme", "BIGINT"),
        " AS scheme,
                   CASE WHEN j.state = 'running' THEN j.lease_owner ELSE ",
        pg_payload_field!("j", "by", "TEXT"),
        " END AS walker,
                   j.state, j.lease_expires_at, j.run_at
              FROM jobs j
             WHERE j.kind = ?1 AND ",
        pg_payload_field!("j", "scheme", "BIGINT"),
        " <> ?2 AND (?3 = 0 OR ",
        pg_payload_field!("j", "scheme", "BIGINT"),
        " > ?2)
             ORDER BY j.id DESC LIMIT 1) AS peer
          WHERE walker IS DISTINCT FROM ?6
            AND ((state = 'running' AND lease_expires_at > ?4)
                 OR (state = 'queued' AND run_at + ?5 > ?4)
                 OR ",
        holds_live_lease!("walker", "?4"),
        ")"
    ),
};
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

pub(super) fn insert(db: &Db<'_>, job: &NewJob, now: Millis) -> Result<Enqueued, StoreError> {
    let params = args!(
        job.kind.as_str(),
        job.unique_key.as_deref(),
        job.payload.as_str(),
        job.max_attempts,
        now,
        job.delay
    );
    match db.optional(INSERT, params, |r| r.get(0))? {
        Some(id) => Ok(Enqueued { id, created: true }),
        None => {
            let id = db.one(LIVE_BY_KEY, args!(job.unique_key.as_deref()), |r| r.get(0))?;
            Ok(Enqueued { id, created: false })
        }
    }
}

pub(super) fn release(db: &Db<'_>, lease: &Lease, now: Millis) -> Result<(), StoreError> {
    let n = db.execute(RELEASE, args!(lease.id, lease.generation, now))?;
    expect_one(lease, n)
}

pub(super) fn release_unowned(db: &Db<'_>, id: i64, now: Millis) -> Result<bool, StoreError> {
    Ok(db.execute(RELEASE_UNOWNED, args!(id, now))? == 1)
}

pub(super) fn cancel(db: &Db<'_>, id: i64, now: Millis) -> Result<bool, StoreError> {
    Ok(db.execute(CANCEL, args!(id, now))? == 1)
}

pub(super) fn reclaim(
    db: &Db<'_>,
    now: Millis,
    policy: &LeasePolicy,
) -> Result<ReclaimReport, StoreError> {
    let expired: Vec<(i64, i64)> = db.all(EXPIRED, args!(now), |r| Ok((r.get(0)?, r.get(1)?)))?;
    let mut report = ReclaimReport::default();
    for (id, attempts) in expired {
        let params = args!(id, now, backoff(policy, attempts));
        let state: String = db.one(REQUEUE_EXPIRED, params, |r| r.get(0))?;
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
    db: &Db<'_>,
    kind: &str,
    scheme: i64,
    higher_only: bool,
    (now, grace): (Millis, Millis),
    me: &str,
) -> Result<Option<(i64, String)>, StoreError> {
    let params = args!(kind, scheme, higher_only, now, grace, me);
    db.optional(db.pick(&WALK_PEER), params, |r| Ok((r.get(0)?, r.get(1)?)))
}

pub(super) fn prune(db: &Db<'_>, before: Millis) -> Result<u64, StoreError> {
    Ok(db.execute(PRUNE, args!(before))? as u64)
}

pub(super) fn complete(db: &Db<'_>, lease: &Lease, now: Millis) -> Result<(), StoreError> {
    let n = db.execute(COMPLETE, args!(lease.id, lease.generation, now))?;
    expect_one(lease, n)
}

/// Records a failed attempt (fenced): requeued after a backoff, or `failed` once the job
/// has used its attempts. Returns the state the job is left in.
pub(super) fn fail(
    db: &Db<'_>,
    lease: &Lease,
    error: &str,
    policy: &LeasePolicy,
    now: Millis,
) -> Result<JobState, StoreError> {
    let attempts: i64 = db
        .optional(GET, args!(lease.id), job_from_row)?
        .ok_or_else(|| lost(lease))?
        .attempts;
    let params = args!(
        lease.id,
        lease.generation,
        now,
        error,
        backoff(policy, attempts)
    );
    let (state, _attempts): (String, i64) = db
        .optional(FAIL, params, |r| Ok((r.get(0)?, r.get(1)?)))?
        .ok_or_else(|| lost(lease))?;
    Ok(JobState::parse(&state).unwrap_or(JobState::Failed))
}

/// Records a transient failure (fenced): back to the queue without spending an attempt,
/// after the backoff of its transient retries so far.
pub(super) fn retry(
    db: &Db<'_>,
    lease: &Lease,
    error: &str,
    policy: &LeasePolicy,
    now: Millis,
) -> Result<(), StoreError> {
    let retries: i64 = db
        .optional(RETRIES, args!(lease.id), |r| r.get(0))?
        .ok_or_else(|| lost(lease))?;
    let params = args!(
        lease.id,
        lease.generation,
        now,
        error,
        backoff(policy, retries)
    );
    let n = db.execute(RETRY, params)?;
    expect_one(lease, n)
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

/// Claims the oldest due job that one of `filters` (`kinds`, as JSON) takes, for `owner` on
/// `host`.
fn claim(
    db: &Db<'_>,
    (owner, host): (&str, &str),
    kinds: &str,
    (now, ttl): (Millis, Millis),
) -> Result<Option<Job>, StoreError> {
    db.optional(
        db.pick(&CLAIM),
        args!(owner, now, ttl, kinds, host),
        job_from_row,
    )
}

/// Records a worker's progress on the job row (fenced).
fn checkpoint(db: &Db<'_>, lease: &Lease, checkpoint: &str, now: Millis) -> Result<(), StoreError> {
    let n = db.execute(
        CHECKPOINT,
        args!(lease.id, lease.generation, now, checkpoint),
    )?;
    expect_one(lease, n)
}

/// Puts the job back to wait `PAUSED_RETRY`, its error kept (fenced).
fn defer(db: &Db<'_>, lease: &Lease, error: &str, now: Millis) -> Result<(), StoreError> {
    let params = args!(lease.id, lease.generation, now, error, super::PAUSED_RETRY);
    let n = db.execute(DEFER, params)?;
    expect_one(lease, n)
}

/// How many jobs are in each state (states with none are left out).
fn counts(db: &Db<'_>) -> Result<Vec<(JobState, i64)>, StoreError> {
    db.all(COUNTS, args!(), |r| {
        Ok((parse_at(r, 0, JobState::parse)?, r.get(1)?))
    })
}

/// The queued or running job holding `unique_key`, if any.
fn live_row(db: &Db<'_>, unique_key: &str) -> Result<Option<Job>, StoreError> {
    db.optional(LIVE_ROW_BY_KEY, args!(unique_key), job_from_row)
}

/// Cancels the live job of the key of `job` and enqueues `job` under it.
fn replace_unique(db: &Db<'_>, job: &NewJob, now: Millis) -> Result<Enqueued, StoreError> {
    let key = job.unique_key.clone().unwrap_or_default();
    let live: Option<i64> = db.optional(LIVE_BY_KEY, args!(key), |r| r.get(0))?;
    if let Some(id) = live {
        cancel(db, id, now)?;
    }
    insert(db, job, now)
}

fn get(db: &Db<'_>, id: i64) -> Result<Option<Job>, StoreError> {
    db.optional(GET, args!(id), job_from_row)
}

/// The newest `limit` jobs, newest first.
fn list(db: &Db<'_>, limit: i64) -> Result<Vec<Job>, StoreError> {
    db.all(LIST, args!(limit), job_from_row)
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
        self.write(move |db, now| insert(db, &job, now))
    }

    /// `enqueue`, and when a row of the same key already waits (a delayed one, a retry's
    /// backoff), that row is made due now: a user's "do it now" on what a walk put off.
    pub fn enqueue_now(&self, job: NewJob) -> Result<Enqueued, StoreError> {
        self.write(move |db, now| {
            let enqueued = insert(db, &job, now)?;
            if !enqueued.created {
                db.execute(DUE_NOW, args!(enqueued.id, now))?;
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
        self.write(move |db, now| {
            let job = claim(db, (&owner, &host), &kinds, (now, ttl))?;
            Ok(job.map(|job| {
                let expires = now + ttl;
                (
                    job_lease(job.id, job.generation, owner.clone(), expires),
                    job,
                )
            }))
        })
    }

    /// Records a worker's progress on the job row (fenced).
    pub fn checkpoint_job(&self, lease: &Lease, progress: &str) -> Result<(), StoreError> {
        let (lease, progress) = (lease.clone(), progress.to_string());
        self.write(move |db, now| checkpoint(db, &lease, &progress, now))
    }

    /// Marks the job done (fenced).
    pub fn complete_job(&self, lease: &Lease) -> Result<(), StoreError> {
        let lease = lease.clone();
        self.write(move |db, now| complete(db, &lease, now))
    }

    /// Marks the job done and enqueues its follow-up in one fenced transaction: a chain
    /// advancing itself. Done comes first, so the follow-up may reuse the unique key.
    pub fn complete_job_and_enqueue(
        &self,
        lease: &Lease,
        next: NewJob,
    ) -> Result<Enqueued, StoreError> {
        let lease = lease.clone();
        self.write(move |db, now| {
            complete(db, &lease, now)?;
            insert(db, &next, now)
        })
    }

    /// Puts the job back to wait `PAUSED_RETRY` for a cause that passes by itself (a full
    /// disk), its error kept for the status (fenced). No attempt is spent: a job paused for
    /// days is still made once space is back.
    pub fn defer_job(&self, lease: &Lease, error: &str) -> Result<(), StoreError> {
        let (lease, error) = (lease.clone(), error.to_string());
        self.write(move |db, now| defer(db, &lease, &error, now))
    }

    /// How many jobs are in each state (states with none are left out).
    pub fn job_counts(&self) -> Result<Vec<(JobState, i64)>, StoreError> {
        self.read(counts)
    }

    /// The queued or running job holding `unique_key`, if any.
    pub fn live_job(&self, unique_key: &str) -> Result<Option<Job>, StoreError> {
        self.read(|db| live_row(db, unique_key))
    }

    /// Cancels the live job of `unique_key` (if any) and enqueues `job` under that key, in
    /// one transaction: a holder of the old row writes nothing more, and the key never has
    /// two live rows. Returns the new row.
    pub fn replace_unique(&self, job: NewJob) -> Result<Enqueued, StoreError> {
        self.write(move |db, now| replace_unique(db, &job, now))
    }

    pub fn job(&self, id: i64) -> Result<Option<Job>, StoreError> {
        self.read(|db| get(db, id))
    }

    /// The newest `limit` jobs, newest first.
    pub fn jobs(&self, limit: i64) -> Result<Vec<Job>, StoreError> {
        self.read(|db| list(db, limit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::db::tests::on_both_schemas;
    use crate::store::lease::fixtures;

    const ME: (&str, &str) = ("me", "host");

    fn state_of(db: &Db<'_>, id: i64) -> Result<(String, i64), StoreError> {
        let job = get(db, id)?.expect("the job");
        Ok((job.state.as_str().to_string(), job.generation))
    }

    fn lease_of(job: &Job) -> Lease {
        job_lease(job.id, job.generation, "me".into(), 1_100)
    }

    fn filters(kind: &str, max_scheme: Option<i64>) -> String {
        serde_json::to_string(&[JobFilter::new(kind, max_scheme)]).expect("json")
    }

    fn a_key_holds_one_live_job(db: &Db<'_>) -> Result<(), StoreError> {
        let job = NewJob::new("k", "{}").unique("key");
        let first = insert(db, &job, 1_000)?;
        assert!(first.created);
        assert_eq!(
            insert(db, &job, 1_001)?,
            Enqueued {
                id: first.id,
                created: false
            }
        );
        assert_eq!(live_row(db, "key")?.map(|j| j.id), Some(first.id));
        let again = replace_unique(db, &job, 1_002)?;
        assert!(again.created && again.id != first.id);
        assert_eq!(state_of(db, first.id)?, ("cancelled".into(), 1));
        insert(db, &NewJob::new("other", "{}"), 1_003)?;
        let counts = counts(db)?;
        assert!(counts.contains(&(JobState::Queued, 2)));
        assert!(counts.contains(&(JobState::Cancelled, 1)));
        let newest: Vec<i64> = list(db, 2)?.iter().map(|j| j.id).collect();
        assert_eq!(newest.len(), 2);
        assert!(newest[0] > newest[1]);
        db.execute(
            "UPDATE jobs SET run_at = 5000 WHERE id = ?1",
            args!(again.id),
        )?;
        db.execute(DUE_NOW, args!(again.id, 2_000))?;
        assert_eq!(get(db, again.id)?.map(|j| j.run_at), Some(2_000));
        Ok(())
    }

    fn a_claim_takes_the_oldest_due_job_it_may(db: &Db<'_>) -> Result<(), StoreError> {
        let late = insert(db, &NewJob::new("a", "{}"), 1_000)?;
        let early = insert(db, &NewJob::new("a", "{}"), 900)?;
        insert(db, &NewJob::new("b", "{}"), 800)?;
        let job = claim(db, ME, &filters("a", None), (1_000, 100))?.expect("a due job");
        assert_eq!(
            (job.id, job.generation, job.state),
            (early.id, 1, JobState::Running)
        );
        assert_eq!(job.lease_expires_at, Some(1_100));
        let next = claim(db, ME, &filters("a", None), (1_000, 100))?.map(|j| j.id);
        assert_eq!(next, Some(late.id));
        assert!(claim(db, ME, &filters("a", None), (1_000, 100))?.is_none());
        Ok(())
    }

    /// A walk row of a higher scheme waits a lease period for the binary walking it; a walk
    /// is left alone by a host that does not see every library.
    fn a_walk_of_a_higher_scheme_waits_for_its_walker(db: &Db<'_>) -> Result<(), StoreError> {
        let payload = r#"{"scheme": 2, "by": "newer"}"#;
        let row = insert(db, &NewJob::new("w", payload), 950)?;
        assert!(claim(db, ME, &filters("w", Some(1)), (1_000, 100))?.is_none());
        let taken = claim(db, ME, &filters("w", Some(1)), (1_050, 100))?;
        assert_eq!(taken.map(|j| j.id), Some(row.id));
        let other = insert(db, &NewJob::new("w", r#"{"scheme": 1}"#), 1_000)?;
        fixtures::library(db, 1)?;
        assert!(claim(db, ME, &filters("w", Some(1)), (1_100, 100))?.is_none());
        db.execute(
            "INSERT INTO library_roots (library_id, host, root) VALUES (1, 'host', '/l')",
            args!(),
        )?;
        let taken = claim(db, ME, &filters("w", Some(1)), (1_100, 100))?;
        assert_eq!(taken.map(|j| j.id), Some(other.id));
        Ok(())
    }

    fn fenced_writes_refuse_a_stale_lease(db: &Db<'_>) -> Result<(), StoreError> {
        let policy = LeasePolicy::default();
        insert(db, &NewJob::new("a", "{}"), 1_000)?;
        let job = claim(db, ME, &filters("a", None), (1_000, 100))?.expect("a due job");
        let (good, stale) = (lease_of(&job), job_lease(job.id, 0, "me".into(), 1_100));
        let lost = |r: Result<(), StoreError>| matches!(r, Err(StoreError::LeaseLost { .. }));
        assert!(lost(checkpoint(db, &stale, "x", 1_010)));
        assert!(lost(renew(db, &stale, 1_010, 100).map(|_| ())));
        assert!(lost(complete(db, &stale, 1_010)));
        assert!(lost(fail(db, &stale, "e", &policy, 1_010).map(|_| ())));
        assert!(lost(retry(db, &stale, "e", &policy, 1_010)));
        assert!(lost(defer(db, &stale, "e", 1_010)));
        assert!(lost(release(db, &stale, 1_010)));
        assert!(
            lost(checkpoint(db, &good, "x", 1_100)),
            "an expired lease is stale"
        );
        assert_eq!(state_of(db, job.id)?, ("running".into(), 1));
        checkpoint(db, &good, "half", 1_010)?;
        assert_eq!(renew(db, &good, 1_050, 100)?, 1_150);
        assert_eq!(fail(db, &good, "boom", &policy, 1_060)?, JobState::Queued);
        let job = get(db, job.id)?.expect("the job");
        assert_eq!(
            (job.attempts, job.generation, job.run_at),
            (1, 2, 1_060 + 2_000)
        );
        assert_eq!(job.checkpoint.as_deref(), Some("half"));
        db.execute("UPDATE jobs SET run_at = 0 WHERE id = ?1", args!(job.id))?;
        let job = claim(db, ME, &filters("a", None), (2_000, 100))?.expect("again");
        retry(db, &lease_of(&job), "busy", &policy, 2_010)?;
        assert_eq!(state_of(db, job.id)?, ("queued".into(), 4));
        db.execute("UPDATE jobs SET run_at = 0 WHERE id = ?1", args!(job.id))?;
        let job = claim(db, ME, &filters("a", None), (3_000, 100))?.expect("again");
        defer(db, &lease_of(&job), "full", 3_010)?;
        let deferred = get(db, job.id)?.expect("the job");
        assert_eq!(deferred.run_at, 3_010 + super::super::PAUSED_RETRY);
        assert_eq!(deferred.last_error.as_deref(), Some("full"));
        db.execute("UPDATE jobs SET run_at = 0 WHERE id = ?1", args!(job.id))?;
        let job = claim(db, ME, &filters("a", None), (4_000, 100))?.expect("again");
        release(db, &lease_of(&job), 4_010)?;
        let job = claim(db, ME, &filters("a", None), (4_020, 100))?.expect("again");
        complete(db, &lease_of(&job), 4_030)?;
        assert_eq!(state_of(db, job.id)?.0, "done");
        Ok(())
    }

    fn operators_release_cancel_reclaim_and_prune(db: &Db<'_>) -> Result<(), StoreError> {
        let policy = LeasePolicy::default();
        let once = NewJob {
            max_attempts: 1,
            ..NewJob::new("a", "{}")
        };
        let (a, b) = (
            insert(db, &once, 0)?,
            insert(db, &NewJob::new("a", "{}"), 1)?,
        );
        let c = insert(db, &NewJob::new("c", "{}"), 2)?;
        claim(db, ME, &filters("a", None), (10, 100))?;
        claim(db, ME, &filters("a", None), (10, 100))?;
        let none = reclaim(db, 109, &policy)?;
        assert_eq!((none.jobs_failed, none.jobs_requeued), (0, 0));
        let report = reclaim(db, 110, &policy)?;
        assert_eq!((report.jobs_failed, report.jobs_requeued), (1, 1));
        assert_eq!(state_of(db, a.id)?.0, "failed");
        let b_row = get(db, b.id)?.expect("b");
        assert_eq!((b_row.state, b_row.attempts), (JobState::Queued, 1));
        assert!(release_unowned(db, b.id, 120)?);
        assert_eq!(state_of(db, b.id)?, ("queued".into(), 3));
        assert!(cancel(db, c.id, 130)?);
        assert!(
            !cancel(db, c.id, 131)?,
            "a finished job is not cancelled again"
        );
        assert!(!release_unowned(db, c.id, 132)?);
        assert_eq!(prune(db, 131)?, 2, "the failed and the cancelled job");
        assert!(get(db, b.id)?.is_some());
        Ok(())
    }

    fn a_walk_peer_is_a_live_walker_of_another_scheme(db: &Db<'_>) -> Result<(), StoreError> {
        insert(
            db,
            &NewJob::new("w", r#"{"scheme": 2, "by": "peer"}"#),
            1_000,
        )?;
        let peer = walk_peer(db, "w", 1, false, (1_000, 100), "me")?;
        assert_eq!(peer, Some((2, "peer".to_string())));
        assert_eq!(walk_peer(db, "w", 1, false, (1_000, 100), "peer")?, None);
        assert_eq!(walk_peer(db, "w", 3, true, (1_000, 100), "me")?, None);
        assert_eq!(walk_peer(db, "w", 2, false, (1_000, 100), "me")?, None);
        assert_eq!(
            walk_peer(db, "w", 1, true, (1_100, 100), "me")?,
            None,
            "handed off long ago"
        );
        Ok(())
    }

    /// Two hosts claiming at once on PostgreSQL: the second claim, while the first holds
    /// its row uncommitted, takes the other due job at once (no wait: the lock timeout
    /// would fail it), and the two never share a row.
    mod postgres_only {
        use super::*;
        use crate::store::db::tests::PgScratch;
        use crate::store::db::{POSTGRES_BASELINE, Statements};

        #[test]
        #[ignore = "needs PostgreSQL: MEDIADEX_TEST_PG_URL (.ci/run starts one)"]
        fn on_postgres_two_claims_at_once_take_two_jobs() {
            let mut pg = PgScratch::new();
            pg.client.batch_execute(POSTGRES_BASELINE).unwrap();
            let mut other = pg.another();
            let (mut mine, mut theirs) = (Statements::default(), Statements::default());
            let setup = Db::postgres(pg.client.transaction().unwrap(), &mut mine);
            insert(&setup, &NewJob::new("a", "{}"), 1).unwrap();
            insert(&setup, &NewJob::new("a", "{}"), 2).unwrap();
            setup.commit().unwrap();
            let first = Db::postgres(pg.client.transaction().unwrap(), &mut mine);
            let one = claim(&first, ME, &filters("a", None), (10, 100)).unwrap();
            let mut tx = other.transaction().unwrap();
            tx.batch_execute("SET LOCAL lock_timeout = '200ms'")
                .unwrap();
            let second = Db::postgres(tx, &mut theirs);
            let two = claim(&second, ("them", "host"), &filters("a", None), (10, 100)).unwrap();
            let (one, two) = (one.expect("a job"), two.expect("the other job"));
            assert_ne!(one.id, two.id);
            second.commit().unwrap();
            first.commit().unwrap();
        }
    }

    on_both_schemas!(
        a_key_holds_one_live_job,
        a_claim_takes_the_oldest_due_job_it_may,
        a_walk_of_a_higher_scheme_waits_for_its_walker,
        fenced_writes_refuse_a_stale_lease,
        operators_release_cancel_reclaim_and_prune,
        a_walk_peer_is_a_live_walker_of_another_scheme,
    );
}
