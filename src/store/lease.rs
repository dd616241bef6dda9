//! What every lease's fenced write answers whatever its table, a helper: zero rows from a
//! fence is `StoreError::LeaseLost`. The fences themselves (`fenced!`) and the heartbeats
//! are their tables' (`jobs::renew`, `scan_runs::renew`).

use super::StoreError;
use crate::model::Lease;

pub(super) fn lost(lease: &Lease) -> StoreError {
    StoreError::LeaseLost {
        target: lease.target,
        id: lease.id,
        generation: lease.generation,
    }
}

/// Zero rows from a fenced statement means the lease is stale.
pub(super) fn expect_one(lease: &Lease, changed: usize) -> Result<(), StoreError> {
    if changed == 1 {
        Ok(())
    } else {
        Err(lost(lease))
    }
}

/// Rows the families' checks on both engines stand on (issue 30): a library, an asset, a
/// file of it, a scan run, a job, each with the columns their tables require.
#[cfg(test)]
pub(super) mod fixtures {
    use super::super::StoreError;
    use super::super::db::Db;

    pub(in crate::store) fn library(db: &Db<'_>, id: i64) -> Result<(), StoreError> {
        let (name, root) = (format!("lib{id}"), format!("/lib{id}"));
        db.execute(
            "INSERT INTO libraries (id, name, root, created_at) VALUES (?1, ?2, ?3, 1)",
            args!(id, name, root),
        )?;
        Ok(())
    }

    pub(in crate::store) fn asset(db: &Db<'_>, id: i64) -> Result<(), StoreError> {
        let checksum = [id as u8; 32];
        db.execute(
            "INSERT INTO assets (id, checksum, size, created_at) VALUES (?1, ?2, 10, 1)",
            args!(id, checksum),
        )?;
        Ok(())
    }

    /// A present file `path` of `asset` in `library`, of `size` and `mtime_ns`, read by
    /// run `run`.
    pub(in crate::store) fn file(
        db: &Db<'_>,
        (library, asset, path): (i64, Option<i64>, &str),
        (size, mtime_ns, run): (i64, i64, i64),
    ) -> Result<(), StoreError> {
        db.execute(
            "INSERT INTO files (library_id, rel_path, rel_path_text, size, mtime_ns, dev, inode,
                                asset_id, last_reason, first_seen_run, last_seen_run)
             VALUES (?1, ?2, ?3, ?4, ?5, 1, 1, ?6, 'new', ?7, ?7)",
            args!(library, path.as_bytes(), path, size, mtime_ns, asset, run),
        )?;
        Ok(())
    }

    /// A scan run of `library` in `state` (`running`: leased to `host` until 1_000_000).
    pub(in crate::store) fn run(
        db: &Db<'_>,
        id: i64,
        library: i64,
        state: &str,
    ) -> Result<(), StoreError> {
        let (owner, expires) = match state {
            "running" => (Some("host"), Some(1_000_000i64)),
            _ => (None, None),
        };
        db.execute(
            "INSERT INTO scan_runs (id, library_id, trigger, state, run_at, requested_at,
                                    accepted_at, updated_at, lease_owner, lease_expires_at)
             VALUES (?1, ?2, 'manual', ?3, 1, 1, 1, 1, ?4, ?5)",
            args!(id, library, state, owner, expires),
        )?;
        Ok(())
    }
}
