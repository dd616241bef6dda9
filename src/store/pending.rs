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

use super::db::{Db, Pair};
use super::{Store, StoreError};

/// `INDEXED BY` is SQLite's alone: each statement that names the partial index is a `Pair`
/// whose PostgreSQL half leaves the choice to its planner (which has statistics).
/// The pending assets a present file of run ?1's library shows, with whether each is a
/// picture or a video (what the thumbnail job visits). The partial index is named: without
/// statistics the planner would rather scan the whole table for `IS NOT NULL`.
macro_rules! shown_pending {
    ($indexed:literal) => {
        concat!(
            "SELECT a.id, a.kind IN ('image', 'video') FROM assets a ",
            $indexed,
            " WHERE a.pending_run IS NOT NULL
                AND EXISTS (SELECT 1 FROM files f
                             WHERE f.asset_id = a.id AND f.state = 'present'
                               AND f.library_id = (SELECT library_id FROM scan_runs WHERE id = ?1))"
        )
    };
}
const SHOWN_PENDING: Pair = Pair {
    sqlite: shown_pending!("INDEXED BY assets_pending"),
    postgres: shown_pending!(""),
};
const PUBLISH_ONE: &str = "UPDATE assets SET pending_run = NULL WHERE id = ?1";
/// The assets held pending by the runs of library ?1.
macro_rules! held_by_library {
    ($indexed:literal) => {
        concat!(
            "SELECT id FROM assets ",
            $indexed,
            " WHERE pending_run IN (SELECT id FROM scan_runs WHERE library_id = ?1)"
        )
    };
}
const HELD_BY_LIBRARY: Pair = Pair {
    sqlite: held_by_library!("INDEXED BY assets_pending"),
    postgres: held_by_library!(""),
};
const SHOWN_BY_ANY_FILE: &str = "SELECT EXISTS (SELECT 1 FROM files WHERE asset_id = ?1)";
const PENDING_ONE: &str = "SELECT pending_run IS NOT NULL FROM assets WHERE id = ?1";
/// An asset no file of any library shows any more.
const DELETE_IF_UNSHOWN: &str = "
    DELETE FROM assets WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM files WHERE asset_id = ?1)";
/// Pending on a run that no longer exists or no longer runs nor waits, and shown by a
/// present file: nothing is bound to publish it.
macro_rules! publish_stranded {
    ($indexed:literal) => {
        concat!(
            "UPDATE assets ",
            $indexed,
            " SET pending_run = NULL
               WHERE pending_run IS NOT NULL
                 AND pending_run NOT IN (SELECT id FROM scan_runs
                                          WHERE state IN ('accepted', 'running'))
                 AND EXISTS (SELECT 1 FROM files f
                              WHERE f.asset_id = assets.id AND f.state = 'present')"
        )
    };
}
const PUBLISH_STRANDED: Pair = Pair {
    sqlite: publish_stranded!("INDEXED BY assets_pending"),
    postgres: publish_stranded!(""),
};

/// A completion's second publication, after its own library's runs' assets: the pending
/// assets another library's run made that a present file of this library shows (a
/// byte-identical copy linked to them). Returns the lowest and highest id of the pictures and
/// videos among them. Costs the pending rows left, which after the first publication are
/// only other libraries' (none, most of the time).
pub(super) fn publish_shown(db: &Db<'_>, run_id: i64) -> Result<Option<(i64, i64)>, StoreError> {
    let shown: Vec<(i64, bool)> = db.all(db.pick(&SHOWN_PENDING), args!(run_id), |r| {
        Ok((r.get(0)?, r.get(1)?))
    })?;
    let mut media: Option<(i64, i64)> = None;
    for (id, is_media) in shown {
        db.execute(PUBLISH_ONE, args!(id))?;
        if is_media {
            media = Some(media.map_or((id, id), |(lo, hi)| (lo.min(id), hi.max(id))));
        }
    }
    Ok(media)
}

