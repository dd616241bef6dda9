//! The file checksum: blake3 over the whole file, the identity of an asset (DESIGN.md
//! section 6). Small files are read in one go; large ones are memory-mapped. Counts the files
//! it opens and the bytes it hashes, process-wide, for metrics and for the tests that prove
//! an unchanged rescan opens nothing.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Above this size a file is memory-mapped instead of read into a buffer.
const MMAP_FROM: u64 = 4 << 20;

static FILES_OPENED: AtomicU64 = AtomicU64::new(0);
static BYTES_HASHED: AtomicU64 = AtomicU64::new(0);

/// A blake3 digest of a whole file.
pub type Checksum = [u8; 32];

pub fn checksum(path: &Path) -> io::Result<Checksum> {
    FILES_OPENED.fetch_add(1, Ordering::Relaxed);
    let mut file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    let mut hasher = blake3::Hasher::new();
    if size >= MMAP_FROM {
        hasher.update_mmap(path)?;
    } else {
        hasher.update_reader(&mut file)?;
    }
    BYTES_HASHED.fetch_add(hasher.count(), Ordering::Relaxed);
    Ok(*hasher.finalize().as_bytes())
}

/// Files opened for hashing by this process so far.
pub fn files_opened() -> u64 {
    FILES_OPENED.load(Ordering::Relaxed)
}

/// Bytes hashed by this process so far.
pub fn bytes_hashed() -> u64 {
    BYTES_HASHED.load(Ordering::Relaxed)
}

pub fn to_hex(sum: &Checksum) -> String {
    sum.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_mapped_files_hash_like_blake3_over_their_bytes() {
        let dir = tempfile::tempdir().expect("tempdir");
        for size in [0usize, 1, 5000, (MMAP_FROM as usize) + 3] {
            let body: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
            let path = dir.path().join(format!("f{size}"));
            std::fs::write(&path, &body).expect("write");
            assert_eq!(
                checksum(&path).expect("hash"),
                *blake3::hash(&body).as_bytes()
            );
        }
        assert!(checksum(&dir.path().join("missing")).is_err());
    }

    #[test]
    fn hex_is_lowercase_and_64_long() {
        let hex = to_hex(blake3::hash(b"").as_bytes());
        assert_eq!(hex.len(), 64);
        assert!(hex.starts_with("af1349b9"));
    }
}
