//! The face-repair walk (DESIGN.md section 8): detects faces in every live image that lacks
//! the current detector version ("repair missing"); trashed assets are skipped. The detector
//! is a trait object so that any implementation plugs in without touching the machinery.
//! A file is used only if it still has its scan stamp or the asset's checksum; an asset
//! whose file cannot be read or whose detection failed (`DetectError`) keeps its old stamp
//! and does not block the walk. A decode that ran to its deadline (`DetectError::TimedOut`)
//! is remembered in the index for the file's stamp (`model::DecodeTimeout`, committed with
//! the batch): the next walks skip that asset, saying "decoding timed out after N s", until
//! the file changes or `scan --force` reads it again. A decoder stopped from outside (a
//! shutdown, the OOM killer, a lost lease) is not remembered: the next walk tries again.
//! Each picture is read once (`once_per_picture`, the similar walk's too): an asset whose
//! content hash and orientation another has takes that one's result.

use super::WalkKind;
use crate::locate::{Candidate, candidates};
use crate::media::content_hash::hash_file;
use crate::model::{DecodeTimeout, Known, WalkAsset, WalkKindId, WalkResults, timed_out_reason};
use crate::queue::{Retry, io_retry};
use rayon::prelude::*;
use std::collections::HashMap;
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
    /// The decoder ran to its full deadline (seconds) and was killed: the walk remembers it
    /// for the file's stamp (`model::DecodeTimeout`) and does not run it again until the
    /// file changes.
    #[error("decoding timed out after {0} s")]
    TimedOut(u64),
}

impl DetectError {
    pub fn retry(&self) -> Retry {
        match self {
            DetectError::Read { source, .. } => io_retry(source),
            DetectError::Stopped(_) | DetectError::TimedOut(_) => Retry::Transient,
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
    candidate_of(asset).map(|c| c.path)
}

/// `file_of`, with the stamp the scan recorded for it (what a timed-out decode is
/// remembered for).
pub(super) fn candidate_of(asset: &WalkAsset) -> Option<Candidate> {
    candidates(asset)
        .into_iter()
        .find(|c| c.unchanged() || hash_file(&c.path).is_ok_and(|h| h.checksum == asset.checksum))
}

/// What one asset of a batch gave: its faces, a decode that timed out on its file, or
/// nothing (unreadable, remembered as timed out before, failed: it keeps its stamp).
pub(super) enum Visit<T> {
    Done(T),
    TimedOut(DecodeTimeout),
    Skipped,
}

impl<T> Visit<T> {
    /// The visits' results and timeouts, apart.
    pub(super) fn split(visits: Vec<(i64, Visit<T>)>) -> (Vec<(i64, T)>, Vec<DecodeTimeout>) {
        let (mut done, mut timed_out) = (Vec::new(), Vec::new());
        for (id, v) in visits {
            match v {
                Visit::Done(t) => done.push((id, t)),
                Visit::TimedOut(t) => timed_out.push(t),
                Visit::Skipped => {}
            }
        }
        (done, timed_out)
    }
}

/// Visits a batch once per picture (issue 29 item 4): an asset whose result the store found
/// in another asset of the same pixels (`known`, read by `known_as`) takes it without
/// reading a file, and the others are visited in parallel, except those with the same
/// pixels as an earlier one of the batch (`same_pixels`): they take its result, or are
/// visited themselves when it gave none (its file unreadable, its decode timed out).
pub(super) fn once_per_picture<T: Clone + Send + Sync>(
    batch: &[WalkAsset],
    known_as: impl Fn(&Known) -> Option<T> + Sync,
    visit: impl Fn(&WalkAsset) -> Visit<T> + Sync,
) -> Vec<(i64, Visit<T>)> {
    let firsts: Vec<(i64, Visit<T>)> = batch
        .par_iter()
        .filter(|a| a.same_pixels.is_none())
        .map(|a| match a.known.as_ref().and_then(&known_as) {
            Some(found) => (a.id, Visit::Done(found)),
            None => (a.id, visit(a)),
        })
        .collect();
    let done: HashMap<i64, &T> = firsts
        .iter()
        .filter_map(|(id, v)| match v {
            Visit::Done(found) => Some((*id, found)),
            _ => None,
        })
        .collect();
    let copies: Vec<(i64, Visit<T>)> = batch
        .par_iter()
        .filter_map(|a| {
            let first = a.same_pixels?;
            Some(match done.get(&first) {
                Some(found) => (a.id, Visit::Done((*found).clone())),
                None => (a.id, visit(a)),
            })
        })
        .collect();
    let mut visits = firsts;
    visits.extend(copies);
    visits.sort_by_key(|(id, _)| *id);
    visits
}

/// Whether the asset's decode timed out before on the file it still has: the walk skips
/// it (and says so) instead of running the decoder for as long again.
pub(super) fn remembered_timeout(asset: &WalkAsset, walk: &str) -> bool {
    let Some(secs) = asset.timed_out else {
        return false;
    };
    tracing::info!(
        asset = asset.id,
        walk,
        problem = %timed_out_reason(secs),
        "skipped: its decode timed out before on this file (it is tried again once the file changes, or by scan --force)"
    );
    true
}

/// The fact to remember for a decode of `candidate` that ran `secs` to its deadline.
pub(super) fn timeout_of(asset: &WalkAsset, candidate: &Candidate, secs: u64) -> DecodeTimeout {
    DecodeTimeout {
        asset_id: asset.id,
        size: candidate.stamp.size,
        mtime_ns: candidate.stamp.mtime_ns,
        seconds: secs,
    }
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

impl FacesWalk {
    fn visit(&self, a: &WalkAsset) -> Visit<Vec<DetectedFace>> {
        if remembered_timeout(a, "faces") {
            return Visit::Skipped;
        }
        let Some(candidate) = candidate_of(a) else {
            return Visit::Skipped;
        };
        match self.detector.detect(&candidate.path) {
            Ok(faces) => Visit::Done(faces),
            Err(DetectError::TimedOut(secs)) => {
                tracing::warn!(asset = a.id, problem = %timed_out_reason(secs), "face detection skipped; remembered for this file");
                Visit::TimedOut(timeout_of(a, &candidate, secs))
            }
            Err(e) => {
                tracing::warn!(asset = a.id, error = %e, "face detection failed");
                Visit::Skipped
            }
        }
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
        let visits = once_per_picture(batch, Known::faces, |a| self.visit(a));
        let (found, timed_out) = Visit::split(visits);
        WalkResults::Faces {
            version: self.scheme,
            found,
            timed_out,
        }
    }
}
