//! Reading a changed file: ONE read gives everything the scan stores about its bytes — the blake3
//! checksum over the whole file (the identity of an asset, DESIGN.md section 6), the content hash
//! (`media::content_hash`) and the media facts. A small file is read into one buffer that all three
//! are computed from; a large picture with content-hash rules (up to `content_hash::MAX_PARSED`) is
//! mapped (`crate::mapped::with_map`) and all three come from the map, without a copy
//! (`one_vs_two_reads/one_read/jpeg_camera`, a 7.9 MB JPEG: 4.35-6.66 ms against 5.21-7.76 ms
//! copied, 0.86x in 3 of 4 alternating pairs, 1.0x in the fourth). Any other large file (a video)
//! is memory-mapped for the checksum (`crate::mapped`: hashed on rayon, and a file that shrinks or
//! fails to read under the map is an error, not a SIGBUS), the extractor seeks in it for the few
//! structures it needs, and its content hash is its checksum. Must not touch the database.

use crate::media::content_hash;
use crate::model::MediaFacts;
use std::io::{self, Read, Seek};
use std::path::Path;
use std::time::{Duration, Instant};

/// From this size on a file is memory-mapped instead of read into a buffer. benches/hash.rs
/// (`file/`, warm, load 3-9 on 2 cores, GiB/s read+blake3 against mmap+blake3): 256 KiB
/// 2.50 against 1.58, 1 MiB 1.10 against 1.46, 4 MiB 1.34 against 1.98: a map pays from
/// about 1 MiB. The threshold stays at 4 MiB until a whole-scan figure shows 1..4 MiB moves
/// (a map costs a guard slot and a page fault per 16 pages; the 92 KB photos never map).
const MMAP_FROM: u64 = 4 << 20;

/// A blake3 digest of a whole file.
pub type Checksum = [u8; 32];

/// Reads a file's media facts: `(path, Some(whole file))` when the bytes are already in
/// memory, `(path, None)` to let it open the file itself.
pub type Extract<'a> = dyn Fn(&Path, Option<&[u8]>) -> MediaFacts + Sync + 'a;

/// What one read of a changed file yields.
#[derive(Debug, Clone, PartialEq)]
pub struct Contents {
    pub checksum: Checksum,
    /// The content hash under this binary's rules (equal to `checksum` for a format without
    /// rules).
    pub content_hash: Checksum,
    pub facts: MediaFacts,
    /// Where the time of this read went, for the scan's stage figures.
    pub times: ReadTimes,
}

/// The wall time of one `read_once` by stage. Three clock reads a file (the vDSO, no
/// system call), summed per batch by the pipeline (`scan::pipeline::stage_totals`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadTimes {
    /// Opening and reading the file into memory (zero for a mapped file: its pages are
    /// read by the hash's page faults, counted in `hash`).
    pub read: Duration,
    /// The checksum and the content hash.
    pub hash: Duration,
    /// The media facts.
    pub extract: Duration,
}

/// Reads the changed file at `path` ONCE and derives its checksum and its facts from that
/// read. `size` is the walk's stat (only a hint: the file is read to its end whatever it
/// is now). Whatever else is computed from a file's bytes belongs here, on the same buffer.
pub fn read_once(path: &Path, size: u64, extract: &Extract<'_>) -> io::Result<Contents> {
    let start = Instant::now();
    let mut file = std::fs::File::open(path)?;
    if size >= MMAP_FROM {
        if !parsed_in_memory(&mut file, size)? {
            // A file that shrinks or fails to read under the map is an error here, not a
            // SIGBUS (`crate::mapped`); the map starts at the file's start whatever its cursor.
            let checksum = crate::mapped::blake3_file(&file)?;
            let hashed = Instant::now();
            let facts = extract(path, None);
            return Ok(Contents {
                checksum,
                content_hash: checksum,
                facts,
                times: ReadTimes {
                    read: Duration::ZERO,
                    hash: hashed - start,
                    extract: hashed.elapsed(),
                },
            });
        }
        // A large picture with content-hash rules: both hashes and the facts from its map,
        // without copying it into memory first (the copy cost more than a blake3 pass).
        let from_map = |bytes: &[u8]| from_bytes(path, bytes, extract, start);
        if let Some(contents) = crate::mapped::with_map(&file, from_map)? {
            return Ok(contents);
        }
    }
    let bytes = read_whole(file, size)?;
    Ok(from_bytes(path, &bytes, extract, start))
}

/// Both hashes and the facts of the whole file's `bytes`, read since `start`.
fn from_bytes(path: &Path, bytes: &[u8], extract: &Extract<'_>, start: Instant) -> Contents {
    let read = Instant::now();
    let hashes = content_hash::hashes(bytes);
    let hashed = Instant::now();
    let facts = extract(path, Some(bytes));
    Contents {
        checksum: hashes.checksum,
        content_hash: hashes.content_hash,
        facts,
        times: ReadTimes {
            read: read - start,
            hash: hashed - read,
            extract: hashed.elapsed(),
        },
    }
}

