//! The face-repair walk (DESIGN.md section 8): detects faces in every live image that lacks
//! the current detector version ("repair missing"); trashed assets are skipped. The detector
//! is a trait object so that any implementation plugs in without touching the machinery.
//! A file is used only if it still has its scan stamp or the asset's checksum; an asset
//! whose file cannot be read or whose detection failed (`DetectError`) keeps its old stamp
//! and does not block the walk.

use super::WalkKind;
use crate::locate::{Candidate, candidates, unchanged};
use crate::media::content_hash::hash_file;
use crate::model::{WalkAsset, WalkKindId, WalkResults};
use crate::queue::{Retry, io_retry};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use crate::model::DetectedFace;

/// Why a picture's faces could not be detected. A picture the detector can never read
/// (unsupported, too large, corrupt) is not an error: the detector answers it with no faces,
/// so that the walk does not try it again on every run.
#[derive(Debug, thiserror::Error)]
pub enum DetectError {
    /// The file could not be read; whether a later walk may succeed is the I/O error's
    /// (`io_retry`: a NAS blip passes, a missing file does not).
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The detector itself failed (its model did not load or run): a bug, not the file's.
    #[error("the face detector failed: {0}")]
    Detector(String),
    /// No file of the asset still holds the bytes it was indexed with.
    #[error("no file of asset {0} still holds its bytes")]
    NoFile(i64),
    /// The decoder was stopped before it finished (its deadline on a busy machine, a
    /// signal): nothing was learnt about the file, a later walk tries again.
    #[error("{0}")]
    Stopped(String),
}

impl DetectError {
    pub fn retry(&self) -> Retry {
        match self {
            DetectError::Read { source, .. } => io_retry(source),
            DetectError::Stopped(_) => Retry::Transient,
            DetectError::Detector(_) | DetectError::NoFile(_) => Retry::Permanent,
        }
    }
}

/// A face detector, shared by all rayon workers.
pub trait FaceDetector: Send + Sync + 'static {
    /// The faces in the image at `path`, in original-image coordinates; `Err` when the file
    /// cannot be read or the detector failed.
    fn detect(&self, path: &Path) -> Result<Vec<DetectedFace>, DetectError>;
    /// The detector version: the face scheme, stamped on what it processed.
    fn version(&self) -> i64;
}

/// Images per batch: detection is slow, a batch should commit well within a lease.
pub const BATCH: usize = 32;

pub struct FacesWalk {
    pub detector: Arc<dyn FaceDetector>,
    pub scheme: i64,
    pub batch: usize,
}

impl FacesWalk {
    /// The detector's version unless overridden (`MEDIADEX_FACE_SCHEME`).
    pub fn new(detector: Arc<dyn FaceDetector>, scheme_override: Option<i64>) -> Self {
        let scheme = scheme_override.unwrap_or_else(|| detector.version());
        FacesWalk {
            detector,
            scheme,
            batch: BATCH,
        }
    }
}

/// The first candidate file that still holds the asset's bytes (its scan stamp, or else its
/// checksum, says so).
pub(super) fn file_of(asset: &WalkAsset) -> Option<PathBuf> {
    candidates(asset)
        .into_iter()
        .find(|Candidate { path, stamp }| {
            unchanged(path, stamp) || hash_file(path).is_ok_and(|h| h.checksum == asset.checksum)
        })
        .map(|c| c.path)
}

impl FacesWalk {
    /// Detects the faces of one asset now (`mediadex faces redetect`), outside any chain.
    /// `Err` says why not: no file still holds the asset's bytes, it could not be read, or
    /// the detector failed.
    pub fn detect_one(&self, asset: &WalkAsset) -> Result<Vec<DetectedFace>, DetectError> {
        let path = file_of(asset).ok_or(DetectError::NoFile(asset.id))?;
        self.detector.detect(&path)
    }
}

impl WalkKind for FacesWalk {
    fn id(&self) -> WalkKindId {
        WalkKindId::Faces
    }

    fn scheme(&self) -> i64 {
        self.scheme
    }

    fn batch_size(&self) -> usize {
        self.batch.max(1)
    }

    fn process(&self, batch: &[WalkAsset]) -> WalkResults {
        let found = batch
            .par_iter()
            .filter_map(|a| {
                let path = file_of(a)?;
                match self.detector.detect(&path) {
                    Ok(faces) => Some((a.id, faces)),
                    Err(e) => {
                        tracing::warn!(asset = a.id, error = %e, "face detection failed");
                        None
                    }
                }
            })
            .collect();
        WalkResults::Faces {
            version: self.scheme,
            found,
        }
    }
}
