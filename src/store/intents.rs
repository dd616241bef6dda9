//! The trash journal's tables (a family): `trash_intents`, one row per file a move takes to
//! the trash folder or brings back, and `move_counter`, the number the next move gets. What
//! a move is and when each row is written is `trash`'s (a composition); `check`'s repairs
//! adopt and list rows here too.

use super::db::{Db, Pair, Row};
use super::rows::{stamp_at, stamp_cols};
use super::{StoreError, parse_at};
use crate::model::{FileStamp, IntentState, Millis, TrashAction, TrashIntent};

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
/// Scalar `max` is SQLite's; PostgreSQL's is `greatest`.
const SEEN_MOVE: Pair = Pair {
    sqlite: "UPDATE move_counter SET last = max(last, ?1)",
    postgres: "UPDATE move_counter SET last = greatest(last, ?1)",
};
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

pub(super) fn intent_from_row(r: &Row<'_>) -> Result<TrashIntent, StoreError> {
    Ok(TrashIntent {
        id: r.get(0)?,
        asset_id: r.get(1)?,
        library_id: r.get(2)?,
        action: parse_at(r, 3, TrashAction::parse)?,
        from_path: r.get(4)?,
        to_path: r.get(5)?,
        state: parse_at(r, 6, IntentState::parse)?,
        created_at: r.get(7)?,
        move_id: r.get(8)?,
        stamp: stamp_at(r, 9)?,
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
    db: &Db<'_>,
    (action, move_id): (TrashAction, i64),
    p: Planned,
    now: Millis,
) -> Result<TrashIntent, StoreError> {
    let [size, mtime, dev, inode] = stamp_cols(p.stamp);
    let row = args![
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
    db.one(INSERT, row, intent_from_row)
}

/// Intent `id` of move `move_id`.
pub(super) fn get(db: &Db<'_>, id: i64, move_id: i64) -> Result<Option<TrashIntent>, StoreError> {
    db.optional(GET, args!(id, move_id), intent_from_row)
}

/// Move `move_id`'s intents as they stand now, in their order.
pub(super) fn of_move(db: &Db<'_>, move_id: i64) -> Result<Vec<TrashIntent>, StoreError> {
    db.all(OF_MOVE, args!(move_id), intent_from_row)
}

/// The id of a move begun in this transaction: above every move id ever issued.
pub(super) fn next_move(db: &Db<'_>) -> Result<i64, StoreError> {
    db.one(NEXT_MOVE, args!(), |r| r.get(0))
}

/// Records that move number `id` is taken (an adopted trash folder names it): no later
/// move is given it or one below.
pub(super) fn saw_move(db: &Db<'_>, id: i64) -> Result<(), StoreError> {
    db.execute(db.pick(&SEEN_MOVE), args!(id))?;
    Ok(())
}

/// Whether the asset has an intent not yet settled.
pub(super) fn has_pending(db: &Db<'_>, asset_id: i64) -> Result<bool, StoreError> {
    Ok(db
        .optional(HAS_PENDING, args!(asset_id), |_| Ok(()))?
        .is_some())
}

/// Settles intent `id` of move `move_id` as `to`, unless it was aborted already.
pub(super) fn settle(
    db: &Db<'_>,
    (id, move_id): (i64, i64),
    to: IntentState,
    now: Millis,
) -> Result<(), StoreError> {
    db.execute(SETTLE, args!(id, move_id, to.as_str(), now))?;
    Ok(())
}

/// How many intents of the move are not aborted: a rollback's end needs none.
pub(super) fn unsettled(db: &Db<'_>, move_id: i64) -> Result<i64, StoreError> {
    db.one(UNSETTLED, args!(move_id), |r| r.get(0))
}

/// How many intents of the move are pending: a forward end needs none.
pub(super) fn pending_in(db: &Db<'_>, move_id: i64) -> Result<i64, StoreError> {
    db.one(MOVE_PENDING, args!(move_id), |r| r.get(0))
}

/// How many files of its own asset (`asset_id`) the move put where they go.
pub(super) fn own_done(db: &Db<'_>, move_id: i64, asset_id: i64) -> Result<i64, StoreError> {
    db.one(OWN_DONE, args!(move_id, asset_id), |r| r.get(0))
}

/// The assets whose files the move moved besides `asset_id`, its own.
pub(super) fn moved_followers(
    db: &Db<'_>,
    move_id: i64,
    asset_id: i64,
) -> Result<Vec<i64>, StoreError> {
    db.all(MOVED_FOLLOWERS, args!(move_id, asset_id), |r| r.get(0))
}

/// The files the latest trash of `asset_id` put in its trash folder, each decoded by `row`
/// (asset, library, from, to).
pub(super) fn trashed_files_of<T>(
    db: &Db<'_>,
    asset_id: i64,
    row: impl FnMut(&Row<'_>) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    db.all(TRASHED_FILES_OF, args!(asset_id), row)
}

/// Every trash-folder path of the library the journal has named.
pub(super) fn journal_paths(db: &Db<'_>, library_id: i64) -> Result<Vec<Vec<u8>>, StoreError> {
    db.all(JOURNAL_PATHS, args!(library_id), |r| r.get(0))
}

/// Whether the journal names trash-folder path `path` of the library.
pub(super) fn journal_knows(db: &Db<'_>, library_id: i64, path: &[u8]) -> Result<bool, StoreError> {
    let found = db.optional(JOURNAL_KNOWS, args!(library_id, path), |_| Ok(()))?;
    Ok(found.is_some())
}

/// The asset's latest done trash's move id, if it has one.
pub(super) fn latest_trash(db: &Db<'_>, asset_id: i64) -> Result<Option<i64>, StoreError> {
    db.one(LATEST_TRASH, args!(asset_id), |r| r.get(0))
}

/// Records a trash-folder file adopted by a repair as done by move `move_id`:
/// (asset, library, from, to).
pub(super) fn adopt(
    db: &Db<'_>,
    (asset_id, library_id, from, to): (i64, i64, &[u8], &[u8]),
    move_id: i64,
    now: Millis,
) -> Result<(), StoreError> {
    db.execute(ADOPTED, args!(asset_id, library_id, from, to, now, move_id))?;
    Ok(())
}

/// Intents begun and not settled, oldest first.
fn pending(db: &Db<'_>) -> Result<Vec<TrashIntent>, StoreError> {
    db.all(PENDING, args!(), intent_from_row)
}

impl super::Store {
    /// Intents begun and not settled, oldest first.
    pub fn pending_intents(&self) -> Result<Vec<TrashIntent>, StoreError> {
        self.read(pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::db::tests::on_both_schemas;

    fn a_library(db: &Db<'_>) -> Result<i64, StoreError> {
        db.one(
            "INSERT INTO libraries (name, root, created_at) VALUES ('l', '/l', 1) RETURNING id",
            args!(),
            |r| r.get(0),
        )
    }

    fn planned(asset_id: i64, library_id: i64, from: &str, to: &str) -> Planned {
        Planned {
            asset_id,
            library_id,
            from: from.as_bytes().to_vec(),
            to: to.as_bytes().to_vec(),
            stamp: None,
        }
    }

    fn a_moves_intents_are_written_settled_and_counted(db: &Db<'_>) -> Result<(), StoreError> {
        let lib = a_library(db)?;
        let stamp = FileStamp {
            size: 3,
            mtime_ns: -5,
            dev: u64::MAX,
            inode: 9,
        };
        let own = Planned {
            stamp: Some(stamp),
            ..planned(1, lib, "a.jpg", ".trash/1/a.jpg")
        };
        let first = insert(db, (TrashAction::Trash, 4), own, 10)?;
        assert_eq!(
            (first.state, first.stamp, first.created_at),
            (IntentState::Pending, Some(stamp), 10)
        );
        let follower = insert(
            db,
            (TrashAction::Trash, 4),
            planned(2, lib, "a.raw", ".trash/1/a.raw"),
            10,
        )?;
        assert_eq!(get(db, first.id, 4)?, Some(first.clone()));
        assert_eq!(get(db, first.id, 5)?, None);
        assert_eq!(of_move(db, 4)?, vec![first.clone(), follower.clone()]);
        assert_eq!(pending(db)?.len(), 2);
        assert!(has_pending(db, 1)?);
        assert_eq!((pending_in(db, 4)?, unsettled(db, 4)?), (2, 2));
        settle(db, (first.id, 4), IntentState::Done, 11)?;
        settle(db, (follower.id, 4), IntentState::Done, 11)?;
        assert!(!has_pending(db, 1)?);
        assert_eq!((own_done(db, 4, 1)?, own_done(db, 4, 2)?), (1, 1));
        assert_eq!(moved_followers(db, 4, 1)?, vec![2]);
        settle(db, (first.id, 4), IntentState::Aborted, 12)?;
        // An aborted intent stays aborted.
        settle(db, (first.id, 4), IntentState::Done, 13)?;
        assert_eq!(
            get(db, first.id, 4)?.map(|i| i.state),
            Some(IntentState::Aborted)
        );
        assert_eq!((pending_in(db, 4)?, unsettled(db, 4)?), (0, 1));
        assert_eq!(pending(db)?, vec![]);
        Ok(())
    }

    fn move_numbers_only_rise(db: &Db<'_>) -> Result<(), StoreError> {
        let first = next_move(db)?;
        assert_eq!(next_move(db)?, first + 1);
        saw_move(db, first + 10)?;
        assert_eq!(next_move(db)?, first + 11);
        saw_move(db, 0)?;
        assert_eq!(next_move(db)?, first + 12);
        Ok(())
    }

    fn the_journal_names_its_trash_paths_and_adopted_files(db: &Db<'_>) -> Result<(), StoreError> {
        let lib = a_library(db)?;
        assert_eq!(latest_trash(db, 1)?, None);
        adopt(db, (1, lib, b"a.jpg", b".trash/3/a.jpg"), 3, 20)?;
        adopt(db, (1, lib, b"b.jpg", b".trash/3/b.jpg"), 3, 20)?;
        adopt(db, (1, lib, b"a.jpg", b".trash/2/a.jpg"), 2, 20)?;
        let back = insert(
            db,
            (TrashAction::Restore, 5),
            planned(7, lib, ".trash/5/c", "c"),
            21,
        )?;
        assert_eq!(back.action, TrashAction::Restore);
        assert_eq!(latest_trash(db, 1)?, Some(3));
        let files = trashed_files_of(db, 1, |r| {
            Ok((
                r.get::<i64>(0)?,
                r.get::<i64>(1)?,
                r.get::<Vec<u8>>(2)?,
                r.get::<Vec<u8>>(3)?,
            ))
        })?;
        assert_eq!(
            files,
            vec![
                (1, lib, b"a.jpg".to_vec(), b".trash/3/a.jpg".to_vec()),
                (1, lib, b"b.jpg".to_vec(), b".trash/3/b.jpg".to_vec()),
            ]
        );
        let mut paths = journal_paths(db, lib)?;
        paths.sort();
        let want: Vec<&[u8]> = vec![
            b".trash/2/a.jpg",
            b".trash/3/a.jpg",
            b".trash/3/b.jpg",
            b".trash/5/c",
        ];
        assert_eq!(paths, want);
        assert!(journal_knows(db, lib, b".trash/5/c")?);
        assert!(journal_knows(db, lib, b".trash/2/a.jpg")?);
        assert!(!journal_knows(db, lib, b"c")?);
        assert!(!journal_knows(db, lib + 1, b".trash/2/a.jpg")?);
        Ok(())
    }

    on_both_schemas!(
        a_moves_intents_are_written_settled_and_counted,
        move_numbers_only_rise,
        the_journal_names_its_trash_paths_and_adopted_files,
    );
}
