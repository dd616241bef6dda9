//! The trash journal (DESIGN.md section 6): trash and restore by the user are an intent row
//! per file, then the move (done by the caller, into or out of the library's
//! `.mediadex-trash/`), then the commit. Unfinished intents are replayed at start. The asset
//! flips (trashed or restored by id) when the last pending intent of its move is settled.
//! A move is the set of intents one begin call wrote, named by its move id (never by the
//! time it began: a clock may answer the same millisecond for two moves).

use super::assets::{restore, state, trash};
use super::{Store, StoreError, parse_col};
use crate::model::{
    IntentState, Millis, MoveOutcome, TrashAction, TrashIntent, TrashReason, trash_path,
};
use rusqlite::{Connection, OptionalExtension, Row, params};

macro_rules! intent_cols {
    () => {
        "id, asset_id, library_id, action, from_path, to_path, state, created_at, move_id"
    };
}
const INSERT: &str = concat!(
    "INSERT INTO trash_intents (asset_id, library_id, action, from_path, to_path, created_at,
                                move_id)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING ",
    intent_cols!()
);
const GET: &str = concat!(
    "SELECT ",
    intent_cols!(),
    " FROM trash_intents WHERE id = ?1"
);
/// A move's intents together, oldest move first.
const PENDING: &str = concat!(
    "SELECT ",
    intent_cols!(),
    " FROM trash_intents WHERE state = 'pending' ORDER BY move_id, id"
);
/// One number per begin call, above every move id in the journal (old rows included).
const NEXT_MOVE: &str = "SELECT coalesce(max(move_id), 0) + 1 FROM trash_intents";
const HAS_PENDING: &str =
    "SELECT 1 FROM trash_intents WHERE asset_id = ?1 AND state = 'pending' LIMIT 1";
const PRESENT_FILES: &str = "
    SELECT library_id, rel_path FROM files WHERE asset_id = ?1 AND state = 'present'
     ORDER BY library_id, rel_path";
/// The files the asset's last trash moved (the done intents of its latest move with any),
/// to be undone by a restore. By move id: two moves may begin in one millisecond.
const LAST_TRASHED: &str = "
    SELECT library_id, from_path, to_path FROM trash_intents
     WHERE asset_id = ?1 AND action = 'trash' AND state = 'done'
       AND move_id = (SELECT max(move_id) FROM trash_intents
                       WHERE asset_id = ?1 AND action = 'trash' AND state = 'done')
     ORDER BY id";
const SETTLE: &str = "
    UPDATE trash_intents SET state = ?2, finished_at = ?3 WHERE id = ?1 AND state = 'pending'";
/// Intents of the same move (one begin call) that were committed.
const GROUP_DONE: &str = "SELECT count(*) FROM trash_intents WHERE move_id = ?1 AND state = 'done'";
const FILE_MISSING: &str = "
    UPDATE files SET state = 'missing', missing_since = ?3
     WHERE library_id = ?1 AND rel_path = ?2 AND state = 'present'";
const FILE_PRESENT: &str = "
    UPDATE files SET state = 'present', missing_since = NULL
     WHERE library_id = ?1 AND rel_path = ?2";

fn intent_from_row(r: &Row<'_>) -> rusqlite::Result<TrashIntent> {
    Ok(TrashIntent {
        id: r.get(0)?,
        asset_id: r.get(1)?,
        library_id: r.get(2)?,
        action: parse_col(r, 3, TrashAction::parse)?,
        from_path: r.get(4)?,
        to_path: r.get(5)?,
        state: parse_col(r, 6, IntentState::parse)?,
        created_at: r.get(7)?,
        move_id: r.get(8)?,
    })
}

fn refuse_if_pending(conn: &Connection, asset_id: i64) -> Result<(), StoreError> {
    let pending = conn
        .prepare_cached(HAS_PENDING)?
        .query_row([asset_id], |_| Ok(()))
        .optional()?;
    match pending {
        Some(()) => Err(StoreError::Conflict(format!(
            "asset {asset_id} is being moved already; finish or abort its pending intents"
        ))),
        None => Ok(()),
    }
}

fn insert(
    conn: &Connection,
    asset_id: i64,
    action: TrashAction,
    moves: Vec<(i64, Vec<u8>, Vec<u8>)>,
    now: Millis,
) -> Result<Vec<TrashIntent>, StoreError> {
    let move_id: i64 = conn
        .prepare_cached(NEXT_MOVE)?
        .query_row([], |r| r.get(0))?;
    let mut stmt = conn.prepare_cached(INSERT)?;
    moves
        .into_iter()
        .map(|(lib, from, to)| {
            Ok(stmt.query_row(
                params![asset_id, lib, action.as_str(), from, to, now, move_id],
                intent_from_row,
            )?)
        })
        .collect()
}

/// Flips the asset once its move is settled. Restores by id alone, so a sweep that won
/// the race makes this `Gone`, never an error.
fn flip(
    conn: &Connection,
    asset_id: i64,
    action: TrashAction,
    now: Millis,
) -> Result<MoveOutcome, StoreError> {
    match action {
        TrashAction::Trash => {
            let trashed = trash(conn, asset_id, TrashReason::User, now)?;
            Ok(if trashed || state(conn, asset_id)?.is_some() {
                MoveOutcome::Trashed
            } else {
                MoveOutcome::Gone
            })
        }
        TrashAction::Restore => Ok(if restore(conn, asset_id)? {
            MoveOutcome::Restored
        } else if state(conn, asset_id)?.is_some() {
            MoveOutcome::AlreadyLive
        } else {
            MoveOutcome::Gone
        }),
    }
}

