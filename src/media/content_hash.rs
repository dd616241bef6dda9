//! The content hash, scheme 1 (DESIGN.md section 6): blake3 over a picture's essence, the
//! bytes a metadata edit does not touch, so that the same photo with edited EXIF, XMP or
//! comments keeps its content hash. Pure: bytes or a path in, a hash out; must not touch
//! the database or the queue.
//!
//! The essence, by format (sniffed from the first bytes, never from the name):
//! - **JPEG**: the file without its APPn (`FFE0`..`FFEF`) and COM (`FFFE`) segments, each
//!   removed from its marker through the end of its declared length. Every other segment
//!   and all entropy-coded data are kept byte for byte, in progressive files between scans
//!   too, and so is everything after EOI (a motion photo's video is part of its identity).
//!   Fill bytes (`FF` padding) before a removed marker are kept.
//! - **PNG**: the file without its `tEXt`, `zTXt`, `iTXt`, `tIME` and `eXIf` chunks (each
//!   removed whole: length, type, data, CRC). Bytes after IEND are kept.
//! - **WebP**: the 12-byte RIFF header is dropped (its size changes with any chunk), and so
//!   are the `EXIF`, `XMP ` and `VP8X` chunks (VP8X only holds flags that say whether the
//!   others exist, plus the canvas size the image chunks repeat; a metadata tool adds it to a
//!   simple-format file). The remaining chunks are hashed whole (header, data, pad byte) in
//!   file order, followed by any bytes after the RIFF end.
//! - **everything else**: the whole file, so its content hash is its checksum.
//!
//! The parsers are bounded (at most `MAX_SEGMENTS` segments or chunks, every length checked
//! against the bytes present). A file that does not parse to its end marker (truncated,
//! malformed, too many segments) falls back to the whole-file hash: it never fails, and a
//! broken file is never merged with an intact one.

use std::io::{self, Read};
use std::ops::Range;
use std::path::Path;

/// The rule version this binary computes.
pub const SCHEME: i64 = 1;

/// At most this many segments or chunks are parsed before giving up (whole-file hash).
pub const MAX_SEGMENTS: usize = 65_536;

/// A file larger than this is hashed whole, without parsing: a picture is read into memory
/// once for both hashes, and one per rayon thread must stay affordable (a 100 MP JPEG is
/// about 40 MB).
pub const MAX_PARSED: u64 = 128 << 20;

/// Both hashes of one file, from one read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hashes {
    /// blake3 of the whole file.
    pub checksum: [u8; 32],
    /// blake3 of the essence (equal to `checksum` for a format without rules).
    pub content_hash: [u8; 32],
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Jpeg,
    Png,
    Webp,
}

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

fn format(head: &[u8]) -> Option<Format> {
    if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some(Format::Jpeg)
    } else if head.starts_with(PNG_SIGNATURE) {
        Some(Format::Png)
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some(Format::Webp)
    } else {
        None
    }
}

/// Whether a file of `size` bytes that starts with `head` is parsed for its content hash
/// (read into memory whole): a format with rules, no larger than `MAX_PARSED`.
pub fn parsed_whole(size: u64, head: &[u8]) -> bool {
    size <= MAX_PARSED && format(head).is_some()
}

/// The checksum and the content hash of the file at `path`, reading it once. A picture
/// format with rules is read into memory and both hashes come from those bytes; anything
/// else is streamed once and its content hash is its checksum.
pub fn hash_file(path: &Path) -> io::Result<Hashes> {
    let mut file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    let mut head = Vec::with_capacity(12);
    (&mut file).take(12).read_to_end(&mut head)?;
    if parsed_whole(size, &head) {
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        bytes.extend_from_slice(&head);
        file.read_to_end(&mut bytes)?;
        return Ok(hashes(&bytes));
    }
    let checksum = if size >= 4 << 20 {
        // Large: hashed through a guarded map, from its start (`crate::mapped`).
        crate::mapped::blake3_file(&file)?
    } else {
        let mut hasher = blake3::Hasher::new();
        hasher.update(&head);
        hasher.update_reader(&mut file)?;
        *hasher.finalize().as_bytes()
    };
    Ok(Hashes {
        checksum,
        content_hash: checksum,
    })
}

