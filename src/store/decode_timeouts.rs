//! The `decode_timeouts` table (migration 0024): decodes that ran to their full deadline,
//! remembered for the stamp of the file they read. A fact holds while a present file of its
//! asset still has that stamp (`TIMED_OUT`), so a file re-saved or touched since, once the
//! scan has read it again, is decoded again, and the row needs no invalidation of its own;
//! `scan --force`'s read of the file deletes it (`forget`). Written inside the fenced
//! commits of the walks and the thumbnail job (`record`), or on its own for a request
//! (`Store::remember_decode_timeout`). Must not decide what is a timeout: the decoders say.

use super::db::Db;
use super::{Store, StoreError};
use crate::model::DecodeTimeout;
use std::collections::HashMap;

/// Kept only while the asset still exists (an asset swept meanwhile inserts nothing) and
/// has a present file of that stamp (a file rewritten meanwhile says nothing about it).
/// The casts tell PostgreSQL what the selected placeholders are (SQLite reads them alike).
const RECORD: &str = "
    INSERT INTO decode_timeouts (asset_id, size, mtime_ns, seconds, at)
    SELECT CAST(?1 AS BIGINT), CAST(?2 AS BIGINT), CAST(?3 AS BIGINT), CAST(?4 AS BIGINT),
           CAST(?5 AS BIGINT)
     WHERE EXISTS (SELECT 1 FROM files
                    WHERE asset_id = ?1 AND state = 'present' AND size = ?2 AND mtime_ns = ?3)
    ON CONFLICT (asset_id) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns,
                                         seconds = excluded.seconds, at = excluded.at";
/// The asset id and seconds of the timed-out decodes `$which`, kept while a present file
/// still has the decoded stamp.
macro_rules! timed_out_where {
    ($which:literal) => {
        concat!(
            "SELECT t.asset_id, t.seconds FROM decode_timeouts t WHERE ",
            $which,
            " AND EXISTS (SELECT 1 FROM files f
                           WHERE f.asset_id = t.asset_id AND f.state = 'present'
                             AND f.size = t.size AND f.mtime_ns = t.mtime_ns)"
        )
    };
}
/// Asset ?1's.
const TIMED_OUT: &str = timed_out_where!("t.asset_id = ?1");
/// Those of every asset with ?1 < id <= ?2.
const TIMED_OUT_IN: &str = timed_out_where!("t.asset_id > ?1 AND t.asset_id <= ?2");
const FORGET: &str = "DELETE FROM decode_timeouts WHERE asset_id = ?1";

/// Remembers `timeouts` in the caller's (fenced) transaction.
pub(super) fn record(
    db: &Db<'_>,
    timeouts: &[DecodeTimeout],
    now: crate::model::Millis,
) -> Result<(), StoreError> {
    for t in timeouts {
        let size = i64::try_from(t.size).unwrap_or(i64::MAX);
        let seconds = i64::try_from(t.seconds).unwrap_or(i64::MAX);
        db.execute(RECORD, args!(t.asset_id, size, t.mtime_ns, seconds, now))?;
    }
    Ok(())
}

/// The seconds a decode of `asset_id`'s file ran to, if one timed out on its present stamp.
pub(super) fn timed_out(db: &Db<'_>, asset_id: i64) -> Result<Option<u64>, StoreError> {
    let secs: Option<i64> = db.optional(TIMED_OUT, args!(asset_id), |r| r.get(1))?;
    Ok(secs.map(|s| u64::try_from(s).unwrap_or(0)))
}

/// `timed_out` of every asset with `after < id <= last` that has one, by asset.
pub(super) fn timed_out_in(
    db: &Db<'_>,
    after: i64,
    last: i64,
) -> Result<HashMap<i64, u64>, StoreError> {
    let mut out = HashMap::new();
    db.each(TIMED_OUT_IN, args!(after, last), |r| {
        out.insert(r.get(0)?, u64::try_from(r.get::<i64>(1)?).unwrap_or(0));
        Ok(())
    })?;
    Ok(out)
}

/// Forgets the asset's timed-out decode: `scan --force` read its file again.
pub(super) fn forget(db: &Db<'_>, asset_id: i64) -> Result<(), StoreError> {
    db.execute(FORGET, args!(asset_id))?;
    Ok(())
}

impl Store {
    /// The seconds a decode of asset `id`'s file ran to before it was stopped, while a
    /// present file still has the stamp that was decoded; `None` otherwise.
    pub fn decode_timeout(&self, id: i64) -> Result<Option<u64>, StoreError> {
        self.read(|db| timed_out(db, id))
    }

    /// Remembers a decode that timed out on a request (which holds no lease: the fact is
    /// about the file's bytes, and a stale one is overwritten or ignored by its stamp).
    pub fn remember_decode_timeout(&self, timeout: DecodeTimeout) -> Result<(), StoreError> {
        self.write(move |db, now| record(db, &[timeout], now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::db::tests::on_both_schemas;
    use crate::store::lease::fixtures;

    fn timeout(asset_id: i64, size: u64, mtime_ns: i64, seconds: u64) -> DecodeTimeout {
        DecodeTimeout {
            asset_id,
            size,
            mtime_ns,
            seconds,
        }
    }

    /// Assets 1 and 2 in library 1, each with a present file of size 10 and mtime 100.
    fn two_assets(db: &Db<'_>) -> Result<(), StoreError> {
        fixtures::library(db, 1)?;
        for id in [1, 2] {
            fixtures::asset(db, id)?;
            fixtures::file(db, (1, Some(id), &format!("a{id}.jpg")), (10, 100, 1))?;
        }
        Ok(())
    }

    fn a_timeout_holds_while_a_present_file_has_its_stamp(db: &Db<'_>) -> Result<(), StoreError> {
        two_assets(db)?;
        record(db, &[timeout(1, 10, 100, 30), timeout(2, 11, 100, 5)], 7)?;
        assert_eq!(timed_out(db, 1)?, Some(30));
        // Asset 2's file has another size: the timeout was never kept.
        assert_eq!(timed_out(db, 2)?, None);
        record(db, &[timeout(1, 10, 100, 45)], 8)?;
        assert_eq!(timed_out(db, 1)?, Some(45));
        db.execute(
            "UPDATE files SET mtime_ns = 101 WHERE asset_id = 1",
            args!(),
        )?;
        assert_eq!(timed_out(db, 1)?, None);
        Ok(())
    }

    fn timeouts_in_a_range_and_forget(db: &Db<'_>) -> Result<(), StoreError> {
        two_assets(db)?;
        record(db, &[timeout(1, 10, 100, 30), timeout(2, 10, 100, 5)], 7)?;
        let all = timed_out_in(db, 0, 2)?;
        assert_eq!(all, HashMap::from([(1, 30), (2, 5)]));
        assert_eq!(timed_out_in(db, 1, 2)?, HashMap::from([(2, 5)]));
        forget(db, 2)?;
        assert_eq!(timed_out_in(db, 0, 9)?, HashMap::from([(1, 30)]));
        Ok(())
    }

    on_both_schemas!(
        a_timeout_holds_while_a_present_file_has_its_stamp,
        timeouts_in_a_range_and_forget,
    );
}
