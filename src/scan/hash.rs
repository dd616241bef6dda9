//! The file checksum: blake3 over the whole file, the identity of an asset (DESIGN.md
//! section 6). Small files are read through a buffer; large ones are memory-mapped.

use std::io;
use std::path::Path;

/// Above this size a file is memory-mapped instead of read into a buffer.
const MMAP_FROM: u64 = 4 << 20;

/// A blake3 digest of a whole file.
pub type Checksum = [u8; 32];

pub fn checksum(path: &Path) -> io::Result<Checksum> {
    let mut file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    let mut hasher = blake3::Hasher::new();
    if size >= MMAP_FROM {
        hasher.update_mmap(path)?;
    } else {
        hasher.update_reader(&mut file)?;
    }
    Ok(*hasher.finalize().as_bytes())
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
}
