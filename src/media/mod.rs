//! Pure media extractors: a file path (or the bytes already read from it) in, `MediaFacts`
//! out. Owns type sniffing, dimensions (a HEIF's from its own boxes, `heif`), EXIF (with an
//! XMP fallback, and a PNG's text chunks, `png_text`; a HEIF's Exif and XMP items of its
//! primary item, `heif_items`), video container facts (and the movie header that dates an
//! image sequence), the content-hash rules (`content_hash`), the
//! camera RAW formats (`raw`: their type, raw size and preview or binned raw picture; `cr3`:
//! a Canon CR3's boxes, its CMT TIFFs and its PRVW/THMB JPEGs), the
//! run-time HEIF decoder (`heif_dec`: a separate program, bounded, that thumbs and faces
//! call), where each capture date came from, the end of the date chain (`fill_undated`: a
//! date in the file name, `filename_date`, else the mtime the caller hands in), and the pure
//! readers of a Live Photo's ContentIdentifier and a motion photo's embedded video
//! (`motion`), the pure readers of a photo's sidecar files, XMP (`sidecar`) and Google
//! Takeout JSON (`takeout`), with their naming rules, and the merge of what those say into a
//! photo's facts (`beside`), and the words for a file not indexed though its name or bytes
//! claim a photo or video (`unindexed`: an unsupported format, or unreadable content), which
//! are its error; must not touch the database, the queue or SQL (no database access of any
//! kind), and must never panic on what it reads.
//! `fuzz` (hidden) hands each private parser to the fuzz driver, examples/fuzz.
//!
//! Must not import: store, queue, scan, walks, rusqlite, r2d2

pub mod beside;
mod container;
pub mod content_hash;
mod cr3;
mod date_chain;
pub mod filename_date;
#[doc(hidden)]
pub mod fuzz;
mod heif;
pub mod heif_dec;
mod heif_items;
pub mod motion;
mod photo;
mod png_text;
pub mod raw;
pub mod sidecar;
mod sniff;
pub mod takeout;
mod unindexed;
pub mod values;
mod video;
mod xmp;

pub use date_chain::fill_undated;
pub use sniff::{HEAD_LEN, sniff};

use crate::model::{MediaFacts, MediaKind};
use std::fs::File;
use std::io::{BufRead, BufReader, Cursor, Read, Seek};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

/// Everything that can be read about the file at `path`. Never panics: an I/O failure, a
/// corrupt or truncated file or a parser panic leaves what was read plus `error`.
pub fn extract(path: &Path) -> MediaFacts {
    extract_from(path, None)
}

/// `extract`, from `bytes` when given: the whole file, already read once by the caller (the
/// scan reads a small file once for its checksum and its facts). Without them the file at
/// `path` is opened; `path` also names the file for the extension check.
pub fn extract_from(path: &Path, bytes: Option<&[u8]>) -> MediaFacts {
    let mut facts = MediaFacts::default();
    let outcome = catch_unwind(AssertUnwindSafe(|| match bytes {
        Some(bytes) => read_bytes(path, bytes, &mut facts),
        None => read_all(path, &mut facts),
    }));
    let error = match outcome {
        Ok(Ok(())) => None,
        Ok(Err(reason)) => Some(reason),
        Err(_) => Some("parser panicked".to_string()),
    };
    let media = facts.kind.is_some_and(|k| k != MediaKind::Other);
    facts.error = if media {
        join_errors(error, mislabel(path, &facts))
    } else {
        error
    };
    facts
}

/// A file sniffing found no photo or video in: an error only when its name or its first
/// bytes claim one (`unindexed`), so that the scan reports it instead of passing over it.
fn not_media(path: &Path, head: &[u8], facts: &MediaFacts) -> Result<(), String> {
    let claims = |ext: &str| expected_mimes(ext).is_some();
    match unindexed::reason(path, head, facts.mime.as_deref(), claims) {
        Some(words) => Err(words),
        None => Ok(()),
    }
}

/// A TIFF that the head took for a maker's RAW but whose whole structure is a TIFF's.
fn refine_raw<R: Read + Seek>(reader: &mut R, facts: &mut MediaFacts) {
    if raw::only_a_tiff(reader, facts.mime.as_deref().unwrap_or_default()) {
        facts.mime = Some("image/tiff".into());
    }
}

fn read_all(path: &Path, facts: &mut MediaFacts) -> Result<(), String> {
    let mut file = File::open(path).map_err(|e| format!("open: {e}"))?;
    let mut head = Vec::with_capacity(HEAD_LEN);
    (&mut file)
        .take(HEAD_LEN as u64)
        .read_to_end(&mut head)
        .map_err(|e| format!("read: {e}"))?;
    if head.is_empty() {
        return not_media(path, &head, facts);
    }
    (facts.kind, facts.mime) = sniff(&head);
    if facts.kind == Some(MediaKind::Image) {
        refine_raw(&mut file, facts);
    }
    let mime = facts.mime.clone().unwrap_or_default();
    match facts.kind {
        Some(MediaKind::Image) => {
            let mut reader = BufReader::new(file);
            let complete = (mime == "image/jpeg").then(|| photo::jpeg_end_check(&mut reader));
            read_image(reader, &mime, complete, facts)
        }
        Some(MediaKind::Video) => video::read_track(file, facts),
        _ => not_media(path, &head, facts),
    }
}

