//! The trash journal (DESIGN.md sections 4 and 6): a user's trash or restore of an asset is a
//! move, held by the lease on a `move` job, with an intent row per file. Begin writes the
//! job (already running under this process's lease) and the intents in one transaction;
//! every later write (settling an intent with its file row, starting a rollback, the asset's
//! flip, the end) is fenced on that lease in the same transaction as its data. A restore's
//! face walk is queued in the transaction that flips the asset. The user trashes what they
//! see: a Live Photo's clip and a stack's RAWs follow the shown photo into the trash (intents
//! of their own assets in its move) and come back with it. A trash of copies (`begin_trash_copies`,
//! "keep this file, trash the others" of a byte-identical group) is a move of some files of a
//! live asset: its intents name each file it takes, its job's payload says `copies`, and its
//! end completes the job without flipping the asset (refused, `KeptGone`, when the kept file
//! is no longer present); the restore of a live asset brings those files back. The file
//! moves themselves are the caller's (`crate::trash`). A move is named by its move id (never
//! by the time it began: a clock may answer the same millisecond for two moves), taken from
//! a counter that never goes back (migration 0023), not from the journal, whose rows a
//! library's removal deletes.

use super::assets::{state, trash};
use super::chains::request_in;
use super::db::Db;
use super::intents::{self, Planned};
use super::jobs::complete;
use super::move_jobs::{self, Held};
use super::revive::revive;
use super::rows::stamp_at;
use super::{Store, StoreError, files};
use crate::model::{
    Begun, FileStamp, Finish, IntentState, Lease, Millis, Move, MoveOutcome, Settle, Target,
    TrashAction, TrashIntent, TrashReason, WalkRequest, trash_path,
};

/// The files the asset's last trash moved (the done intents of its latest move with any),
/// to be undone by a restore, with the stamp that trash recorded (a rename keeps it); an
/// intent written before stamps were recorded takes its file row's. By move id: two moves
/// may begin in one millisecond.
///
/// The assets that followed it into the trash (its Live clip, its stack's RAWs) come back
/// with it when it led that trash (a move's first intent is its own asset's) and they are
/// still in the trash; a follower restored alone brings back its own files only.
const LAST_TRASHED: &str = "
    WITH last (move_id) AS (
        SELECT max(move_id) FROM trash_intents
         WHERE asset_id = ?1 AND action = 'trash' AND state = 'done'),
    led (yes) AS (
        SELECT asset_id = ?1 FROM trash_intents
         WHERE move_id = (SELECT move_id FROM last) ORDER BY id LIMIT 1)
    SELECT t.library_id, t.from_path, t.to_path,
           coalesce(t.size, f.size), coalesce(t.mtime_ns, f.mtime_ns),
           coalesce(t.dev, f.dev), coalesce(t.inode, f.inode), t.asset_id
      FROM trash_intents t
      LEFT JOIN files f ON f.library_id = t.library_id AND f.rel_path = t.from_path
                       AND f.asset_id = t.asset_id
     WHERE t.move_id = (SELECT move_id FROM last) AND t.action = 'trash' AND t.state = 'done'
       AND (t.asset_id = ?1
            OR ((SELECT yes FROM led)
                AND EXISTS (SELECT 1 FROM assets a
                             WHERE a.id = t.asset_id AND a.trashed_at IS NOT NULL)))
     ORDER BY t.id";
/// The assets that follow ?1 into the trash, as the user sees them one photo: the Live
/// clip it shows (unless another live still shows it too) and the RAWs of the stacks its
/// present files head. Each live and not ?1.
const FOLLOWERS: &str = "
    SELECT v.id FROM assets s JOIN assets v ON v.id = s.live_video_id
     WHERE s.id = ?1 AND v.id <> ?1 AND v.trashed_at IS NULL
       AND NOT EXISTS (SELECT 1 FROM assets o WHERE o.live_video_id = v.id AND o.id <> ?1
                                                AND o.trashed_at IS NULL)
    UNION
    SELECT rf.asset_id FROM files pf JOIN stacks st ON st.primary_file_id = pf.id
      JOIN files rf ON rf.id = st.raw_file_id AND rf.state = 'present'
      JOIN assets r ON r.id = rf.asset_id AND r.trashed_at IS NULL
     WHERE pf.asset_id = ?1 AND pf.state = 'present' AND rf.asset_id <> ?1";
