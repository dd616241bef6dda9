//! Photo metadata: stored pixel size (imagesize, header only) and EXIF (kamadak-exif, including
//! the EXIF of PNG (its eXIf chunk, else ImageMagick's raw profile in a text chunk,
//! `png_text`), WebP, TIFF and the TIFF-structured RAWs, a HEIC's/AVIF's from the Exif item
//! of its primary item (`heif_items` finds it, kamadak-exif reads its TIFF), a RAF's from its
//! embedded JPEG, and a CR3's from its CMT1, CMT2 and CMT4 TIFFs), and the size of a RAF
//! whose header states none, its JPEG's ExifImageWidth x ExifImageHeight. Owns the choice of
//! EXIF tags (and hands the MakerNote to `motion` for a Live Photo's ContentIdentifier);
//! must not decide the media kind (that is `sniff`) nor touch video containers.

use super::values::{
    clean_text, exif_date, gps_degrees, orientation, utc_offset_minutes, with_subsec,
};
use crate::model::{MediaFacts, TakenAtSource};
use ::exif::{Context, Exif, Field, In, Reader, Tag, Value};
use std::io::{BufRead, Read, Seek, SeekFrom};

/// A TIFF's EXIF may sit anywhere in the file, so kamadak-exif reads TIFFs whole; cap that.
const TIFF_READ_CAP: u64 = 64 * 1024 * 1024;

/// Stored pixel size from the image header.
pub fn read_size<R: BufRead + Seek>(reader: &mut R, facts: &mut MediaFacts) -> Result<(), String> {
    reader.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
    let size = imagesize::reader_size(reader).map_err(|e| format!("size: {e}"))?;
    let (w, h) = (u32::try_from(size.width), u32::try_from(size.height));
    match (w, h) {
        (Ok(w), Ok(h)) if w > 0 && h > 0 => {
            facts.width = Some(w);
            facts.height = Some(h);
            Ok(())
        }
        _ => Err("size: zero or huge dimensions".into()),
    }
}

/// Containers whose EXIF kamadak-exif can find (GIF, BMP and the like carry none it reads).
pub const EXIF_MIMES: &[&str] = &[
    "image/jpeg",
    "image/png",
    "image/webp",
    "image/tiff",
    "image/heic",
    "image/heif",
    "image/avif",
];

/// How far from the end a JPEG's EOI marker (or an appended motion-photo MP4's boxes) is
/// looked for.
const JPEG_TAIL: u64 = 64 * 1024;

/// A JPEG cut short has no EOI marker (`FF D9`) near its end. Motion photos carry an MP4
/// after the EOI, so MP4 box names in the tail also count as complete.
pub fn jpeg_end_check<R: Read + Seek>(reader: &mut R) -> Result<(), String> {
    let len = reader.seek(SeekFrom::End(0)).map_err(|e| e.to_string())?;
    reader
        .seek(SeekFrom::Start(len.saturating_sub(JPEG_TAIL)))
        .map_err(|e| e.to_string())?;
    let mut tail = Vec::new();
    reader
        .take(JPEG_TAIL)
        .read_to_end(&mut tail)
        .map_err(|e| e.to_string())?;
    jpeg_end_in(&tail)
}

/// `jpeg_end_check` over a whole file already in memory (the tail is not copied).
pub fn jpeg_end_check_bytes(bytes: &[u8]) -> Result<(), String> {
    let from = bytes.len().saturating_sub(JPEG_TAIL as usize);
    jpeg_end_in(&bytes[from..])
}

fn jpeg_end_in(tail: &[u8]) -> Result<(), String> {
    if contains(tail, &[0xFF, 0xD9]) || contains(tail, b"moov") || contains(tail, b"mdat") {
        Ok(())
    } else {
        Err("truncated: no JPEG end marker".into())
    }
}

/// Whether `needle` occurs in `hay` (memchr's substring search: comparing a window at every
/// position cost as much as reading a small file's facts).
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}

