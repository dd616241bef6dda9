//! The similar-photo walk (DESIGN.md section 8): stamps every live image that lacks the
//! current hash scheme with its perceptual hash; trashed assets and videos are skipped, as in
//! the face walk. The hasher is a trait object (`similar::WalkHasher` implements it, as
//! `faces::for_walks` does the detector), so the walks do not import the hash rule. A file
//! is used only if it still has its scan stamp or the asset's checksum (`faces::file_of`).
//! A picture that can never be hashed (not a format this build decodes, too large, broken)
//! is stamped "no hash", so that the walk does not try it again on every run; one whose file
//! cannot be read, or a HEIF with no `heif-dec` here yet or whose `heif-dec` was stopped by a
//! signal, keeps its old stamp and does not block the walk. One whose `heif-dec` ran to its
//! deadline keeps its stamp too, and the timeout is remembered for the file's stamp, as the
//! face walk does (`faces::Visit`): later walks skip it until the file changes.

use super::WalkKind;
use super::faces::{Visit, candidate_of, once_per_picture, remembered_timeout, timeout_of};
use crate::model::{Known, WalkAsset, WalkKindId, WalkResults, timed_out_reason};
use std::path::Path;
use std::sync::Arc;

/// Why a picture was not hashed this time (it keeps its stamp).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HashError {
    /// A later walk may succeed (the file could not be read, no `heif-dec` here yet, a
    /// decoder stopped by a signal).
    #[error("{0}")]
    Failed(String),
    /// The decoder ran to its full deadline (seconds): remembered for the file's stamp.
    #[error("decoding timed out after {0} s")]
    TimedOut(u64),
}

impl From<String> for HashError {
    fn from(why: String) -> HashError {
        HashError::Failed(why)
    }
}

/// A perceptual hasher, shared by all rayon workers.
pub trait PictureHasher: Send + Sync + 'static {
    /// The picture's hash; `Ok(None)` when this build can never hash it (stamped "no hash");
    /// `Err` when a later walk may (the file could not be read): it keeps its stamp.
    fn hash(&self, path: &Path) -> Result<Option<u64>, HashError>;
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

    /// The asset's hash: `Done(None)` for "no hash can be made"; a timeout to remember; or
    /// skipped, keeping its stamp.
    fn hash_asset(&self, asset: &WalkAsset) -> Visit<Option<u64>> {
        if remembered_timeout(asset, "similar") {
            return Visit::Skipped;
        }
        let Some(candidate) = candidate_of(asset) else {
            return Visit::Skipped;
        };
        match self.hasher.hash(&candidate.path) {
            Ok(hash) => Visit::Done(hash),
            Err(HashError::TimedOut(secs)) => {
                tracing::warn!(asset = asset.id, problem = %timed_out_reason(secs), "perceptual hash skipped; remembered for this file");
                Visit::TimedOut(timeout_of(asset, &candidate, secs))
            }
            Err(why) => {
                tracing::warn!(asset = asset.id, error = %why, "perceptual hash failed");
                Visit::Skipped
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
        let visits = once_per_picture(batch, Known::phash, |a| self.hash_asset(a));
        let (hashes, timed_out) = Visit::split(visits);
        WalkResults::Similar {
            scheme: self.scheme,
            hashes,
            timed_out,
        }
    }
}