/// The copies a trash of copies took from a live asset (?1) and no restore has put back:
/// the done intents of its latest trash when no done restore came after it. For a live
/// asset that is a trash of copies (a whole trash leaves it trashed until a restore).
const TRASHED_COPIES: &str = "
    SELECT t.library_id, t.from_path, t.to_path,
           coalesce(t.size, f.size), coalesce(t.mtime_ns, f.mtime_ns),
           coalesce(t.dev, f.dev), coalesce(t.inode, f.inode), t.asset_id
      FROM trash_intents t
      LEFT JOIN files f ON f.library_id = t.library_id AND f.rel_path = t.from_path
                       AND f.asset_id = t.asset_id
     WHERE t.asset_id = ?1 AND t.action = 'trash' AND t.state = 'done'
       AND t.move_id = (SELECT max(move_id) FROM trash_intents
                         WHERE asset_id = ?1 AND action = 'trash' AND state = 'done')
       AND NOT EXISTS (SELECT 1 FROM trash_intents r
                        WHERE r.asset_id = ?1 AND r.action = 'restore' AND r.state = 'done'
                          AND r.move_id > t.move_id)
     ORDER BY t.id";
fn refuse_if_pending(db: &Db<'_>, asset_id: i64) -> Result<(), StoreError> {
    match intents::has_pending(db, asset_id)? {
        true => Err(StoreError::Conflict(format!(
            "asset {asset_id} has an unfinished move in the trash journal"
        ))),
        false => Ok(()),
    }
}

/// Writes move `move_id`'s job under this process's lease, then its intents. `copies`: the
/// move takes some files of a live asset to the trash, or brings them back (the payload says
/// so; the asset never flips).
fn hold(
    db: &Db<'_>,
    (asset_id, move_id): (i64, i64),
    (action, copies): (TrashAction, bool),
    moves: Vec<Planned>,
    (owner, ttl, now): (&str, Millis, Millis),
) -> Result<Begun, StoreError> {
    let mut payload =
        serde_json::json!({"asset": asset_id, "action": action.as_str(), "move": move_id});
    if copies {
        payload["copies"] = serde_json::Value::from(1);
    }
    let payload = payload.to_string();
    let job = move_jobs::insert(db, (asset_id, &payload), (owner, ttl, now))?;
    let Some((job_id, generation)) = job else {
        let live = move_jobs::live(db, asset_id)?;
        return Err(StoreError::Conflict(format!(
            "asset {asset_id} is being moved already (move job {live}); try again when it ends"
        )));
    };
    refuse_if_pending(db, asset_id)?;
    let intents = moves
        .into_iter()
        .map(|p| intents::insert(db, (action, move_id), p, now))
        .collect::<Result<Vec<_>, _>>()?;
    let lease = Lease {
        target: Target::Job,
        id: job_id,
        generation,
        owner: owner.to_string(),
        expires_at: now + ttl,
    };
    Ok(Begun::Held(
        lease,
        Move {
            job_id,
            asset_id,
            action,
            move_id,
            intents,
            rollback: None,
        },
    ))
}

/// Refuses to restore without a move an asset that no file row names (finding 18): trashed
/// as missing, its paths read since as other photos, nothing of it is in a library or a
/// trash folder, and made live it would be a photo without a file that hides its Live clip.
fn refuse_unshown(db: &Db<'_>, asset_id: i64) -> Result<(), StoreError> {
    match files::has_row(db, asset_id)? {
        true => Ok(()),
        false => Err(StoreError::Conflict(format!(
            "asset {asset_id} has no file left to restore: none is in the trash folder, and \
             the paths it was read at show other photos now; it stays in the trash"
        ))),
    }
}

/// The asset's state for a begin: `Err` unless it exists and is trashed as `trashed` says.
fn expect_state(db: &Db<'_>, asset_id: i64, trashed: bool) -> Result<(), StoreError> {
    match (state(db, asset_id)?, trashed) {
        (None, false) => Err(StoreError::NotFound(format!("no asset {asset_id}"))),
        (None, true) => Err(StoreError::NotFound(format!(
            "asset {asset_id} is gone (the trash was emptied)"
        ))),
        (Some(true), false) => Err(StoreError::Conflict(format!(
            "asset {asset_id} is in the trash already"
        ))),
        (Some(false), true) => Err(StoreError::Conflict(format!(
            "asset {asset_id} is not in the trash"
        ))),
        _ => Ok(()),
    }
}

/// The file row an intent moves: its library path is the origin of a trash and the
/// destination of a restore.
fn row_path(intent: &TrashIntent) -> &[u8] {
    match intent.action {
        TrashAction::Trash => &intent.from_path,
        TrashAction::Restore => &intent.to_path,
    }
}

