//! Camera RAW files: which RAW a file is by its magic and its IFDs (DNG, CR2, CR3, NEF, ARW,
//! RAF, ORF, RW2, PEF, with exiftool's MIME names; a maker's TIFF is a RAW only when IFD0 or
//! a SubIFD holds CFA or raw-compressed data), the raw image's own size as exiftool gives it
//! (RW2's sensor borders, CR2's Exif image size or Canon sensor crop, RAF's cropped size),
//! and the picture a thumbnail or the face detector starts from: the biggest embedded JPEG
//! preview (IFD0, SubIFDs, JpgFromRaw, a RAF's JPEG, a CR3's PRVW or THMB through `cr3`), or,
//! for an uncompressed CFA without one (a DNG converter's bare output), a 2x2-binned demosaic
//! of the raw data itself. Reads TIFF structure only (IFDs, strips, tiles); it decodes no
//! compressed raw data, and every read is bounded (IFD count and length, preview and tile
//! size, output side). Owns the size tags above and no other EXIF tag choice (that is
//! `photo`); must not touch the database.

use std::io::{Read, Seek, SeekFrom};

/// exiftool's MIME types of the RAW formats this module knows.
pub const RAW_MIMES: &[&str] = &[
    DNG,
    "image/x-canon-cr2",
    CR3,
    "image/x-nikon-nef",
    "image/x-sony-arw",
    RAF,
    "image/x-olympus-orf",
    "image/x-panasonic-rw2",
    "image/x-pentax-pef",
];
const DNG: &str = "image/x-adobe-dng";
pub const RAF: &str = "image/x-fujifilm-raf";
pub const CR3: &str = "image/x-canon-cr3";

/// The RAW formats this module gets a picture of: all it knows.
pub fn has_picture(mime: &str) -> bool {
    RAW_MIMES.contains(&mime)
}

/// The RAW formats whose structure is TIFF's (with their own magic number for ORF and RW2).
pub fn is_tiff_raw(mime: &str) -> bool {
    RAW_MIMES.contains(&mime) && mime != RAF && mime != CR3
}

/// Which RAW the first bytes of a file are, if any. A TIFF is a RAW when its IFD0 carries
/// DNGVersion, or a camera maker's name and a RAW's structure (`raw_structure`); a CR2 by
/// its own header word, an ORF or RW2 by its magic, a RAF by the FUJIFILM that starts its
/// header (exiftool's rule: the word after it varies).
pub fn raw_mime(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"FUJIFILM") {
        return Some(RAF);
    }
    if head.get(4..8) == Some(b"ftyp") && head.get(8..12) == Some(b"crx ") {
        return Some(CR3);
    }
    match head.get(..4)? {
        b"IIRO" | b"IIRS" | b"MMOR" => return Some("image/x-olympus-orf"),
        b"IIU\0" => return Some("image/x-panasonic-rw2"),
        b"II*\0" | b"MM\0*" => {}
        _ => return None,
    }
    if head.get(8..10) == Some(b"CR") {
        return Some("image/x-canon-cr2");
    }
    let mut cursor = std::io::Cursor::new(head);
    let tiff = Tiff::open(&mut cursor).ok()?;
    let ifd0 = tiff.ifd(&mut cursor, tiff.first).ok()?;
    if ifd0.entry(TAG_DNG_VERSION).is_some() {
        return Some(DNG);
    }
    let make = ifd0
        .text(&mut cursor, &tiff, TAG_MAKE)?
        .to_ascii_uppercase();
    // A SubIFD beyond the head cannot be told here: the caller's `refine` reads it.
    if raw_structure(&mut cursor, &tiff, &ifd0) == Some(false) {
        return None;
    }
    MAKER_RAWS
        .into_iter()
        .find_map(|(maker, mime)| make.starts_with(maker).then_some(mime))
}

/// The RAWs told from a TIFF by their maker's name and their structure.
const MAKER_RAWS: [(&str, &str); 4] = [
    ("NIKON", "image/x-nikon-nef"),
    ("SONY", "image/x-sony-arw"),
    ("PENTAX", "image/x-pentax-pef"),
    ("RICOH", "image/x-pentax-pef"),
];

/// Whether a RAW's structure is there: a CFA (or DNG's LinearRaw) photometric
/// interpretation, or a camera maker's raw compression, in IFD0 or one of its SubIFDs. A
/// maker's name alone is also on its TIFFs (a Coolscan's, a camera's TIFF mode, a GIMP export
/// that keeps the Make and writes a SubIFD thumbnail). `None`: a SubIFD could not be read.
fn raw_structure<R: Read + Seek>(r: &mut R, t: &Tiff, ifd0: &Ifd) -> Option<bool> {
    let rawish = |r: &mut R, ifd: &Ifd| {
        let photometric = ifd.uint(r, t, TAG_PHOTOMETRIC).unwrap_or(0);
        let compression = ifd.uint(r, t, TAG_COMPRESSION).unwrap_or(1);
        matches!(photometric, 32803 | 34892) || RAW_COMPRESSIONS.contains(&compression)
    };
    if rawish(r, ifd0) {
        return Some(true);
    }
    let subs = ifd0.uints(r, t, TAG_SUB_IFDS).unwrap_or_default();
    let mut unread = false;
    for at in subs.into_iter().take(MAX_IFDS) {
        match t.ifd(r, u64::from(at)) {
            Ok(sub) if rawish(r, &sub) => return Some(true),
            Ok(_) => {}
            Err(_) => unread = true,
        }
    }
    (!unread).then_some(false)
}

