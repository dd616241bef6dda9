//! The rows of the `jobs` table that hold a move of the trash journal (a family: kind
//! `move`, one live per asset by the partial unique index on its key): the job a begin
//! writes already running under the beginner's lease, the fence of every later write of the
//! move, which answers what the job moves, the rollback's mark and end, and the move a
//! reclaimed job holds. What a move does with them is `trash`'s; the queue's own statements
//! on every job (claim, complete, reclaim) are `jobs`'.

use super::db::{Db, Pair};
use super::lease::{expect_one, lost};
use super::{StoreError, parse_at};
use crate::model::{Lease, MOVE_JOB_KIND, Millis, Target, TrashAction};

/// The move's job, already running under the lease of the process that begins it. The
/// partial unique index on the key makes it one live move per asset, across processes. A
/// move is never given up (its files would stay half moved): its attempts are not counted
/// down to `failed` like other jobs' (`MOVE_ATTEMPTS`; each reclaim still backs off). The
/// casts tell PostgreSQL the sum's operands (it refuses `unknown + unknown`).
const INSERT: &str = "
    INSERT INTO jobs (kind, unique_key, payload, state, generation, max_attempts, run_at,
                      lease_owner, lease_expires_at, heartbeat_at, created_at, updated_at)
    VALUES (?1, ?2, ?3, 'running', 1, ?7, ?4, ?5, CAST(?4 AS BIGINT) + CAST(?6 AS BIGINT), ?4, ?4,
            ?4)
    ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND state IN ('queued', 'running')
    DO NOTHING
    RETURNING id, generation";
/// As good as never: a move reclaimed this many times has met a bug, not bad luck.
pub(super) const MOVE_ATTEMPTS: i64 = 1_000_000;
const LIVE: &str = "SELECT id FROM jobs WHERE unique_key = ?1 AND state IN ('queued', 'running')";
/// The fence of every write of a held move; answers what the job moves (`copies`: a trash
/// of some files of a live asset, or the restore of those). The payload's fields are read
/// with each engine's JSON functions (SQLite's `json_extract`, PostgreSQL's `->>`).
const FENCE: Pair = Pair {
    sqlite: fenced!(
        "UPDATE jobs SET updated_at = ?3",
        "RETURNING json_extract(payload, '$.move'), json_extract(payload, '$.asset'),
                   json_extract(payload, '$.action'),
                   coalesce(json_extract(payload, '$.copies'), 0)"
    ),
    postgres: fenced!(
        "UPDATE jobs SET updated_at = ?3",
        "RETURNING CAST(CAST(payload AS jsonb) ->> 'move' AS BIGINT),
                   CAST(CAST(payload AS jsonb) ->> 'asset' AS BIGINT),
                   CAST(payload AS jsonb) ->> 'action',
                   coalesce(CAST(CAST(payload AS jsonb) ->> 'copies' AS BIGINT), 0)"
    ),
};
const HELD: Pair = Pair {
    sqlite: "
    SELECT json_extract(payload, '$.move'), json_extract(payload, '$.asset'),
           json_extract(payload, '$.action'), checkpoint
      FROM jobs WHERE id = ?1 AND kind = ?2",
    postgres: "
    SELECT CAST(CAST(payload AS jsonb) ->> 'move' AS BIGINT),
           CAST(CAST(payload AS jsonb) ->> 'asset' AS BIGINT),
           CAST(payload AS jsonb) ->> 'action', checkpoint
      FROM jobs WHERE id = ?1 AND kind = ?2",
};
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
    db: &Db<'_>,
    (asset_id, payload): (i64, &str),
    (owner, ttl, now): (&str, Millis, Millis),
) -> Result<Option<(i64, i64)>, StoreError> {
    let key = key(asset_id);
    let params = args!(MOVE_JOB_KIND, key, payload, now, owner, ttl, MOVE_ATTEMPTS);
    db.optional(INSERT, params, |r| Ok((r.get(0)?, r.get(1)?)))
}

/// The key that makes a move one live per asset.
pub(super) fn key(asset_id: i64) -> String {
    format!("{MOVE_JOB_KIND}:{asset_id}")
}

/// The live move job of `asset_id`.
pub(super) fn live(db: &Db<'_>, asset_id: i64) -> Result<i64, StoreError> {
    db.one(LIVE, args!(key(asset_id)), |r| r.get(0))
}

