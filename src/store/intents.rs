//! The trash journal's tables (a family): `trash_intents`, one row per file a move takes to
//! the trash folder or brings back, and `move_counter`, the number the next move gets. What
//! a move is and when each row is written is `trash`'s (a composition); `check`'s repairs
//! adopt and list rows here too.

use super::db::on_lite;
use super::rows::{stamp_at, stamp_cols};
use super::{StoreError, parse_col};
use crate::model::{FileStamp, IntentState, Millis, TrashAction, TrashIntent};
use rusqlite::{Connection, OptionalExtension, Row, params};

macro_rules! intent_cols {
    () => {
        "id, asset_id, library_id, action, from_path, to_path, state, created_at, move_id,
         size, mtime_ns, dev, inode"
    };
}
const INSERT: &str = concat!(
    "INSERT INTO trash_intents (asset_id, library_id, action, from_path, to_path, created_at,
                                move_id, size, mtime_ns, dev, inode)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) RETURNING ",
    intent_cols!()
);
const GET: &str = concat!(
    "SELECT ",
    intent_cols!(),
    " FROM trash_intents WHERE id = ?1 AND move_id = ?2"
);
const OF_MOVE: &str = concat!(
    "SELECT ",
    intent_cols!(),
    " FROM trash_intents WHERE move_id = ?1 ORDER BY id"
);
/// A move's intents together, oldest move first.
const PENDING: &str = concat!(
    "SELECT ",
    intent_cols!(),
    " FROM trash_intents WHERE state = 'pending' ORDER BY move_id, id"
);
/// One number per begin call, above every move id in the journal (old rows included).
/// The next move number (migration 0023): never one issued before, whatever rows a library's
/// removal took from the journal.
const NEXT_MOVE: &str = "UPDATE move_counter SET last = last + 1 RETURNING last";
/// Raises the counter to at least ?1, a number a trash folder names.
const SEEN_MOVE: &str = "UPDATE move_counter SET last = max(last, ?1)";
const HAS_PENDING: &str =
    "SELECT 1 FROM trash_intents WHERE asset_id = ?1 AND state = 'pending' LIMIT 1";
const SETTLE: &str = "
    UPDATE trash_intents SET state = ?3, finished_at = ?4
     WHERE id = ?1 AND move_id = ?2 AND state IN ('pending', 'done')";
const UNSETTLED: &str =
    "SELECT count(*) FROM trash_intents WHERE move_id = ?1 AND state <> 'aborted'";
const MOVE_PENDING: &str =
    "SELECT count(*) FROM trash_intents WHERE move_id = ?1 AND state = 'pending'";
/// The other assets whose files move ?1 moved (its followers).
const MOVED_FOLLOWERS: &str = "
    SELECT DISTINCT asset_id FROM trash_intents
     WHERE move_id = ?1 AND asset_id <> ?2 AND state = 'done'";
/// The intents of a move that put a file of its own asset (?2) where it goes: a follower's
/// file put back (a stack's RAW) is not the photo's (finding 19).
const OWN_DONE: &str = "
    SELECT count(*) FROM trash_intents WHERE move_id = ?1 AND asset_id = ?2 AND state = 'done'";
/// The files the latest trash of one asset put in its trash folder, whatever the asset is
/// now (a live asset's file may have stayed there: a restore that moved nothing).
const TRASHED_FILES_OF: &str = "
    SELECT asset_id, library_id, from_path, to_path FROM trash_intents
     WHERE asset_id = ?1 AND action = 'trash' AND state = 'done'
       AND move_id = (SELECT max(move_id) FROM trash_intents
                       WHERE asset_id = ?1 AND action = 'trash' AND state = 'done')
     ORDER BY id";
/// Every path in a library's trash folder the journal has ever named, in any state: such a
/// file is the index's (the asset checks tell whether it is where it should be).
const JOURNAL_PATHS: &str = "
    SELECT to_path FROM trash_intents WHERE library_id = ?1 AND action = 'trash'
    UNION SELECT from_path FROM trash_intents WHERE library_id = ?1 AND action = 'restore'";
const JOURNAL_KNOWS: &str = "
    SELECT 1 FROM trash_intents
     WHERE library_id = ?1 AND ((action = 'trash' AND to_path = ?2)
                                OR (action = 'restore' AND from_path = ?2)) LIMIT 1";
/// The move a file joins: the asset's latest done trash, the one a restore reads.
const LATEST_TRASH: &str = "
    SELECT max(move_id) FROM trash_intents
     WHERE asset_id = ?1 AND action = 'trash' AND state = 'done'";
/// The done trash intent of the move that put the file in the trash folder: what a restore
/// reads to move it back (`store::trash`'s `LAST_TRASHED`).
const ADOPTED: &str = "
    INSERT INTO trash_intents (asset_id, library_id, action, from_path, to_path, state,
                               created_at, finished_at, move_id)
    VALUES (?1, ?2, 'trash', ?3, ?4, 'done', ?5, ?5, ?6)";

pub(super) fn intent_from_row(r: &Row<'_>) -> rusqlite::Result<TrashIntent> {
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
        stamp: on_lite(r, |r| stamp_at(r, 9))?,
    })
}

/// One file a move takes: an intent before it has an id.
pub(super) struct Planned {
    pub(super) asset_id: i64,
    pub(super) library_id: i64,
    pub(super) from: Vec<u8>,
    pub(super) to: Vec<u8>,
    pub(super) stamp: Option<FileStamp>,
}

