//! Canon CR3 structure: ISO media with the `crx ` brand, walked with `container`'s box
//! reader. Owns where a CR3 keeps its metadata and pictures: Canon's uuid box in `moov`
//! (CMT1 a TIFF with IFD0, CMT2 a TIFF with the Exif IFD, CMT3 the MakerNote, CMT4 a TIFF with
//! the GPS IFD, THMB a 160x120 JPEG) and the top-level preview uuid box holding PRVW (a
//! JPEG of about 1620x1080). The layout is the documented one, with no camera file at hand:
//! Laurent Clévy's "CR3 file Structure" (github.com/lclevy/canon_cr3) and exiftool's Canon
//! CR3 tags; tests build their CR3s from it (tests/it/support/cr3.rs). Reads are bounded
//! (a CMT block, a JPEG, the boxes walked) and a length is trusted only within its box.
//! Owns no EXIF tag choice (that is `photo`), decodes no raw data, must not touch the
//! database.

use super::container::bmff::{Box4, children};
use super::raw::RawError;
use std::io::{Read, Seek, SeekFrom};

/// Canon's metadata box in `moov`: 85c0b687-820f-11e0-8111-f4ce462b6a48.
const CANON_UUID: [u8; 16] = [
    0x85, 0xc0, 0xb6, 0x87, 0x82, 0x0f, 0x11, 0xe0, 0x81, 0x11, 0xf4, 0xce, 0x46, 0x2b, 0x6a, 0x48,
];
/// The preview's top-level box: eaf42b5e-1c98-4b88-b9fb-b7dc406e4d16.
const PREVIEW_UUID: [u8; 16] = [
    0xea, 0xf4, 0x2b, 0x5e, 0x1c, 0x98, 0x4b, 0x88, 0xb9, 0xfb, 0xb7, 0xdc, 0x40, 0x6e, 0x4d, 0x16,
];
/// The preview uuid box holds 8 bytes before its PRVW box.
const PREVIEW_SKIP: u64 = 16 + 8;
/// A CMT block is a few KB (the MakerNote tens of KB).
const MAX_CMT: u64 = 4 * 1024 * 1024;
const MAX_JPEG: u64 = 64 * 1024 * 1024;

/// Whether the file starts with an `ftyp` box of the `crx ` brand.
pub fn is_cr3<R: Read + Seek>(r: &mut R) -> bool {
    let mut head = [0u8; 12];
    let read = r
        .seek(SeekFrom::Start(0))
        .and_then(|_| r.read_exact(&mut head));
    read.is_ok() && &head[4..8] == b"ftyp" && &head[8..12] == b"crx "
}

/// Where a CR3's pieces are, and the first box found cut short.
struct Layout {
    /// CMT1..CMT4.
    cmt: [Option<Box4>; 4],
    thmb: Option<Box4>,
    prvw: Option<Box4>,
    cut: Option<[u8; 4]>,
}

fn is_uuid<R: Read + Seek>(r: &mut R, b: &Box4, id: &[u8; 16]) -> bool {
    let mut got = [0u8; 16];
    &b.kind == b"uuid"
        && b.end.saturating_sub(b.body) >= 16
        && r.seek(SeekFrom::Start(b.body)).is_ok()
        && r.read_exact(&mut got).is_ok()
        && &got == id
}

fn layout<R: Read + Seek>(r: &mut R) -> Result<Layout, RawError> {
    let len = r.seek(SeekFrom::End(0))?;
    let top = children(r, 0, len);
    let moov = top.iter().find(|b| &b.kind == b"moov");
    let moov = moov.ok_or(RawError::Format("CR3 without a moov box"))?;
    let in_moov = children(r, moov.body, moov.end);
    let canon = in_moov.iter().find(|b| is_uuid(r, b, &CANON_UUID));
    let canon = canon.ok_or(RawError::Format("CR3 without Canon's metadata box"))?;
    let mut out = Layout {
        cmt: [None, None, None, None],
        thmb: None,
        prvw: None,
        cut: None,
    };
    for b in children(r, canon.body + 16, canon.end) {
        out.cut = out.cut.or(b.cut.then_some(b.kind));
        match &b.kind {
            b"CMT1" | b"CMT2" | b"CMT3" | b"CMT4" => {
                let i = usize::from(b.kind[3] - b'1');
                out.cmt[i] = out.cmt[i].take().or(Some(b));
            }
            b"THMB" => out.thmb = out.thmb.take().or(Some(b)),
            _ => {}
        }
    }
    for b in &top {
        out.cut = out.cut.or(b.cut.then_some(b.kind));
        if out.prvw.is_none() && is_uuid(r, b, &PREVIEW_UUID) {
            let start = b.body.saturating_add(PREVIEW_SKIP);
            out.prvw = children(r, start, b.end)
                .into_iter()
                .find(|p| &p.kind == b"PRVW");
        }
    }
    Ok(out)
}

