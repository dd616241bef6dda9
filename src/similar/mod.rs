//! Similar photos (DESIGN.md section 8): a 64-bit perceptual hash per picture and, in `index`,
//! the grouping of the hashes within a Hamming distance through a multi-index that is not
//! quadratic. Owns the hash rule and its version (`SCHEME`, the `similar` walk's scheme) and
//! the distances the index supports; must not touch the database, the queue or the files'
//! identity (the walk, `walks::similar`, hands it a file that still holds the asset's bytes).
//!
//! The hash is image_hasher's Blockhash (blockhash.io) at 8x8: the picture as shown
//! (orientation applied) is decoded through the face walk's decode (`faces::upright_picture`:
//! JPEG, PNG, WebP, GIF, TIFF, HEIF through heif-dec, RAW previews), boxed down to `DECODE_SIDE`
//! pixels, cut into 8x8 blocks, and each block's brightness compared with the median of its
//! band of blocks. Chosen by measuring the corpus's Extras/Similar (`examples/
//! similar_distances.rs`; docs/configuration.md has the figures): against Mean+DCT ("pHash",
//! whose mean includes the DC term: unrelated photos 0-7 bits apart), Median+DCT, Gradient
//! (dHash) and Mean, it keeps a re-encode, a half-size copy and a tint within 2 bits and the
//! 90% crops within 2, 6 and 8, while the closest two unrelated groups are 23 bits apart and
//! the look-alike scene 28. Videos have no hash (their frames would need ffmpeg and a rule of
//! their own).
//!
//! Only `WalkHasher` knows the walk's trait.
//!
//! Must not import: store, queue, http, ops, rusqlite

pub mod index;

use crate::faces::FaceError;
use crate::walks::similar::HashError;
use image::DynamicImage;
use image_hasher::{HashAlg, Hasher, HasherConfig};
use std::path::Path;
use std::sync::OnceLock;

/// The hash rule's version, stamped on every hash (`phash_scheme`). Bump it when anything that
/// changes a hash changes: the algorithm, its sizes, the decode side, the decode itself.
pub const SCHEME: i64 = 1;

/// The long side a picture is boxed down to before hashing: the hash reads 16x16 pixels, so
/// more is wasted work (a 24-megapixel JPEG resized whole with Lanczos takes seconds), and a
/// fixed side makes the hash of a half-size copy start from the same pixels.
pub const DECODE_SIDE: u32 = 256;

fn hasher() -> &'static Hasher {
    static HASHER: OnceLock<Hasher> = OnceLock::new();
    HASHER.get_or_init(|| {
        HasherConfig::new()
            .hash_size(8, 8)
            .hash_alg(HashAlg::Blockhash)
            .to_hasher()
    })
}

/// The 64-bit perceptual hash of a picture as shown.
pub fn hash_image(image: &DynamicImage) -> u64 {
    let hash = hasher().hash_image(image);
    let mut bytes = [0u8; 8];
    for (slot, b) in bytes.iter_mut().zip(hash.as_bytes()) {
        *slot = *b;
    }
    u64::from_be_bytes(bytes)
}

/// The perceptual hash of the picture at `path`. A permanent error (`is_permanent`: not a
/// picture this build decodes, too large, broken) means no hash will ever come of this file;
/// the others (I/O, no `heif-dec` here yet, a `heif-dec` stopped at its deadline or by a
/// signal) may pass.
pub fn hash_file(path: &Path) -> Result<u64, FaceError> {
    let image = crate::faces::upright_picture(path, DECODE_SIDE)?;
    Ok(hash_image(&image))
}

/// This hash as the similar walk's hasher (`walks::similar::PictureHasher`): a permanent
/// decode error is "no hash, ever" (the walk stamps it and does not try again), any other
/// (I/O, no `heif-dec` here yet, a stopped `heif-dec`) leaves the asset's stamp for a later
/// walk; a `heif-dec` that ran to its deadline is `HashError::TimedOut`, which the walk
/// remembers.
#[derive(Debug, Clone, Copy, Default)]
pub struct WalkHasher;

impl crate::walks::similar::PictureHasher for WalkHasher {
    fn hash(&self, path: &Path) -> Result<Option<u64>, HashError> {
        walk_hash(path, hash_file(path))
    }

    fn version(&self) -> i64 {
        SCHEME
    }
}

/// The walk's answer for a hash's outcome on `path` (public for hashers that decode their
/// own way, as the tests' do): a permanent error is "no hash, ever", a decoder that ran to
/// its deadline a timeout to remember, any other error a later walk's.
pub fn walk_hash(path: &Path, outcome: Result<u64, FaceError>) -> Result<Option<u64>, HashError> {
    match outcome {
        Ok(hash) => Ok(Some(hash)),
        Err(e) if e.is_permanent() => {
            tracing::info!(path = %path.display(), error = %e, "no perceptual hash for this picture");
            Ok(None)
        }
        Err(FaceError::TimedOut(after)) => Err(HashError::TimedOut(after.as_secs())),
        Err(e) => Err(HashError::Failed(e.to_string())),
    }
}

/// How many of the 64 bits two hashes differ in.
pub fn distance(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name)
    }

    #[test]
    fn a_resized_copy_is_near_and_another_photo_is_far() {
        let path = fixture("astronaut.png");
        let original = crate::faces::upright_picture(&path, 4096).expect("decodes");
        let a = hash_image(&original);
        let half = original.resize(
            original.width() / 2,
            original.height() / 2,
            image::imageops::FilterType::Triangle,
        );
        assert!(distance(a, hash_image(&half)) <= 2, "half size");
        assert_eq!(
            hash_file(&path).expect("hash"),
            hash_file(&path).expect("hash")
        );
        let grey = DynamicImage::ImageLuma8(original.to_luma8());
        assert!(distance(a, hash_image(&grey)) <= 2, "grey copy");
        let flipped = original.fliph();
        assert!(
            distance(a, hash_image(&flipped)) > 16,
            "a mirror image is another picture"
        );
    }

    #[test]
    fn a_file_that_is_no_picture_is_a_permanent_error_and_a_missing_one_is_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = dir.path().join("notes.jpg");
        std::fs::write(&text, b"hello, world").expect("write");
        assert!(hash_file(&text).expect_err("no picture").is_permanent());
        let gone = hash_file(&dir.path().join("gone.jpg")).expect_err("missing");
        assert!(matches!(gone, FaceError::Io { .. }), "{gone}");
    }
}