/// Files from this size on are prefetched: below it the extra open costs more than the
/// wait it saves on a warm cache.
const PREFETCH_FROM: u64 = 1 << 20;
/// How much of a file is prefetched: a photo or a short video whole; of a longer video its
/// head, after which the kernel reads ahead of the hash's page faults by itself (and a low-
/// memory NAS is not asked to hold a whole film in its page cache ahead of time).
const PREFETCH_UP_TO: u64 = 128 << 20;

/// Asks the kernel to start reading the file at `path` (`size` from the walk's stat) into
/// the page cache, and returns at once. Only a hint: a failure costs nothing but the wait.
/// With the page cache dropped: 8 videos of 250 MiB, 4 alternating runs, 1.54-4.13 s
/// (median 1.90) without the head prefetch, 1.50-1.82 s (median 1.60) with it; b3sum
/// 1.52-1.64 s. Warm runs unchanged.
pub fn prefetch(path: &Path, size: u64) {
    if size < PREFETCH_FROM {
        return;
    }
    let len = size.min(PREFETCH_UP_TO);
    #[cfg(target_os = "linux")]
    if let Ok(file) = std::fs::File::open(path) {
        use std::os::fd::AsRawFd;
        let len = libc::off_t::try_from(len).unwrap_or(0);
        // SAFETY: an advisory call on a descriptor this function owns.
        unsafe {
            libc::posix_fadvise(file.as_raw_fd(), 0, len, libc::POSIX_FADV_WILLNEED);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (path, len);
}

/// Whether a file of `size` bytes (at least `MMAP_FROM`) is read into memory all the same:
/// a picture format with content-hash rules, small enough to parse. Its content hash needs
/// its bytes in memory, so one read gives the checksum, the content hash and the facts;
/// mapping it for the checksum would read it twice (a phone's 4-8 MB JPEGs did).
fn parsed_in_memory(file: &mut std::fs::File, size: u64) -> io::Result<bool> {
    Ok(content_hash::parsed_whole(size, &head(file)?))
}

/// The first 12 bytes of the file (fewer if it is shorter): enough to tell its format. The
/// cursor is back at the start afterwards.
fn head(file: &mut std::fs::File) -> io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(12);
    (&mut *file).take(12).read_to_end(&mut head)?;
    file.rewind()?;
    Ok(head)
}

/// The whole file in one buffer, sized from the walk's stat. A file still that size is read
/// with ONE read call: std's `read_to_end` on a file first asks its size again (statx, lseek)
/// and then reads once more to see its end, 3 of the 7 system calls of a small file. A read
/// that stops exactly at the walk's `size`, short of the buffer's one spare byte, ends the
/// file as the walk saw it (a regular file reads short only at its end; a file that grew
/// since has a new stamp, and the next scan reads it again). A file that fills the buffer
/// grew: it is read on to its end; one that shrank reads 0 sooner.
fn read_whole(mut file: impl Read, size: u64) -> io::Result<Vec<u8>> {
    let want = usize::try_from(size).unwrap_or(0);
    let mut bytes = vec![0u8; want.saturating_add(1)];
    let mut filled = 0;
    loop {
        match file.read(&mut bytes[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        if filled == want {
            break;
        }
        if filled == bytes.len() {
            bytes.resize(bytes.len().saturating_mul(2).max(4096), 0);
        }
    }
    bytes.truncate(filled);
    Ok(bytes)
}

/// The checksum alone (no facts).
pub fn checksum(path: &Path) -> io::Result<Checksum> {
    let size = std::fs::metadata(path)?.len();
    read_once(path, size, &|_, _| MediaFacts::default()).map(|c| c.checksum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn small_and_mapped_files_hash_like_blake3_over_their_bytes() {
        let dir = tempfile::tempdir().expect("tempdir");
        for size in [0usize, 1, 5000, (MMAP_FROM as usize) + 3, (20 << 20) + 5] {
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
    fn a_small_file_is_read_once_and_its_bytes_handed_to_the_extractor() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.jpg");
        std::fs::write(&path, b"photo bytes").expect("write");
        let handed = Mutex::new(None);
        let extract = |_: &Path, bytes: Option<&[u8]>| {
            *handed.lock().expect("lock") = bytes.map(<[u8]>::to_vec);
            MediaFacts::default()
        };
        // A stale (smaller) stat does not cut the read short.
        let read = read_once(&path, 3, &extract).expect("read");
        assert_eq!(read.checksum, *blake3::hash(b"photo bytes").as_bytes());
        assert_eq!(
            handed.lock().expect("lock").as_deref(),
            Some(&b"photo bytes"[..])
        );
    }

    /// A reader that answers at most `step` bytes a call and counts its calls.
    struct Counted<'a> {
        bytes: &'a [u8],
        step: usize,
        calls: usize,
    }

    impl Read for Counted<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.calls += 1;
            let n = buf.len().min(self.step).min(self.bytes.len());
            buf[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_file_of_the_walks_size_is_read_in_one_call_and_any_other_to_its_end() {
        let body: Vec<u8> = (0..5000).map(|i| (i % 251) as u8).collect();
        let read = |stat: u64, step: usize| {
            let mut reader = Counted {
                bytes: &body,
                step,
                calls: 0,
            };
            let bytes = read_whole(&mut reader, stat).expect("read");
            (bytes == body, reader.calls)
        };
        assert_eq!(
            read(5000, usize::MAX),
            (true, 1),
            "no second read for its end"
        );
        // Short reads before the walk's size, a file that grew or shrank since: read on.
        assert!(read(5000, 7).0);
        assert!(read(3, usize::MAX).0);
        assert!(read(3, 1000).0);
        assert!(read(9000, usize::MAX).0);
        assert!(read(0, usize::MAX).0);
    }

    #[test]
    fn a_large_file_is_mapped_and_the_extractor_opens_it_itself() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("v.mp4");
        let body = vec![7u8; MMAP_FROM as usize];
        std::fs::write(&path, &body).expect("write");
        let extract = |_: &Path, bytes: Option<&[u8]>| {
            assert!(bytes.is_none(), "a large file is not buffered");
            MediaFacts::default()
        };
        let read = read_once(&path, MMAP_FROM, &extract).expect("read");
        assert_eq!(read.checksum, *blake3::hash(&body).as_bytes());
    }

    #[test]
    fn a_large_picture_with_content_hash_rules_is_read_once_for_all_three() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("big.jpg");
        let body = jpeg_with_app1(MMAP_FROM as usize + 10);
        std::fs::write(&path, &body).expect("write");
        let handed = Mutex::new(None);
        let extract = |_: &Path, bytes: Option<&[u8]>| {
            *handed.lock().expect("lock") = bytes.map(<[u8]>::len);
            MediaFacts::default()
        };
        let read = read_once(&path, body.len() as u64, &extract).expect("read");
        assert_eq!(read.checksum, *blake3::hash(&body).as_bytes());
        assert_eq!(read.content_hash, content_hash::content_hash(&body));
        assert_eq!(
            *handed.lock().expect("lock"),
            Some(body.len()),
            "the extractor gets the bytes the hashes came from"
        );
    }

    /// A camera-sized picture is hashed and parsed from a map of the file, not from a copy
    /// of it: while the extractor runs, the file is mapped into the process.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_large_picture_is_hashed_and_parsed_from_its_map_not_a_copy() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("camera.jpg");
        let body = jpeg_with_app1(MMAP_FROM as usize + 10);
        std::fs::write(&path, &body).expect("write");
        let mapped = Mutex::new(None);
        let extract = |p: &Path, bytes: Option<&[u8]>| {
            let maps = std::fs::read_to_string("/proc/self/maps").expect("maps");
            let name = p.to_string_lossy().into_owned();
            *mapped.lock().expect("lock") = Some((maps.contains(&name), bytes.map(<[u8]>::len)));
            MediaFacts::default()
        };
        let read = read_once(&path, body.len() as u64, &extract).expect("read");
        assert_eq!(read.checksum, *blake3::hash(&body).as_bytes());
        assert_eq!(read.content_hash, content_hash::content_hash(&body));
        assert_eq!(
            *mapped.lock().expect("lock"),
            Some((true, Some(body.len())))
        );
    }

    /// A JPEG whose APP1 segment (dropped by the content hash) surrounds a kept body, so the
    /// content hash differs from the checksum; `pad` makes it as large as needed.
    fn jpeg_with_app1(pad: usize) -> Vec<u8> {
        let mut bytes = vec![0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x06, b'E', b'x', b'i', b'f'];
        bytes.extend_from_slice(&[0xFF, 0xFE, 0x00, 0x04, b'h', b'i']);
        bytes.extend_from_slice(&[0xFF, 0xDA, 0x00, 0x02]);
        bytes.extend((0..pad).map(|i| (i % 200) as u8));
        bytes.extend_from_slice(&[0xFF, 0xD9]);
        bytes
    }

    #[test]
    fn the_content_hash_comes_from_the_same_read_in_both_paths() {
        let dir = tempfile::tempdir().expect("tempdir");
        let none = |_: &Path, _: Option<&[u8]>| MediaFacts::default();
        for (name, body) in [
            ("small.jpg", jpeg_with_app1(100)),
            ("large.jpg", jpeg_with_app1(MMAP_FROM as usize)),
            ("large.mp4", vec![9u8; MMAP_FROM as usize + 1]),
            ("small.bin", b"not a picture".to_vec()),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, &body).expect("write");
            let read = read_once(&path, body.len() as u64, &none).expect("read");
            assert_eq!(read.checksum, *blake3::hash(&body).as_bytes(), "{name}");
            assert_eq!(
                read.content_hash,
                content_hash::content_hash(&body),
                "{name}"
            );
            let has_rules = name.ends_with(".jpg");
            assert_eq!(read.content_hash != read.checksum, has_rules, "{name}");
        }
    }
}
