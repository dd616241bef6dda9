//! RetinaFace as the face-repair walk's detector (`walks::faces::FaceDetector`), and dlib's
//! descriptor as the embedding walk's encoder (`walks::embeddings::FaceEncoder`). Owns only
//! the translation of types and of error policy; must not hold detection, alignment or
//! embedding logic (that is `retina`, `chips` and `embed`).

use super::{FaceDetector as _, FaceEmbedder, FaceError, Point, RetinaFace};
use crate::model::DetectedFace as StoredFace;
use crate::walks::embeddings::FaceEncoder;
use crate::walks::faces::{DetectError, FaceDetector as WalkDetector};
use std::path::Path;

/// The embedder version: the embedding scheme stamped on what it processed. Bump it when
/// the vectors change: the model, the alignment, the chip's decode.
pub const EMBED_SCHEME: i64 = 1;

/// The embedding walk's view of dlib's descriptor.
#[derive(Debug, Clone, Copy)]
pub struct WalkDlib(pub FaceEmbedder);

impl FaceEncoder for WalkDlib {
    /// The picture is decoded once and each stored face cut upright and aligned
    /// (`chips`). A picture this build can never decode again (it was detected, then
    /// changed into something unsupported or broken with the same bytes: not expected) gives
    /// no vectors, so that the walk does not retry it forever; I/O and model failures keep
    /// the old stamp, as for detection.
    fn encode(
        &self,
        path: &Path,
        faces: &[StoredFace],
    ) -> Result<Vec<Option<Vec<f32>>>, DetectError> {
        let faces: Vec<super::DetectedFace> = faces.iter().map(unstored).collect();
        let chips = match super::chips(path, &faces) {
            Ok(chips) => chips,
            Err(e) if e.is_permanent() => {
                tracing::info!(path = %path.display(), error = %e, "no face descriptors for this picture");
                return Ok(vec![None; faces.len()]);
            }
            Err(e) => return Err(walk_error(path, e)),
        };
        chips
            .iter()
            .map(|chip| match chip {
                Some(chip) => (self.0.embed(chip).map(|v| Some(v.to_vec())))
                    .map_err(|e| DetectError::Detector(e.to_string())),
                None => Ok(None),
            })
            .collect()
    }

    fn version(&self) -> i64 {
        EMBED_SCHEME
    }
}

fn unstored(f: &StoredFace) -> super::DetectedFace {
    super::DetectedFace {
        x: f.x,
        y: f.y,
        width: f.w,
        height: f.h,
        score: f.score,
        landmarks: f.landmarks.map(|(x, y)| Point { x, y }),
    }
}

/// The walk's view of the RetinaFace detector.
#[derive(Debug, Clone, Copy)]
pub struct WalkRetinaFace(pub RetinaFace);

impl WalkDetector for WalkRetinaFace {
    /// An unsupported (a video), oversized or undecodable picture is stamped with no faces: the
    /// walk only hands over files that still hold the asset's bytes, so this build can never
    /// do better for them, and the repair walk would otherwise retry them on every run
    /// (`mediadex faces redetect` still can). A read or model failure, a HEIF with no
    /// `heif-dec` here (it may be installed) or a `heif-dec` stopped by a signal stays an
    /// error, so the asset keeps its old stamp and is tried again by the next walk (a NAS
    /// blip passes). A `heif-dec` that ran to its deadline is `TimedOut`: the walk keeps
    /// the old stamp too, and remembers the timeout for the file's stamp.
    fn detect(&self, path: &Path) -> Result<Vec<StoredFace>, DetectError> {
        walk_result(path, self.0.detect(path))
    }

    fn version(&self) -> i64 {
        self.0.version()
    }
}

/// The walk's answer for a detection's outcome on `path` (public for detectors that decode
/// their own way, as the tests' do).
pub fn walk_result(
    path: &Path,
    outcome: Result<Vec<super::DetectedFace>, FaceError>,
) -> Result<Vec<StoredFace>, DetectError> {
    match outcome {
        Ok(faces) => Ok(faces.iter().map(stored).collect()),
        Err(e) if e.is_permanent() => {
            tracing::info!(path = %path.display(), error = %e, "no face detection for this picture");
            Ok(Vec::new())
        }
        Err(e) => Err(walk_error(path, e)),
    }
}

