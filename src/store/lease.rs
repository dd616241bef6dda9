//! The statements every lease shares whatever its table: the heartbeat (renew) and the bare
//! fence check that opens a fenced write of data kept outside the lease row.

use super::StoreError;
use crate::model::{Lease, Millis, Target};
use rusqlite::{Connection, OptionalExtension, params};

const RENEW_JOB: &str = fenced!(
    "UPDATE jobs SET lease_expires_at = ?3 + ?4, heartbeat_at = ?3, updated_at = ?3",
    "RETURNING lease_expires_at"
);
const RENEW_RUN: &str = fenced!(
    "UPDATE scan_runs SET lease_expires_at = ?3 + ?4, heartbeat_at = ?3, updated_at = ?3",
    "RETURNING lease_expires_at"
);

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

pub(super) fn renew(
    conn: &Connection,
    lease: &Lease,
    now: Millis,
    ttl: Millis,
) -> Result<Millis, StoreError> {
    let sql = match lease.target {
        Target::Job => RENEW_JOB,
        Target::ScanRun => RENEW_RUN,
    };
    conn.prepare_cached(sql)?
        .query_row(params![lease.id, lease.generation, now, ttl], |r| r.get(0))
        .optional()?
        .ok_or_else(|| lost(lease))
}