/// The content hash alone of the file at `path`, from one read (half the hashing of
/// `hash_file`, for a caller that trusts the file to be unchanged).
pub fn content_hash_file(path: &Path) -> io::Result<[u8; 32]> {
    let mut file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    if size > MAX_PARSED {
        return Ok(hash_file(path)?.content_hash);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    Ok(match essence(&bytes) {
        Some(ranges) => hash_ranges(&bytes, ranges),
        None => *blake3::hash(&bytes).as_bytes(),
    })
}

fn hash_ranges(bytes: &[u8], ranges: Vec<Range<usize>>) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new();
    for r in ranges {
        hasher.update(&bytes[r]);
    }
    *hasher.finalize().as_bytes()
}

/// Both hashes of bytes already in memory.
pub fn hashes(bytes: &[u8]) -> Hashes {
    let checksum = *blake3::hash(bytes).as_bytes();
    let content_hash = match essence(bytes) {
        Some(ranges) => hash_ranges(bytes, ranges),
        None => checksum,
    };
    Hashes {
        checksum,
        content_hash,
    }
}

/// The content hash of bytes in memory.
pub fn content_hash(bytes: &[u8]) -> [u8; 32] {
    hashes(bytes).content_hash
}

/// The byte ranges of the essence, in order; `None` means the whole file (no rules for
/// the format, or it did not parse).
pub fn essence(bytes: &[u8]) -> Option<Vec<Range<usize>>> {
    let kept = match format(bytes)? {
        Format::Jpeg => jpeg_dropped(bytes).map(|d| complement(bytes.len(), d)),
        Format::Png => png_dropped(bytes).map(|d| complement(bytes.len(), d)),
        Format::Webp => webp_kept(bytes),
    };
    kept.map(merge)
}

/// The ranges of `0..len` outside `dropped` (sorted, disjoint).
fn complement(len: usize, dropped: Vec<Range<usize>>) -> Vec<Range<usize>> {
    let mut kept = Vec::with_capacity(dropped.len() + 1);
    let mut at = 0;
    for d in dropped {
        if d.start > at {
            kept.push(at..d.start);
        }
        at = d.end;
    }
    if at < len {
        kept.push(at..len);
    }
    kept
}

/// Joins adjacent ranges (fewer, larger hasher updates).
fn merge(ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for r in ranges.into_iter().filter(|r| !r.is_empty()) {
        match out.last_mut() {
            Some(last) if last.end == r.start => last.end = r.end,
            _ => out.push(r),
        }
    }
    out
}

fn be16(bytes: &[u8], at: usize) -> Option<usize> {
    let b = bytes.get(at..at + 2)?;
    Some(usize::from(u16::from_be_bytes([b[0], b[1]])))
}

fn be32(bytes: &[u8], at: usize) -> Option<usize> {
    let b = bytes.get(at..at + 4)?;
    usize::try_from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])).ok()
}

fn le32(bytes: &[u8], at: usize) -> Option<usize> {
    let b = bytes.get(at..at + 4)?;
    usize::try_from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])).ok()
}

/// A marker without a length: TEM and RST0..7 (SOI and EOI are handled by the caller).
fn standalone(marker: u8) -> bool {
    marker == 0x01 || (0xD0..=0xD7).contains(&marker)
}

