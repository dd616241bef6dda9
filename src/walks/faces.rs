//! The face-repair walk (DESIGN.md section 8): detects faces in every live image that lacks
//! the current detector version ("repair missing"); trashed assets are skipped. The detector
//! is a trait object so that any implementation plugs in without touching the machinery.
//! A file is used only if it still has its scan stamp or the asset's checksum; an asset
//! whose file cannot be read or decoded keeps its old stamp and does not block the walk.

use super::WalkKind;
use crate::locate::{Candidate, candidates, unchanged};
use crate::media::content_hash::hash_file;
use crate::model::{WalkAsset, WalkKindId, WalkResults};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use crate::model::DetectedFace;

/// A face detector, shared by all rayon workers.
pub trait FaceDetector: Send + Sync + 'static {
    /// The faces in the image at `path`, in original-image coordinates; `Err` when the file
    /// cannot be read or decoded.
    fn detect(&self, path: &Path) -> Result<Vec<DetectedFace>, String>;
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
fn file_of(asset: &WalkAsset) -> Option<PathBuf> {
    candidates(asset)
        .into_iter()
        .find(|Candidate { path, stamp }| {
            unchanged(path, stamp) || hash_file(path).is_ok_and(|h| h.checksum == asset.checksum)
        })
        .map(|c| c.path)
}

impl FacesWalk {
    /// Detects the faces of one asset now (`mediadex faces redetect`), outside any chain.
    /// `Err` says why not: no file still holds the asset's bytes, or the detector failed.
    pub fn detect_one(&self, asset: &WalkAsset) -> Result<Vec<DetectedFace>, String> {
        let path = file_of(asset)
            .ok_or_else(|| format!("no file of asset {} still holds its bytes", asset.id))?;
        self.detector
            .detect(&path)
            .map_err(|e| format!("{}: {e}", path.display()))
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