/// The TIFF blocks CMT1, CMT2 and CMT4 (IFD0, the Exif IFD, the GPS IFD), as far as each is
/// in the file, and whether one was cut short.
pub struct Cmts {
    pub ifd0: Option<Vec<u8>>,
    pub exif: Option<Vec<u8>>,
    pub gps: Option<Vec<u8>>,
    pub cut: bool,
}

pub fn cmts<R: Read + Seek>(r: &mut R) -> Result<Cmts, RawError> {
    let l = layout(r)?;
    let mut read = |i: usize| -> Result<Option<Vec<u8>>, RawError> {
        let Some(b) = &l.cmt[i] else { return Ok(None) };
        let len = b.end.saturating_sub(b.body);
        if len > MAX_CMT {
            return Err(RawError::Format("CR3 metadata block too long"));
        }
        r.seek(SeekFrom::Start(b.body))?;
        let mut out = Vec::new();
        r.take(len).read_to_end(&mut out)?;
        Ok(Some(out))
    };
    let (ifd0, exif, gps) = (read(0)?, read(1)?, read(3)?);
    let cut = [0, 1, 3]
        .iter()
        .any(|&i| l.cmt[i].as_ref().is_some_and(|b| b.cut));
    Ok(Cmts {
        ifd0,
        exif,
        gps,
        cut,
    })
}

/// The image size and orientation CMT1's IFD0 states (exiftool's ImageWidth, ImageHeight
/// and Orientation of a CR3).
pub fn geometry<R: Read + Seek>(r: &mut R) -> Result<((u32, u32), Option<u32>), RawError> {
    let ifd0 = cmts(r)?.ifd0;
    let ifd0 = ifd0.ok_or(RawError::Format("CR3 without CMT1"))?;
    super::raw::geometry(&mut std::io::Cursor::new(ifd0))
}

/// A box of the CR3 that claims more than the file holds: the file was cut short.
pub fn check_whole<R: Read + Seek>(r: &mut R) -> Result<(), RawError> {
    match layout(r)?.cut {
        Some(_) => Err(RawError::Format("truncated: a CR3 box is cut short")),
        None => Ok(()),
    }
}

/// PRVW's JPEG, else THMB's: the JPEG 16 bytes into the box's body, its length at 12
/// (PRVW) or 8 (THMB), trusted only when the box holds it.
pub fn preview<R: Read + Seek>(r: &mut R) -> Result<Vec<u8>, RawError> {
    let l = layout(r)?;
    let found = [(&l.prvw, 12), (&l.thmb, 8)]
        .into_iter()
        .filter_map(|(b, at)| Some((b.as_ref()?, at)));
    for (b, at) in found {
        if let Some(jpeg) = jpeg_in(r, b, at)? {
            return Ok(jpeg);
        }
    }
    Err(RawError::NoPicture("CR3 without a whole PRVW or THMB JPEG"))
}

fn jpeg_in<R: Read + Seek>(r: &mut R, b: &Box4, len_at: u64) -> Result<Option<Vec<u8>>, RawError> {
    let data = b.body.saturating_add(16);
    let mut len = [0u8; 4];
    r.seek(SeekFrom::Start(b.body.saturating_add(len_at)))?;
    if data > b.end || r.read_exact(&mut len).is_err() {
        return Ok(None);
    }
    let len = u64::from(u32::from_be_bytes(len));
    if !(4..=MAX_JPEG).contains(&len) || len > b.end - data {
        return Ok(None);
    }
    r.seek(SeekFrom::Start(data))?;
    let mut out = Vec::new();
    r.take(len).read_to_end(&mut out)?;
    Ok((out.len() as u64 == len && out.starts_with(&[0xFF, 0xD8])).then_some(out))
}