/// `read_all` over a file's bytes already in memory.
fn read_bytes(path: &Path, bytes: &[u8], facts: &mut MediaFacts) -> Result<(), String> {
    let head = &bytes[..bytes.len().min(HEAD_LEN)];
    if head.is_empty() {
        return not_media(path, head, facts);
    }
    (facts.kind, facts.mime) = sniff(head);
    if facts.kind == Some(MediaKind::Image) {
        refine_raw(&mut Cursor::new(bytes), facts);
    }
    let mime = facts.mime.clone().unwrap_or_default();
    match facts.kind {
        Some(MediaKind::Image) => {
            let complete = (mime == "image/jpeg").then(|| photo::jpeg_end_check_bytes(bytes));
            read_image(Cursor::new(bytes), &mime, complete, facts)
        }
        Some(MediaKind::Video) => video::read_track(Cursor::new(bytes), facts),
        _ => not_media(path, head, facts),
    }
}

/// Size and EXIF are read independently, so a broken EXIF still leaves the size and a file
/// cut after its header still leaves its EXIF. `complete` is the caller's end check (a
/// JPEG's), when the format has one.
fn read_image<R: BufRead + Seek>(
    mut reader: R,
    mime: &str,
    complete: Option<Result<(), String>>,
    facts: &mut MediaFacts,
) -> Result<(), String> {
    let heif = HEIF_MIMES.contains(&mime);
    let size = if heif {
        heif_size(&mut reader, facts)
    } else if raw::RAW_MIMES.contains(&mime) {
        raw_size(&mut reader, mime, facts)
    } else {
        photo::read_size(&mut reader, facts)
    };
    let size = size.and(complete.unwrap_or(Ok(())));
    let exif = if photo::EXIF_MIMES.contains(&mime) || raw::RAW_MIMES.contains(&mime) {
        photo::read_exif(&mut reader, mime, facts)
    } else {
        Ok(())
    };
    if heif {
        xmp::fill_from_heif(&mut reader, facts);
    } else {
        xmp::fill_from_xmp(&mut reader, mime, facts);
    }
    if heif && facts.taken_local.is_none() {
        // An image sequence or animated AVIF: its movie's date, last in the chain as a
        // video's is (a sidecar's or Takeout's date still comes before it, `beside`).
        video::date_by_movie_header(&mut reader, facts);
    }
    if let (Some(w), Some(h)) = (facts.width, facts.height) {
        let (dw, dh) = values::display_size(w, h, turn(facts));
        (facts.display_width, facts.display_height) = (Some(dw), Some(dh));
    }
    match (size, exif) {
        (Err(a), Err(b)) => Err(format!("{a}; {b}")),
        (Err(e), _) | (_, Err(e)) => Err(e),
        _ => Ok(()),
    }
}

/// The EXIF orientation a viewer still applies to the stored pixels: none for a HEIF, whose
/// only decodable frame is already turned by its own `irot`/`imir` (libheif ignores EXIF, and
/// an iPhone's EXIF Orientation describes the sensor, not that frame).
pub fn turn(facts: &MediaFacts) -> Option<u16> {
    let heif = facts
        .mime
        .as_deref()
        .is_some_and(|m| HEIF_MIMES.contains(&m));
    if heif { None } else { facts.orientation }
}

/// The HEIF family, whose pictures only a HEIF decoder (`heif_dec`) turns into pixels.
pub const HEIF_MIMES: &[&str] = &["image/heic", "image/heif", "image/avif"];

/// A HEIF's only frame anyone can decode is the one libheif hands out, with its clean
/// aperture, rotation and mirror applied (the coded tiles are not a picture on their own), so
/// that frame is both its stored and its displayed size; imagesize, which reads the first
/// `ispe` of any item, is only the fallback for a `meta` this reader cannot follow. Its EXIF
/// orientation stays the recorded fact, but as MIAF says it is not applied on top of
/// `irot`/`imir` (iPhones write both): not to the display size, nor to the decoded pixels.
fn heif_size<R: BufRead + Seek>(reader: &mut R, facts: &mut MediaFacts) -> Result<(), String> {
    match heif::geometry(reader) {
        Some(g) => {
            (facts.width, facts.height) = (Some(g.display.0), Some(g.display.1));
            Ok(())
        }
        None => photo::read_size(reader, facts),
    }
}

