//! Persistent monotonic counters (fence rejections, reclaims, retries), bumped in the same
//! transaction as the event they count.

use super::StoreError;
use crate::model::{Counter, ReclaimReport};
use rusqlite::Connection;

const COUNTER: &str = "SELECT value FROM counters WHERE name = ?1";

const BUMP: &str = "INSERT INTO counters (name, value) VALUES (?1, ?2)
                    ON CONFLICT (name) DO UPDATE SET value = value + excluded.value";

pub(super) fn bump_raw(conn: &Connection, counter: Counter, by: i64) -> rusqlite::Result<()> {
    if by != 0 {
        conn.prepare_cached(BUMP)?
            .execute(rusqlite::params![counter.name(), by])?;
    }
    Ok(())
}

pub(super) fn bump(conn: &Connection, counter: Counter, by: i64) -> Result<(), StoreError> {
    Ok(bump_raw(conn, counter, by)?)
}

pub(super) fn record_reclaim(conn: &Connection, r: &ReclaimReport) -> Result<(), StoreError> {
    bump(conn, Counter::ReclaimedJobsRequeued, r.jobs_requeued as i64)?;
    bump(conn, Counter::ReclaimedJobsFailed, r.jobs_failed as i64)?;
    bump(conn, Counter::ReclaimedRunsRetired, r.runs_retired as i64)?;
    bump(conn, Counter::ReclaimSuccessors, r.run_successors as i64)
}

/// One counter's value; 0 before it was first bumped.
pub(super) fn value(conn: &Connection, name: &str) -> Result<i64, StoreError> {
    let mut stmt = conn.prepare_cached(COUNTER)?;
    let mut rows = stmt.query([name])?;
    Ok(match rows.next()? {
        Some(r) => r.get(0)?,
        None => 0,
    })
}

/// Every counter, zero when never bumped.
pub(super) fn all(conn: &Connection) -> Result<Vec<(Counter, i64)>, StoreError> {
    let mut stmt = conn.prepare_cached("SELECT value FROM counters WHERE name = ?1")?;
    Counter::ALL
        .iter()
        .map(|&c| {
            let v = stmt
                .query_row([c.name()], |r| r.get(0))
                .or_else(|e| match e {
                    rusqlite::Error::QueryReturnedNoRows => Ok(0),
                    e => Err(e),
                })?;
            Ok((c, v))
        })
        .collect()
}
