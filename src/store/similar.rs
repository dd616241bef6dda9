//! The perceptual hashes (migration 0019, DESIGN.md section 8): an asset's `phash` and its
//! `phash_scheme` stamp (a stamp without a hash: the picture cannot be hashed), written by the
//! fenced walk commit; the live hashes, all at once for the grouping or, for the pictures near
//! one, through the four band indexes. The grouping itself is `similar::index`'s: this file
//! only reads the rows it is given the band values of.

use super::db::{Db, Pair, Row};
use super::{Store, StoreError};
use crate::model::PictureHash;

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
/// band's index: the expressions are migration 0019's, verbatim, so that the planner uses them
/// (PostgreSQL reads `a >> b & c` as `(a >> b) & c` too, the baseline's index expression). A
/// pair: the array is unpacked by `json_each` on SQLite, `json_array_elements_text` on
/// PostgreSQL.
macro_rules! near_band {
    ($band:literal) => {
        Pair {
            sqlite: concat!(
                "SELECT id, phash, substr(content_hash, 1, 8) FROM assets
                  WHERE phash IS NOT NULL AND (",
                $band,
                ") IN (SELECT value FROM json_each(?1))
                    AND pending_run IS NULL AND trashed_at IS NULL"
            ),
            postgres: concat!(
                "SELECT id, phash, substr(content_hash, 1, 8) FROM assets
                  WHERE phash IS NOT NULL AND (",
                $band,
                ") IN (SELECT CAST(value AS BIGINT)
                         FROM json_array_elements_text(CAST(CAST(?1 AS TEXT) AS json)))
                    AND pending_run IS NULL AND trashed_at IS NULL"
            ),
        }
    };
}
pub(super) const NEAR: [Pair; 4] = [
    near_band!("phash & 65535"),
    near_band!("phash >> 16 & 65535"),
    near_band!("phash >> 32 & 65535"),
    near_band!("phash >> 48 & 65535"),
];

fn picture(r: &Row<'_>) -> Result<PictureHash, StoreError> {
    let content: Option<Vec<u8>> = r.get(2)?;
    Ok(PictureHash {
        id: r.get(0)?,
        hash: r.get::<i64>(1)? as u64,
        content: content
            .and_then(|c| <[u8; 8]>::try_from(c.as_slice()).ok())
            .map(u64::from_be_bytes),
    })
}

/// Stamps a batch's hashes (`None`: no hash can be made) under `scheme`. An asset swept since
/// the batch was selected matches nothing.
pub(super) fn stamp(
    db: &Db<'_>,
    scheme: i64,
    hashes: &[(i64, Option<u64>)],
    rollback: bool,
) -> Result<(), StoreError> {
    for (id, hash) in hashes {
        db.execute(STAMP, args!(*id, hash.map(|h| h as i64), scheme, rollback))?;
    }
    Ok(())
}

fn live(db: &Db<'_>) -> Result<Vec<PictureHash>, StoreError> {
    db.all(LIVE, args!(), picture)
}

fn of_asset(db: &Db<'_>, id: i64) -> Result<Option<PictureHash>, StoreError> {
    db.optional(OF_ASSET, args!(id), picture)
}

fn stamp_of(db: &Db<'_>, id: i64) -> Result<Option<(Option<u64>, i64)>, StoreError> {
    db.optional(STAMP_OF, args!(id), |r| {
        Ok((r.get::<Option<i64>>(0)?.map(|h| h as u64), r.get(1)?))
    })
}

fn in_bands(db: &Db<'_>, probes: &[Vec<u16>]) -> Result<Vec<PictureHash>, StoreError> {
    let mut out = Vec::new();
    for (sql, values) in NEAR.iter().zip(probes) {
        let values = serde_json::to_string(values)
            .map_err(|e| StoreError::Conflict(format!("band values: {e}")))?;
        db.each(db.pick(sql), args!(values), |r| {
            out.push(picture(r)?);
            Ok(())
        })?;
    }
    out.sort_unstable_by_key(|p| p.id);
    out.dedup_by_key(|p| p.id);
    Ok(out)
}

impl Store {
    /// Every live picture with a hash, by id: what the groups are made of.
    pub fn picture_hashes(&self) -> Result<Vec<PictureHash>, StoreError> {
        self.read(live)
    }

    /// The hash of one asset (trashed or not), `None` while it has none.
    pub fn picture_hash(&self, id: i64) -> Result<Option<PictureHash>, StoreError> {
        self.read(|db| of_asset(db, id))
    }

    /// The stamp of one asset: its hash (`None`: it cannot be hashed) and the scheme, `None`
    /// while no walk stamped it.
    pub fn picture_hash_stamp(&self, id: i64) -> Result<Option<(Option<u64>, i64)>, StoreError> {
        self.read(|db| stamp_of(db, id))
    }

    /// The live pictures whose band `b` is one of `probes[b]` (`similar::index::band_probes`),
    /// each once, by id: the candidates near one hash, found through the band indexes.
    pub fn pictures_in_bands(&self, probes: &[Vec<u16>]) -> Result<Vec<PictureHash>, StoreError> {
        self.read(|db| in_bands(db, probes))
    }

    /// The plans SQLite picks for the four band lookups (SQLite's own `EXPLAIN QUERY PLAN`,
    /// so through its connection).
    pub fn pictures_in_bands_plan(&self) -> Result<Vec<Vec<String>>, StoreError> {
        self.read(|db| {
            let conn = db.lite()?;
            NEAR.iter()
                .map(|pair| super::plan(conn, pair.sqlite))
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::db::tests::on_both_schemas;

    /// An asset whose content hash starts with `content`'s bytes.
    fn an_asset(db: &Db<'_>, id: i64, content: u64) -> Result<(), StoreError> {
        let mut hash = [0u8; 32];
        hash[..8].copy_from_slice(&content.to_be_bytes());
        db.execute(
            "INSERT INTO assets (id, checksum, size, created_at, content_hash)
             VALUES (?1, ?2, 1, 0, ?3)",
            args!(id, [id as u8; 32], hash),
        )?;
        Ok(())
    }

    fn a_stamp_keeps_a_newer_schemes_and_reads_back(db: &Db<'_>) -> Result<(), StoreError> {
        an_asset(db, 1, 5)?;
        an_asset(db, 2, 6)?;
        assert_eq!(stamp_of(db, 1)?, None);
        stamp(
            db,
            2,
            &[(1, Some(u64::MAX)), (2, None), (99, Some(1))],
            false,
        )?;
        assert_eq!(stamp_of(db, 1)?, Some((Some(u64::MAX), 2)));
        assert_eq!(stamp_of(db, 2)?, Some((None, 2)), "a stamp without a hash");
        stamp(db, 1, &[(1, Some(7))], false)?;
        let kept = stamp_of(db, 1)?;
        assert_eq!(
            kept,
            Some((Some(u64::MAX), 2)),
            "an older scheme writes nothing"
        );
        stamp(db, 1, &[(1, Some(7))], true)?;
        assert_eq!(stamp_of(db, 1)?, Some((Some(7), 1)), "a rollback does");
        let one = of_asset(db, 1)?.expect("a hash");
        assert_eq!((one.id, one.hash, one.content), (1, 7, Some(5)));
        assert_eq!(of_asset(db, 2)?, None);
        Ok(())
    }

    fn the_live_pictures_leave_out_the_unpublished_and_the_trashed(
        db: &Db<'_>,
    ) -> Result<(), StoreError> {
        for id in 1..=4 {
            an_asset(db, id, id as u64)?;
        }
        let hashes = [(1, Some(10)), (2, Some(20)), (3, Some(30)), (4, None)];
        stamp(db, 1, &hashes, false)?;
        db.execute("UPDATE assets SET pending_run = 7 WHERE id = 2", args!())?;
        db.execute(
            "UPDATE assets SET trashed_at = 5, trash_reason = 'user' WHERE id = 3",
            args!(),
        )?;
        let ids: Vec<(i64, u64)> = live(db)?.iter().map(|p| (p.id, p.hash)).collect();
        assert_eq!(ids, vec![(1, 10)]);
        Ok(())
    }

    fn the_bands_find_the_pictures_sharing_one(db: &Db<'_>) -> Result<(), StoreError> {
        let hashes: [(i64, u64); 4] = [
            (1, 0x0001_0002_0003_0004),
            (2, 0x0001_0000_0000_0000),
            (3, 0xffff_0000_0003_0000),
            (4, 0x0000_0000_0000_0009),
        ];
        for (id, hash) in hashes {
            an_asset(db, id, 0)?;
            stamp(db, 1, &[(id, Some(hash))], false)?;
        }
        let found = |probes: &[Vec<u16>]| -> Result<Vec<i64>, StoreError> {
            Ok(in_bands(db, probes)?.iter().map(|p| p.id).collect())
        };
        assert_eq!(found(&[vec![4], vec![], vec![], vec![1]])?, vec![1, 2]);
        let many = found(&[vec![9, 4], vec![3], vec![], vec![0xffff]])?;
        assert_eq!(many, vec![1, 3, 4]);
        assert_eq!(found(&[vec![], vec![], vec![], vec![]])?, Vec::<i64>::new());
        Ok(())
    }

    on_both_schemas!(
        a_stamp_keeps_a_newer_schemes_and_reads_back,
        the_live_pictures_leave_out_the_unpublished_and_the_trashed,
        the_bands_find_the_pictures_sharing_one,
    );
}
