//! The `decode_timeouts` table (migration 0024): decodes that ran to their full deadline,
//! remembered for the stamp of the file they read. A fact holds while a present file of its
//! asset still has that stamp (`TIMED_OUT`), so a file re-saved or touched since, once the
//! scan has read it again, is decoded again, and the row needs no invalidation of its own;
//! `scan --force`'s read of the file deletes it (`forget`). Written inside the fenced
//! commits of the walks and the thumbnail job (`record`), or on its own for a request
//! (`Store::remember_decode_timeout`). Must not decide what is a timeout: the decoders say.

use super::{Store, StoreError};
use crate::model::DecodeTimeout;
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::HashMap;

/// Kept only while the asset still exists (an asset swept meanwhile inserts nothing) and
/// has a present file of that stamp (a file rewritten meanwhile says nothing about it).
const RECORD: &str = "
    INSERT INTO decode_timeouts (asset_id, size, mtime_ns, seconds, at)
    SELECT ?1, ?2, ?3, ?4, ?5
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
    conn: &Connection,
    timeouts: &[DecodeTimeout],
    now: crate::model::Millis,
) -> Result<(), StoreError> {
    let mut stmt = conn.prepare_cached(RECORD)?;
    for t in timeouts {
        let size = i64::try_from(t.size).unwrap_or(i64::MAX);
        let seconds = i64::try_from(t.seconds).unwrap_or(i64::MAX);
        stmt.execute(params![t.asset_id, size, t.mtime_ns, seconds, now])?;
    }
    Ok(())
}

/// The seconds a decode of `asset_id`'s file ran to, if one timed out on its present stamp.
pub(super) fn timed_out(conn: &Connection, asset_id: i64) -> Result<Option<u64>, StoreError> {
    let secs: Option<i64> = conn
        .prepare_cached(TIMED_OUT)?
        .query_row([asset_id], |r| r.get(1))
        .optional()?;
    Ok(secs.map(|s| u64::try_from(s).unwrap_or(0)))
}

/// `timed_out` of every asset with `after < id <= last` that has one, by asset.
pub(super) fn timed_out_in(
    conn: &Connection,
    after: i64,
    last: i64,
) -> Result<HashMap<i64, u64>, StoreError> {
    let mut stmt = conn.prepare_cached(TIMED_OUT_IN)?;
    let rows = stmt.query_map(params![after, last], |r| {
        Ok((r.get(0)?, u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0)))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Forgets the asset's timed-out decode: `scan --force` read its file again.
pub(super) fn forget(conn: &Connection, asset_id: i64) -> Result<(), StoreError> {
    conn.prepare_cached(FORGET)?.execute([asset_id])?;
    Ok(())
}

impl Store {
    /// The seconds a decode of asset `id`'s file ran to before it was stopped, while a
    /// present file still has the stamp that was decoded; `None` otherwise.
    pub fn decode_timeout(&self, id: i64) -> Result<Option<u64>, StoreError> {
        self.read_lite(|conn| timed_out(conn, id))
    }

    /// Remembers a decode that timed out on a request (which holds no lease: the fact is
    /// about the file's bytes, and a stale one is overwritten or ignored by its stamp).
    pub fn remember_decode_timeout(&self, timeout: DecodeTimeout) -> Result<(), StoreError> {
        self.write_lite(move |conn, now| record(conn, &[timeout], now))
    }
}