fn set_row(
    db: &Db<'_>,
    intent: &TrashIntent,
    present: bool,
    now: Millis,
) -> Result<(), StoreError> {
    let row = (intent.library_id, row_path(intent), intent.asset_id);
    match present {
        true => files::moved_back(db, row),
        false => files::moved_away(db, row, intent.stamp, now),
    }
}

/// Settles one intent of the held move and makes its file row follow: present where the
/// file now is in the library, missing where it is not.
fn settle(
    db: &Db<'_>,
    held: &Held,
    intent_id: i64,
    how: Settle,
    now: Millis,
) -> Result<(), StoreError> {
    let intent = intents::get(db, intent_id, held.move_id)?
        .ok_or_else(|| StoreError::NotFound(format!("no trash intent {intent_id} in this move")))?;
    let (to, row) = match (how, intent.state) {
        (_, IntentState::Aborted) | (Settle::Done, IntentState::Done) => {
            return Err(StoreError::Conflict(format!(
                "trash intent {intent_id} is {} already",
                intent.state
            )));
        }
        (Settle::Done, _) => (
            IntentState::Done,
            Some(intent.action == TrashAction::Restore),
        ),
        (Settle::Back, IntentState::Pending) => (IntentState::Aborted, None),
        (Settle::Back, _) => (
            IntentState::Aborted,
            Some(intent.action == TrashAction::Trash),
        ),
        (Settle::Vanished, _) => (IntentState::Aborted, Some(false)),
    };
    intents::settle(db, (intent_id, held.move_id), to, now)?;
    match row {
        Some(present) => set_row(db, &intent, present, now),
        None => Ok(()),
    }
}

/// The forward end of a held move: every intent settled, the asset flips and the job is
/// done, all in one fenced transaction, with a restore's `follow_up` (its face walk). A
/// trash whose asset shows a present file it did not move (a copy linked meanwhile) flips
/// nothing: `Linked`.
fn finish(
    db: &Db<'_>,
    lease: &Lease,
    follow_up: Option<&WalkRequest>,
    now: Millis,
) -> Result<Finish, StoreError> {
    let held = move_jobs::fence(db, lease, now)?;
    if intents::pending_in(db, held.move_id)? > 0 {
        return Err(StoreError::Conflict(format!(
            "move {} has unsettled intents",
            held.move_id
        )));
    }
    let outcome = match held.action {
        TrashAction::Trash if held.copies => match files::has_present(db, held.asset_id)? {
            true => MoveOutcome::CopiesTrashed,
            false => return Ok(Finish::KeptGone),
        },
        TrashAction::Trash => {
            let linked = files::present_paths(db, held.asset_id)?;
            if !linked.is_empty() {
                return Ok(Finish::Linked(linked));
            }
            let trashed = trash(db, held.asset_id, TrashReason::User, now)?;
            trash_followers(db, &held, now)?;
            if trashed || state(db, held.asset_id)?.is_some() {
                MoveOutcome::Trashed
            } else {
                MoveOutcome::Gone
            }
        }
        // A restore that put no file of its own back would show a live photo without a
        // file, whatever files of its followers it put back.
        TrashAction::Restore if own_done(db, &held)? == 0 => {
            return Ok(Finish::NothingBack);
        }
        // By id alone, so a sweep that won the race makes this `Gone`, never an error.
        TrashAction::Restore => {
            for follower in moved_followers(db, &held)? {
                revive(db, follower)?;
            }
            if restore_then(db, held.asset_id, follow_up, now)? {
                MoveOutcome::Restored
            } else if state(db, held.asset_id)?.is_some() {
                MoveOutcome::AlreadyLive
            } else {
                MoveOutcome::Gone
            }
        }
    };
    complete(db, lease, now)?;
    Ok(Finish::Flipped(outcome))
}

/// How many files of its own asset the held move put where they go.
fn own_done(db: &Db<'_>, held: &Held) -> Result<i64, StoreError> {
    intents::own_done(db, held.move_id, held.asset_id)
}

/// The assets whose files the held move moved besides its own.
fn moved_followers(db: &Db<'_>, held: &Held) -> Result<Vec<i64>, StoreError> {
    intents::moved_followers(db, held.move_id, held.asset_id)
}

/// Trashes each follower of the held trash that shows no present file any more (one with
/// a byte copy elsewhere stays live, shown by that copy).
fn trash_followers(db: &Db<'_>, held: &Held, now: Millis) -> Result<(), StoreError> {
    for follower in moved_followers(db, held)? {
        if !files::has_present(db, follower)? {
            trash(db, follower, TrashReason::User, now)?;
        }
    }
    Ok(())
}