/// Reads EXIF into `facts`. No EXIF at all is not an error; a broken EXIF block is.
pub fn read_exif<R: BufRead + Seek>(
    reader: &mut R,
    mime: &str,
    facts: &mut MediaFacts,
) -> Result<(), String> {
    reader.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
    let mut exif_reader = Reader::new();
    exif_reader.continue_on_error(true);
    let parsed = if mime == "image/tiff" || super::raw::is_tiff_raw(mime) {
        let mut buf = Vec::new();
        reader
            .take(TIFF_READ_CAP)
            .read_to_end(&mut buf)
            .map_err(|e| e.to_string())?;
        tiff_magic(&mut buf);
        exif_reader.read_raw(buf)
    } else if mime == "image/x-fujifilm-raf" {
        match super::raw::picture(reader, mime) {
            Ok(super::raw::Picture::Jpeg(jpeg)) => {
                exif_reader.read_from_container(&mut std::io::Cursor::new(jpeg))
            }
            _ => return Ok(()),
        }
    } else if super::HEIF_MIMES.contains(&mime) {
        match super::heif_items::exif(reader) {
            Ok(Some(tiff)) => exif_reader.read_raw(tiff),
            Ok(None) => return Ok(()),
            Err(e) => return Err(format!("exif: {e}")),
        }
    } else if mime == super::raw::CR3 {
        return read_cr3_exif(reader, &exif_reader, facts);
    } else {
        match exif_reader.read_from_container(reader) {
            Err(::exif::Error::NotFound(_)) if mime == "image/png" => {
                match super::png_text::exif_profile(reader) {
                    Some(tiff) => exif_reader.read_raw(tiff),
                    None => return Ok(()),
                }
            }
            parsed => parsed,
        }
    };
    let mut partial = false;
    let exif = match parsed.map_err(|e| e.distill_partial_result(|_| partial = true)) {
        Ok(exif) | Err(Ok(exif)) => exif,
        Err(Err(::exif::Error::NotFound(_))) => return Ok(()),
        Err(Err(e)) => return Err(format!("exif: {e}")),
    };
    apply(&Tags::One(&exif), facts);
    if mime == super::raw::RAF && facts.width.is_none() {
        (facts.width, facts.height) = exif_image_size(&Tags::One(&exif)).unzip();
    }
    if partial {
        Err("exif: some entries unreadable".into())
    } else {
        Ok(())
    }
}

/// A CR3 keeps IFD0, the Exif IFD and the GPS IFD as three TIFFs (CMT1, CMT2, CMT4), each
/// its own IFD0: each is read alone and its tags looked up by number (`Tags::Cr3`). What
/// could be read is kept when one is cut short or broken, and that is the error.
fn read_cr3_exif<R: Read + Seek>(
    reader: &mut R,
    exif_reader: &Reader,
    facts: &mut MediaFacts,
) -> Result<(), String> {
    let cmts = super::cr3::cmts(reader).map_err(|e| format!("exif: {e}"))?;
    let mut partial = cmts.cut;
    let mut parse = |tiff: Option<Vec<u8>>| {
        let parsed = exif_reader.read_raw(tiff?);
        match parsed.map_err(|e| e.distill_partial_result(|_| partial = true)) {
            Ok(exif) | Err(Ok(exif)) => Some(exif),
            Err(Err(_)) => {
                partial = true;
                None
            }
        }
    };
    let blocks = [parse(cmts.ifd0), parse(cmts.exif), parse(cmts.gps)];
    apply(&Tags::Cr3(&blocks), facts);
    if partial {
        Err("exif: a CR3 metadata block is cut short or unreadable".into())
    } else {
        Ok(())
    }
}

