//! The perceptual hashes (migration 0019, DESIGN.md section 8): an asset's `phash` and its
//! `phash_scheme` stamp (a stamp without a hash: the picture cannot be hashed), written by the
//! fenced walk commit; the live hashes, all at once for the grouping or, for the pictures near
//! one, through the four band indexes. The grouping itself is `similar::index`'s: this file
//! only reads the rows it is given the band values of.

use super::{Store, StoreError};
use crate::model::PictureHash;
use rusqlite::{Connection, Row, params};

/// A walk of an older scheme (`?4` false) keeps what a newer one stamped.
const STAMP: &str = "
    UPDATE assets SET phash = ?2, phash_scheme = ?3
     WHERE id = ?1 AND (?4 OR phash_scheme IS NULL OR phash_scheme <= ?3)";
/// Live pictures: published and not trashed, as the asset list shows them.
const LIVE: &str = "
    SELECT id, phash, substr(content_hash, 1, 8) FROM assets
     WHERE phash IS NOT NULL AND pending_run IS NULL AND trashed_at IS NULL ORDER BY id";
const STAMP_OF: &str =
    "SELECT phash, phash_scheme FROM assets WHERE id = ?1 AND phash_scheme IS NOT NULL";
const OF_ASSET: &str = "
    SELECT id, phash, substr(content_hash, 1, 8) FROM assets
     WHERE id = ?1 AND phash IS NOT NULL";

/// The live pictures whose band is one of the values `?1` (a JSON array) lists, through the
/// band's index: the expressions are migration 0019's, verbatim, so that the planner uses them.
macro_rules! near_band {
    ($band:literal) => {
        concat!(
            "SELECT id, phash, substr(content_hash, 1, 8) FROM assets
              WHERE phash IS NOT NULL AND (",
            $band,
            ") IN (SELECT value FROM json_each(?1))
                AND pending_run IS NULL AND trashed_at IS NULL"
        )
    };
}
pub(super) const NEAR: [&str; 4] = [
    near_band!("phash & 65535"),
    near_band!("phash >> 16 & 65535"),
    near_band!("phash >> 32 & 65535"),
    near_band!("phash >> 48 & 65535"),
];

fn picture(r: &Row<'_>) -> rusqlite::Result<PictureHash> {
    let content: Option<Vec<u8>> = r.get(2)?;
    Ok(PictureHash {
        id: r.get(0)?,
        hash: r.get::<_, i64>(1)? as u64,
        content: content
            .and_then(|c| <[u8; 8]>::try_from(c.as_slice()).ok())
            .map(u64::from_be_bytes),
    })
}

/// Stamps a batch's hashes (`None`: no hash can be made) under `scheme`. An asset swept since
/// the batch was selected matches nothing.
pub(super) fn stamp(
    conn: &Connection,
    scheme: i64,
    hashes: &[(i64, Option<u64>)],
    rollback: bool,
) -> Result<(), StoreError> {
    let mut stmt = conn.prepare_cached(STAMP)?;
    for (id, hash) in hashes {
        stmt.execute(params![id, hash.map(|h| h as i64), scheme, rollback])?;
    }
    Ok(())
}

impl Store {
    /// Every live picture with a hash, by id: what the groups are made of.
    pub fn picture_hashes(&self) -> Result<Vec<PictureHash>, StoreError> {
        self.read_lite(|conn| {
            let mut stmt = conn.prepare_cached(LIVE)?;
            let rows = stmt.query_map([], picture)?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }

    /// The hash of one asset (trashed or not), `None` while it has none.
    pub fn picture_hash(&self, id: i64) -> Result<Option<PictureHash>, StoreError> {
        use rusqlite::OptionalExtension;
        self.read_lite(|conn| {
            Ok(conn
                .prepare_cached(OF_ASSET)?
                .query_row([id], picture)
                .optional()?)
        })
    }

    /// The stamp of one asset: its hash (`None`: it cannot be hashed) and the scheme, `None`
    /// while no walk stamped it.
    pub fn picture_hash_stamp(&self, id: i64) -> Result<Option<(Option<u64>, i64)>, StoreError> {
        use rusqlite::OptionalExtension;
        self.read_lite(|conn| {
            Ok(conn
                .prepare_cached(STAMP_OF)?
                .query_row([id], |r| {
                    Ok((r.get::<_, Option<i64>>(0)?.map(|h| h as u64), r.get(1)?))
                })
                .optional()?)
        })
    }

    /// The live pictures whose band `b` is one of `probes[b]` (`similar::index::band_probes`),
    /// each once, by id: the candidates near one hash, found through the band indexes.
    pub fn pictures_in_bands(&self, probes: &[Vec<u16>]) -> Result<Vec<PictureHash>, StoreError> {
        self.read_lite(|conn| {
            let mut out = Vec::new();
            for (sql, values) in NEAR.iter().zip(probes) {
                let values = serde_json::to_string(values)
                    .map_err(|e| StoreError::Conflict(format!("band values: {e}")))?;
                let mut stmt = conn.prepare_cached(sql)?;
                let rows = stmt.query_map([values], picture)?;
                for row in rows {
                    out.push(row?);
                }
            }
            out.sort_unstable_by_key(|p| p.id);
            out.dedup_by_key(|p| p.id);
            Ok(out)
        })
    }

    /// The plans SQLite picks for the four band lookups.
    pub fn pictures_in_bands_plan(&self) -> Result<Vec<Vec<String>>, StoreError> {
        self.read_lite(|conn| NEAR.iter().map(|sql| super::plan(conn, sql)).collect())
    }
}
