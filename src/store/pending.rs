//! Who publishes a pending asset (DESIGN.md section 6). A new asset is held by the run that
//! created it (`assets.pending_run`) until a completion publishes it, and it must never be
//! left without someone who will: ANY completion of a library that shows it (a present file
//! of that library links to it) publishes it, whichever library's run created it; removing
//! a library settles the pending assets its runs held (published where another library
//! shows them, deleted where no file does); `Store::publish_stranded` publishes what an
//! older binary left pending on a run that is gone or ended. Pruning keeps a run that still
//! holds pending assets (`scan_runs::PRUNE`). Every search for pending assets here starts
//! from the `assets_pending` partial index (the others read one asset by id), so its cost is
//! the pending rows, never the whole table.

use super::{Store, StoreError};
use rusqlite::{Connection, OptionalExtension, params};

/// The pending assets a present file of run ?1's library shows, with whether each is a
/// picture or a video (what the thumbnail job visits). The partial index is named: without
/// statistics the planner would rather scan the whole table for `IS NOT NULL`.
const SHOWN_PENDING: &str = "
    SELECT a.id, a.kind IN ('image', 'video') FROM assets a INDEXED BY assets_pending
     WHERE a.pending_run IS NOT NULL
       AND EXISTS (SELECT 1 FROM files f
                    WHERE f.asset_id = a.id AND f.state = 'present'
                      AND f.library_id = (SELECT library_id FROM scan_runs WHERE id = ?1))";
const PUBLISH_ONE: &str = "UPDATE assets SET pending_run = NULL WHERE id = ?1";
/// The assets held pending by the runs of library ?1.
const HELD_BY_LIBRARY: &str = "
    SELECT id FROM assets INDEXED BY assets_pending
     WHERE pending_run IN (SELECT id FROM scan_runs WHERE library_id = ?1)";
const SHOWN_BY_ANY_FILE: &str = "SELECT EXISTS (SELECT 1 FROM files WHERE asset_id = ?1)";
const PENDING_ONE: &str = "SELECT pending_run IS NOT NULL FROM assets WHERE id = ?1";
/// An asset no file of any library shows any more.
const DELETE_IF_UNSHOWN: &str = "
    DELETE FROM assets WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM files WHERE asset_id = ?1)";
/// Pending on a run that no longer exists or no longer runs nor waits, and shown by a
/// present file: nothing is bound to publish it.
const PUBLISH_STRANDED: &str = "
    UPDATE assets INDEXED BY assets_pending SET pending_run = NULL
     WHERE pending_run IS NOT NULL
       AND pending_run NOT IN (SELECT id FROM scan_runs WHERE state IN ('accepted', 'running'))
       AND EXISTS (SELECT 1 FROM files f WHERE f.asset_id = assets.id AND f.state = 'present')";

/// A completion's second publication, after its own library's runs' assets: the pending
/// assets another library's run made that a present file of this library shows (a
/// byte-identical copy linked to them). Returns the lowest and highest id of the pictures and
/// videos among them. Costs the pending rows left, which after the first publication are
/// only other libraries' (none, most of the time).
pub(super) fn publish_shown(
    conn: &Connection,
    run_id: i64,
) -> Result<Option<(i64, i64)>, StoreError> {
    let shown: Vec<(i64, bool)> = conn
        .prepare_cached(SHOWN_PENDING)?
        .query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let mut publish = conn.prepare_cached(PUBLISH_ONE)?;
    let mut media: Option<(i64, i64)> = None;
    for (id, is_media) in shown {
        publish.execute([id])?;
        if is_media {
            media = Some(media.map_or((id, id), |(lo, hi)| (lo.min(id), hi.max(id))));
        }
    }
    Ok(media)
}

/// The assets library `library_id`'s runs hold pending: read before the library (and its
/// runs, by cascade) goes, so that `settle` can give each an owner.
pub(super) fn held_by_library(conn: &Connection, library_id: i64) -> Result<Vec<i64>, StoreError> {
    Ok(conn
        .prepare_cached(HELD_BY_LIBRARY)?
        .query_map([library_id], |r| r.get(0))?
        .collect::<Result<_, _>>()?)
}

/// What `settle` did with an asset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Settled {
    /// No file showed it: deleted.
    Deleted,
    /// It was pending: published (the caller trashes it if only missing files show it).
    Published,
    /// Left as it was.
    Kept,
}

/// After a library went: an asset no file shows any more is deleted; one still pending is
/// published, because its run is gone and no completion would ever publish it again. Where
/// only missing files show it, the caller then trashes it as any asset whose last file went
/// missing (`removal`): a file that comes back restores it by id, and the sweep deletes it
/// after the retention. Nothing here can lose a photo: a present file that shows the asset
/// makes it live, and no file on disk is touched.
pub(super) fn settle(conn: &Connection, id: i64) -> Result<Settled, StoreError> {
    if !conn
        .prepare_cached(SHOWN_BY_ANY_FILE)?
        .query_row([id], |r| r.get::<_, bool>(0))?
    {
        let deleted = conn.prepare_cached(DELETE_IF_UNSHOWN)?.execute([id])? == 1;
        return Ok(if deleted {
            Settled::Deleted
        } else {
            Settled::Kept
        });
    }
    let pending: Option<bool> = conn
        .prepare_cached(PENDING_ONE)?
        .query_row([id], |r| r.get(0))
        .optional()?;
    if pending == Some(true) {
        conn.prepare_cached(PUBLISH_ONE)?.execute(params![id])?;
        return Ok(Settled::Published);
    }
    Ok(Settled::Kept)
}

impl Store {
    /// Publishes the stranded pending assets: those held by a run that no longer exists or
    /// neither runs nor waits (an older binary removed its library or pruned it), that a
    /// present file shows. For `mediadex check --repair`. Returns how many it published.
    pub fn publish_stranded(&self) -> Result<usize, StoreError> {
        self.write_lite(|conn, _| Ok(conn.prepare_cached(PUBLISH_STRANDED)?.execute([])?))
    }
}