/// Where `apply` looks tags up: one EXIF, or a CR3's three blocks (IFD0, Exif IFD, GPS
/// IFD), each read as a TIFF whose IFD0 holds that IFD's tags.
enum Tags<'a> {
    One(&'a Exif),
    Cr3(&'a [Option<Exif>; 3]),
}

/// ORF and RW2 are TIFF with their own magic number (`RO`, `RS`, `U\0`): as 42, kamadak-exif
/// reads their IFDs like any TIFF's.
fn tiff_magic(buf: &mut [u8]) {
    let le = buf.starts_with(b"II");
    if let Some(magic) = buf.get_mut(2..4) {
        magic.copy_from_slice(if le { b"*\0" } else { b"\0*" });
    }
}

/// Each field on its own: a tag whose entry is unreadable or of an unexpected type costs
/// that field alone, and of a tag found in two places the first readable one counts.
fn apply(exif: &Tags, facts: &mut MediaFacts) {
    facts.make = text(exif, Tag::Make);
    facts.model = text(exif, Tag::Model);
    facts.orientation = fields(exif, Tag::Orientation)
        .into_iter()
        .find_map(|f| f.value.get_uint(0).and_then(orientation));
    apply_date(exif, facts);
    let note = fields(exif, Tag::MakerNote)
        .into_iter()
        .find_map(|f| match &f.value {
            Value::Undefined(note, _) => Some(note),
            _ => None,
        });
    if let Some(note) = note {
        facts.content_identifier = super::motion::apple_content_identifier(note);
    }
    facts.lat = gps(exif, Tag::GPSLatitude, Tag::GPSLatitudeRef, 90.0);
    facts.lon = gps(exif, Tag::GPSLongitude, Tag::GPSLongitudeRef, 180.0);
    (facts.lat, facts.lon) = super::values::place(facts.lat, facts.lon);
}

/// ExifImageWidth x ExifImageHeight (PixelXDimension, PixelYDimension): the size of a RAF
/// whose header does not state it, from its embedded JPEG's EXIF.
fn exif_image_size(exif: &Tags) -> Option<(u32, u32)> {
    let dim =
        |tag| (fields(exif, tag).into_iter()).find_map(|f| f.value.get_uint(0).filter(|v| *v > 0));
    Some((dim(Tag::PixelXDimension)?, dim(Tag::PixelYDimension)?))
}

/// `exif_image_size` of a JPEG's own EXIF (a RAF's preview), `None` when it does not say.
pub(super) fn jpeg_exif_image_size(jpeg: &[u8]) -> Option<(u32, u32)> {
    let exif = ::exif::Reader::new()
        .read_from_container(&mut std::io::Cursor::new(jpeg))
        .ok()?;
    exif_image_size(&Tags::One(&exif))
}

/// DateTimeOriginal, else DateTimeDigitized, else DateTime — each with its own sub-seconds
/// and offset tags, the offset falling back to OffsetTime.
fn apply_date(exif: &Tags, facts: &mut MediaFacts) {
    let candidates = [
        (
            Tag::DateTimeOriginal,
            Tag::SubSecTimeOriginal,
            Tag::OffsetTimeOriginal,
        ),
        (
            Tag::DateTimeDigitized,
            Tag::SubSecTimeDigitized,
            Tag::OffsetTimeDigitized,
        ),
        (Tag::DateTime, Tag::SubSecTime, Tag::OffsetTime),
    ];
    for (date_tag, subsec_tag, offset_tag) in candidates {
        let Some(date) = text(exif, date_tag).as_deref().and_then(exif_date) else {
            continue;
        };
        facts.taken_local = Some(with_subsec(date, text(exif, subsec_tag).as_deref()));
        facts.taken_at_source = Some(TakenAtSource::Exif);
        facts.taken_offset_minutes = [offset_tag, Tag::OffsetTime]
            .into_iter()
            .find_map(|t| text(exif, t).as_deref().and_then(utc_offset_minutes));
        return;
    }
}

/// Degrees from the first entry of `value_tag` that holds them: unsigned rationals as EXIF
/// says, or signed ones as some writers use (exiftool reads both).
fn gps(exif: &Tags, value_tag: Tag, ref_tag: Tag, limit: f64) -> Option<f64> {
    let reference = text(exif, ref_tag);
    let degrees = |field: &Field| -> Option<f64> {
        let parts: Vec<Option<f64>> = match &field.value {
            Value::Rational(v) => v
                .iter()
                .map(|r| (r.denom != 0).then(|| r.to_f64()))
                .collect(),
            Value::SRational(v) => v
                .iter()
                .map(|r| (r.denom != 0).then(|| r.to_f64()))
                .collect(),
            _ => return None,
        };
        let part = |i: usize| parts.get(i).copied().flatten();
        let dms = [part(0)?, part(1).unwrap_or(0.0), part(2).unwrap_or(0.0)];
        gps_degrees(dms, reference.as_deref(), limit)
    };
    fields(exif, value_tag).into_iter().find_map(degrees)
}

/// The entries of `tag`: in its own IFD, then, for an Exif IFD tag (DateTimeOriginal…), in
/// IFD0, where some cameras and editors write it (exiftool reads it there too). Looked up,
/// never listed: kamadak-exif parses each value it hands out, and listing every entry would
/// let a crafted file's thousand entries over one huge value each allocate it.
fn fields<'a>(exif: &'a Tags, tag: Tag) -> Vec<&'a Field> {
    match exif {
        Tags::One(exif) => {
            let in_ifd0 = Tag(Context::Tiff, tag.number());
            let own = exif.get_field(tag, In::PRIMARY);
            let moved = (tag.context() == Context::Exif)
                .then(|| exif.get_field(in_ifd0, In::PRIMARY))
                .flatten();
            own.into_iter().chain(moved).collect()
        }
        Tags::Cr3(blocks) => {
            let block = match tag.context() {
                Context::Tiff => 0,
                Context::Exif => 1,
                Context::Gps => 2,
                _ => return Vec::new(),
            };
            let ifd0 = Tag(Context::Tiff, tag.number());
            let found = blocks[block]
                .as_ref()
                .and_then(|b| b.get_field(ifd0, In::PRIMARY));
            found.into_iter().collect()
        }
    }
}

