//! A HEIF's metadata items (issue 26 findings 1, 2 and 10): the Exif item and the XMP item
//! (`mime`, `application/rdf+xml`) that describe the primary item, chosen by their `cdsc`
//! reference (`iref`) to `pitm`, found in `iinf` and read through `iloc` (construction
//! method 0, file offsets, or 1, `idat`; any number of extents), whole: bounded by the file
//! (or `idat`) and by `MAX_ITEM`, never by JPEG's 64 KiB segments.
//!
//! Fixed here rather than upstream: kamadak-exif 0.6.2's own HEIF reader caps an Exif item at
//! 131,070 bytes (`MAX_EXIF_SIZE`, JPEG's APP1 limit) and takes the last Exif item of `iinf`
//! whatever it describes (it reads no `iref` at all). `heif` already walks the `meta` box, so
//! choosing the right item is three small tables more here, where a `[patch]` of the crate
//! would carry both changes in a fork until a release. The TIFF inside the Exif item still
//! goes to kamadak-exif (`Reader::read_raw`, which has no cap) in `photo`, the packet to
//! `xmp`. Must not parse TIFF or XML itself, nor decode pixels, nor read what no item points
//! at.

use super::heif::{be16, be32, boxes, find, pitm, read_meta};
use std::io::{Read, Seek, SeekFrom};

/// Largest item read. A phone's Exif with a big maker note or an embedded preview is a few
/// hundred KiB (the largest seen, a Xiaomi's, 192 KB); an XMP packet rarely passes 100 KiB.
/// 16 MiB leaves room for the biggest previews without letting a lying length allocate more.
pub const MAX_ITEM: u64 = 16 * 1024 * 1024;

/// Which metadata item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Exif,
    Xmp,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Exif => "Exif",
            Kind::Xmp => "XMP",
        }
    }

    fn is(self, info: &Info) -> bool {
        match self {
            Kind::Exif => &info.kind == b"Exif",
            Kind::Xmp => &info.kind == b"mime" && info.content_type.trim() == "application/rdf+xml",
        }
    }
}

