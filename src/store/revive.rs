//! An asset's restore with what it brings beyond its row, a composition shared by a scan's
//! claim or heal and the trash move's restore: the row is restored by id alone
//! (`assets::restore`), then the live chain of each walk whose cursor may be past it goes
//! back for it (`walks::made_live`), in the caller's transaction. No SQL of its own.

use super::db::Db;
use super::{StoreError, assets, walks};

/// Restores a trashed asset by id alone (`assets::restore`); a walk chain that skipped it
/// while it was trashed goes back for it (`walks::made_live`). `false`: the row is no
/// longer trashed (or gone).
pub(super) fn revive(db: &Db<'_>, id: i64) -> Result<bool, StoreError> {
    let restored = assets::restore(db, id)?;
    if restored {
        walks::made_live(db, id)?;
    }
    Ok(restored)
}