/// The files a trash of `asset_id` in move `move_id` moves: each present file, to the
/// asset's trash folder of that move (`model::trash_path`).
fn planned_trash(db: &Db<'_>, asset_id: i64, move_id: i64) -> Result<Vec<Planned>, StoreError> {
    Ok(files::present_files(db, asset_id)?
        .into_iter()
        .map(|(library_id, from, stamp)| Planned {
            asset_id,
            library_id,
            to: trash_path(asset_id, move_id, &from),
            from,
            stamp,
        })
        .collect())
}

/// The files a restore of `asset_id` moves back, as `sql` (`LAST_TRASHED`, `TRASHED_COPIES`)
/// finds them: from the trash folder to where each came from.
fn planned_restore(db: &Db<'_>, sql: &str, asset_id: i64) -> Result<Vec<Planned>, StoreError> {
    db.all(sql, args!(asset_id), |r| {
        Ok(Planned {
            asset_id: r.get(7)?,
            library_id: r.get(0)?,
            from: r.get(2)?,
            to: r.get(1)?,
            stamp: stamp_at(r, 3)?,
        })
    })
}

fn followers(db: &Db<'_>, asset_id: i64) -> Result<Vec<i64>, StoreError> {
    db.all(FOLLOWERS, args!(asset_id), |r| r.get(0))
}

/// Restores the asset by id and, if it was restored, writes `follow_up` in the same
/// transaction: the restored asset lacks the faces the walk skipped while it was trashed.
fn restore_then(
    db: &Db<'_>,
    asset_id: i64,
    follow_up: Option<&WalkRequest>,
    now: Millis,
) -> Result<bool, StoreError> {
    let restored = revive(db, asset_id)?;
    if let Some(req) = follow_up.filter(|_| restored) {
        request_in(db, req, now)?;
    }
    Ok(restored)
}

impl Store {
    /// Starts the user's trash of a live asset: a move job held by this process for `ttl`
    /// and one pending intent per present file, each moving it to
    /// `.mediadex-trash/<asset id>-<move id>/<path>` in its library (a folder of this move's
    /// own: `model::trash_path`), the asset's own files first, then those of the assets that
    /// follow it (`FOLLOWERS`: its Live clip, its stack's RAWs), each to its own asset's
    /// folder of the move. An asset without present files is trashed at once (`Settled`).
    pub fn begin_trash(&self, asset_id: i64, ttl: Millis) -> Result<Begun, StoreError> {
        let owner = self.owner().to_string();
        self.write(move |db, now| {
            expect_state(db, asset_id, false)?;
            let move_id = intents::next_move(db)?;
            let mut moves = planned_trash(db, asset_id, move_id)?;
            if moves.is_empty() {
                trash(db, asset_id, TrashReason::User, now)?;
                return Ok(Begun::Settled(MoveOutcome::Trashed));
            }
            for follower in followers(db, asset_id)? {
                refuse_if_pending(db, follower)?;
                moves.extend(planned_trash(db, follower, move_id)?);
            }
            hold(
                db,
                (asset_id, move_id),
                (TrashAction::Trash, false),
                moves,
                (&owner, ttl, now),
            )
        })
    }

    /// Starts a trash of the other files of a live asset (its byte-identical copies): every
    /// present file but `keep` (library id, library-relative path), which must be one of
    /// them, moves to `.mediadex-trash/<asset id>-<move id>/<path>` under a held move whose
    /// intents name each file. The asset stays live, shown by the kept file; no follower
    /// moves (its Live clip and stack stay with the picture shown). `Conflict` when the
    /// asset has no other present file.
    pub fn begin_trash_copies(
        &self,
        asset_id: i64,
        keep: (i64, Vec<u8>),
        ttl: Millis,
    ) -> Result<Begun, StoreError> {
        let owner = self.owner().to_string();
        self.write(move |db, now| {
            expect_state(db, asset_id, false)?;
            let move_id = intents::next_move(db)?;
            let all = planned_trash(db, asset_id, move_id)?;
            let is_kept = |p: &Planned| p.library_id == keep.0 && p.from == keep.1;
            if !all.iter().any(is_kept) {
                return Err(StoreError::NotFound(format!(
                    "asset {asset_id} has no present file {} in library {}",
                    String::from_utf8_lossy(&keep.1),
                    keep.0
                )));
            }
            let moves: Vec<Planned> = all.into_iter().filter(|p| !is_kept(p)).collect();
            if moves.is_empty() {
                return Err(StoreError::Conflict(format!(
                    "asset {asset_id} has no other copy to trash"
                )));
            }
            hold(
                db,
                (asset_id, move_id),
                (TrashAction::Trash, true),
                moves,
                (&owner, ttl, now),
            )
        })
    }