/// Why the item describing the primary item could not be read (none at all is no error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ItemError {
    #[error("the HEIF {0} item reaches past the end of its data")]
    PastEnd(&'static str),
    #[error("the HEIF {0} item is {1} bytes, over the {MAX_ITEM} read")]
    TooLarge(&'static str, u64),
    #[error("the HEIF {0} item has no location this reader follows")]
    Location(&'static str),
    #[error("the HEIF Exif item's TIFF header offset is past its end")]
    ExifOffset,
    #[error("reading the HEIF {0} item: {1}")]
    Io(&'static str, String),
}

/// The TIFF of the Exif item describing the primary item (after the item's 4-byte offset to
/// its TIFF header), or `None` when there is none.
pub fn exif<R: Read + Seek>(r: &mut R) -> Result<Option<Vec<u8>>, ItemError> {
    let Some(mut item) = item(r, Kind::Exif)? else {
        return Ok(None);
    };
    let offset = be32(&item, 0).ok_or(ItemError::ExifOffset)?;
    let start = usize::try_from(offset)
        .ok()
        .and_then(|o| o.checked_add(4))
        .filter(|&s| s <= item.len())
        .ok_or(ItemError::ExifOffset)?;
    item.drain(..start);
    Ok(Some(item))
}

/// The XMP packet describing the primary item, or `None` when there is none.
pub fn xmp<R: Read + Seek>(r: &mut R) -> Result<Option<Vec<u8>>, ItemError> {
    item(r, Kind::Xmp)
}

/// The bytes of the `kind` item describing the primary item; `None` without a readable
/// `meta`, a primary item or such an item.
pub fn item<R: Read + Seek>(r: &mut R, kind: Kind) -> Result<Option<Vec<u8>>, ItemError> {
    let io = |e: std::io::Error| ItemError::Io(kind.name(), e.to_string());
    let file_len = r.seek(SeekFrom::End(0)).map_err(io)?;
    let Some(meta) = read_meta(r) else {
        return Ok(None);
    };
    let Some(children) = meta.get(4..).map(boxes) else {
        return Ok(None);
    };
    let Some(primary) = find(&children, b"pitm").and_then(pitm) else {
        return Ok(None);
    };
    let infos = find(&children, b"iinf").map(infos).unwrap_or_default();
    let links = find(&children, b"iref").map(cdsc).unwrap_or_default();
    let Some(id) = chosen(&infos, &links, primary, kind) else {
        return Ok(None);
    };
    let iloc = find(&children, b"iloc").ok_or(ItemError::Location(kind.name()))?;
    let loc = location(iloc, id).ok_or(ItemError::Location(kind.name()))?;
    let idat = find(&children, b"idat");
    read(r, file_len, &loc, idat, kind).map(Some)
}

/// An `infe` entry: item id, item type, and a `mime` item's content type.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Info {
    id: u32,
    kind: [u8; 4],
    content_type: String,
}

/// The `kind` item that a `cdsc` reference ties to `primary`; else one that describes no
/// item at all (a writer that left out `iref`), never one that describes another item.
fn chosen(infos: &[Info], links: &[(u32, Vec<u32>)], primary: u32, kind: Kind) -> Option<u32> {
    let candidates = || infos.iter().filter(|i| kind.is(i)).map(|i| i.id);
    let describes = |id: u32| links.iter().filter(move |(from, _)| *from == id);
    candidates()
        .find(|&id| describes(id).any(|(_, to)| to.contains(&primary)))
        .or_else(|| candidates().find(|&id| describes(id).next().is_none()))
}

/// `iinf`'s entries (a full box: 16-bit count in version 0, 32-bit after); `infe` versions 2
/// and 3 only, the ones HEIF allows.
fn infos(iinf: &[u8]) -> Vec<Info> {
    let skip = if iinf.first() == Some(&0) { 6 } else { 8 };
    let entries = boxes(iinf.get(skip..).unwrap_or_default());
    entries
        .into_iter()
        .filter(|(kind, _)| kind == b"infe")
        .filter_map(|(_, body)| infe(body))
        .collect()
}

fn infe(body: &[u8]) -> Option<Info> {
    let (id, at) = match *body.first()? {
        2 => (be16(body, 4)?, 6),
        3 => (be32(body, 4)?, 8),
        _ => return None,
    };
    // item_protection_index (16 bits), then the type, then NUL-terminated strings.
    let kind: [u8; 4] = body.get(at + 2..at + 6)?.try_into().ok()?;
    let mut strings = body.get(at + 6..)?.split(|&b| b == 0);
    let _name = strings.next();
    let content_type = match &kind {
        b"mime" => String::from_utf8_lossy(strings.next().unwrap_or_default()).into_owned(),
        _ => String::new(),
    };
    Some(Info {
        id,
        kind,
        content_type,
    })
}

/// `iref`'s `cdsc` references: (from item, to items). Ids are 16 bits in version 0, 32 after.
fn cdsc(iref: &[u8]) -> Vec<(u32, Vec<u32>)> {
    let wide = iref.first().is_some_and(|&v| v != 0);
    let id = |b: &[u8], at: usize| if wide { be32(b, at) } else { be16(b, at) };
    let step = if wide { 4 } else { 2 };
    let mut out = Vec::new();
    for (kind, body) in boxes(iref.get(4..).unwrap_or_default()) {
        if &kind != b"cdsc" {
            continue;
        }
        let (Some(from), Some(count)) = (id(body, 0), be16(body, step)) else {
            continue;
        };
        let to = (0..count as usize)
            .map_while(|i| id(body, step + 2 + i * step))
            .collect();
        out.push((from, to));
    }
    out
}

/// Where an item's bytes are: `iloc`'s entry for it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Location {
    method: u32,
    data_ref: u32,
    base: u64,
    /// (offset from `base`, length; 0 is "to the end of the data").
    extents: Vec<(u64, u64)>,
}

/// `iloc`'s entry for `wanted` (versions 0, 1 and 2; 0-, 4- or 8-byte fields).
fn location(iloc: &[u8], wanted: u32) -> Option<Location> {
    let version = *iloc.first()?;
    if version > 2 {
        return None;
    }
    let sizes = be16(iloc, 4)?;
    let (off_size, len_size, base_size) = (sizes >> 12, (sizes >> 8) & 15, (sizes >> 4) & 15);
    let index_size = if version == 0 { 0 } else { sizes & 15 };
    let mut at = 6;
    let count = sized(iloc, &mut at, if version < 2 { 2 } else { 4 })?;
    for _ in 0..count {
        let id = sized(iloc, &mut at, if version < 2 { 2 } else { 4 })?;
        let method = if version == 0 {
            0
        } else {
            sized(iloc, &mut at, 2)? & 15
        };
        let data_ref = sized(iloc, &mut at, 2)?;
        let base = sized(iloc, &mut at, base_size)?;
        let n = sized(iloc, &mut at, 2)?;
        let mut extents = Vec::new();
        for _ in 0..n {
            sized(iloc, &mut at, index_size)?;
            let off = sized(iloc, &mut at, off_size)?;
            let len = sized(iloc, &mut at, len_size)?;
            extents.push((off, len));
        }
        if id == u64::from(wanted) {
            return Some(Location {
                method: method as u32,
                data_ref: data_ref as u32,
                base,
                extents,
            });
        }
    }
    None
}

/// A big-endian field of `size` bytes (0, 2, 4 or 8) at `*at`, which moves past it.
fn sized(b: &[u8], at: &mut usize, size: u32) -> Option<u64> {
    let value = match size {
        0 => 0,
        2 => u64::from(be16(b, *at)?),
        4 => u64::from(be32(b, *at)?),
        8 => u64::from_be_bytes(b.get(*at..*at + 8)?.try_into().ok()?),
        _ => return None,
    };
    *at += size as usize;
    Some(value)
}

/// The item's extents, each checked against its data (the file, or `idat`) and their sum
/// against `MAX_ITEM` before anything is allocated.
fn read<R: Read + Seek>(
    r: &mut R,
    file_len: u64,
    loc: &Location,
    idat: Option<&[u8]>,
    kind: Kind,
) -> Result<Vec<u8>, ItemError> {
    let name = kind.name();
    let data_len = match (loc.method, loc.data_ref, idat) {
        (0, 0, _) => file_len,
        (1, _, Some(idat)) => idat.len() as u64,
        _ => return Err(ItemError::Location(name)),
    };
    if loc.extents.is_empty() {
        return Err(ItemError::Location(name));
    }
    let mut spans = Vec::with_capacity(loc.extents.len());
    let mut total = 0u64;
    for &(off, len) in &loc.extents {
        let start = loc.base.checked_add(off).ok_or(ItemError::PastEnd(name))?;
        let end = match len {
            0 => data_len,
            _ => start.checked_add(len).ok_or(ItemError::PastEnd(name))?,
        };
        if start > end || end > data_len {
            return Err(ItemError::PastEnd(name));
        }
        total = total.saturating_add(end - start);
        spans.push((start, end - start));
    }
    if total > MAX_ITEM {
        return Err(ItemError::TooLarge(name, total));
    }
    let mut out = Vec::with_capacity(total as usize);
    for (start, len) in spans {
        match idat.filter(|_| loc.method == 1) {
            Some(idat) => {
                let span = usize::try_from(start)
                    .ok()
                    .zip(usize::try_from(start + len).ok());
                let bytes = span.and_then(|(from, to)| idat.get(from..to));
                out.extend_from_slice(bytes.ok_or(ItemError::PastEnd(name))?);
            }
            None => {
                let io = |e: std::io::Error| ItemError::Io(name, e.to_string());
                r.seek(SeekFrom::Start(start)).map_err(io)?;
                let got = r.take(len).read_to_end(&mut out).map_err(io)?;
                if (got as u64) < len {
                    return Err(ItemError::PastEnd(name));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::heif::tests::bx;
    use std::io::Cursor;

    /// A full box with no flags (`heif::tests::full`).
    fn full(kind: &[u8; 4], version: u8, body: &[u8]) -> Vec<u8> {
        crate::media::heif::tests::full(kind, version, 0, body)
    }

    struct Item {
        id: u16,
        kind: &'static [u8; 4],
        content_type: &'static str,
        describes: Option<u16>,
        data: Vec<u8>,
        in_idat: bool,
        extents: usize,
    }

    fn entry(id: u16, kind: &'static [u8; 4], describes: Option<u16>, data: &[u8]) -> Item {
        Item {
            id,
            kind,
            content_type: if kind == b"mime" {
                "application/rdf+xml"
            } else {
                ""
            },
            describes,
            data: data.to_vec(),
            in_idat: false,
            extents: 1,
        }
    }

    /// `iloc` version 1 with 4-byte offsets and lengths: its size does not depend on them.
    fn iloc(items: &[Item], mdat_at: u32) -> Vec<u8> {
        let mut body = vec![0x44, 0x40];
        body.extend_from_slice(&(items.len() as u16).to_be_bytes());
        let (mut in_file, mut in_idat) = (mdat_at, 0u32);
        for it in items {
            let at = if it.in_idat {
                &mut in_idat
            } else {
                &mut in_file
            };
            body.extend_from_slice(&it.id.to_be_bytes());
            body.extend_from_slice(&[0, u8::from(it.in_idat), 0, 0, 0, 0, 0, 0]);
            let step = it.data.len().div_ceil(it.extents);
            let pieces: Vec<&[u8]> = it.data.chunks(step.max(1)).collect();
            body.extend_from_slice(&(pieces.len() as u16).to_be_bytes());
            for piece in pieces {
                body.extend_from_slice(&at.to_be_bytes());
                body.extend_from_slice(&(piece.len() as u32).to_be_bytes());
                *at += piece.len() as u32;
            }
        }
        full(b"iloc", 1, &body)
    }

    /// A HEIF whose primary item is 1 (no data of its own here) with `items` described.
    fn heif(items: &[Item]) -> Vec<u8> {
        let mut infe = Vec::new();
        let mut refs = Vec::new();
        for it in items {
            let mut body = [&it.id.to_be_bytes()[..], &[0, 0], it.kind, b"\0"].concat();
            if !it.content_type.is_empty() {
                body.extend_from_slice(it.content_type.as_bytes());
                body.push(0);
            }
            infe.extend(full(b"infe", 2, &body));
            if let Some(to) = it.describes {
                let body = [it.id.to_be_bytes(), 1u16.to_be_bytes(), to.to_be_bytes()];
                refs.extend(bx(b"cdsc", &body.concat()));
            }
        }
        let idat: Vec<u8> = items
            .iter()
            .filter(|i| i.in_idat)
            .flat_map(|i| i.data.clone())
            .collect();
        let file: Vec<u8> = items
            .iter()
            .filter(|i| !i.in_idat)
            .flat_map(|i| i.data.clone())
            .collect();
        let meta = |mdat_at| {
            let parts = [
                full(b"pitm", 0, &[0, 1]),
                iloc(items, mdat_at),
                full(
                    b"iinf",
                    0,
                    &[&(items.len() as u16).to_be_bytes()[..], &infe].concat(),
                ),
                full(b"iref", 0, &refs),
                bx(b"idat", &idat),
            ];
            full(b"meta", 0, &parts.concat())
        };
        let ftyp = bx(b"ftyp", b"heic\0\0\0\0mif1heic");
        let mdat_at = (ftyp.len() + meta(0).len() + 8) as u32;
        [ftyp, meta(mdat_at), bx(b"mdat", &file)].concat()
    }

    fn read_item(file: &[u8], kind: Kind) -> Result<Option<Vec<u8>>, ItemError> {
        item(&mut Cursor::new(file), kind)
    }

    #[test]
    fn the_item_describing_the_primary_is_read_not_the_last_one() {
        let mut primary = entry(10, b"Exif", Some(1), b"the primary's");
        primary.in_idat = true;
        let file = heif(&[primary, entry(11, b"Exif", Some(3), b"the other eye's")]);
        assert_eq!(
            read_item(&file, Kind::Exif),
            Ok(Some(b"the primary's".to_vec()))
        );
        // Without a reference, an item that describes nothing; never another item's.
        let file = heif(&[
            entry(11, b"Exif", Some(3), b"other"),
            entry(12, b"Exif", None, b"x"),
        ]);
        assert_eq!(read_item(&file, Kind::Exif), Ok(Some(b"x".to_vec())));
        let file = heif(&[entry(11, b"Exif", Some(3), b"other")]);
        assert_eq!(read_item(&file, Kind::Exif), Ok(None));
    }

    #[test]
    fn an_item_over_kamadak_exifs_131070_bytes_is_read_whole_from_its_extents() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        for in_idat in [false, true] {
            let mut big = entry(10, b"Exif", Some(1), &data);
            (big.extents, big.in_idat) = (3, in_idat);
            let file = heif(&[entry(9, b"Exif", Some(5), b"decoy"), big]);
            assert_eq!(
                read_item(&file, Kind::Exif),
                Ok(Some(data.clone())),
                "idat {in_idat}"
            );
        }
    }

    #[test]
    fn the_xmp_item_is_the_rdf_xml_mime_item_of_the_primary() {
        let mut jpeg = entry(10, b"mime", Some(1), b"not xmp");
        jpeg.content_type = "image/jpeg";
        let xmp = entry(11, b"mime", Some(1), b"<x:xmpmeta/>");
        let file = heif(&[jpeg, xmp, entry(12, b"Exif", Some(1), b"exif")]);
        assert_eq!(
            read_item(&file, Kind::Xmp),
            Ok(Some(b"<x:xmpmeta/>".to_vec()))
        );
    }

    #[test]
    fn the_exif_items_tiff_starts_after_its_header_offset() {
        let tiff = b"MM\0*\0\0\0\x08";
        let good = [&6u32.to_be_bytes()[..], b"Exif\0\0", tiff].concat();
        let file = heif(&[entry(10, b"Exif", Some(1), &good)]);
        assert_eq!(exif(&mut Cursor::new(&file)), Ok(Some(tiff.to_vec())));
        let bad = [&99u32.to_be_bytes()[..], tiff].concat();
        let file = heif(&[entry(10, b"Exif", Some(1), &bad)]);
        assert_eq!(exif(&mut Cursor::new(&file)), Err(ItemError::ExifOffset));
    }

    /// A file of `len` zero bytes that is never in memory: a length that passes the file's
    /// end, or `MAX_ITEM`, must be refused before anything is read or allocated.
    struct Sparse {
        len: u64,
        pos: u64,
        head: Vec<u8>,
    }

    impl Read for Sparse {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = (buf.len() as u64).min(self.len.saturating_sub(self.pos)) as usize;
            for (i, b) in buf[..n].iter_mut().enumerate() {
                *b = *self.head.get(self.pos as usize + i).unwrap_or(&0);
            }
            self.pos += n as u64;
            Ok(n)
        }
    }

    impl Seek for Sparse {
        fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
            self.pos = match to {
                SeekFrom::Start(p) => p,
                SeekFrom::End(d) => self.len.saturating_add_signed(d),
                SeekFrom::Current(d) => self.pos.saturating_add_signed(d),
            };
            Ok(self.pos)
        }
    }

    #[test]
    fn an_item_past_the_file_or_over_the_cap_is_refused_before_it_is_read() {
        let file = heif(&[entry(10, b"Exif", Some(1), b"0123456789")]);
        let at = file.windows(4).position(|w| w == b"iloc").unwrap() + 4 + 4 + 2 + 2 + 2 + 8 + 2;
        let with_length = |len: u32| {
            let mut f = file.clone();
            f[at + 4..at + 8].copy_from_slice(&len.to_be_bytes());
            f
        };
        assert_eq!(
            read_item(&with_length(10), Kind::Exif),
            Ok(Some(b"0123456789".to_vec()))
        );
        let past = read_item(&with_length(u32::MAX), Kind::Exif);
        assert_eq!(past, Err(ItemError::PastEnd("Exif")));
        let huge = (MAX_ITEM + 1) as u32;
        let mut sparse = Sparse {
            len: 1 << 40,
            pos: 0,
            head: with_length(huge),
        };
        let over = item(&mut sparse, Kind::Exif).map(|read| read.map(|bytes| bytes.len()));
        assert_eq!(over, Err(ItemError::TooLarge("Exif", MAX_ITEM + 1)));
        assert!(sparse.pos < 1 << 20, "nothing past the meta box was read");
    }

    #[test]
    fn every_prefix_and_a_scrambled_file_return_without_panicking() {
        let mut packet = entry(11, b"mime", Some(1), b"<x/>");
        packet.in_idat = true;
        let file = heif(&[entry(10, b"Exif", Some(1), b"\0\0\0\0MM\0*"), packet]);
        for cut in 0..file.len() {
            let _ = exif(&mut Cursor::new(&file[..cut]));
            let _ = xmp(&mut Cursor::new(&file[..cut]));
        }
        for seed in 0..64u8 {
            let mut noise = file.clone();
            for (i, b) in noise.iter_mut().enumerate().skip(24) {
                if (i as u8).wrapping_mul(31).wrapping_add(seed) % 7 == 0 {
                    *b = b.wrapping_mul(seed | 1).wrapping_add(seed);
                }
            }
            let _ = exif(&mut Cursor::new(&noise));
            let _ = xmp(&mut Cursor::new(&noise));
        }
    }
}