/// The APPn and COM segments of a JPEG, or `None` when it does not parse to its EOI.
fn jpeg_dropped(bytes: &[u8]) -> Option<Vec<Range<usize>>> {
    let mut dropped = Vec::new();
    let mut at = 2; // after SOI
    for _ in 0..MAX_SEGMENTS {
        // Fill bytes: any number of FF before the marker code.
        if *bytes.get(at)? != 0xFF {
            return None;
        }
        while *bytes.get(at + 1)? == 0xFF {
            at += 1;
        }
        let marker = *bytes.get(at + 1)?;
        match marker {
            0xD9 => return Some(dropped), // EOI: what follows is kept
            0x00 | 0xD8 => return None,
            m if standalone(m) => at += 2,
            m => {
                let len = be16(bytes, at + 2)?;
                let end = at.checked_add(2 + len)?;
                if len < 2 || end > bytes.len() {
                    return None;
                }
                if (0xE0..=0xEF).contains(&m) || m == 0xFE {
                    dropped.push(at..end);
                }
                at = if m == 0xDA {
                    entropy_end(bytes, end)?
                } else {
                    end
                };
            }
        }
    }
    None
}

/// Where the entropy-coded data that starts at `from` ends: the next marker that is not a
/// stuffed zero or a restart marker.
fn entropy_end(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    loop {
        // memchr, not a byte loop: this scan covers almost every byte of a JPEG, and byte
        // by byte it cost as much CPU as blake3 over the file (35% of a first index of
        // 3.4 MB photos, perf).
        let offset = memchr::memchr(0xFF, bytes.get(at..)?)?;
        at += offset;
        match *bytes.get(at + 1)? {
            0x00 | 0xFF => at += 1,
            m if (0xD0..=0xD7).contains(&m) => at += 2,
            _ => return Some(at),
        }
    }
}

/// The metadata chunks of a PNG, or `None` when it does not parse to its IEND.
fn png_dropped(bytes: &[u8]) -> Option<Vec<Range<usize>>> {
    const DROP: [&[u8; 4]; 5] = [b"tEXt", b"zTXt", b"iTXt", b"tIME", b"eXIf"];
    let mut dropped = Vec::new();
    let mut at = PNG_SIGNATURE.len();
    for _ in 0..MAX_SEGMENTS {
        let len = be32(bytes, at)?;
        let kind = bytes.get(at + 4..at + 8)?;
        let end = at.checked_add(len)?.checked_add(12)?;
        if len > 0x7FFF_FFFF || end > bytes.len() {
            return None;
        }
        if DROP.iter().any(|d| &d[..] == kind) {
            dropped.push(at..end);
        }
        if kind == b"IEND" {
            return Some(dropped);
        }
        at = end;
    }
    None
}

