//! Entry points into `media`'s private parsers for the fuzz driver (`examples/fuzz/`) and
//! its regression test (tests/it/media_extract.rs): a file's bytes in, the parser's own result
//! out, each parser reached exactly the way `extract_from` reaches it. Not an API for
//! anything else (hidden from the docs); owns no parsing of its own.

use super::{container, photo, video, xmp};
use crate::model::MediaFacts;
use std::io::Cursor;

/// `photo::read_size`: the stored pixel size.
pub fn read_size(bytes: &[u8]) -> Result<(u32, u32), String> {
    let mut facts = MediaFacts::default();
    photo::read_size(&mut Cursor::new(bytes), &mut facts)?;
    Ok((facts.width.unwrap_or(0), facts.height.unwrap_or(0)))
}

/// `photo::jpeg_end_check` through a reader and over the bytes (the two must agree).
pub fn jpeg_end_check(bytes: &[u8]) -> (Result<(), String>, Result<(), String>) {
    let from_reader = photo::jpeg_end_check(&mut Cursor::new(bytes));
    (from_reader, photo::jpeg_end_check_bytes(bytes))
}

/// `photo::read_exif` for a file of type `mime`.
pub fn read_exif(bytes: &[u8], mime: &str) -> (MediaFacts, Result<(), String>) {
    let mut facts = MediaFacts::default();
    let outcome = photo::read_exif(&mut Cursor::new(bytes), mime, &mut facts);
    (facts, outcome)
}

/// `xmp::fill_from_xmp` (a HEIF's: `xmp::fill_from_heif`) for a file of type `mime`: its
/// packet found and read.
pub fn xmp_packet(bytes: &[u8], mime: &str) -> MediaFacts {
    let mut facts = MediaFacts::default();
    if super::HEIF_MIMES.contains(&mime) {
        xmp::fill_from_heif(&mut Cursor::new(bytes), &mut facts);
    } else {
        xmp::fill_from_xmp(&mut Cursor::new(bytes), mime, &mut facts);
    }
    facts
}

/// `xmp::apply` on the bytes as a packet's text.
pub fn xmp_text(bytes: &[u8]) -> MediaFacts {
    let mut facts = MediaFacts::default();
    xmp::apply(&String::from_utf8_lossy(bytes), &mut facts);
    facts
}

/// `container::video_track`: the first video track's codec and rotation.
pub fn video_track(bytes: &[u8]) -> Option<(Option<String>, u16)> {
    container::video_track(&mut Cursor::new(bytes)).map(|t| (t.codec, t.rotation))
}

/// `video::read_track`: everything the video reader fills in.
pub fn read_track(bytes: &[u8]) -> (MediaFacts, Result<(), String>) {
    let mut facts = MediaFacts::default();
    let outcome = video::read_track(Cursor::new(bytes), &mut facts);
    (facts, outcome)
}
