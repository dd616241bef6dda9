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