/// Writes one intent of move `move_id` (its asset's: the move's own, or one following it),
/// with the stamp its file had when the move began.
pub(super) fn insert(
    conn: &Connection,
    (action, move_id): (TrashAction, i64),
    p: Planned,
    now: Millis,
) -> Result<TrashIntent, StoreError> {
    let [size, mtime, dev, inode] = stamp_cols(p.stamp);
    let row = params![
        p.asset_id,
        p.library_id,
        action.as_str(),
        p.from,
        p.to,
        now,
        move_id,
        size,
        mtime,
        dev,
        inode
    ];
    Ok(conn
        .prepare_cached(INSERT)?
        .query_row(row, intent_from_row)?)
}

/// Intent `id` of move `move_id`.
pub(super) fn get(
    conn: &Connection,
    id: i64,
    move_id: i64,
) -> Result<Option<TrashIntent>, StoreError> {
    Ok(conn
        .prepare_cached(GET)?
        .query_row(params![id, move_id], intent_from_row)
        .optional()?)
}

/// Move `move_id`'s intents as they stand now, in their order.
pub(super) fn of_move(conn: &Connection, move_id: i64) -> Result<Vec<TrashIntent>, StoreError> {
    Ok(conn
        .prepare_cached(OF_MOVE)?
        .query_map([move_id], intent_from_row)?
        .collect::<Result<_, _>>()?)
}

/// The id of a move begun in this transaction: above every move id ever issued.
pub(super) fn next_move(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn
        .prepare_cached(NEXT_MOVE)?
        .query_row([], |r| r.get(0))?)
}

/// Records that move number `id` is taken (an adopted trash folder names it): no later
/// move is given it or one below.
pub(super) fn saw_move(conn: &Connection, id: i64) -> Result<(), StoreError> {
    conn.prepare_cached(SEEN_MOVE)?.execute([id])?;
    Ok(())
}

/// Whether the asset has an intent not yet settled.
pub(super) fn has_pending(conn: &Connection, asset_id: i64) -> Result<bool, StoreError> {
    super::answers(conn, HAS_PENDING, [asset_id])
}

/// Settles intent `id` of move `move_id` as `to`, unless it was aborted already.
pub(super) fn settle(
    conn: &Connection,
    (id, move_id): (i64, i64),
    to: IntentState,
    now: Millis,
) -> Result<(), StoreError> {
    conn.prepare_cached(SETTLE)?
        .execute(params![id, move_id, to.as_str(), now])?;
    Ok(())
}

fn count(conn: &Connection, sql: &str, p: impl rusqlite::Params) -> Result<i64, StoreError> {
    Ok(conn.prepare_cached(sql)?.query_row(p, |r| r.get(0))?)
}

/// How many intents of the move are not aborted: a rollback's end needs none.
pub(super) fn unsettled(conn: &Connection, move_id: i64) -> Result<i64, StoreError> {
    count(conn, UNSETTLED, [move_id])
}

/// How many intents of the move are pending: a forward end needs none.
pub(super) fn pending_in(conn: &Connection, move_id: i64) -> Result<i64, StoreError> {
    count(conn, MOVE_PENDING, [move_id])
}

/// How many files of its own asset (`asset_id`) the move put where they go.
pub(super) fn own_done(conn: &Connection, move_id: i64, asset_id: i64) -> Result<i64, StoreError> {
    count(conn, OWN_DONE, params![move_id, asset_id])
}

/// The assets whose files the move moved besides `asset_id`, its own.
pub(super) fn moved_followers(
    conn: &Connection,
    move_id: i64,
    asset_id: i64,
) -> Result<Vec<i64>, StoreError> {
    Ok(conn
        .prepare_cached(MOVED_FOLLOWERS)?
        .query_map(params![move_id, asset_id], |r| r.get(0))?
        .collect::<Result<_, _>>()?)
}

/// The files the latest trash of `asset_id` put in its trash folder, each decoded by `row`
/// (asset, library, from, to).
pub(super) fn trashed_files_of<T>(
    conn: &Connection,
    asset_id: i64,
    row: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>, StoreError> {
    Ok(conn
        .prepare_cached(TRASHED_FILES_OF)?
        .query_map([asset_id], row)?
        .collect::<Result<_, _>>()?)
}

/// Every trash-folder path of the library the journal has named.
pub(super) fn journal_paths(
    conn: &Connection,
    library_id: i64,
) -> Result<Vec<Vec<u8>>, StoreError> {
    Ok(conn
        .prepare_cached(JOURNAL_PATHS)?
        .query_map([library_id], |r| r.get(0))?
        .collect::<Result<_, _>>()?)
}

/// Whether the journal names trash-folder path `path` of the library.
pub(super) fn journal_knows(
    conn: &Connection,
    library_id: i64,
    path: &[u8],
) -> Result<bool, StoreError> {
    super::answers(conn, JOURNAL_KNOWS, params![library_id, path])
}

/// The asset's latest done trash's move id, if it has one.
pub(super) fn latest_trash(conn: &Connection, asset_id: i64) -> Result<Option<i64>, StoreError> {
    Ok(conn
        .prepare_cached(LATEST_TRASH)?
        .query_row([asset_id], |r| r.get(0))?)
}

/// Records a trash-folder file adopted by a repair as done by move `move_id`:
/// (asset, library, from, to).
pub(super) fn adopt(
    conn: &Connection,
    (asset_id, library_id, from, to): (i64, i64, &[u8], &[u8]),
    move_id: i64,
    now: Millis,
) -> Result<(), StoreError> {
    conn.prepare_cached(ADOPTED)?
        .execute(params![asset_id, library_id, from, to, now, move_id])?;
    Ok(())
}

impl super::Store {
    /// Intents begun and not settled, oldest first.
    pub fn pending_intents(&self) -> Result<Vec<TrashIntent>, StoreError> {
        self.read_lite(|conn| {
            Ok(conn
                .prepare_cached(PENDING)?
                .query_map([], intent_from_row)?
                .collect::<Result<_, _>>()?)
        })
    }
}