/// The walk's error for a failure that a later walk may not meet (not permanent).
fn walk_error(path: &Path, e: FaceError) -> DetectError {
    match e {
        FaceError::Io { source, .. } => DetectError::Read {
            path: path.display().to_string(),
            source,
        },
        e @ FaceError::Stopped(_) => DetectError::Stopped(e.to_string()),
        FaceError::TimedOut(after) => DetectError::TimedOut(after.as_secs()),
        e => DetectError::Detector(e.to_string()),
    }
}

fn stored(f: &super::DetectedFace) -> StoredFace {
    StoredFace {
        x: f.x,
        y: f.y,
        w: f.width,
        h: f.height,
        score: f.score,
        landmarks: f.landmarks.map(|p| (p.x, p.y)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_is_no_faces_and_a_missing_file_is_an_error() {
        let det = WalkRetinaFace(RetinaFace::new().expect("model"));
        let dir = tempfile::tempdir().expect("tempdir");
        let mp4 = dir.path().join("a.mp4");
        let mut bytes = vec![0, 0, 0, 0x18];
        bytes.extend_from_slice(b"ftypisom\0\0\0\0isomiso2");
        std::fs::write(&mp4, &bytes).expect("write");
        assert_eq!(det.detect(&mp4).ok(), Some(Vec::new()));
        let gone = det.detect(&dir.path().join("gone.jpg"));
        match gone {
            // Not found says the same on the next walk (`queue::io_retry`'s tests say it is
            // permanent); an EIO from a NAS would not.
            Err(DetectError::Read { ref source, .. }) => {
                assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
            }
            other => panic!("a missing file is a read error: {other:?}"),
        }
        assert_eq!(det.version(), crate::faces::SCHEME);
    }

    /// A HEIF with no heif-dec here is not stamped: installing the program must not leave
    /// it without faces for good.
    #[test]
    fn a_heif_without_its_decoder_keeps_its_old_stamp() {
        let path = Path::new("a.heic");
        let no_decoder = Err(FaceError::NoDecoder("image/heic".into()));
        match walk_result(path, no_decoder) {
            Err(DetectError::Detector(msg)) => assert!(msg.contains("heif-dec"), "{msg}"),
            other => panic!("not stamped: {other:?}"),
        }
        let stopped = Err(FaceError::Stopped(
            "heif-dec was stopped by signal 9".into(),
        ));
        // As transient as a NAS timeout.
        let blip = DetectError::Read {
            path: "a.heic".into(),
            source: std::io::ErrorKind::TimedOut.into(),
        };
        match walk_result(path, stopped) {
            Err(e @ DetectError::Stopped(_)) => assert_eq!(e.retry(), blip.retry()),
            other => panic!("a stopped decoder is not stamped: {other:?}"),
        }
        // Ran to its deadline: the walk remembers it (in seconds) for the file's stamp.
        let timed_out = Err(FaceError::TimedOut(std::time::Duration::from_secs(63)));
        assert!(matches!(
            walk_result(path, timed_out),
            Err(DetectError::TimedOut(63))
        ));
        let unsupported = Err(FaceError::Unsupported("image/tiff".into()));
        assert_eq!(walk_result(path, unsupported).ok(), Some(Vec::new()));
    }

    #[test]
    fn a_broken_picture_is_no_faces_so_the_walk_does_not_retry_it_forever() {
        let det = WalkRetinaFace(RetinaFace::new().expect("model"));
        let dir = tempfile::tempdir().expect("tempdir");
        let broken = dir.path().join("broken.jpg");
        let mut bytes = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10];
        bytes.extend_from_slice(b"JFIF\0garbage that is no image at all");
        std::fs::write(&broken, &bytes).expect("write");
        assert_eq!(det.detect(&broken).ok(), Some(Vec::new()));
    }

    #[test]
    fn faces_keep_their_coordinates() {
        let det = WalkRetinaFace(RetinaFace::new().expect("model"));
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/astronaut.png");
        let faces = det.detect(&path).expect("detects");
        assert_eq!(faces.len(), 1);
        let own = det.0.detect(&path).expect("detects");
        assert_eq!(faces[0], stored(&own[0]));
        assert_eq!(
            faces[0].landmarks[0],
            (own[0].landmarks[0].x, own[0].landmarks[0].y)
        );
    }
}