/// A RAW's size is exiftool's ImageSize: its raw image's (the full-resolution IFD), not its
/// preview's; an RW2's sensor borders', a CR2's Exif image size; a CR3's CMT1's IFD0's
/// ImageWidth x ImageHeight, and a box of it cut short is the file's error; a RAF's
/// RawImageCroppedSize, else (`photo`) its embedded JPEG's Exif image size.
fn raw_size<R: BufRead + Seek>(
    reader: &mut R,
    mime: &str,
    facts: &mut MediaFacts,
) -> Result<(), String> {
    if mime == raw::RAF {
        (facts.width, facts.height) = raw::raf_size(reader).unzip();
        return Ok(());
    }
    let cr3 = mime == raw::CR3;
    if !raw::is_tiff_raw(mime) && !cr3 {
        return Ok(());
    }
    let ((w, h), _) = raw::geometry(reader).map_err(|e| e.to_string())?;
    (facts.width, facts.height) = (Some(w), Some(h));
    if cr3 {
        cr3::check_whole(reader).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// A media extension on a photo or video of another type (a file that is none has its
/// words from `not_media`).
fn mislabel(path: &Path, facts: &MediaFacts) -> Option<String> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    let expected = expected_mimes(&ext)?;
    let actual = facts.mime.as_deref();
    if actual.is_some_and(|m| expected.contains(&m)) {
        return None;
    }
    Some(format!(
        "content is {} but name says .{ext}",
        actual.unwrap_or("unknown")
    ))
}

fn expected_mimes(ext: &str) -> Option<&'static [&'static str]> {
    Some(match ext {
        "jpg" | "jpeg" | "jpe" => &["image/jpeg"],
        "png" => &["image/png"],
        "gif" => &["image/gif"],
        "webp" => &["image/webp"],
        "tif" | "tiff" => &["image/tiff"],
        "dng" => &["image/x-adobe-dng"],
        "cr2" => &["image/x-canon-cr2"],
        "cr3" => &["image/x-canon-cr3"],
        "nef" => &["image/x-nikon-nef"],
        "arw" => &["image/x-sony-arw"],
        "raf" => &["image/x-fujifilm-raf"],
        "orf" => &["image/x-olympus-orf"],
        "rw2" => &["image/x-panasonic-rw2"],
        "pef" => &["image/x-pentax-pef", "image/x-adobe-dng"],
        "heic" | "heif" => &["image/heic", "image/heif"],
        "avif" => &["image/avif"],
        "mp4" | "m4v" => &["video/mp4", "video/x-m4v", "video/quicktime"],
        "mov" => &["video/quicktime", "video/mp4"],
        "mkv" => &["video/x-matroska"],
        "webm" => &["video/webm", "video/x-matroska"],
        _ => return None,
    })
}

fn join_errors(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::extract;
    use std::path::Path;

    pub fn fixture(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name)
    }

    /// astronaut_half.heic with its primary item's `pixi` property (a 16-byte box) overwritten
    /// by an `irot` of a quarter turn padded to the same length: libheif 1.15's heif-convert
    /// decodes it to 540x405 (exiftool: ImageSize 405x540, Rotation 90).
    pub fn turned_astronaut() -> Vec<u8> {
        let mut b = std::fs::read(fixture("astronaut_half.heic")).expect("fixture");
        let at = b.windows(4).position(|w| w == b"pixi").expect("a pixi box") - 4;
        assert_eq!(&b[at..at + 4], &[0, 0, 0, 16], "the fixture's layout");
        b[at..at + 16].copy_from_slice(&[&[0, 0, 0, 16][..], b"irot", &[1], &[0; 7]].concat());
        b
    }

    #[test]
    fn a_turned_heif_is_indexed_at_the_size_its_decoder_shows() {
        let facts = super::extract_from(Path::new("turned.heic"), Some(&turned_astronaut()));
        assert_eq!(facts.error, None);
        assert_eq!((facts.width, facts.height), (Some(540), Some(405)));
        let display = (facts.display_width, facts.display_height);
        assert_eq!(display, (Some(540), Some(405)));
    }

    /// exiftool 12.57 on these files: ImageSize 405x540 (the primary item, a grid over a
    /// 406-wide HEVC tile) and 384x384.
    #[test]
    fn heif_files_report_their_primary_items_size_as_exiftool_does() {
        for (name, mime, size) in [
            ("astronaut_half.heic", "image/heic", (405, 540)),
            ("astronaut_384.avif", "image/avif", (384, 384)),
        ] {
            let facts = extract(&fixture(name));
            assert_eq!(facts.error, None, "{name}");
            assert_eq!(facts.mime.as_deref(), Some(mime), "{name}");
            assert_eq!(
                (facts.width, facts.height),
                (Some(size.0), Some(size.1)),
                "{name}"
            );
            let display = (facts.display_width, facts.display_height);
            assert_eq!(display, (Some(size.0), Some(size.1)), "{name}");
        }
    }
}
