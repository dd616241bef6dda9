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
use super::db::Db;
use super::db::on_lite;
use super::move_jobs::MOVE_ATTEMPTS;
use super::rows::file_stamp;
use super::{Store, StoreError, files, intents, parse_col};
use crate::model::{
    Adopted, Adoption, CheckedFile, MOVE_JOB_KIND, OrphanedMove, StrandedAsset, TrashAction,
    TrashedFile, trash_place,
};
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::HashSet;

const FILES: &str = "
    SELECT f.rel_path, f.size, f.mtime_ns, f.dev, f.inode, f.asset_id, f.state = 'present',
           coalesce(a.trashed_at IS NOT NULL, 0)
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
/// Moves with pending intents and no queued or running job under their asset's move key.
const ORPHANED: &str = "
    SELECT t.move_id, t.asset_id, t.action FROM trash_intents t
     WHERE t.state = 'pending'
       AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.unique_key = ?1 || ':' || t.asset_id
                                              AND j.state IN ('queued', 'running'))
     GROUP BY t.move_id ORDER BY t.move_id";
/// A move job for an orphaned move, as migration 0007 queued the moves of an old journal:
/// due at once, claimed and carried on under a lease by the next worker or trash command.
/// The partial unique index makes it nothing when a live job holds the asset's key.
const REQUEUE_MOVE: &str = "
    INSERT INTO jobs (kind, unique_key, payload, max_attempts, run_at, created_at, updated_at)
    SELECT ?1, ?1 || ':' || asset_id,
           json_object('asset', asset_id, 'action', action, 'move', move_id), ?3, ?4, ?4, ?4
      FROM trash_intents WHERE move_id = ?2 AND state = 'pending' GROUP BY move_id
    ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND state IN ('queued', 'running')
    DO NOTHING";
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
/// with no move under way.
const FIND: &str = "
    SELECT id, trashed_at IS NOT NULL AND pending_run IS NULL
               AND NOT EXISTS (SELECT 1 FROM trash_intents t
                                WHERE t.asset_id = assets.id AND t.state = 'pending')
      FROM assets WHERE substr(checksum, 1, 8) = substr(?2, 1, 8) AND checksum = ?2
                    AND owner = ?1";
fn trashed_file(r: &super::db::Row<'_>) -> Result<TrashedFile, StoreError> {
    Ok(TrashedFile {
        asset_id: r.get(0)?,
        library_id: r.get(1)?,
        from_path: r.get(2)?,
        to_path: r.get(3)?,
    })
}

