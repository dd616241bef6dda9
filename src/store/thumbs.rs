//! The `thumbs` job's selection: the pictures and videos a scan's completion published, in
//! id order after the job's cursor, each with the files that may show it, and one asset's
//! files for a thumbnail or an original asked for by request, each with its remembered
//! timed-out decode; and a batch's fenced completion, which remembers the decodes of the
//! batch that timed out. The job's rows are advanced through `jobs` like every other job.

use super::rows::checksum_col;
use super::walks::files_of;
use super::{Store, StoreError, parse_col};
use crate::model::{DecodeTimeout, Lease, MediaKind, NewJob, ThumbAsset, WalkAsset, WalkFile};
use rusqlite::params;

/// Visible pictures and videos with `after < id <= last`. Assets of another run still
/// pending in that range are left to that run's own job.
const BATCH: &str = "
    SELECT id, checksum, trashed_at IS NOT NULL, kind, mime, orientation, width, height
      FROM assets
     WHERE id > ?1 AND id <= ?2 AND pending_run IS NULL AND kind IN ('image', 'video')
     ORDER BY id LIMIT ?3";

type Head = (
    i64,
    [u8; 32],
    bool,
    MediaKind,
    Option<String>,
    Option<u16>,
    Option<u32>,
    Option<u32>,
);

impl Store {
    /// The files of asset `id`, present first, each with its library root and the stamp
    /// its scan recorded: what `locate` needs to find the one to read for a request.
    pub fn asset_files(&self, id: i64) -> Result<Vec<WalkFile>, StoreError> {
        self.read(|conn| files_of(conn, id))
    }

    /// Completes a thumbnail batch's row in one fenced transaction: the decodes of the batch
    /// that timed out remembered, then the chain's `next` row when it goes on.
    pub fn complete_thumbs_batch(
        &self,
        lease: &Lease,
        timed_out: Vec<DecodeTimeout>,
        next: Option<NewJob>,
    ) -> Result<(), StoreError> {
        let lease = lease.clone();
        self.write(move |conn, now| {
            super::jobs::complete(conn, &lease, now)?;
            super::decode_timeouts::record(conn, &timed_out, now)?;
            if let Some(next) = &next {
                super::jobs::insert(conn, next, now)?;
            }
            Ok(())
        })
    }

    /// Up to `limit` assets for the thumbnail job after its cursor `after`, up to `last`.
    pub fn thumbs_batch(
        &self,
        after: i64,
        last: i64,
        limit: usize,
    ) -> Result<Vec<ThumbAsset>, StoreError> {
        self.read(|conn| {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let heads: Vec<Head> = conn
                .prepare_cached(BATCH)?
                .query_map(params![after, last, limit], |r| {
                    Ok((
                        r.get(0)?,
                        checksum_col(r, 1)?,
                        r.get(2)?,
                        parse_col(r, 3, MediaKind::parse)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                        r.get(7)?,
                    ))
                })?
                .collect::<Result<_, _>>()?;
            heads
                .into_iter()
                .map(
                    |(id, checksum, trashed, kind, mime, orientation, width, height)| {
                        Ok(ThumbAsset {
                            asset: WalkAsset {
                                id,
                                checksum,
                                trashed,
                                files: files_of(conn, id)?,
                                timed_out: super::decode_timeouts::timed_out(conn, id)?,
                            },
                            kind,
                            mime,
                            orientation,
                            width,
                            height,
                        })
                    },
                )
                .collect()
        })
    }
}