/// The assets library `library_id`'s runs hold pending: read before the library (and its
/// runs, by cascade) goes, so that `settle` can give each an owner.
pub(super) fn held_by_library(db: &Db<'_>, library_id: i64) -> Result<Vec<i64>, StoreError> {
    db.all(db.pick(&HELD_BY_LIBRARY), args!(library_id), |r| r.get(0))
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
pub(super) fn settle(db: &Db<'_>, id: i64) -> Result<Settled, StoreError> {
    if !db.one(SHOWN_BY_ANY_FILE, args!(id), |r| r.get::<bool>(0))? {
        let deleted = db.execute(DELETE_IF_UNSHOWN, args!(id))? == 1;
        return Ok(if deleted {
            Settled::Deleted
        } else {
            Settled::Kept
        });
    }
    let pending: Option<bool> = db.optional(PENDING_ONE, args!(id), |r| r.get(0))?;
    if pending == Some(true) {
        db.execute(PUBLISH_ONE, args!(id))?;
        return Ok(Settled::Published);
    }
    Ok(Settled::Kept)
}

/// Publishes the stranded pending assets; answers how many.
pub(super) fn publish_stranded(db: &Db<'_>) -> Result<usize, StoreError> {
    db.execute(db.pick(&PUBLISH_STRANDED), args!())
}

impl Store {
    /// Publishes the stranded pending assets: those held by a run that no longer exists or
    /// neither runs nor waits (an older binary removed its library or pruned it), that a
    /// present file shows. For `mediadex check --repair`. Returns how many it published.
    pub fn publish_stranded(&self) -> Result<usize, StoreError> {
        self.write(|db, _| publish_stranded(db))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::db::tests::on_both_schemas;
    use crate::store::lease::fixtures;

    fn pending_on(db: &Db<'_>, asset: i64, run: i64) -> Result<(), StoreError> {
        db.execute(
            "UPDATE assets SET pending_run = ?2 WHERE id = ?1",
            args!(asset, run),
        )?;
        Ok(())
    }

    fn is_pending(db: &Db<'_>, asset: i64) -> Result<Option<bool>, StoreError> {
        db.optional(PENDING_ONE, args!(asset), |r| r.get(0))
    }

    /// Library 1 (run 1, running) and library 2 (run 2, running); assets 1..=4 pending:
    /// 1 (an image) and 2 (other) shown in library 1, 3 held by run 2 and shown in library
    /// 1 only by a missing file, 4 held by run 2 and shown by no file.
    fn two_libraries(db: &Db<'_>) -> Result<(), StoreError> {
        for id in [1, 2] {
            fixtures::library(db, id)?;
            fixtures::run(db, id, id, "running")?;
        }
        for id in 1..=4 {
            fixtures::asset(db, id)?;
        }
        db.execute("UPDATE assets SET kind = 'image' WHERE id = 1", args!())?;
        db.execute("UPDATE assets SET kind = 'other' WHERE id = 2", args!())?;
        fixtures::file(db, (1, Some(1), "1.jpg"), (1, 1, 1))?;
        fixtures::file(db, (1, Some(2), "2.txt"), (1, 1, 1))?;
        fixtures::file(db, (1, Some(3), "3.jpg"), (1, 1, 1))?;
        db.execute(
            "UPDATE files SET state = 'missing', missing_since = 5 WHERE asset_id = 3",
            args!(),
        )?;
        for (asset, run) in [(1, 2), (2, 1), (3, 2), (4, 2)] {
            pending_on(db, asset, run)?;
        }
        Ok(())
    }

    fn a_completion_publishes_what_its_library_shows(db: &Db<'_>) -> Result<(), StoreError> {
        two_libraries(db)?;
        // Only pictures and videos count for the range; asset 2 is published all the same.
        assert_eq!(publish_shown(db, 1)?, Some((1, 1)));
        assert_eq!(is_pending(db, 1)?, Some(false));
        assert_eq!(is_pending(db, 2)?, Some(false));
        assert_eq!(
            is_pending(db, 3)?,
            Some(true),
            "a missing file shows nothing"
        );
        assert_eq!(publish_shown(db, 2)?, None);
        Ok(())
    }

    fn a_removed_librarys_assets_are_settled(db: &Db<'_>) -> Result<(), StoreError> {
        two_libraries(db)?;
        let mut held = held_by_library(db, 2)?;
        held.sort();
        assert_eq!(held, vec![1, 3, 4]);
        assert_eq!(settle(db, 4)?, Settled::Deleted);
        assert_eq!(is_pending(db, 4)?, None);
        assert_eq!(settle(db, 3)?, Settled::Published);
        assert_eq!(settle(db, 3)?, Settled::Kept);
        Ok(())
    }

    fn stranded_assets_are_published(db: &Db<'_>) -> Result<(), StoreError> {
        two_libraries(db)?;
        assert_eq!(publish_stranded(db)?, 0, "every holder still runs");
        db.execute(
            "UPDATE scan_runs SET state = 'failed', lease_owner = NULL, lease_expires_at = NULL
              WHERE id = 2",
            args!(),
        )?;
        // Asset 1 is shown by a present file; 3 only by a missing one, 4 by none.
        assert_eq!(publish_stranded(db)?, 1);
        assert_eq!(is_pending(db, 1)?, Some(false));
        assert_eq!(is_pending(db, 4)?, Some(true));
        Ok(())
    }

    on_both_schemas!(
        a_completion_publishes_what_its_library_shows,
        a_removed_librarys_assets_are_settled,
        stranded_assets_are_published,
    );
}