/// The first entry of `tag` that holds text.
fn text(exif: &Tags, tag: Tag) -> Option<String> {
    fields(exif, tag).into_iter().find_map(|f| match &f.value {
        Value::Ascii(parts) => {
            let first = parts.iter().find(|p| !p.is_empty())?;
            clean_text(&String::from_utf8_lossy(first))
        }
        Value::Undefined(bytes, _) => clean_text(&String::from_utf8_lossy(bytes)),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::{contains, jpeg_end_check, jpeg_end_check_bytes};
    use std::io::Cursor;

    #[test]
    fn a_needle_is_found_anywhere_and_only_whole() {
        let eoi = [0xFF, 0xD9];
        assert!(contains(&[0xFF, 0xD9], &eoi));
        assert!(contains(&[1, 0xFF, 0xFF, 0xD9], &eoi), "after a fill byte");
        assert!(contains(b"..mdat", b"mdat"));
        assert!(!contains(&[1, 2, 0xFF], &eoi), "cut at the end");
        assert!(!contains(b"moo", b"moov"));
        assert!(!contains(&[], &eoi));
    }

    #[test]
    fn the_end_check_agrees_in_memory_and_from_a_reader() {
        let mut whole = vec![0xFF, 0xD8];
        whole.extend(std::iter::repeat_n(7u8, 100_000));
        whole.extend([0xFF, 0xD9]);
        let mut eoi_too_early = vec![0xFF, 0xD8, 0xFF, 0xD9];
        eoi_too_early.extend(std::iter::repeat_n(7u8, 100_000));
        let motion = [&whole[..], b"....ftyp....moov"].concat();
        for (file, ok) in [(whole, true), (eoi_too_early, false), (motion, true)] {
            let from_reader = jpeg_end_check(&mut Cursor::new(&file)).is_ok();
            assert_eq!(jpeg_end_check_bytes(&file).is_ok(), ok);
            assert_eq!(from_reader, ok);
        }
    }
}