/// The fence of a write of the move `lease` holds: what it moves, or `LeaseLost`.
pub(super) fn fence(db: &Db<'_>, lease: &Lease, now: Millis) -> Result<Held, StoreError> {
    if lease.target != Target::Job {
        return Err(lost(lease));
    }
    db.optional(
        db.pick(&FENCE),
        args!(lease.id, lease.generation, now),
        |r| {
            Ok(Held {
                move_id: r.get(0)?,
                asset_id: r.get(1)?,
                action: parse_at(r, 2, TrashAction::parse)?,
                copies: r.get::<i64>(3)? != 0,
            })
        },
    )?
    .ok_or_else(|| lost(lease))
}

/// The move job `job_id` holds, read without a lease.
pub(super) fn holds(db: &Db<'_>, job_id: i64) -> Result<Option<Holds>, StoreError> {
    db.optional(db.pick(&HELD), args!(job_id, MOVE_JOB_KIND), |r| {
        Ok((
            r.get(0)?,
            r.get(1)?,
            parse_at(r, 2, TrashAction::parse)?,
            r.get(3)?,
        ))
    })
}

/// Marks the held move as rolling back, for `reason` (fenced).
pub(super) fn start_rollback(
    db: &Db<'_>,
    lease: &Lease,
    reason: &str,
    now: Millis,
) -> Result<(), StoreError> {
    let n = db.execute(
        START_ROLLBACK,
        args!(lease.id, lease.generation, now, reason),
    )?;
    expect_one(lease, n)
}

/// Ends the held, rolled-back move's job `failed` with its rollback's reason (fenced).
pub(super) fn end_rolled_back(db: &Db<'_>, lease: &Lease, now: Millis) -> Result<(), StoreError> {
    let n = db.execute(END_ROLLED_BACK, args!(lease.id, lease.generation, now))?;
    expect_one(lease, n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::db::tests::on_both_schemas;

    const PAYLOAD: &str = r#"{"asset": 4, "action": "trash", "move": 7, "copies": 1}"#;

    fn lease_of((id, generation): (i64, i64)) -> Lease {
        Lease {
            target: Target::Job,
            id,
            generation,
            owner: "me".into(),
            expires_at: 1_100,
        }
    }

    fn a_move_is_one_live_job_per_asset(db: &Db<'_>) -> Result<(), StoreError> {
        let job = insert(db, (4, PAYLOAD), ("me", 100, 1_000))?.expect("a new move");
        assert_eq!(job.1, 1);
        assert_eq!(insert(db, (4, PAYLOAD), ("other", 100, 1_000))?, None);
        assert_eq!(live(db, 4)?, job.0);
        assert!(matches!(live(db, 5), Err(StoreError::NotFound(_))));
        let (move_id, asset, action, reason) = holds(db, job.0)?.expect("its move");
        assert_eq!(
            (move_id, asset, action, reason),
            (7, 4, TrashAction::Trash, None)
        );
        assert_eq!(holds(db, job.0 + 1)?, None);
        Ok(())
    }

    fn the_fence_answers_the_move_to_its_lease_only(db: &Db<'_>) -> Result<(), StoreError> {
        let job = insert(db, (4, PAYLOAD), ("me", 100, 1_000))?.expect("a new move");
        let held = fence(db, &lease_of(job), 1_050)?;
        assert_eq!((held.move_id, held.asset_id), (7, 4));
        assert_eq!((held.action, held.copies), (TrashAction::Trash, true));
        let stale = lease_of((job.0, job.1 + 1));
        assert!(matches!(
            fence(db, &stale, 1_050),
            Err(StoreError::LeaseLost { .. })
        ));
        assert!(matches!(
            fence(db, &lease_of(job), 1_100),
            Err(StoreError::LeaseLost { .. })
        ));
        assert!(matches!(
            start_rollback(db, &stale, "why", 1_050),
            Err(StoreError::LeaseLost { .. })
        ));
        start_rollback(db, &lease_of(job), "disk gone", 1_050)?;
        let rollback = holds(db, job.0)?.and_then(|h| h.3);
        assert_eq!(rollback.as_deref(), Some("disk gone"));
        assert!(end_rolled_back(db, &stale, 1_060).is_err());
        end_rolled_back(db, &lease_of(job), 1_060)?;
        let state: String = db.one("SELECT state FROM jobs WHERE id = ?1", args!(job.0), |r| {
            r.get(0)
        })?;
        assert_eq!(state, "failed");
        assert!(
            fence(db, &lease_of(job), 1_070).is_err(),
            "a failed job holds no lease"
        );
        Ok(())
    }

    on_both_schemas!(
        a_move_is_one_live_job_per_asset,
        the_fence_answers_the_move_to_its_lease_only,
    );
}
