//! The reads and the repairs of `mediadex check` (issue 25; DESIGN.md section 6, the library
//! invariant): every file row of a library, the live assets, the files the latest trash of
//! each trashed asset put in its trash folder, the trash folder paths the journal names, the
//! unsettled moves no live move job carries on, and the stranded pending assets; and the
//! repairs that move no file, each one writer operation that re-checks what it repairs in its
//! own transaction: adopting a trash-folder file as a trashed asset with the done trash
//! intent a restore needs (or joining another copy to its trashed asset), publishing a
//! stranded asset (`check_publish_stranded`, beside `store::assets`' own publication), and
//! requeueing an orphaned move's job. The comparison with the disk is the caller's
//! (`ops::check`). A composition: the single-table reads and writes it needs are the
//! families' (`intents`, `files`, `assets`, `move_jobs`); it holds the statements that span
//! tables.

use super::assets::{LOCAL_OWNER, insert, trash_adopted};
use super::db::{Db, Pair, Row};
use super::move_jobs::MOVE_ATTEMPTS;
use super::rows::file_stamp;
use super::{Store, StoreError, files, intents, parse_at};
use crate::model::{
    Adopted, Adoption, CheckedFile, MOVE_JOB_KIND, OrphanedMove, StrandedAsset, TrashAction,
    TrashedFile, trash_place,
};
use std::collections::HashSet;

const FILES: &str = "
    SELECT f.rel_path, f.size, f.mtime_ns, f.dev, f.inode, f.asset_id, f.state = 'present',
           a.trashed_at IS NOT NULL
      FROM files f LEFT JOIN assets a ON a.id = f.asset_id
     WHERE f.library_id = ?1 ORDER BY f.rel_path";
/// What a restore of each trashed asset would move back (`store::trash`'s `LAST_TRASHED`):
/// the done intents of its latest trash, unless a later restore put them back already; an
/// asset with a move under way is left to its move.
const TRASHED_FILES: &str = "
    SELECT t.asset_id, t.library_id, t.from_path, t.to_path FROM trash_intents t
      JOIN assets a ON a.id = t.asset_id AND a.trashed_at IS NOT NULL
     WHERE t.action = 'trash' AND t.state = 'done'
       AND t.move_id = (SELECT max(move_id) FROM trash_intents u
                         WHERE u.asset_id = t.asset_id AND u.action = 'trash'
                           AND u.state = 'done')
       AND NOT EXISTS (SELECT 1 FROM trash_intents r
                        WHERE r.asset_id = t.asset_id AND r.action = 'restore'
                          AND r.state = 'done' AND r.move_id > t.move_id)
       AND NOT EXISTS (SELECT 1 FROM trash_intents p
                        WHERE p.asset_id = t.asset_id AND p.state = 'pending')
     ORDER BY t.asset_id, t.id";
/// Moves with pending intents and no queued or running job under their asset's move key
/// (a move is of one asset and one action: `min` picks them on either engine).
const ORPHANED: &str = "
    SELECT t.move_id, min(t.asset_id), min(t.action) FROM trash_intents t
     WHERE t.state = 'pending'
       AND NOT EXISTS (SELECT 1 FROM jobs j
                        WHERE j.unique_key = CAST(?1 AS TEXT) || ':' || t.asset_id
                          AND j.state IN ('queued', 'running'))
     GROUP BY t.move_id ORDER BY t.move_id";