/// The kept ranges of a WebP: every chunk but VP8X, EXIF and XMP, then any trailing
/// bytes; `None` when the RIFF size or a chunk runs past the file.
fn webp_kept(bytes: &[u8]) -> Option<Vec<Range<usize>>> {
    const DROP: [&[u8; 4]; 3] = [b"VP8X", b"EXIF", b"XMP "];
    let riff_end = le32(bytes, 4)?.checked_add(8)?;
    if riff_end > bytes.len() || riff_end < 12 {
        return None;
    }
    let mut kept = Vec::new();
    let mut at = 12;
    for _ in 0..MAX_SEGMENTS {
        if at == riff_end {
            kept.push(riff_end..bytes.len());
            return Some(kept);
        }
        let kind = bytes.get(at..at + 4)?;
        let len = le32(bytes, at + 4)?;
        let end = at.checked_add(8)?.checked_add(len)?.checked_add(len & 1)?;
        if end > riff_end {
            return None;
        }
        if !DROP.iter().any(|d| &d[..] == kind) {
            kept.push(at..end);
        }
        at = end;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(marker: u8, payload: &[u8]) -> Vec<u8> {
        let mut s = vec![0xFF, marker];
        s.extend_from_slice(&((payload.len() + 2) as u16).to_be_bytes());
        s.extend_from_slice(payload);
        s
    }

    /// SOI, an APP0, a DQT, an SOS with entropy data holding a stuffed FF00 and an RST,
    /// EOI, and a trailer.
    fn jpeg(app_payload: &[u8], scan: &[u8], trailer: &[u8]) -> Vec<u8> {
        let mut f = vec![0xFF, 0xD8];
        f.extend(segment(0xE0, app_payload));
        f.extend(segment(0xDB, &[0u8; 65]));
        f.extend(segment(0xDA, &[1, 1, 0, 0, 63, 0]));
        f.extend_from_slice(scan);
        f.extend_from_slice(&[0xFF, 0xD9]);
        f.extend_from_slice(trailer);
        f
    }

    #[test]
    fn jpeg_essence_drops_app_and_com_segments_only() {
        let scan = [1, 2, 0xFF, 0x00, 3, 0xFF, 0xD0, 4];
        let a = jpeg(b"JFIF\0one", &scan, b"video");
        let b = jpeg(b"Exif\0\0a different and longer payload", &scan, b"video");
        assert_eq!(content_hash(&a), content_hash(&b));
        assert_ne!(hashes(&a).checksum, hashes(&b).checksum);
        let mut with_comment = b.clone();
        with_comment.splice(2..2, segment(0xFE, b"a comment"));
        assert_eq!(content_hash(&a), content_hash(&with_comment));
    }

    /// The byte-by-byte scan `entropy_end` replaced, as the oracle.
    fn entropy_end_by_bytes(bytes: &[u8], from: usize) -> Option<usize> {
        let mut at = from;
        loop {
            let offset = bytes.get(at..)?.iter().position(|&b| b == 0xFF)?;
            at += offset;
            match *bytes.get(at + 1)? {
                0x00 | 0xFF => at += 1,
                m if (0xD0..=0xD7).contains(&m) => at += 2,
                _ => return Some(at),
            }
        }
    }

    #[test]
    fn the_entropy_scan_ends_where_the_byte_by_byte_scan_does() {
        // Pseudo-random data thick with FF: stuffed zeros, fill, restarts, markers, and an
        // FF as the very last byte.
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for case in 0..400 {
            let len = 1 + (next() % 3000) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| match next() % 8 {
                    0 | 1 => 0xFF,
                    2 => 0x00,
                    3 => 0xD0 + (next() % 10) as u8,
                    _ => next() as u8,
                })
                .collect();
            for from in [0, len / 3, len - 1, len] {
                assert_eq!(
                    entropy_end(&bytes, from),
                    entropy_end_by_bytes(&bytes, from),
                    "case {case} from {from}"
                );
            }
        }
    }

    #[test]
    fn jpeg_pixels_and_trailer_are_part_of_the_essence() {
        let a = jpeg(b"x", &[1, 2, 3], b"video");
        assert_ne!(
            content_hash(&a),
            content_hash(&jpeg(b"x", &[1, 2, 4], b"video"))
        );
        assert_ne!(
            content_hash(&a),
            content_hash(&jpeg(b"x", &[1, 2, 3], b"other"))
        );
    }

    #[test]
    fn a_truncated_or_malformed_jpeg_is_hashed_whole() {
        let full = jpeg(b"JFIF", &[1, 2, 3, 4, 5, 6], b"");
        for cut in [3, 8, 30, full.len() - 2] {
            let part = &full[..cut];
            assert_eq!(
                content_hash(part),
                *blake3::hash(part).as_bytes(),
                "cut {cut}"
            );
        }
        let mut bad_len = full.clone();
        bad_len[4] = 0xFF; // APP0 length runs past the end
        assert_eq!(content_hash(&bad_len), *blake3::hash(&bad_len).as_bytes());
        let mut no_marker = full.clone();
        no_marker[2] = 0x12;
        assert_eq!(essence(&no_marker), None);
    }

    fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
        let mut c = (data.len() as u32).to_be_bytes().to_vec();
        c.extend_from_slice(kind);
        c.extend_from_slice(data);
        c.extend_from_slice(&[9, 9, 9, 9]); // CRC is not checked
        c
    }

    fn png(meta: &[(&[u8; 4], &[u8])], idat: &[u8]) -> Vec<u8> {
        let mut f = PNG_SIGNATURE.to_vec();
        f.extend(chunk(b"IHDR", &[0; 13]));
        for (k, d) in meta {
            f.extend(chunk(k, d));
        }
        f.extend(chunk(b"IDAT", idat));
        f.extend(chunk(b"IEND", b""));
        f
    }

    #[test]
    fn png_essence_drops_text_time_and_exif_chunks() {
        let plain = png(&[], b"pixels");
        let tagged = png(
            &[
                (b"tEXt", b"Comment\0hi"),
                (b"zTXt", b"z"),
                (b"iTXt", b"XML:com.adobe.xmp\0..."),
                (b"tIME", &[7; 7]),
                (b"eXIf", b"MM\0*"),
            ],
            b"pixels",
        );
        assert_eq!(content_hash(&plain), content_hash(&tagged));
        assert_ne!(content_hash(&plain), content_hash(&png(&[], b"pixelz")));
        let gamma = png(&[(b"gAMA", &[0, 0, 0, 1])], b"pixels");
        assert_ne!(content_hash(&plain), content_hash(&gamma));
        let cut = &tagged[..tagged.len() - 5];
        assert_eq!(content_hash(cut), *blake3::hash(cut).as_bytes());
    }

    fn riff_chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
        let mut c = kind.to_vec();
        c.extend_from_slice(&(data.len() as u32).to_le_bytes());
        c.extend_from_slice(data);
        if data.len() % 2 == 1 {
            c.push(0);
        }
        c
    }

    fn webp(chunks: &[Vec<u8>]) -> Vec<u8> {
        let body: Vec<u8> = chunks.concat();
        let mut f = b"RIFF".to_vec();
        f.extend_from_slice(&((body.len() + 4) as u32).to_le_bytes());
        f.extend_from_slice(b"WEBP");
        f.extend(body);
        f
    }

    #[test]
    fn webp_essence_drops_vp8x_exif_and_xmp_whatever_the_riff_size() {
        let image = riff_chunk(b"VP8L", b"lossless bits");
        let simple = webp(std::slice::from_ref(&image));
        let extended = webp(&[
            riff_chunk(b"VP8X", &[0x0C, 0, 0, 0, 1, 0, 0, 1, 0, 0]),
            image.clone(),
            riff_chunk(b"EXIF", b"MM\0*odd"),
            riff_chunk(b"XMP ", b"<x:xmpmeta/>"),
        ]);
        assert_eq!(content_hash(&simple), content_hash(&extended));
        let other = webp(&[riff_chunk(b"VP8L", b"lossless bitz")]);
        assert_ne!(content_hash(&simple), content_hash(&other));
        let cut = &extended[..extended.len() - 3];
        assert_eq!(content_hash(cut), *blake3::hash(cut).as_bytes());
    }

    #[test]
    fn other_files_hash_whole_and_the_file_reader_agrees_with_memory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cases = [
            jpeg(b"JFIF", &[5; 100], b"tail"),
            png(&[(b"tEXt", b"a\0b")], b"px"),
            b"not a picture at all".to_vec(),
            Vec::new(),
        ];
        for (i, bytes) in cases.iter().enumerate() {
            let path = dir.path().join(format!("f{i}"));
            std::fs::write(&path, bytes).expect("write");
            assert_eq!(hash_file(&path).expect("hash"), hashes(bytes), "case {i}");
            assert_eq!(content_hash_file(&path).expect("hash"), content_hash(bytes));
        }
        let text = b"not a picture at all";
        assert_eq!(content_hash(text), *blake3::hash(text).as_bytes());
        let big = dir.path().join("big");
        let body: Vec<u8> = (0..(5usize << 20)).map(|i| (i % 251) as u8).collect();
        std::fs::write(&big, &body).expect("write");
        let h = hash_file(&big).expect("hash");
        assert_eq!(h.checksum, *blake3::hash(&body).as_bytes());
        assert_eq!(h.content_hash, h.checksum);
    }
}
