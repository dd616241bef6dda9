//! The rows of the `jobs` table that hold a move of the trash journal (a family: kind
//! `move`, one live per asset by the partial unique index on its key): the job a begin
//! writes already running under the beginner's lease, the fence of every later write of the
//! move, which answers what the job moves, the rollback's mark and end, and the move a
//! reclaimed job holds. What a move does with them is `trash`'s; the queue's own statements
//! on every job (claim, complete, reclaim) are `jobs`'.

use super::lease::{expect_one, lost};
use super::{StoreError, parse_col};
use crate::model::{Lease, MOVE_JOB_KIND, Millis, Target, TrashAction};
use rusqlite::{Connection, OptionalExtension, params};

/// The move's job, already running under the lease of the process that begins it. The
/// partial unique index on the key makes it one live move per asset, across processes. A
/// move is never given up (its files would stay half moved): its attempts are not counted
/// down to `failed` like other jobs' (`MOVE_ATTEMPTS`; each reclaim still backs off).
const INSERT: &str = "
    INSERT INTO jobs (kind, unique_key, payload, state, generation, max_attempts, run_at,
                      lease_owner, lease_expires_at, heartbeat_at, created_at, updated_at)
    VALUES (?1, ?2, ?3, 'running', 1, ?7, ?4, ?5, ?4 + ?6, ?4, ?4, ?4)
    ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND state IN ('queued', 'running')
    DO NOTHING
    RETURNING id, generation";
/// As good as never: a move reclaimed this many times has met a bug, not bad luck.
pub(super) const MOVE_ATTEMPTS: i64 = 1_000_000;
const LIVE: &str = "SELECT id FROM jobs WHERE unique_key = ?1 AND state IN ('queued', 'running')";
/// The fence of every write of a held move; answers what the job moves (`copies`: a trash
/// of some files of a live asset, or the restore of those).
const FENCE: &str = fenced!(
    "UPDATE jobs SET updated_at = ?3",
    "RETURNING json_extract(payload, '$.move'), json_extract(payload, '$.asset'),
               json_extract(payload, '$.action'),
               coalesce(json_extract(payload, '$.copies'), 0)"
);
const HELD: &str = "
    SELECT json_extract(payload, '$.move'), json_extract(payload, '$.asset'),
           json_extract(payload, '$.action'), checkpoint
      FROM jobs WHERE id = ?1 AND kind = ?2";
/// The checkpoint of a move's job is the reason it is being rolled back.
const START_ROLLBACK: &str = fenced!("UPDATE jobs SET checkpoint = ?4, updated_at = ?3");
const END_ROLLED_BACK: &str = fenced!(
    "UPDATE jobs SET state = 'failed', last_error = checkpoint, lease_owner = NULL,
                     lease_expires_at = NULL, finished_at = ?3, updated_at = ?3"
);

/// What a fenced move write learns from its job row.
pub(super) struct Held {
    pub(super) move_id: i64,
    pub(super) asset_id: i64,
    pub(super) action: TrashAction,
    pub(super) copies: bool,
}

/// The move of a job as its row says it: move id, asset, action and the rollback's reason.
pub(super) type Holds = (i64, i64, TrashAction, Option<String>);

/// The job of a move on `asset_id`, running under `owner`'s lease from `now` for `ttl`, with
/// `payload`; `None` when a live move of the asset holds its key.
pub(super) fn insert(
    conn: &Connection,
    (asset_id, payload): (i64, &str),
    (owner, ttl, now): (&str, Millis, Millis),
) -> Result<Option<(i64, i64)>, StoreError> {
    let key = key(asset_id);
    Ok(conn
        .prepare_cached(INSERT)?
        .query_row(
            params![MOVE_JOB_KIND, key, payload, now, owner, ttl, MOVE_ATTEMPTS],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?)
}

/// The key that makes a move one live per asset.
pub(super) fn key(asset_id: i64) -> String {
    format!("{MOVE_JOB_KIND}:{asset_id}")
}

/// The live move job of `asset_id`.
pub(super) fn live(conn: &Connection, asset_id: i64) -> Result<i64, StoreError> {
    Ok(conn
        .prepare_cached(LIVE)?
        .query_row([key(asset_id)], |r| r.get(0))?)
}

/// The fence of a write of the move `lease` holds: what it moves, or `LeaseLost`.
pub(super) fn fence(conn: &Connection, lease: &Lease, now: Millis) -> Result<Held, StoreError> {
    if lease.target != Target::Job {
        return Err(lost(lease));
    }
    conn.prepare_cached(FENCE)?
        .query_row(params![lease.id, lease.generation, now], |r| {
            Ok(Held {
                move_id: r.get(0)?,
                asset_id: r.get(1)?,
                action: parse_col(r, 2, TrashAction::parse)?,
                copies: r.get::<_, i64>(3)? != 0,
            })
        })
        .optional()?
        .ok_or_else(|| lost(lease))
}

/// The move job `job_id` holds, read without a lease.
pub(super) fn holds(conn: &Connection, job_id: i64) -> Result<Option<Holds>, StoreError> {
    Ok(conn
        .prepare_cached(HELD)?
        .query_row(params![job_id, MOVE_JOB_KIND], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                parse_col(r, 2, TrashAction::parse)?,
                r.get(3)?,
            ))
        })
        .optional()?)
}

/// Marks the held move as rolling back, for `reason` (fenced).
pub(super) fn start_rollback(
    conn: &Connection,
    lease: &Lease,
    reason: &str,
    now: Millis,
) -> Result<(), StoreError> {
    let n = conn.prepare_cached(START_ROLLBACK)?.execute(params![
        lease.id,
        lease.generation,
        now,
        reason
    ])?;
    expect_one(lease, n)
}

/// Ends the held, rolled-back move's job `failed` with its rollback's reason (fenced).
pub(super) fn end_rolled_back(
    conn: &Connection,
    lease: &Lease,
    now: Millis,
) -> Result<(), StoreError> {
    let n =
        conn.prepare_cached(END_ROLLED_BACK)?
            .execute(params![lease.id, lease.generation, now])?;
    expect_one(lease, n)
}
