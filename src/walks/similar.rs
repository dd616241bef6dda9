//! The similar-photo walk (DESIGN.md section 8): stamps every live image that lacks the
//! current hash scheme with its perceptual hash; trashed assets and videos are skipped, as in
//! the face walk. The hasher is a trait object (`similar::WalkHasher` implements it, as
//! `faces::for_walks` does the detector), so the walks do not import the hash rule. A file
//! is used only if it still has its scan stamp or the asset's checksum (`faces::file_of`).
//! A picture that can never be hashed (not a format this build decodes, too large, broken)
//! is stamped "no hash", so that the walk does not try it again on every run; one whose file
//! cannot be read, or a HEIF with no `heif-dec` here yet or whose `heif-dec` was stopped (its
//! deadline, a signal), keeps its old stamp and does not block the walk.

use super::WalkKind;
use super::faces::file_of;
use crate::model::{WalkAsset, WalkKindId, WalkResults};
use rayon::prelude::*;
use std::path::Path;
use std::sync::Arc;

/// A perceptual hasher, shared by all rayon workers.
pub trait PictureHasher: Send + Sync + 'static {
    /// The picture's hash; `Ok(None)` when this build can never hash it (stamped "no hash");
    /// `Err` (why) when a later walk may (the file could not be read): it keeps its stamp.
    fn hash(&self, path: &Path) -> Result<Option<u64>, String>;
    /// The hash rule's version: the walk's scheme.
    fn version(&self) -> i64;
}

/// Pictures per batch: a hash is a decode (tens of milliseconds for a phone photo, up to a
/// second for 24 megapixels), so a batch commits well within a lease.
pub const BATCH: usize = 64;

pub struct SimilarWalk {
    pub hasher: Arc<dyn PictureHasher>,
    pub scheme: i64,
    pub batch: usize,
}

impl SimilarWalk {
    /// The hasher's version unless overridden (`MEDIADEX_SIMILAR_SCHEME`).
    pub fn new(hasher: Arc<dyn PictureHasher>, scheme_override: Option<i64>) -> Self {
        SimilarWalk {
            scheme: scheme_override.unwrap_or_else(|| hasher.version()),
            hasher,
            batch: BATCH,
        }
    }

    /// The asset's hash: `Some(None)` for "no hash can be made", `None` to keep its stamp.
    fn hash_asset(&self, asset: &WalkAsset) -> Option<Option<u64>> {
        let path = file_of(asset)?;
        match self.hasher.hash(&path) {
            Ok(hash) => Some(hash),
            Err(why) => {
                tracing::warn!(asset = asset.id, error = %why, "perceptual hash failed");
                None
            }
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
                .filter_map(|a| Some((a.id, self.hash_asset(a)?)))
                .collect(),
        }
    }
}