/// A move job for an orphaned move, as migration 0007 queued the moves of an old journal:
/// due at once, claimed and carried on under a lease by the next worker or trash command.
/// The partial unique index makes it nothing when a live job holds the asset's key. A
/// pair: each engine builds the payload's JSON with its own function.
macro_rules! requeue_move {
    ($payload:literal) => {
        concat!(
            "
    INSERT INTO jobs (kind, unique_key, payload, max_attempts, run_at, created_at, updated_at)
    SELECT ?1, CAST(?1 AS TEXT) || ':' || asset_id, ",
            $payload,
            ", ?3, ?4, ?4, ?4
      FROM trash_intents WHERE move_id = ?2 AND state = 'pending' LIMIT 1
    ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND state IN ('queued', 'running')
    DO NOTHING"
        )
    };
}
const REQUEUE_MOVE: Pair = Pair {
    sqlite: requeue_move!("json_object('asset', asset_id, 'action', action, 'move', move_id)"),
    postgres: requeue_move!(
        "CAST(json_build_object('asset', asset_id, 'action', action, 'move', move_id) AS TEXT)"
    ),
};
/// A pending asset is stranded when its run is gone, or has ended while no run of its
/// library waits or runs (none is coming whose completion would publish it).
macro_rules! stranded {
    () => {
        "a.pending_run IS NOT NULL
         AND (r.id IS NULL
              OR (r.state NOT IN ('accepted', 'running')
                  AND NOT EXISTS (SELECT 1 FROM scan_runs w
                                   WHERE w.library_id = r.library_id
                                     AND w.state IN ('accepted', 'running'))))"
    };
}
const STRANDED: &str = concat!(
    "SELECT a.id, a.pending_run, r.state FROM assets a LEFT JOIN scan_runs r ON r.id = a.pending_run
     WHERE ",
    stranded!(),
    " ORDER BY a.id"
);
const STILL_STRANDED: &str = concat!(
    "SELECT EXISTS (SELECT 1 FROM assets a LEFT JOIN scan_runs r ON r.id = a.pending_run
                     WHERE a.id = ?1 AND ",
    stranded!(),
    ")"
);
/// Publishes a stranded asset: visible when a present file shows it, else into the trash as
/// missing (what a scan does with an asset no present file shows; the sweep takes it in
/// time). Answers whether it is live.
const PUBLISH_STRANDED: &str = "
    UPDATE assets SET pending_run = NULL,
           trashed_at = CASE WHEN EXISTS (SELECT 1 FROM files f WHERE f.asset_id = ?1
                                                              AND f.state = 'present')
                             THEN trashed_at ELSE coalesce(trashed_at, ?2) END,
           trash_reason = CASE WHEN EXISTS (SELECT 1 FROM files f WHERE f.asset_id = ?1
                                                                AND f.state = 'present')
                               THEN trash_reason ELSE coalesce(trash_reason, 'missing') END
     WHERE id = ?1
    RETURNING trashed_at IS NULL";