/// Settles one intent as done or aborted; flips the asset when it was the last pending one
/// of its move and at least one of the move's intents was done.
fn settle(
    conn: &Connection,
    id: i64,
    done: bool,
    now: Millis,
) -> Result<Option<MoveOutcome>, StoreError> {
    let intent = conn
        .prepare_cached(GET)?
        .query_row([id], intent_from_row)
        .optional()?
        .ok_or_else(|| StoreError::NotFound(format!("no trash intent {id}")))?;
    if intent.state != IntentState::Pending {
        return Err(StoreError::Conflict(format!(
            "trash intent {id} is {} already",
            intent.state
        )));
    }
    let to = if done {
        IntentState::Done
    } else {
        IntentState::Aborted
    };
    conn.prepare_cached(SETTLE)?
        .execute(params![id, to.as_str(), now])?;
    if done {
        match intent.action {
            TrashAction::Trash => conn.prepare_cached(FILE_MISSING)?.execute(params![
                intent.library_id,
                intent.from_path,
                now
            ])?,
            TrashAction::Restore => conn
                .prepare_cached(FILE_PRESENT)?
                .execute(params![intent.library_id, intent.to_path])?,
        };
    }
    let still_pending = conn
        .prepare_cached(HAS_PENDING)?
        .query_row([intent.asset_id], |_| Ok(()))
        .optional()?
        .is_some();
    let group_done: i64 = conn
        .prepare_cached(GROUP_DONE)?
        .query_row([intent.move_id], |r| r.get(0))?;
    if still_pending || group_done == 0 {
        return Ok(None);
    }
    flip(conn, intent.asset_id, intent.action, now).map(Some)
}

impl Store {
    /// Starts the user's trash of a live asset: one pending intent per present file, each
    /// moving it to `.mediadex-trash/<asset id>/<path>` in its library. The caller moves the
    /// files, then commits each intent (or aborts it). An asset without present files is
    /// trashed at once and gets no intents.
    pub fn begin_trash(&self, asset_id: i64) -> Result<Vec<TrashIntent>, StoreError> {
        self.write(move |conn, now| {
            match state(conn, asset_id)? {
                None => return Err(StoreError::NotFound(format!("no asset {asset_id}"))),
                Some(true) => {
                    return Err(StoreError::Conflict(format!(
                        "asset {asset_id} is in the trash already"
                    )));
                }
                Some(false) => {}
            }
            refuse_if_pending(conn, asset_id)?;
            let files: Vec<(i64, Vec<u8>)> = conn
                .prepare_cached(PRESENT_FILES)?
                .query_map([asset_id], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?;
            if files.is_empty() {
                trash(conn, asset_id, TrashReason::User, now)?;
                return Ok(Vec::new());
            }
            let moves = files
                .into_iter()
                .map(|(lib, path)| {
                    let to = trash_path(asset_id, &path);
                    (lib, path, to)
                })
                .collect();
            insert(conn, asset_id, TrashAction::Trash, moves, now)
        })
    }

    /// Starts the restore of a trashed asset: one pending intent per file its last trash
    /// moved, moving it back. An asset trashed without moves (its files went missing) is
    /// restored at once and gets no intents. `NotFound` if the sweep deleted it already.
    pub fn begin_restore(&self, asset_id: i64) -> Result<Vec<TrashIntent>, StoreError> {
        self.write(move |conn, now| {
            match state(conn, asset_id)? {
                None => {
                    return Err(StoreError::NotFound(format!(
                        "asset {asset_id} is gone (the trash was emptied)"
                    )));
                }
                Some(false) => {
                    return Err(StoreError::Conflict(format!(
                        "asset {asset_id} is not in the trash"
                    )));
                }
                Some(true) => {}
            }
            refuse_if_pending(conn, asset_id)?;
            let moves: Vec<(i64, Vec<u8>, Vec<u8>)> = conn
                .prepare_cached(LAST_TRASHED)?
                .query_map([asset_id], |r| Ok((r.get(0)?, r.get(2)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?;
            if moves.is_empty() {
                restore(conn, asset_id)?;
                return Ok(Vec::new());
            }
            insert(conn, asset_id, TrashAction::Restore, moves, now)
        })
    }

    /// Commits one intent after its move happened: the file row follows (missing after a
    /// trash, present after a restore) and, when this was the move's last pending intent,
    /// the asset flips. Answers the flip's outcome then (`Gone` when the sweep won a race
    /// with a restore), `None` while other intents of the move are pending.
    pub fn commit_intent(&self, intent_id: i64) -> Result<Option<MoveOutcome>, StoreError> {
        self.write(move |conn, now| settle(conn, intent_id, true, now))
    }

    /// Gives an intent up (its move did not happen and will not). If other intents of the
    /// same move were committed, the asset still flips.
    pub fn abort_intent(&self, intent_id: i64) -> Result<Option<MoveOutcome>, StoreError> {
        self.write(move |conn, now| settle(conn, intent_id, false, now))
    }

    /// Intents begun and not settled, oldest first: replayed at start.
    pub fn pending_intents(&self) -> Result<Vec<TrashIntent>, StoreError> {
        self.read(|conn| {
            Ok(conn
                .prepare_cached(PENDING)?
                .query_map([], intent_from_row)?
                .collect::<Result<_, _>>()?)
        })
    }
}
