//! The similar-photo walk (DESIGN.md section 8): stamps every live image that lacks the
//! current hash scheme with its perceptual hash (`similar::hash_file`); trashed assets and
//! videos are skipped, as in the face walk. A file is used only if it still has its scan stamp
//! or the asset's checksum (`faces::file_of`). A picture that can never be hashed (not a format
//! this build decodes, too large, broken) is stamped "no hash", so that the walk does not try
//! it again on every run; one whose file cannot be read, or a HEIF with no `heif-dec` here
//! yet, keeps its old stamp and does not block the walk.

use super::WalkKind;
use super::faces::file_of;
use crate::model::{WalkAsset, WalkKindId, WalkResults};
use rayon::prelude::*;

/// Pictures per batch: a hash is a decode (tens of milliseconds for a phone photo, up to a
/// second for 24 megapixels), so a batch commits well within a lease.
pub const BATCH: usize = 64;

pub struct SimilarWalk {
    pub scheme: i64,
    pub batch: usize,
}

impl SimilarWalk {
    /// This binary's hash scheme unless overridden (`MEDIADEX_SIMILAR_SCHEME`).
    pub fn new(scheme_override: Option<i64>) -> Self {
        SimilarWalk {
            scheme: scheme_override.unwrap_or(crate::similar::SCHEME),
            batch: BATCH,
        }
    }
}

/// The asset's hash: `Some(None)` for "no hash can be made", `None` to keep its old stamp.
fn hash_asset(asset: &WalkAsset) -> Option<Option<u64>> {
    let path = file_of(asset)?;
    match crate::similar::hash_file(&path) {
        Ok(hash) => Some(Some(hash)),
        Err(e) if e.is_permanent() => {
            tracing::info!(asset = asset.id, error = %e, "no perceptual hash for this picture");
            Some(None)
        }
        Err(e) => {
            tracing::warn!(asset = asset.id, error = %e, "perceptual hash failed");
            None
        }
    }
}

impl WalkKind for SimilarWalk {
    fn id(&self) -> WalkKindId {
        WalkKindId::Similar
    }

    fn scheme(&self) -> i64 {
        self.scheme
    }

    fn batch_size(&self) -> usize {
        self.batch.max(1)
    }

    fn process(&self, batch: &[WalkAsset]) -> WalkResults {
        WalkResults::Similar {
            scheme: self.scheme,
            hashes: batch
                .par_iter()
                .filter_map(|a| Some((a.id, hash_asset(a)?)))
                .collect(),
        }
    }
}
