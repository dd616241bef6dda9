//! Persistent monotonic counters (fence rejections, reclaims, retries), bumped in the same
//! transaction as the event they count.

use super::StoreError;
use super::db::Db;
use crate::model::{Counter, ReclaimReport};

const COUNTER: &str = "SELECT value FROM counters WHERE name = ?1";

const BUMP: &str = "INSERT INTO counters (name, value) VALUES (?1, ?2)
                    ON CONFLICT (name) DO UPDATE SET value = counters.value + excluded.value";

pub(super) fn bump(db: &Db<'_>, counter: Counter, by: i64) -> Result<(), StoreError> {
    if by != 0 {
        db.execute(BUMP, args!(counter.name(), by))?;
    }
    Ok(())
}

pub(super) fn record_reclaim(db: &Db<'_>, r: &ReclaimReport) -> Result<(), StoreError> {
    bump(db, Counter::ReclaimedJobsRequeued, r.jobs_requeued as i64)?;
    bump(db, Counter::ReclaimedJobsFailed, r.jobs_failed as i64)?;
    bump(db, Counter::ReclaimedRunsRetired, r.runs_retired as i64)?;
    bump(db, Counter::ReclaimSuccessors, r.run_successors as i64)
}

/// One counter's value; 0 before it was first bumped.
pub(super) fn value(db: &Db<'_>, name: &str) -> Result<i64, StoreError> {
    Ok(db
        .optional(COUNTER, args!(name), |r| r.get(0))?
        .unwrap_or(0))
}

/// Every counter, zero when never bumped.
pub(super) fn all(db: &Db<'_>) -> Result<Vec<(Counter, i64)>, StoreError> {
    Counter::ALL
        .iter()
        .map(|&c| Ok((c, value(db, c.name())?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::db::tests::on_both_schemas;

    fn a_bump_adds_to_the_counter_and_zero_adds_nothing(db: &Db<'_>) -> Result<(), StoreError> {
        let name = Counter::FenceRejections.name();
        assert_eq!(value(db, name)?, 0);
        bump(db, Counter::FenceRejections, 2)?;
        bump(db, Counter::FenceRejections, 3)?;
        bump(db, Counter::FenceRejections, 0)?;
        assert_eq!(value(db, name)?, 5);
        let every = all(db)?;
        assert_eq!(every.len(), Counter::ALL.len());
        assert!(every.contains(&(Counter::FenceRejections, 5)));
        Ok(())
    }

    on_both_schemas!(a_bump_adds_to_the_counter_and_zero_adds_nothing);
}
