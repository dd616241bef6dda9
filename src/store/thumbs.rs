//! The `thumbs` job's selection: the pictures and videos a scan's completion published, in
//! id order after the job's cursor, each with the files that may show it, and one asset's
//! files for a thumbnail or an original asked for by request, each with its remembered
//! timed-out decode; and a batch's fenced completion, which remembers the decodes of the
//! batch that timed out. The job's rows are advanced through `jobs` like every other job.
//! A composition of `assets` (the selection), `walks` (an asset's files; a batch's through
//! `chains::Parts`), `decode_timeouts` and `jobs`; no SQL of its own.

use super::chains::Parts;
use super::{Store, StoreError, assets, decode_timeouts, jobs, walks};
use crate::model::{DecodeTimeout, Lease, NewJob, ThumbAsset, WalkAsset, WalkFile};

impl Store {
    /// The files of asset `id`, present first, each with its library root and the stamp
    /// its scan recorded: what `locate` needs to find the one to read for a request.
    pub fn asset_files(&self, id: i64) -> Result<Vec<WalkFile>, StoreError> {
        let host = self.host();
        self.read(|db| walks::files_of(db, host, id))
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
        self.write(move |db, now| {
            jobs::complete(db, &lease, now)?;
            decode_timeouts::record(db, &timed_out, now)?;
            if let Some(next) = &next {
                jobs::insert(db, next, now)?;
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
        let host = self.host();
        self.read_snapshot(|db| {
            let heads = assets::thumb_heads(db, after, last, limit)?;
            let mut parts = Parts::of(db, host, heads.iter().map(|h| h.0))?;
            heads
                .into_iter()
                .map(
                    |(id, checksum, trashed, kind, mime, orientation, width, height)| {
                        let (files, timed_out) = parts.take(db, host, id)?;
                        Ok(ThumbAsset {
                            asset: WalkAsset {
                                id,
                                checksum,
                                trashed,
                                files,
                                timed_out,
                                same_pixels: None,
                                known: None,
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
