//! A library's removal, a composition: the assets its files show and those its runs held
//! pending are read (`libraries`, `pending`) before the library row goes with its files,
//! runs, admission keys and journal rows by cascade; then each asset is settled
//! (`pending::settle`: deleted, published, or left), a published one that only missing
//! files show goes to the trash (`assets`), and one still shown takes the sidecar facts of
//! its first copy left (`sidecars`). One transaction. No SQL of its own.

use super::pending::Settled;
use super::{Store, StoreError, assets, libraries, pending, sidecars};
use crate::model::TrashReason;

impl Store {
    /// Forgets a library: its files, scan runs, admission keys and journal rows go by
    /// cascade, and so do the assets no other library shows. An asset its runs held pending
    /// that another library shows is published (`pending::settle`): no run of the library
    /// is left to; one still shown takes the sidecar facts of its first copy left. A worker still scanning it finds its lease gone at its next fenced write
    /// and stops. Files on disk are untouched. Returns how many assets were forgotten.
    pub fn remove_library(&self, id: i64) -> Result<u64, StoreError> {
        self.write(move |db, now| {
            let mut assets = libraries::shown_assets(db, id)?;
            // A pending asset its runs made may no longer be shown by its files (the file
            // changed since): it is read now, while the runs still name the library.
            assets.extend(pending::held_by_library(db, id)?);
            assets.sort_unstable();
            assets.dedup();
            if !libraries::delete(db, id)? {
                return Err(StoreError::NotFound(format!("no library with id {id}")));
            }
            let mut gone = 0;
            for asset in assets {
                let settled = pending::settle(db, asset)?;
                if settled == Settled::Published {
                    assets::trash_if_orphan(db, asset, TrashReason::Missing, now)?;
                }
                if settled == Settled::Deleted {
                    gone += 1;
                } else {
                    // A copy in another library is left: its sidecar's facts (finding 13).
                    sidecars::follow_first(db, asset)?;
                }
            }
            Ok(gone)
        })
    }
}
