//! Face detection: an image file in, the faces in it out, in the file's stored (un-rotated)
//! pixel coordinates. Owns the `FaceDetector` trait, the embedded RetinaFace model and its
//! pre- and post-processing, and the face descriptor: `align` turns a face's landmarks into
//! dlib's 150x150 chip, `chips` cuts a file's stored faces out of its upright picture with it,
//! `embed` runs the embedded dlib ResNet on a chip (128 numbers per face). Must not touch the
//! database or the queue, and must never panic on what it reads. Only `for_walks` knows the
//! face-repair walk's trait. Its decode is also lent, as `upright_picture`, to the perceptual
//! hash (`similar`), so both read the same formats the same way.
//!
//! The pipeline of `RetinaFace::detect`: decode (bounded: refused before it allocates when the
//! declared size is over `MAX_SIDE` or `MAX_ALLOC_BYTES` of RGBA, so a walk worker's decode never
//! holds more than `MAX_ALLOC_BYTES` of pixels, plus for a HEIF the PNG `heif-dec` wrote; HEIF
//! through `heif-dec`, already upright) → apply EXIF orientation → scale the long side to
//! `TARGET_LONG_SIDE` (enlarging at most `zoom::MAX_UPSCALE` times) → run the net → decode
//! priors → keep candidates above `CANDIDATE_THRESHOLD` → for a picture much larger than the
//! net's input, look again at its small candidates in windows of the picture at a larger
//! scale (`zoom`) → NMS over both passes → `SCORE_THRESHOLD` → map boxes and landmarks back to
//! stored-pixel coordinates.
//!
//! Must not import: store, queue, http, ops, rusqlite

pub mod align;
mod chips;
mod decode;
mod embed;
mod for_walks;
mod load;
mod orient;
mod retina;
mod zoom;

pub use align::CHIP_SIDE;
pub use chips::{chips, chips_reader};
pub use embed::{EMBEDDING_LEN, Embedding, FaceEmbedder};
pub use for_walks::{EMBED_SCHEME, WalkDlib, WalkRetinaFace, walk_result};
pub use load::{Decoded, MAX_ALLOC_BYTES, MAX_SIDE, open_with as open_with_decoder};
pub use orient::box_to_shown;
pub use retina::{
    CANDIDATE_THRESHOLD, NMS_THRESHOLD, RetinaFace, SCORE_THRESHOLD, TARGET_LONG_SIDE,
};

use std::path::Path;

/// Detector version stamped on stored faces (`faces_scheme`). Bump it when anything that
/// changes the output changes: the model, the input size, the thresholds, the decode.
/// 2 (issue 28 item 6): the closer look at small faces of big pictures, enlargement bounded
/// to twice, the threshold 0.97; the face walk re-detects what scheme 1 stamped.
pub const SCHEME: i64 = 2;

/// A picture's pixels as shown (EXIF or RAW orientation applied), scaled down (a fast box
/// filter) so that its long side is at most `long_side`: what face detection decodes (JPEG,
/// PNG, WebP, GIF, TIFF, HEIF through `heif-dec`, RAW previews), for the perceptual hash. A decoder
/// panic is a `Decode` error, as in detection.
pub fn upright_picture(path: &Path, long_side: u32) -> Result<image::DynamicImage, FaceError> {
    retina::guarded(|| {
        let decoded = load::open(path)?;
        let mut image = image::DynamicImage::ImageRgb8(decoded.rgb);
        let (w, h) = (image.width(), image.height());
        if w.max(h) > long_side {
            image = image.thumbnail(long_side, long_side);
        }
        image.apply_orientation(decoded.orientation);
        Ok(image)
    })
}

/// A point in stored-pixel coordinates (continuous: the image spans `0..width`, `0..height`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: f32,
    pub y: f32,
}

/// One face: its box (top-left corner and size) and five landmarks, all in the stored
/// (un-rotated) pixel coordinates of the original file, and the detector's score in `0..=1`.
#[derive(Debug, Clone, PartialEq)]
pub struct DetectedFace {
    pub x: f32,
    pub y: f32,
    pub width: f32,
    pub height: f32,
    pub score: f32,
    /// As the model orders them on the displayed (upright) face: right eye, left eye, nose,
    /// right mouth corner, left mouth corner (the subject's right and left).
    pub landmarks: [Point; 5],
}

/// Why a file could not be searched for faces.
#[derive(Debug, thiserror::Error)]
pub enum FaceError {
    #[error("cannot read {what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    /// Not a format this build can decode (videos, non-media, a TIFF's unsupported coding).
    /// Permanent: asking again gives the same answer.
    #[error("face detection does not support {0}")]
    Unsupported(String),
    /// A HEIF picture (HEIC, HEIF, AVIF) and no `heif-dec` here: not permanent, the program
    /// may be installed later.
    #[error("face detection of {0} needs heif-dec (package libheif-examples)")]
    NoDecoder(String),
    /// Refused before decoding: the picture would need more memory than allowed.
    #[error("image too large for face detection: {0}")]
    TooLarge(String),
    /// Corrupt, truncated or otherwise undecodable image data.
    #[error("cannot decode image: {0}")]
    Decode(String),
    /// The external decoder (`heif-dec`) was stopped from outside before it finished (a
    /// signal: a shutdown, the OOM killer): it said nothing about the file, so this is not
    /// permanent.
    #[error("the decoder stopped before it finished: {0}")]
    Stopped(String),
    /// The external decoder ran to its full deadline (already scaled by the declared size)
    /// and was killed: it will take as long again on these bytes. Not permanent for the
    /// picture (a faster machine may decode it), but remembered for the file's stamp by the
    /// walks, which do not run it again until the file changes.
    #[error("decoding timed out after {} s", .0.as_secs())]
    TimedOut(std::time::Duration),
    /// The embedded model failed to load or to run (a bug, not the file's fault).
    #[error("face model failed: {0}")]
    Model(String),
}

impl FaceError {
    /// True when retrying the same file cannot help (the file is unsupported, too large or
    /// broken); false for I/O and model failures and a stopped decoder, which may pass.
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            FaceError::Unsupported(_) | FaceError::TooLarge(_) | FaceError::Decode(_)
        )
    }
}

/// A face detector: a path in, faces in stored-pixel coordinates out. Implementations are
/// shared across rayon workers.
pub trait FaceDetector: Send + Sync {
    fn detect(&self, path: &Path) -> Result<Vec<DetectedFace>, FaceError>;
    /// The detector version (`SCHEME` for RetinaFace).
    fn version(&self) -> i64;
}