/// The adoption's writes, once nothing else explains the file.
fn adopt(conn: &Connection, a: &Adoption, now: i64) -> Result<Adopted, StoreError> {
    if intents::journal_knows(&Db::sqlite(conn), a.library_id, &a.trash_path)? {
        return Ok(Adopted::Known);
    }
    let find = || -> Result<Option<(i64, bool)>, StoreError> {
        Ok(conn
            .prepare_cached(FIND)?
            .query_row(params![LOCAL_OWNER, &a.checksum[..]], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?)
    };
    let found = find()?;
    if let Some((id, false)) = found {
        return Ok(Adopted::Copy(id));
    }
    let row =
        files::previous(&Db::sqlite(conn), a.library_id, &a.from_path)?.map(|(_, asset)| asset);
    match (row, found) {
        (Some(Some(shown)), Some((id, _))) if shown == id => return Ok(Adopted::Copy(id)),
        (Some(_), _) => return Ok(Adopted::PlaceTaken),
        (None, _) => {}
    }
    if let Some((id, true)) = found {
        let latest = intents::latest_trash(&Db::sqlite(conn), id)?;
        record_trashed(conn, id, a, latest, now)?;
        return Ok(Adopted::Joined(id));
    }
    let size = a.stamp.size;
    // No asset has the checksum (`found` is None here), in this transaction.
    let id = insert(&Db::sqlite(conn), &a.checksum, size, &a.facts, None, 0, now)?;
    trash_adopted(&Db::sqlite(conn), id, now)?;
    record_trashed(conn, id, a, None, now)?;
    Ok(Adopted::New(id))
}

/// Adopts each file a completed full scan found unexplained in its trash folder, in the
/// completion's transaction; how many joined the trash.
pub(super) fn adopt_all(conn: &Connection, all: &[Adoption], now: i64) -> Result<u64, StoreError> {
    let mut n = 0;
    for a in all {
        n += u64::from(matches!(
            adopt(conn, a, now)?,
            Adopted::New(_) | Adopted::Joined(_)
        ));
    }
    Ok(n)
}

/// The move id of a new adoption: above every move id issued and at least the one its
/// trash folder names (`<asset id>-<move id>`, `model::trash_place`), which the counter
/// then passes, so that no later move of this index is given a folder name the set-aside
/// index already used.
fn adopted_move(conn: &Connection, a: &Adoption) -> Result<i64, StoreError> {
    let next = intents::next_move(&Db::sqlite(conn))?;
    let named = trash_place(&a.trash_path).and_then(|p| p.move_id);
    let id = named.map_or(next, |m| m.max(next));
    intents::saw_move(&Db::sqlite(conn), id)?;
    Ok(id)
}

/// The file row and the done trash intent of an adopted file of asset `id`, in move
/// `move_id` (a new move when `None`).
fn record_trashed(
    conn: &Connection,
    id: i64,
    a: &Adoption,
    move_id: Option<i64>,
    now: i64,
) -> Result<(), StoreError> {
    files::insert_adopted(
        &Db::sqlite(conn),
        (a.library_id, &a.from_path),
        &a.stamp,
        id,
        now,
    )?;
    let move_id = match move_id {
        Some(m) => m,
        None => adopted_move(conn, a)?,
    };
    intents::adopt(
        &Db::sqlite(conn),
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
        self.read_lite(|conn| {
            let mut stmt = conn.prepare(FILES)?;
            let rows = stmt.query_map([library_id], |r| {
                Ok(CheckedFile {
                    rel_path: r.get(0)?,
                    stamp: on_lite(r, |r| file_stamp(r, 1))?,
                    asset_id: r.get(5)?,
                    present: r.get(6)?,
                    trashed: r.get(7)?,
                })
            })?;
            for row in rows {
                each(row?);
            }
            Ok(())
        })
    }

    /// The files each trashed asset's latest trash put in its trash folder.
    pub fn check_trashed_files(&self) -> Result<Vec<TrashedFile>, StoreError> {
        self.read_lite(|conn| {
            Ok(conn
                .prepare(TRASHED_FILES)?
                .query_map([], |r| super::db::on_lite(r, trashed_file))?
                .collect::<Result<_, _>>()?)
        })
    }

    /// The files the latest trash of `asset_id` put in its trash folder.
    pub fn check_trashed_files_of(&self, asset_id: i64) -> Result<Vec<TrashedFile>, StoreError> {
        self.read_lite(|conn| intents::trashed_files_of(&Db::sqlite(conn), asset_id, trashed_file))
    }

    /// The paths in a library's trash folder that the trash journal names.
    pub fn check_journal_paths(&self, library_id: i64) -> Result<HashSet<Vec<u8>>, StoreError> {
        self.read_lite(|conn| {
            Ok(intents::journal_paths(&Db::sqlite(conn), library_id)?
                .into_iter()
                .collect())
        })
    }

    /// The unsettled moves that no live move job carries on.
    pub fn check_orphaned_moves(&self) -> Result<Vec<OrphanedMove>, StoreError> {
        self.read_lite(|conn| {
            Ok(conn
                .prepare(ORPHANED)?
                .query_map([MOVE_JOB_KIND], |r| {
                    Ok(OrphanedMove {
                        move_id: r.get(0)?,
                        asset_id: r.get(1)?,
                        action: parse_col(r, 2, TrashAction::parse)?,
                    })
                })?
                .collect::<Result<_, _>>()?)
        })
    }

    /// The pending assets no run is coming to publish.
    pub fn check_stranded(&self) -> Result<Vec<StrandedAsset>, StoreError> {
        self.read_lite(|conn| {
            Ok(conn
                .prepare(STRANDED)?
                .query_map([], |r| {
                    Ok(StrandedAsset {
                        asset_id: r.get(0)?,
                        run_id: r.get(1)?,
                        run_state: r.get(2)?,
                    })
                })?
                .collect::<Result<_, _>>()?)
        })
    }

    /// Indexes a trash-folder file that nothing explains as a trashed asset (defect 12: the
    /// trash folders of an index that was set aside), in one transaction that first checks
    /// again that nothing explains it. See `Adopted` for what it can come to.
    pub fn check_adopt(&self, adoption: Adoption) -> Result<Adopted, StoreError> {
        self.write_lite(move |conn, now| adopt(conn, &adoption, now))
    }

    /// Publishes a pending asset if it is still stranded (`check`'s own, until the scan's
    /// publication covers it). `None`: it was not stranded any more; `Some(live)`: published,
    /// live when a present file shows it, else in the trash as missing.
    pub fn check_publish_stranded(&self, asset_id: i64) -> Result<Option<bool>, StoreError> {
        self.write_lite(move |conn, now| {
            let stranded: bool = conn
                .prepare_cached(STILL_STRANDED)?
                .query_row([asset_id], |r| r.get(0))?;
            if !stranded {
                return Ok(None);
            }
            Ok(conn
                .prepare_cached(PUBLISH_STRANDED)?
                .query_row(params![asset_id, now], |r| r.get(0))
                .optional()?)
        })
    }

    /// Queues a move job for an orphaned move, due at once. False when a live job holds its
    /// asset's key already or the move has no pending intent any more.
    pub fn check_requeue_move(&self, move_id: i64) -> Result<bool, StoreError> {
        self.write_lite(move |conn, now| {
            let n = conn.prepare_cached(REQUEUE_MOVE)?.execute(params![
                MOVE_JOB_KIND,
                move_id,
                MOVE_ATTEMPTS,
                now
            ])?;
            Ok(n == 1)
        })
    }
}