/// Raw compressions (exiftool's names): Sony ARW (32767), packed raw (32769), Samsung SRW
/// (32770, 32772), Kodak KDC (32867), Panasonic (34316), Nikon NEF (34713), Kodak DCR
/// (65000), Pentax PEF (65535). Not every number above 32767 is one: PackBits (32773) and
/// deflate (32946) are a TIFF's.
const RAW_COMPRESSIONS: [u32; 9] = [
    32767, 32769, 32770, 32772, 32867, 34316, 34713, 65000, 65535,
];

/// Whether a file `raw_mime` took for a maker's RAW by its head is a TIFF after all: its
/// SubIFDs, beyond the head, read from the whole file hold no RAW's structure.
pub fn only_a_tiff<R: Read + Seek>(r: &mut R, mime: &str) -> bool {
    if !MAKER_RAWS.iter().any(|(_, m)| *m == mime) {
        return false;
    }
    let Ok(t) = Tiff::open(r) else { return false };
    let Ok(ifd0) = t.ifd(r, t.first) else {
        return false;
    };
    raw_structure(r, &t, &ifd0) == Some(false)
}

/// What went wrong reading a RAW's structure.
#[derive(Debug, thiserror::Error)]
pub enum RawError {
    #[error("raw: {0}")]
    Io(#[from] std::io::Error),
    #[error("raw: {0}")]
    Format(&'static str),
    #[error("raw: no preview and no raw data this reader can bin ({0})")]
    NoPicture(&'static str),
}

const TAG_SUBFILE: u16 = 0xFE;
const TAG_WIDTH: u16 = 0x100;
const TAG_HEIGHT: u16 = 0x101;
const TAG_BITS: u16 = 0x102;
const TAG_COMPRESSION: u16 = 0x103;
const TAG_PHOTOMETRIC: u16 = 0x106;
const TAG_MAKE: u16 = 0x10F;
const TAG_STRIP_OFFSETS: u16 = 0x111;
const TAG_ORIENTATION: u16 = 0x112;
const TAG_SAMPLES: u16 = 0x115;
const TAG_ROWS_PER_STRIP: u16 = 0x116;
const TAG_STRIP_COUNTS: u16 = 0x117;
const TAG_TILE_WIDTH: u16 = 0x142;
const TAG_TILE_LENGTH: u16 = 0x143;
const TAG_TILE_OFFSETS: u16 = 0x144;
const TAG_TILE_COUNTS: u16 = 0x145;
const TAG_SUB_IFDS: u16 = 0x14A;
const TAG_EXIF_IFD: u16 = 0x8769;
const TAG_EXIF_WIDTH: u16 = 0xA002;
const TAG_EXIF_HEIGHT: u16 = 0xA003;
const TAG_MAKER_NOTE: u16 = 0x927C;
const TAG_CANON_SENSOR_INFO: u16 = 0xE0;
/// Panasonic's SensorTopBorder, SensorLeftBorder, SensorBottomBorder, SensorRightBorder.
const TAG_RW2_BORDERS: [u16; 4] = [0x04, 0x05, 0x06, 0x07];
const TAG_JPEG_OFFSET: u16 = 0x201;
const TAG_JPEG_LENGTH: u16 = 0x202;
/// Panasonic's JpgFromRaw, an embedded JPEG as an UNDEFINED value.
const TAG_JPG_FROM_RAW: u16 = 0x2E;
const TAG_CFA_DIM: u16 = 0x828D;
const TAG_CFA_PATTERN: u16 = 0x828E;
const TAG_DNG_VERSION: u16 = 0xC612;
const TAG_BLACK: u16 = 0xC61A;
const TAG_WHITE: u16 = 0xC61D;

/// Bounds on what a hostile file can make this reader do.
const MAX_IFDS: usize = 16;
const MAX_ENTRIES: u16 = 1024;
const MAX_VALUES: u32 = 1 << 20;
const MAX_PREVIEW: u64 = 64 * 1024 * 1024;
const MAX_TILE: u64 = 64 * 1024 * 1024;
const MAX_SIDE: u32 = 100_000;
/// The longest side of a picture binned from raw data.
pub const BIN_SIDE: u32 = 1024;

/// A TIFF header: byte order, where IFD0 is, and which maker's rule sizes the file.
struct Tiff {
    le: bool,
    first: u64,
    sizing: Sizing,
}

/// exiftool's size rule for a TIFF-structured RAW whose raw IFD states no size.
#[derive(Clone, Copy, PartialEq)]
enum Sizing {
    /// The raw image's IFD, else the biggest any IFD states.
    Ifds,
    /// A Panasonic RW2 (magic 0x55): IFD0's sensor borders, right - left x bottom - top.
    Rw2,
    /// A Canon CR2 (`CR` at 8): its Exif IFD's ExifImageWidth x ExifImageHeight, else its
    /// MakerNote's SensorInfo crop.
    Cr2,
}

/// One IFD entry: tag, type, count and the 4 value-or-offset bytes.
#[derive(Clone, Copy)]
struct Entry {
    tag: u16,
    typ: u16,
    count: u32,
    raw: [u8; 4],
}

struct Ifd {
    entries: Vec<Entry>,
    next: u64,
}

fn type_size(typ: u16) -> u64 {
    match typ {
        1 | 2 | 6 | 7 => 1,
        3 | 8 => 2,
        4 | 9 | 11 | 13 => 4,
        5 | 10 | 12 => 8,
        _ => 0,
    }
}

impl Tiff {
    fn open<R: Read + Seek>(r: &mut R) -> Result<Tiff, RawError> {
        let mut head = [0u8; 8];
        r.seek(SeekFrom::Start(0))?;
        r.read_exact(&mut head)?;
        let le = match &head[..2] {
            b"II" => true,
            b"MM" => false,
            _ => return Err(RawError::Format("not a TIFF structure")),
        };
        let first = u64::from(u32_of(le, [head[4], head[5], head[6], head[7]]));
        let mut cr = [0u8; 2];
        let sizing = if &head[..4] == b"IIU\0" {
            Sizing::Rw2
        } else if r.read_exact(&mut cr).is_ok() && &cr == b"CR" {
            Sizing::Cr2
        } else {
            Sizing::Ifds
        };
        Ok(Tiff { le, first, sizing })
    }

    fn u16(&self, b: [u8; 2]) -> u16 {
        if self.le {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        }
    }

    fn ifd<R: Read + Seek>(&self, r: &mut R, at: u64) -> Result<Ifd, RawError> {
        r.seek(SeekFrom::Start(at))?;
        let mut n = [0u8; 2];
        r.read_exact(&mut n)?;
        let n = self.u16(n);
        if n == 0 || n > MAX_ENTRIES {
            return Err(RawError::Format("IFD with no or too many entries"));
        }
        let mut bytes = vec![0u8; usize::from(n) * 12 + 4];
        r.read_exact(&mut bytes)?;
        let entries = bytes
            .chunks_exact(12)
            .map(|e| Entry {
                tag: self.u16([e[0], e[1]]),
                typ: self.u16([e[2], e[3]]),
                count: u32_of(self.le, [e[4], e[5], e[6], e[7]]),
                raw: [e[8], e[9], e[10], e[11]],
            })
            .collect();
        let tail = &bytes[bytes.len() - 4..];
        let next = u64::from(u32_of(self.le, [tail[0], tail[1], tail[2], tail[3]]));
        Ok(Ifd { entries, next })
    }

    /// An entry's values as integers (BYTE, SHORT, LONG; the offset followed when they do
    /// not fit in the entry).
    fn uints<R: Read + Seek>(&self, r: &mut R, e: &Entry) -> Result<Vec<u32>, RawError> {
        let size = type_size(e.typ);
        if !matches!(e.typ, 1 | 3 | 4 | 7 | 13) || e.count > MAX_VALUES {
            return Err(RawError::Format("unexpected value type"));
        }
        let bytes = self.value_bytes(r, e, size)?;
        Ok(bytes
            .chunks_exact(size as usize)
            .map(|c| match c.len() {
                1 => u32::from(c[0]),
                2 => u32::from(self.u16([c[0], c[1]])),
                _ => u32_of(self.le, [c[0], c[1], c[2], c[3]]),
            })
            .collect())
    }

    fn value_bytes<R: Read + Seek>(
        &self,
        r: &mut R,
        e: &Entry,
        size: u64,
    ) -> Result<Vec<u8>, RawError> {
        let len = size * u64::from(e.count);
        if len <= 4 {
            return Ok(e.raw[..len as usize].to_vec());
        }
        if len > MAX_PREVIEW {
            return Err(RawError::Format("value too long"));
        }
        r.seek(SeekFrom::Start(u64::from(u32_of(self.le, e.raw))))?;
        let mut out = Vec::new();
        r.take(len).read_to_end(&mut out)?;
        if out.len() as u64 != len {
            return Err(RawError::Format("value cut short"));
        }
        Ok(out)
    }
}

fn u32_of(le: bool, b: [u8; 4]) -> u32 {
    if le {
        u32::from_le_bytes(b)
    } else {
        u32::from_be_bytes(b)
    }
}

impl Ifd {
    fn entry(&self, tag: u16) -> Option<&Entry> {
        self.entries.iter().find(|e| e.tag == tag)
    }

    fn uints<R: Read + Seek>(&self, r: &mut R, t: &Tiff, tag: u16) -> Option<Vec<u32>> {
        t.uints(r, self.entry(tag)?).ok()
    }

    fn uint<R: Read + Seek>(&self, r: &mut R, t: &Tiff, tag: u16) -> Option<u32> {
        self.uints(r, t, tag)?.first().copied()
    }

    fn text<R: Read + Seek>(&self, r: &mut R, t: &Tiff, tag: u16) -> Option<String> {
        let e = self.entry(tag).filter(|e| e.typ == 2 && e.count <= 256)?;
        let bytes = t.value_bytes(r, e, 1).ok()?;
        let text = String::from_utf8_lossy(&bytes);
        Some(text.trim_end_matches('\0').trim().to_string())
    }
}

/// What one image of the file is, as its IFD says.
#[derive(Clone, Debug, Default)]
struct Image {
    subfile: u32,
    width: u32,
    height: u32,
    bits: u32,
    compression: u32,
    photometric: u32,
    samples: u32,
    /// Strips are read as tiles as wide as the image.
    tile: (u32, u32),
    offsets: Vec<u32>,
    counts: Vec<u32>,
    cfa_dim: Vec<u32>,
    cfa: Vec<u32>,
    black: u32,
    white: u32,
    /// A JPEG this IFD points at (JPEGInterchangeFormat, JpgFromRaw): offset and length.
    jpeg: Option<(u64, u64)>,
    /// The file's byte order, which 16-bit samples follow.
    le: bool,
}

/// The IFDs of a TIFF-structured RAW: IFD0 and the chain after it, and their SubIFDs.
struct Layout {
    images: Vec<Image>,
    orientation: Option<u32>,
    /// The size IFD0 states by its maker's rule (`Sizing`), which wins over the IFDs'.
    stated: Option<(u32, u32)>,
}

/// The size of an RW2 (its sensor borders) or a CR2 (its Exif IFD's image size), as
/// exiftool gives it; `None` for other RAWs or when IFD0 does not say.
fn stated_size<R: Read + Seek>(r: &mut R, t: &Tiff, ifd0: &Ifd) -> Option<(u32, u32)> {
    let (w, h) = match t.sizing {
        Sizing::Ifds => return None,
        Sizing::Rw2 => {
            let mut b = [0u32; 4];
            for (v, tag) in b.iter_mut().zip(TAG_RW2_BORDERS) {
                *v = ifd0.uint(r, t, tag)?;
            }
            let [top, left, bottom, right] = b;
            (right.checked_sub(left)?, bottom.checked_sub(top)?)
        }
        Sizing::Cr2 => {
            let at = ifd0.uint(r, t, TAG_EXIF_IFD)?;
            let exif = t.ifd(r, u64::from(at)).ok()?;
            let w = exif.uint(r, t, TAG_EXIF_WIDTH);
            match w.zip(exif.uint(r, t, TAG_EXIF_HEIGHT)) {
                Some((w, h)) if w > 0 && h > 0 => (w, h),
                _ => canon_sensor_crop(r, t, &exif)?,
            }
        }
    };
    (w > 0 && h > 0).then_some((w, h))
}

/// A CR2's image size when its Exif IFD states none: the crop its Canon MakerNote's
/// SensorInfo (0xE0) states, SensorRightBorder - SensorLeftBorder + 1 x SensorBottomBorder -
/// SensorTopBorder + 1 (values 5 to 8, inclusive borders). exiftool then falls back to IFD0's
/// preview size; this is the camera's picture.
fn canon_sensor_crop<R: Read + Seek>(r: &mut R, t: &Tiff, exif: &Ifd) -> Option<(u32, u32)> {
    let note = exif.entry(TAG_MAKER_NOTE).filter(|e| e.typ == 7)?;
    let note = t.ifd(r, u64::from(u32_of(t.le, note.raw))).ok()?;
    let info = note.uints(r, t, TAG_CANON_SENSOR_INFO)?;
    let [left, top, right, bottom] = [info.get(5)?, info.get(6)?, info.get(7)?, info.get(8)?];
    let w = right.checked_sub(*left)?.checked_add(1)?;
    Some((w, bottom.checked_sub(*top)?.checked_add(1)?))
}

fn read_image<R: Read + Seek>(r: &mut R, t: &Tiff, ifd: &Ifd) -> Image {
    let get = |r: &mut R, tag| ifd.uint(r, t, tag);
    let width = get(r, TAG_WIDTH).unwrap_or(0);
    let height = get(r, TAG_HEIGHT).unwrap_or(0);
    let strips = ifd.entry(TAG_STRIP_OFFSETS).is_some();
    let (off_tag, count_tag) = if strips {
        (TAG_STRIP_OFFSETS, TAG_STRIP_COUNTS)
    } else {
        (TAG_TILE_OFFSETS, TAG_TILE_COUNTS)
    };
    let tile = if strips {
        (
            width,
            get(r, TAG_ROWS_PER_STRIP).unwrap_or(height).min(height),
        )
    } else {
        let tw = get(r, TAG_TILE_WIDTH).unwrap_or(0);
        (tw, get(r, TAG_TILE_LENGTH).unwrap_or(0))
    };
    let jpeg_at = get(r, TAG_JPEG_OFFSET).zip(get(r, TAG_JPEG_LENGTH));
    let from_raw = ifd
        .entry(TAG_JPG_FROM_RAW)
        .filter(|e| e.typ == 7 && e.count > 4)
        .map(|e| (u32_of(t.le, e.raw), e.count));
    Image {
        subfile: get(r, TAG_SUBFILE).unwrap_or(0),
        width,
        height,
        bits: get(r, TAG_BITS).unwrap_or(0),
        compression: get(r, TAG_COMPRESSION).unwrap_or(1),
        photometric: get(r, TAG_PHOTOMETRIC).unwrap_or(0),
        samples: get(r, TAG_SAMPLES).unwrap_or(1),
        tile,
        offsets: ifd.uints(r, t, off_tag).unwrap_or_default(),
        counts: ifd.uints(r, t, count_tag).unwrap_or_default(),
        cfa_dim: ifd.uints(r, t, TAG_CFA_DIM).unwrap_or_default(),
        cfa: ifd.uints(r, t, TAG_CFA_PATTERN).unwrap_or_default(),
        black: get(r, TAG_BLACK).unwrap_or(0),
        white: get(r, TAG_WHITE).unwrap_or(0),
        jpeg: jpeg_at
            .or(from_raw)
            .map(|(o, l)| (u64::from(o), u64::from(l))),
        le: t.le,
    }
}

/// Follows IFD0's chain and every SubIFDs list, at most `MAX_IFDS` IFDs, each once.
fn layout<R: Read + Seek>(r: &mut R) -> Result<Layout, RawError> {
    let t = Tiff::open(r)?;
    let mut todo = vec![t.first];
    let mut seen = Vec::new();
    let mut images = Vec::new();
    let (mut orientation, mut stated) = (None, None);
    while let Some(at) = todo.pop() {
        if at == 0 || seen.contains(&at) || seen.len() >= MAX_IFDS {
            continue;
        }
        seen.push(at);
        let Ok(ifd) = t.ifd(r, at) else { continue };
        if seen.len() == 1 {
            orientation = ifd.uint(r, &t, TAG_ORIENTATION);
            stated = stated_size(r, &t, &ifd);
        }
        images.push(read_image(r, &t, &ifd));
        todo.push(ifd.next);
        let subs = ifd.uints(r, &t, TAG_SUB_IFDS).unwrap_or_default();
        todo.extend(subs.into_iter().rev().map(u64::from));
    }
    if images.is_empty() {
        return Err(RawError::Format("no readable IFD"));
    }
    Ok(Layout {
        images,
        orientation,
        stated,
    })
}

impl Layout {
    /// The raw image: the biggest full-resolution (NewSubFileType 0) image that is not a
    /// JPEG preview. exiftool's ImageSize of a DNG is this IFD's ImageWidth x ImageHeight.
    fn main(&self) -> Option<&Image> {
        let area = |i: &&Image| u64::from(i.width) * u64::from(i.height);
        self.images
            .iter()
            .filter(|i| i.subfile & 1 == 0 && i.width > 0 && i.height > 0)
            .filter(|i| i.photometric == 32803 || i.photometric == 34892 || i.subfile == 0)
            .filter(|i| !matches!(i.compression, 6 | 7) || i.photometric == 32803)
            .max_by_key(area)
    }

    /// The size to index: the one IFD0 states by its maker's rule (an RW2's, a CR2's), else
    /// the raw image's, else (a CR2 without an Exif size, whose raw IFD states none: its
    /// slices do) the biggest image any IFD states, the full-size JPEG beside the raw.
    fn size(&self) -> Option<(u32, u32)> {
        let area = |i: &&Image| u64::from(i.width) * u64::from(i.height);
        if self.stated.is_some() {
            return self.stated;
        }
        self.main()
            .or_else(|| self.images.iter().filter(|i| area(i) > 0).max_by_key(area))
            .map(|i| (i.width, i.height))
    }

    /// Every embedded JPEG: offset, length and the size its IFD states (0 when it says
    /// none), biggest first.
    fn previews(&self) -> Vec<(u64, u64, u64)> {
        let mut out: Vec<(u64, u64, u64)> = self
            .images
            .iter()
            .filter_map(|i| {
                let area = u64::from(i.width) * u64::from(i.height);
                let whole_strip = (matches!(i.compression, 6 | 7) && i.photometric != 32803)
                    .then(|| {
                        Some((
                            u64::from(*i.offsets.first()?),
                            u64::from(*i.counts.first()?),
                        ))
                    })
                    .flatten()
                    .filter(|_| i.offsets.len() == 1);
                i.jpeg.or(whole_strip).map(|(o, l)| (o, l, area))
            })
            .filter(|&(_, l, _)| l > 2 && l <= MAX_PREVIEW)
            .collect();
        out.sort_by_key(|&(_, l, area)| std::cmp::Reverse((area, l)));
        out
    }
}

/// The raw image's stored size and IFD0's orientation, for a TIFF-structured RAW or a CR3
/// (whose CMT1 is a TIFF's IFD0).
pub fn geometry<R: Read + Seek>(r: &mut R) -> Result<((u32, u32), Option<u32>), RawError> {
    if super::cr3::is_cr3(r) {
        return super::cr3::geometry(r);
    }
    let layout = layout(r)?;
    let (w, h) = layout
        .size()
        .ok_or(RawError::Format("no IFD states a size"))?;
    if w > MAX_SIDE || h > MAX_SIDE {
        return Err(RawError::Format("huge dimensions"));
    }
    Ok(((w, h), layout.orientation))
}

/// Where a RAW's picture comes from.
#[derive(Debug)]
pub enum Picture {
    /// An embedded JPEG preview, in the raw's stored orientation.
    Jpeg(Vec<u8>),
    /// Raw data binned to RGB: `width` x `height`, 3 bytes a pixel, row by row.
    Rgb {
        width: u32,
        height: u32,
        pixels: Vec<u8>,
    },
}

/// The biggest embedded JPEG preview of the RAW whose type is `mime`, else the picture
/// binned from its uncompressed raw data. A preview is stored like the raw data, so the
/// file's orientation applies to both.
pub fn picture<R: Read + Seek>(r: &mut R, mime: &str) -> Result<Picture, RawError> {
    if mime == RAF {
        return raf_preview(r).map(Picture::Jpeg);
    }
    if mime == CR3 {
        return super::cr3::preview(r).map(Picture::Jpeg);
    }
    if !is_tiff_raw(mime) {
        return Err(RawError::NoPicture("format without a TIFF structure"));
    }
    let layout = layout(r)?;
    for (offset, len, _) in layout.previews() {
        if let Some(jpeg) = read_jpeg(r, offset, len)? {
            return Ok(Picture::Jpeg(jpeg));
        }
    }
    let main = layout.main().ok_or(RawError::NoPicture("no raw image"))?;
    bin(r, main)
}

fn read_jpeg<R: Read + Seek>(
    r: &mut R,
    offset: u64,
    len: u64,
) -> Result<Option<Vec<u8>>, RawError> {
    r.seek(SeekFrom::Start(offset))?;
    let mut out = Vec::new();
    r.take(len).read_to_end(&mut out)?;
    Ok(out.starts_with(&[0xFF, 0xD8]).then_some(out))
}

/// A RAF's header names its embedded JPEG (offset and length, big-endian, at 84 and 88).
fn raf_preview<R: Read + Seek>(r: &mut R) -> Result<Vec<u8>, RawError> {
    let mut head = [0u8; 92];
    r.seek(SeekFrom::Start(0))?;
    r.read_exact(&mut head)?;
    let at = u64::from(u32::from_be_bytes([head[84], head[85], head[86], head[87]]));
    let len = u64::from(u32::from_be_bytes([head[88], head[89], head[90], head[91]]));
    if len > MAX_PREVIEW {
        return Err(RawError::Format("preview too long"));
    }
    read_jpeg(r, at, len)?.ok_or(RawError::NoPicture("RAF without its JPEG"))
}

/// Where a RAF's header points at its RAF directory, and the directory's tag that holds
/// RawImageCroppedSize (height, then width).
const RAF_DIR_AT: u64 = 0x5C;
const RAF_CROPPED_SIZE: u16 = 0x111;

/// A RAF's size, exiftool's ImageSize of it: RawImageCroppedSize from the RAF directory its
/// header points at (big-endian: a count, then tag, length and value each). `None` when the
/// header points at none or it does not say.
pub fn raf_size<R: Read + Seek>(r: &mut R) -> Option<(u32, u32)> {
    let mut word = [0u8; 4];
    r.seek(SeekFrom::Start(RAF_DIR_AT)).ok()?;
    r.read_exact(&mut word).ok()?;
    let at = u64::from(u32::from_be_bytes(word));
    if at == 0 {
        return None;
    }
    r.seek(SeekFrom::Start(at)).ok()?;
    r.read_exact(&mut word).ok()?;
    let count = u32::from_be_bytes(word);
    // exiftool's bound on a RAF directory's entries.
    for _ in 0..count.min(256) {
        r.read_exact(&mut word).ok()?;
        let tag = u16::from_be_bytes([word[0], word[1]]);
        let len = u16::from_be_bytes([word[2], word[3]]);
        if tag == RAF_CROPPED_SIZE && len == 4 {
            r.read_exact(&mut word).ok()?;
            let h = u32::from(u16::from_be_bytes([word[0], word[1]]));
            let w = u32::from(u16::from_be_bytes([word[2], word[3]]));
            return (w > 0 && h > 0).then_some((w, h));
        }
        r.seek(SeekFrom::Current(i64::from(len))).ok()?;
    }
    None
}

/// The frame a RAF's size is stated in, as `extract` records it (its RawImageCroppedSize,
/// else its preview's Exif image size): the pixels its preview stands for.
pub fn raf_frame<R: Read + Seek>(r: &mut R) -> Option<(u32, u32)> {
    raf_size(r).or_else(|| super::photo::jpeg_exif_image_size(&raf_preview(r).ok()?))
}

/// The bin factor: even, and so that the longest side is at most `BIN_SIDE`.
fn factor(width: u32, height: u32) -> u32 {
    let f = width.max(height).div_ceil(BIN_SIDE).max(2);
    f + f % 2
}

/// Sums of the three colours over one output pixel's block, and their counts.
struct Bins {
    width: u32,
    height: u32,
    f: u32,
    sum: Vec<[u64; 3]>,
    n: Vec<[u32; 3]>,
}

/// Bins an uncompressed 2x2 CFA: each output pixel averages the red, green and blue sites
/// of an f x f block (f even: whole Bayer quads), tile by tile, so memory is one tile plus
/// the output. Black and white level scale it, and a gamma of 2.2 brightens the linear data.
fn bin<R: Read + Seek>(r: &mut R, img: &Image) -> Result<Picture, RawError> {
    let cfa_ok = img.cfa_dim == [2, 2] && img.cfa.len() == 4 && img.cfa.iter().all(|c| *c < 3);
    let plain = img.compression == 1 && img.samples == 1 && matches!(img.bits, 8 | 16);
    if img.photometric != 32803 || !cfa_ok || !plain {
        return Err(RawError::NoPicture("compressed or not a 2x2 CFA"));
    }
    let (tw, th) = img.tile;
    if tw == 0 || th == 0 || img.offsets.len() != img.counts.len() || img.offsets.is_empty() {
        return Err(RawError::Format("no strips or tiles"));
    }
    let f = factor(img.width, img.height);
    let (ow, oh) = ((img.width / f).max(1), (img.height / f).max(1));
    let mut bins = Bins {
        width: ow,
        height: oh,
        f,
        sum: vec![[0; 3]; (ow * oh) as usize],
        n: vec![[0; 3]; (ow * oh) as usize],
    };
    let across = img.width.div_ceil(tw);
    for (k, (&off, &count)) in img.offsets.iter().zip(&img.counts).enumerate() {
        let k = k as u32;
        let (x0, y0) = (
            (k % across).saturating_mul(tw),
            (k / across).saturating_mul(th),
        );
        let need = u64::from(tw) * u64::from(th) * u64::from(img.bits / 8);
        if need > MAX_TILE || u64::from(count) < need {
            return Err(RawError::Format("tile too big or cut short"));
        }
        r.seek(SeekFrom::Start(u64::from(off)))?;
        let mut tile = vec![0u8; need as usize];
        r.read_exact(&mut tile)?;
        add_tile(&mut bins, img, &tile, (x0, y0));
    }
    Ok(bins.finish(img))
}

fn add_tile(bins: &mut Bins, img: &Image, tile: &[u8], (x0, y0): (u32, u32)) {
    let (tw, th) = img.tile;
    let wide = img.bits == 16;
    for ty in 0..th {
        let y = y0.saturating_add(ty);
        let oy = y / bins.f;
        if y >= img.height || oy >= bins.height {
            break;
        }
        for tx in 0..tw {
            let x = x0.saturating_add(tx);
            let ox = x / bins.f;
            if x >= img.width || ox >= bins.width {
                break;
            }
            let i = (ty * tw + tx) as usize;
            let v = if wide {
                let b = [tile[i * 2], tile[i * 2 + 1]];
                if img.le {
                    u16::from_le_bytes(b)
                } else {
                    u16::from_be_bytes(b)
                }
            } else {
                u16::from(tile[i])
            };
            let c = img.cfa[((y % 2) * 2 + x % 2) as usize] as usize;
            let at = (oy * bins.width + ox) as usize;
            bins.sum[at][c] += u64::from(v);
            bins.n[at][c] += 1;
        }
    }
}

impl Bins {
    fn finish(self, img: &Image) -> Picture {
        let top = if img.white > img.black {
            img.white
        } else {
            (1u32 << img.bits) - 1
        };
        let range = f64::from(top.saturating_sub(img.black).max(1));
        let black = f64::from(img.black);
        let pixels = self
            .sum
            .iter()
            .zip(&self.n)
            .flat_map(|(s, n)| {
                std::array::from_fn::<u8, 3, _>(|c| {
                    let mean = s[c] as f64 / f64::from(n[c].max(1));
                    let linear = ((mean - black) / range).clamp(0.0, 1.0);
                    (linear.powf(1.0 / 2.2) * 255.0).round() as u8
                })
            })
            .collect();
        Picture::Rgb {
            width: self.width,
            height: self.height,
            pixels,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_magic_is_told_from_a_plain_tiff() {
        assert_eq!(raw_mime(b"FUJIFILMCCD-RAW 0201"), Some(RAF));
        assert_eq!(
            raw_mime(b"FUJIFILMCCD-RAX 0201"),
            Some(RAF),
            "exiftool's rule"
        );
        let cr3 = b"\0\0\0\x18ftypcrx \0\0\0\x01crx isom";
        assert_eq!(raw_mime(cr3), Some(CR3));
        assert_eq!(raw_mime(b"IIRO\x08\0\0\0"), Some("image/x-olympus-orf"));
        assert_eq!(raw_mime(b"IIU\0\x08\0\0\0"), Some("image/x-panasonic-rw2"));
        let cr2 = b"II*\0\x10\0\0\0CR\x02\0\0\0\0\0";
        assert_eq!(raw_mime(cr2), Some("image/x-canon-cr2"));
        assert_eq!(raw_mime(b"II*\0\x08\0\0\0\x10\0\0\0"), None, "a plain TIFF");
        assert_eq!(raw_mime(b"\xFF\xD8\xFF\xE0"), None);
    }

    /// A TIFF head: IFD0 of `entries` plus Make = `make`, stored after the IFD.
    fn tiff(make: &str, entries: &[(u16, u16, u32, [u8; 4])]) -> Vec<u8> {
        let mut b = b"II*\0\x08\0\0\0".to_vec();
        let at = 8 + 2 + (entries.len() as u32 + 1) * 12 + 4;
        let count = make.len() as u32 + 1;
        let make_entry = (TAG_MAKE, 2, count, at.to_le_bytes());
        let entries: Vec<_> = entries.iter().chain([&make_entry]).collect();
        b.extend((entries.len() as u16).to_le_bytes());
        for (tag, typ, count, value) in entries {
            b.extend(tag.to_le_bytes());
            b.extend(typ.to_le_bytes());
            b.extend(count.to_le_bytes());
            b.extend(value);
        }
        b.extend([0; 4]);
        b.extend(make.bytes().chain([0]));
        b
    }

    /// A camera maker's name alone is a TIFF (a scanner's, a camera's TIFF mode); its RAW
    /// has SubIFDs, a CFA or a vendor compression.
    #[test]
    fn a_makers_plain_tiff_is_not_its_raw() {
        let rgb = (TAG_PHOTOMETRIC, 3, 1, [2, 0, 0, 0]);
        assert_eq!(raw_mime(&tiff("SONY", &[rgb])), None);
        let subs = (TAG_SUB_IFDS, 4, 1, [200, 0, 0, 0]);
        assert_eq!(raw_mime(&tiff("SONY", &[subs])), Some("image/x-sony-arw"));
        assert_eq!(raw_mime(&tiff("PENTAX", &[rgb])), None);
        let cfa = (TAG_PHOTOMETRIC, 3, 1, [0x23, 0x80, 0, 0]);
        let pef = Some("image/x-pentax-pef");
        assert_eq!(raw_mime(&tiff("PENTAX Corporation", &[cfa])), pef);
        let packed = (TAG_COMPRESSION, 3, 1, [0xFF, 0xFF, 0, 0]);
        let nef = Some("image/x-nikon-nef");
        assert_eq!(raw_mime(&tiff("NIKON CORPORATION", &[packed])), nef);
        assert_eq!(raw_mime(&tiff("Nikon", &[rgb])), None, "a Coolscan TIFF");
    }

    /// A maker's TIFF whose one SubIFD, `gap` bytes after IFD0's values, has the
    /// photometric interpretation `photometric`.
    fn with_sub(photometric: u16, gap: usize) -> Vec<u8> {
        let make = "NIKON CORPORATION";
        let at = 8 + 2 + 2 * 12 + 4 + make.len() + 1 + gap;
        let subs = (TAG_SUB_IFDS, 4, 1, (at as u32).to_le_bytes());
        let mut b = tiff(make, &[subs]);
        b.resize(at, 0);
        b.extend(1u16.to_le_bytes());
        b.extend(TAG_PHOTOMETRIC.to_le_bytes());
        b.extend(3u16.to_le_bytes());
        b.extend(1u32.to_le_bytes());
        b.extend(u32::from(photometric).to_le_bytes());
        b.extend([0; 4]);
        b
    }

    /// Issue 26 finding 9: a RAW by its structure (a CFA or a raw compression in IFD0 or a
    /// SubIFD), not by its maker's name; GIMP keeps the Make and may write a SubIFD thumbnail
    /// or PackBits (32773, above 32767 but a TIFF's).
    #[test]
    fn a_makers_tiff_with_a_subifd_thumbnail_or_packbits_is_a_tiff() {
        let nef = Some("image/x-nikon-nef");
        assert_eq!(raw_mime(&with_sub(2, 0)), None, "an RGB SubIFD thumbnail");
        assert_eq!(raw_mime(&with_sub(32803, 0)), nef, "a CFA SubIFD");
        let packbits = (TAG_COMPRESSION, 3, 1, [0x05, 0x80, 0, 0]);
        assert_eq!(raw_mime(&tiff("NIKON CORPORATION", &[packbits])), None);
        // A SubIFD beyond the head: the head cannot tell, the whole file can.
        let far = with_sub(2, 9000);
        assert_eq!(raw_mime(&far[..8192]), nef);
        assert!(only_a_tiff(
            &mut std::io::Cursor::new(&far),
            "image/x-nikon-nef"
        ));
        let far_cfa = with_sub(32803, 9000);
        assert!(!only_a_tiff(
            &mut std::io::Cursor::new(&far_cfa),
            "image/x-nikon-nef"
        ));
    }

    #[test]
    fn the_bin_factor_is_even_and_bounds_the_side() {
        assert_eq!(factor(736, 496), 2);
        assert_eq!(factor(8256, 5504), 10);
        assert!(8256 / factor(8256, 5504) <= BIN_SIDE);
        assert_eq!(factor(3000, 2000), 4);
    }

    #[test]
    fn a_hostile_ifd_chain_ends() {
        // IFD0 at 8 with one entry whose next-IFD pointer is itself.
        let mut b = b"II*\0\x08\0\0\0".to_vec();
        b.extend([
            1, 0, 0x00, 0x01, 3, 0, 1, 0, 0, 0, 16, 0, 0, 0, 0, 0, 8, 0, 0, 0,
        ]);
        let l = layout(&mut std::io::Cursor::new(&b)).expect("one IFD");
        assert_eq!(l.images.len(), 1);
    }
}