/// The asset of a checksum, and whether a trashed file may join it: trashed, published and
/// with no move under way. A pair: PostgreSQL must be told the parameter is bytes to match
/// the prefix index's expression.
macro_rules! find {
    ($checksum:literal) => {
        concat!(
            "
    SELECT id, trashed_at IS NOT NULL AND pending_run IS NULL
               AND NOT EXISTS (SELECT 1 FROM trash_intents t
                                WHERE t.asset_id = assets.id AND t.state = 'pending')
      FROM assets WHERE substr(checksum, 1, 8) = substr(",
            $checksum,
            ", 1, 8) AND checksum = ?2 AND owner = ?1"
        )
    };
}
const FIND: Pair = Pair {
    sqlite: find!("?2"),
    postgres: find!("CAST(?2 AS BYTEA)"),
};
fn trashed_file(r: &Row<'_>) -> Result<TrashedFile, StoreError> {
    Ok(TrashedFile {
        asset_id: r.get(0)?,
        library_id: r.get(1)?,
        from_path: r.get(2)?,
        to_path: r.get(3)?,
    })
}

/// The adoption's writes, once nothing else explains the file.
fn adopt(db: &Db<'_>, a: &Adoption, now: i64) -> Result<Adopted, StoreError> {
    if intents::journal_knows(db, a.library_id, &a.trash_path)? {
        return Ok(Adopted::Known);
    }
    let found: Option<(i64, bool)> =
        db.optional(db.pick(&FIND), args!(LOCAL_OWNER, &a.checksum[..]), |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    if let Some((id, false)) = found {
        return Ok(Adopted::Copy(id));
    }
    let row = files::previous(db, a.library_id, &a.from_path)?.map(|(_, asset)| asset);
    match (row, found) {
        (Some(Some(shown)), Some((id, _))) if shown == id => return Ok(Adopted::Copy(id)),
        (Some(_), _) => return Ok(Adopted::PlaceTaken),
        (None, _) => {}
    }
    if let Some((id, true)) = found {
        let latest = intents::latest_trash(db, id)?;
        record_trashed(db, id, a, latest, now)?;
        return Ok(Adopted::Joined(id));
    }
    let size = a.stamp.size;
    // No asset has the checksum (`found` is None here), in this transaction.
    let id = insert(db, &a.checksum, size, &a.facts, None, 0, now)?;
    trash_adopted(db, id, now)?;
    record_trashed(db, id, a, None, now)?;
    Ok(Adopted::New(id))
}

/// Adopts each file a completed full scan found unexplained in its trash folder, in the
/// completion's transaction; how many joined the trash.
pub(super) fn adopt_all(db: &Db<'_>, all: &[Adoption], now: i64) -> Result<u64, StoreError> {
    let mut n = 0;
    for a in all {
        n += u64::from(matches!(
            adopt(db, a, now)?,
            Adopted::New(_) | Adopted::Joined(_)
        ));
    }
    Ok(n)
}

/// The move id of a new adoption: above every move id issued and at least the one its
/// trash folder names (`<asset id>-<move id>`, `model::trash_place`), which the counter
/// then passes, so that no later move of this index is given a folder name the set-aside
/// index already used.
fn adopted_move(db: &Db<'_>, a: &Adoption) -> Result<i64, StoreError> {
    let next = intents::next_move(db)?;
    let named = trash_place(&a.trash_path).and_then(|p| p.move_id);
    let id = named.map_or(next, |m| m.max(next));
    intents::saw_move(db, id)?;
    Ok(id)
}

/// The file row and the done trash intent of an adopted file of asset `id`, in move
/// `move_id` (a new move when `None`).
fn record_trashed(
    db: &Db<'_>,
    id: i64,
    a: &Adoption,
    move_id: Option<i64>,
    now: i64,
) -> Result<(), StoreError> {
    files::insert_adopted(db, (a.library_id, &a.from_path), &a.stamp, id, now)?;
    let move_id = match move_id {
        Some(m) => m,
        None => adopted_move(db, a)?,
    };
    intents::adopt(
        db,
        (id, a.library_id, &a.from_path, &a.trash_path),
        move_id,
        now,
    )?;
    Ok(())
}

impl Store {
    /// Every file row of a library in path order, handed to `each` one at a time (a
    /// library of a million files is not held in memory).
    pub fn check_files(
        &self,
        library_id: i64,
        each: &mut dyn FnMut(CheckedFile),
    ) -> Result<(), StoreError> {
        self.read(|db| {
            db.each(FILES, args!(library_id), |r| {
                each(CheckedFile {
                    rel_path: r.get(0)?,
                    stamp: file_stamp(r, 1)?,
                    asset_id: r.get(5)?,
                    present: r.get(6)?,
                    trashed: r.get(7)?,
                });
                Ok(())
            })
        })
    }

    /// The files each trashed asset's latest trash put in its trash folder.
    pub fn check_trashed_files(&self) -> Result<Vec<TrashedFile>, StoreError> {
        self.read(|db| db.all(TRASHED_FILES, args!(), trashed_file))
    }

    /// The files the latest trash of `asset_id` put in its trash folder.
    pub fn check_trashed_files_of(&self, asset_id: i64) -> Result<Vec<TrashedFile>, StoreError> {
        self.read(|db| intents::trashed_files_of(db, asset_id, trashed_file))
    }

    /// The paths in a library's trash folder that the trash journal names.
    pub fn check_journal_paths(&self, library_id: i64) -> Result<HashSet<Vec<u8>>, StoreError> {
        self.read(|db| {
            Ok(intents::journal_paths(db, library_id)?
                .into_iter()
                .collect())
        })
    }

    /// The unsettled moves that no live move job carries on.
    pub fn check_orphaned_moves(&self) -> Result<Vec<OrphanedMove>, StoreError> {
        self.read(|db| {
            db.all(ORPHANED, args!(MOVE_JOB_KIND), |r| {
                Ok(OrphanedMove {
                    move_id: r.get(0)?,
                    asset_id: r.get(1)?,
                    action: parse_at(r, 2, TrashAction::parse)?,
                })
            })
        })
    }

    /// The pending assets no run is coming to publish.
    pub fn check_stranded(&self) -> Result<Vec<StrandedAsset>, StoreError> {
        self.read(|db| {
            db.all(STRANDED, args!(), |r| {
                Ok(StrandedAsset {
                    asset_id: r.get(0)?,
                    run_id: r.get(1)?,
                    run_state: r.get(2)?,
                })
            })
        })
    }

    /// Indexes a trash-folder file that nothing explains as a trashed asset (defect 12: the
    /// trash folders of an index that was set aside), in one transaction that first checks
    /// again that nothing explains it. See `Adopted` for what it can come to.
    pub fn check_adopt(&self, adoption: Adoption) -> Result<Adopted, StoreError> {
        self.write(move |db, now| adopt(db, &adoption, now))
    }

    /// Publishes a pending asset if it is still stranded (`check`'s own, until the scan's
    /// publication covers it). `None`: it was not stranded any more; `Some(live)`: published,
    /// live when a present file shows it, else in the trash as missing.
    pub fn check_publish_stranded(&self, asset_id: i64) -> Result<Option<bool>, StoreError> {
        self.write(move |db, now| {
            let stranded: bool = db.one(STILL_STRANDED, args!(asset_id), |r| r.get(0))?;
            if !stranded {
                return Ok(None);
            }
            db.optional(PUBLISH_STRANDED, args!(asset_id, now), |r| r.get(0))
        })
    }

    /// Queues a move job for an orphaned move, due at once. False when a live job holds its
    /// asset's key already or the move has no pending intent any more.
    pub fn check_requeue_move(&self, move_id: i64) -> Result<bool, StoreError> {
        self.write(move |db, now| {
            let n = db.execute(
                db.pick(&REQUEUE_MOVE),
                args!(MOVE_JOB_KIND, move_id, MOVE_ATTEMPTS, now),
            )?;
            Ok(n == 1)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FileStamp;
    use crate::store::asset_fixtures::{asset, library};
    use crate::store::db::tests::on_both_schemas;

    fn adoption(from: &str, trash: &str, checksum: u8) -> Adoption {
        Adoption {
            library_id: 1,
            from_path: from.as_bytes().to_vec(),
            trash_path: trash.as_bytes().to_vec(),
            stamp: FileStamp {
                size: 7,
                mtime_ns: 70,
                dev: 1,
                inode: 700,
            },
            checksum: [checksum; 32],
            facts: crate::model::MediaFacts::default(),
        }
    }

    fn checked_files(db: &Db<'_>) -> Result<Vec<(String, bool, bool)>, StoreError> {
        db.all(FILES, args!(1), |r| {
            let path: Vec<u8> = r.get(0)?;
            Ok((String::from_utf8_lossy(&path).into(), r.get(6)?, r.get(7)?))
        })
    }

    fn a_trash_file_is_adopted_once_and_its_copy_joins_it(db: &Db<'_>) -> Result<(), StoreError> {
        library(db, 1)?;
        let first = adoption("a.jpg", ".mediadex-trash/1-40/a.jpg", 9);
        let Adopted::New(id) = adopt(db, &first, 100)? else {
            panic!("the first file of a checksum is a new asset");
        };
        assert_eq!(adopt(db, &first, 101)?, Adopted::Known);
        let copy = adoption("b.jpg", ".mediadex-trash/1-40/b.jpg", 9);
        assert_eq!(adopt(db, &copy, 102)?, Adopted::Joined(id));
        assert_eq!(
            checked_files(db)?,
            [("a.jpg".into(), false, true), ("b.jpg".into(), false, true)]
        );
        let trashed = db.all(TRASHED_FILES, args!(), trashed_file)?;
        assert_eq!(trashed.len(), 2);
        assert!(trashed.iter().all(|t| t.asset_id == id));
        // The folder's move id (40) is passed: no later move is given its name again.
        assert!(intents::next_move(db)? > 40);
        Ok(())
    }

    fn a_file_that_another_asset_shows_is_a_copy_of_it(db: &Db<'_>) -> Result<(), StoreError> {
        library(db, 1)?;
        asset(db, 5, "image/jpeg", None)?;
        let live = adoption("c.jpg", ".mediadex-trash/5-1/c.jpg", 5);
        assert_eq!(adopt(db, &live, 100)?, Adopted::Copy(5));
        let found = db.optional(db.pick(&FIND), args!(LOCAL_OWNER, &[5u8; 32][..]), |r| {
            Ok((r.get::<i64>(0)?, r.get::<bool>(1)?))
        })?;
        assert_eq!(
            found,
            Some((5, false)),
            "a live asset takes no trashed file"
        );
        Ok(())
    }

    fn an_orphaned_move_is_queued_again_once(db: &Db<'_>) -> Result<(), StoreError> {
        library(db, 1)?;
        asset(db, 4, "image/jpeg", None)?;
        db.execute(
            "INSERT INTO trash_intents (asset_id, library_id, action, from_path, to_path,
                                        created_at, move_id)
             VALUES (4, 1, 'trash', ?1, ?2, 0, 8), (4, 1, 'trash', ?3, ?4, 0, 8)",
            args!(&b"a"[..], &b"t/a"[..], &b"b"[..], &b"t/b"[..]),
        )?;
        let orphaned = |db: &Db<'_>| {
            db.all(ORPHANED, args!(MOVE_JOB_KIND), |r| {
                Ok((
                    r.get::<i64>(0)?,
                    r.get::<i64>(1)?,
                    parse_at(r, 2, TrashAction::parse)?,
                ))
            })
        };
        assert_eq!(orphaned(db)?, [(8, 4, TrashAction::Trash)]);
        let requeue = |db: &Db<'_>| {
            db.execute(
                db.pick(&REQUEUE_MOVE),
                args!(MOVE_JOB_KIND, 8, MOVE_ATTEMPTS, 500),
            )
        };
        assert_eq!(requeue(db)?, 1);
        assert_eq!(requeue(db)?, 0, "a live job holds the asset's key");
        assert_eq!(orphaned(db)?, []);
        let payload: String = db.one("SELECT payload FROM jobs", args!(), |r| r.get(0))?;
        let payload: serde_json::Value =
            serde_json::from_str(&payload).map_err(|e| StoreError::Conflict(e.to_string()))?;
        assert_eq!(
            payload,
            serde_json::json!({"asset": 4, "action": "trash", "move": 8})
        );
        Ok(())
    }

    fn a_stranded_asset_is_published_once(db: &Db<'_>) -> Result<(), StoreError> {
        library(db, 1)?;
        asset(db, 6, "image/jpeg", None)?;
        db.execute("UPDATE assets SET pending_run = 99 WHERE id = 6", args!())?;
        let stranded = db.all(STRANDED, args!(), |r| {
            Ok((
                r.get::<i64>(0)?,
                r.get::<i64>(1)?,
                r.get::<Option<String>>(2)?,
            ))
        })?;
        assert_eq!(stranded, [(6, 99, None)], "its run is gone");
        let still = |db: &Db<'_>| db.one(STILL_STRANDED, args!(6), |r| r.get::<bool>(0));
        assert!(still(db)?);
        let live: Option<bool> = db.optional(PUBLISH_STRANDED, args!(6, 300), |r| r.get(0))?;
        assert_eq!(
            live,
            Some(false),
            "no present file shows it: into the trash"
        );
        assert!(!still(db)?);
        Ok(())
    }

    on_both_schemas!(
        a_trash_file_is_adopted_once_and_its_copy_joins_it,
        a_file_that_another_asset_shows_is_a_copy_of_it,
        an_orphaned_move_is_queued_again_once,
        a_stranded_asset_is_published_once,
    );
}