    /// Starts the restore of a trashed asset: a held move job and one pending intent per
    /// file its last trash moved, moving it back. An asset trashed without moves (its files
    /// went missing) is restored at once (`Settled`), with `follow_up` in the same
    /// transaction, while a file row names it (the next scan looks for the file);
    /// `Conflict` when none does. `NotFound` if the sweep deleted it.
    pub fn begin_restore(
        &self,
        asset_id: i64,
        ttl: Millis,
        follow_up: Option<WalkRequest>,
    ) -> Result<Begun, StoreError> {
        let owner = self.owner().to_string();
        self.write(move |db, now| {
            // A live asset's restore brings back the copies a trash of copies took.
            let copies = state(db, asset_id)? == Some(false);
            let moves = match copies {
                true => planned_restore(db, TRASHED_COPIES, asset_id)?,
                false => {
                    expect_state(db, asset_id, true)?;
                    planned_restore(db, LAST_TRASHED, asset_id)?
                }
            };
            if copies && moves.is_empty() {
                expect_state(db, asset_id, true)?;
            }
            if moves.is_empty() {
                refuse_unshown(db, asset_id)?;
                restore_then(db, asset_id, follow_up.as_ref(), now)?;
                return Ok(Begun::Settled(MoveOutcome::Restored));
            }
            hold(
                db,
                (asset_id, intents::next_move(db)?),
                (TrashAction::Restore, copies),
                moves,
                (&owner, ttl, now),
            )
        })
    }

    /// The move a `move` job holds, with its intents as they stand now (for the holder of a
    /// claimed job: the reclaimer of a move whose first holder died).
    pub fn held_move(&self, job_id: i64) -> Result<Move, StoreError> {
        self.read(|db| {
            let (move_id, asset_id, action, rollback) = move_jobs::holds(db, job_id)?
                .ok_or_else(|| StoreError::NotFound(format!("no move job {job_id}")))?;
            let intents = intents::of_move(db, move_id)?;
            Ok(Move {
                job_id,
                asset_id,
                action,
                move_id,
                intents,
                rollback,
            })
        })
    }

    /// Settles one intent of the move `lease` holds, with its file row (fenced).
    pub fn settle_intent(
        &self,
        lease: &Lease,
        intent_id: i64,
        how: Settle,
    ) -> Result<(), StoreError> {
        let lease = lease.clone();
        self.write(move |db, now| {
            let held = move_jobs::fence(db, &lease, now)?;
            settle(db, &held, intent_id, how, now)
        })
    }

    /// Ends the forward half of the held move (fenced): see `Finish`. A restore that flips
    /// its asset writes `follow_up` in the same transaction.
    pub fn finish_move(
        &self,
        lease: &Lease,
        follow_up: Option<WalkRequest>,
    ) -> Result<Finish, StoreError> {
        let lease = lease.clone();
        self.write(move |db, now| finish(db, &lease, follow_up.as_ref(), now))
    }

    /// Records that the held move is being rolled back, and why (fenced): whoever holds it
    /// next rolls it back too, never forward again.
    pub fn start_rollback(&self, lease: &Lease, reason: &str) -> Result<(), StoreError> {
        let (lease, reason) = (lease.clone(), reason.to_string());
        self.write(move |db, now| {
            move_jobs::fence(db, &lease, now)?;
            move_jobs::start_rollback(db, &lease, &reason, now)
        })
    }

    /// Ends a rolled-back move (fenced): every intent is aborted, the asset never flipped,
    /// and the job is `failed` with the rollback's reason.
    pub fn end_rolled_back(&self, lease: &Lease) -> Result<(), StoreError> {
        let lease = lease.clone();
        self.write(move |db, now| {
            let held = move_jobs::fence(db, &lease, now)?;
            if intents::unsettled(db, held.move_id)? > 0 {
                return Err(StoreError::Conflict(format!(
                    "move {} still has files to put back",
                    held.move_id
                )));
            }
            move_jobs::end_rolled_back(db, &lease, now)
        })
    }

    /// The file row an intent moves as the index holds it now: the asset it shows and its
    /// stamp (`None` without a row), to tell the move's file from other bytes written or
    /// indexed at its path since the move began.
    pub fn intent_row(
        &self,
        intent: &TrashIntent,
    ) -> Result<Option<(Option<i64>, FileStamp)>, StoreError> {
        let (library, path) = (intent.library_id, row_path(intent).to_vec());
        self.read(move |db| files::row_stamp(db, library, &path))
    }
}
