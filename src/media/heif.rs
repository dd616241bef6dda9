//! HEIF/AVIF geometry from the container's boxes: the primary item (`pitm`), its properties
//! (`ipma` into `ipco`) and from them the stored size (`ispe`) and the size a decoder shows
//! (`clap` crop, then `irot` quarter turn, then `imir`, in the order HEIF (ISO/IEC 23008-12)
//! and MIAF prescribe for transformative properties and libheif >= 1.16 applies them,
//! whatever order the file associates them in), so the index agrees with `heif-dec`'s
//! output and with exiftool. Reads only the `meta` box (bounded); its box walk is shared
//! with `heif_items` (the Exif and XMP items). Must not decode pixels nor read EXIF (that
//! is `photo`).

use std::io::{Read, Seek, SeekFrom};

/// Largest `meta` box read into memory: item tables and property boxes only, the pictures
/// themselves live in `mdat`.
const MAX_META: u64 = 1024 * 1024;
/// Top-level boxes looked at before giving up on finding `meta`.
const MAX_TOP: usize = 64;

/// The primary item's sizes: as stored (`ispe`) and as displayed (clean aperture and
/// rotation applied; a mirror changes no size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub stored: (u32, u32),
    pub display: (u32, u32),
}

/// The primary item's geometry, or `None` when the file has no readable `meta`, no primary
/// item or no `ispe` for it.
pub fn geometry<R: Read + Seek>(r: &mut R) -> Option<Geometry> {
    let meta = read_meta(r)?;
    // `meta` is a full box: version and flags come before its children.
    let children = boxes(meta.get(4..)?);
    let primary = pitm(find(&children, b"pitm")?)?;
    let iprp = boxes(find(&children, b"iprp")?);
    let properties = boxes(find(&iprp, b"ipco")?);
    let indexes = ipma(find(&iprp, b"ipma")?, primary)?;
    let props: Vec<Property> = indexes
        .iter()
        .filter_map(|&i| properties.get(i.checked_sub(1)?))
        .filter_map(|(kind, body)| property(kind, body))
        .collect();
    apply(&props)
}

/// A property that changes the primary item's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Property {
    Ispe(u32, u32),
    Clap(Clap),
    /// Counter-clockwise quarter turns, 0..=3.
    Irot(u8),
}

/// A clean aperture: width, height and the centre's offset, each a fraction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clap {
    pub width: (u32, u32),
    pub height: (u32, u32),
    pub horiz_off: (i32, u32),
    pub vert_off: (i32, u32),
}

/// The displayed size from the primary item's properties, whatever their association
/// order: the size is the first `ispe`'s, then the transformations apply in HEIF's order,
/// `clap` (the first one) crops, `irot` (the first one) turns by quarter turns, `imir` changes
/// no size. A Sony ILCE-7M4 associates `irot` before `ispe`; libheif 1.15's size walk, in
/// association order, turned nothing there, and its decoder (like this) shows it turned. A
/// crop libheif refuses is left out.
pub fn apply(props: &[Property]) -> Option<Geometry> {
    let stored = props.iter().find_map(|p| match *p {
        Property::Ispe(w, h) if w > 0 && h > 0 => Some((w, h)),
        _ => None,
    })?;
    let clap = props.iter().find_map(|p| match p {
        Property::Clap(clap) => Some(clap),
        _ => None,
    });
    let turns = props.iter().find_map(|p| match p {
        Property::Irot(turns) => Some(turns),
        _ => None,
    });
    let mut display = clap.and_then(|c| c.crop(stored)).unwrap_or(stored);
    if turns.is_some_and(|t| t % 2 == 1) {
        display = (display.1, display.0);
    }
    Some(Geometry { stored, display })
}

impl Clap {
    /// The size of a `width` x `height` picture after this crop, as libheif 1.15 decodes it
    /// (`heif_context.cc`: the rounded edges clamped to the picture); `None` where libheif
    /// fails the decode (an empty crop) or could not hold the fractions (a zero denominator).
    pub fn crop(&self, (width, height): (u32, u32)) -> Option<(u32, u32)> {
        let w = extent(self.width, self.horiz_off, width, Fraction::round_down)?;
        let h = extent(self.height, self.vert_off, height, Fraction::round)?;
        Some((w, h))
    }
}

/// One axis of `Box_clap::{left,right}_rounded` (or `{top,bottom}_rounded`, which round the
/// first edge to nearest where the horizontal one rounds down): `first = round(off +
/// (size - 1) / 2 - (clap - 1) / 2)`, `last = round(clap - 1 + first)`, both clamped.
fn extent(
    (num, den): (u32, u32),
    (off_num, off_den): (i32, u32),
    size: u32,
    first_rounding: fn(Fraction) -> Option<i64>,
) -> Option<u32> {
    let clap = Fraction::new(i64::from(num), i64::from(den))?;
    let off = Fraction::new(i64::from(off_num), i64::from(off_den))?;
    let centre = off.plus(Fraction::new(i64::from(size) - 1, 2)?)?;
    let first = first_rounding(centre.minus(clap.minus_int(1)?.over_int(2)?)?)?;
    let last = clap.minus_int(1)?.plus_int(first)?.round()?;
    let (first, last) = (first.max(0), last.min(i64::from(size) - 1));
    (first <= last).then(|| u32::try_from(last - first + 1).ok())?
}

/// libheif's `Fraction`: both parts halved until they fit in +-0x10000, results not reduced
/// otherwise; done in i64 so that nothing overflows where C++'s int32 would.
#[derive(Debug, Clone, Copy)]
struct Fraction {
    num: i64,
    den: i64,
}

const MAX_FRACTION: i64 = 0x10000;

impl Fraction {
    fn new(mut num: i64, mut den: i64) -> Option<Fraction> {
        while !(-MAX_FRACTION..=MAX_FRACTION).contains(&den) {
            (num, den) = (num / 2, den / 2);
        }
        while !(-MAX_FRACTION..=MAX_FRACTION).contains(&num) {
            (num, den) = (num / 2, den / 2);
        }
        (den != 0).then_some(Fraction { num, den })
    }

    fn plus(self, b: Fraction) -> Option<Fraction> {
        if self.den == b.den {
            Fraction::new(self.num + b.num, self.den)
        } else {
            Fraction::new(self.num * b.den + b.num * self.den, self.den * b.den)
        }
    }

    fn minus(self, b: Fraction) -> Option<Fraction> {
        self.plus(Fraction {
            num: -b.num,
            den: b.den,
        })
    }

    fn plus_int(self, v: i64) -> Option<Fraction> {
        Fraction::new(self.num + v * self.den, self.den)
    }

    fn minus_int(self, v: i64) -> Option<Fraction> {
        self.plus_int(-v)
    }

    fn over_int(self, v: i64) -> Option<Fraction> {
        Fraction::new(self.num, self.den * v)
    }

    /// C++'s `/` and Rust's both truncate toward zero.
    fn round_down(self) -> Option<i64> {
        Some(self.num / self.den)
    }

    fn round(self) -> Option<i64> {
        Some((self.num + self.den / 2) / self.den)
    }
}

/// The body of the first top-level `meta` box (after its header), at most `MAX_META` bytes.
pub(super) fn read_meta<R: Read + Seek>(r: &mut R) -> Option<Vec<u8>> {
    let len = r.seek(SeekFrom::End(0)).ok()?;
    let mut pos = 0u64;
    for _ in 0..MAX_TOP {
        r.seek(SeekFrom::Start(pos)).ok()?;
        let mut head = [0u8; 16];
        let got = read_up_to(r, &mut head)?;
        let (size, header) = box_size(&head[..got], len - pos)?;
        if &head[4..8] == b"meta" {
            let body = size - header;
            if body > MAX_META {
                return None;
            }
            r.seek(SeekFrom::Start(pos + header)).ok()?;
            let mut out = Vec::new();
            r.take(body).read_to_end(&mut out).ok()?;
            return Some(out);
        }
        pos = pos.checked_add(size)?;
        if pos >= len {
            return None;
        }
    }
    None
}

fn read_up_to<R: Read>(r: &mut R, buf: &mut [u8]) -> Option<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]).ok()? {
            0 => break,
            n => got += n,
        }
    }
    Some(got)
}

/// A box's total size and header length from its first bytes; `left` is what remains of
/// the parent (a size-0 box runs to its end, a box claiming more is cut to it).
fn box_size(head: &[u8], left: u64) -> Option<(u64, u64)> {
    let size32 = u32::from_be_bytes(head.get(0..4)?.try_into().ok()?);
    let (size, header) = match size32 {
        0 => (left, 8),
        1 => (u64::from_be_bytes(head.get(8..16)?.try_into().ok()?), 16),
        n => (u64::from(n), 8),
    };
    (size >= header).then_some((size.min(left), header))
}

/// The boxes directly inside `bytes`, as (type, body); a truncated box keeps what is there.
pub(super) fn boxes(bytes: &[u8]) -> Vec<([u8; 4], &[u8])> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos + 8 <= bytes.len() && out.len() < 4096 {
        let rest = &bytes[pos..];
        let Some((size, header)) = box_size(rest, rest.len() as u64) else {
            break;
        };
        let (Ok(size), Ok(header)) = (usize::try_from(size), usize::try_from(header)) else {
            break;
        };
        let kind = [rest[4], rest[5], rest[6], rest[7]];
        out.push((kind, rest.get(header..size).unwrap_or_default()));
        pos += size;
    }
    out
}

pub(super) fn find<'a>(boxes: &[([u8; 4], &'a [u8])], kind: &[u8; 4]) -> Option<&'a [u8]> {
    boxes.iter().find(|(k, _)| k == kind).map(|(_, body)| *body)
}

pub(super) fn be16(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_be_bytes(
        b.get(at..at + 2)?.try_into().ok()?,
    )))
}

pub(super) fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The primary item's id: 16 bits in version 0, 32 after.
pub(super) fn pitm(body: &[u8]) -> Option<u32> {
    if *body.first()? == 0 {
        be16(body, 4)
    } else {
        be32(body, 4)
    }
}

/// The 1-based `ipco` indexes associated with `item`, in their order.
fn ipma(body: &[u8], item: u32) -> Option<Vec<usize>> {
    let version = *body.first()?;
    let wide_index = body.get(3)? & 1 == 1;
    let entries = be32(body, 4)?;
    let mut at = 8;
    for _ in 0..entries {
        let id = if version < 1 {
            be16(body, at)?
        } else {
            be32(body, at)?
        };
        at += if version < 1 { 2 } else { 4 };
        let count = usize::from(*body.get(at)?);
        at += 1;
        let mut indexes = Vec::with_capacity(count);
        for _ in 0..count {
            let index = if wide_index {
                at += 2;
                be16(body, at - 2)? & 0x7FFF
            } else {
                at += 1;
                u32::from(*body.get(at - 1)? & 0x7F)
            };
            indexes.push(index as usize);
        }
        if id == item {
            return Some(indexes);
        }
    }
    None
}

/// A size-changing property from its box; others (codec config, colour, `imir`) are `None`.
fn property(kind: &[u8; 4], body: &[u8]) -> Option<Property> {
    match kind {
        // ispe is a full box: 4 bytes of version and flags first.
        b"ispe" => Some(Property::Ispe(be32(body, 4)?, be32(body, 8)?)),
        b"irot" => Some(Property::Irot(body.first()? & 3)),
        b"clap" => {
            let signed = |at| be32(body, at).map(|v| v as i32);
            Some(Property::Clap(Clap {
                width: (be32(body, 0)?, be32(body, 4)?),
                height: (be32(body, 8)?, be32(body, 12)?),
                horiz_off: (signed(16)?, be32(body, 20)?),
                vert_off: (signed(24)?, be32(body, 28)?),
            }))
        }
        _ => None,
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::io::Cursor;

    /// An ISO-BMFF box of `kind` around `body` (also `heif_items`' tests' boxes).
    pub(in crate::media) fn bx(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
        let mut out = ((body.len() + 8) as u32).to_be_bytes().to_vec();
        out.extend_from_slice(kind);
        out.extend_from_slice(body);
        out
    }

    /// A full box: `bx` with its version and flags first.
    pub(in crate::media) fn full(kind: &[u8; 4], version: u8, flags: u8, body: &[u8]) -> Vec<u8> {
        bx(kind, &[&[version, 0, 0, flags][..], body].concat())
    }

    fn ispe(w: u32, h: u32) -> Vec<u8> {
        full(b"ispe", 0, 0, &[w.to_be_bytes(), h.to_be_bytes()].concat())
    }

    fn clap(w: (u32, u32), h: (u32, u32)) -> Vec<u8> {
        let words = [w.0, w.1, h.0, h.1, 0, 1, 0, 1];
        bx(b"clap", &words.map(u32::to_be_bytes).concat())
    }

    /// A HEIF with item 1 (a tile nobody shows) and the primary item 2 holding `props`
    /// (after a decoy `ispe` for item 1), associated in the order given.
    fn heif(props: &[Vec<u8>], flags: u8) -> Vec<u8> {
        let mut ipco = ispe(9999, 9999);
        let mut assoc: Vec<u8> = Vec::new();
        for (i, p) in props.iter().enumerate() {
            ipco.extend_from_slice(p);
            let index = i as u16 + 2;
            if flags & 1 == 1 {
                assoc.extend_from_slice(&(index | 0x8000).to_be_bytes());
            } else {
                assoc.push(index as u8 | 0x80);
            }
        }
        let decoy: &[u8] = if flags & 1 == 1 { &[0, 1] } else { &[1] };
        let mut entries = [&[0, 0, 0, 2, 0, 1, 1][..], decoy].concat();
        entries.extend_from_slice(&[0, 2, props.len() as u8]);
        entries.extend_from_slice(&assoc);
        let iprp = bx(
            b"iprp",
            &[bx(b"ipco", &ipco), full(b"ipma", 0, flags, &entries)].concat(),
        );
        let meta_body = [
            full(b"hdlr", 0, 0, b"\0\0\0\0pict"),
            full(b"pitm", 0, 0, &[0, 2]),
            iprp,
        ];
        let meta = full(b"meta", 0, 0, &meta_body.concat());
        [
            bx(b"ftyp", b"heic\0\0\0\0mif1heic"),
            meta,
            bx(b"mdat", &[0; 16]),
        ]
        .concat()
    }

    fn sizes(file: &[u8]) -> Option<((u32, u32), (u32, u32))> {
        geometry(&mut Cursor::new(file)).map(|g| (g.stored, g.display))
    }

    #[test]
    fn the_primary_items_properties_give_its_display_size() {
        let irot = |t: u8| bx(b"irot", &[t]);
        let imir = bx(b"imir", &[1]);
        let cases = [
            ("plain", vec![ispe(406, 540)], (406, 540)),
            (
                "clap crop",
                vec![ispe(4032, 3024), clap((4000, 1), (3000, 1))],
                (4000, 3000),
            ),
            (
                "quarter turn",
                vec![ispe(4032, 3024), irot(1)],
                (3024, 4032),
            ),
            ("half turn", vec![ispe(4032, 3024), irot(2)], (4032, 3024)),
            (
                "three quarters",
                vec![ispe(4032, 3024), irot(3)],
                (3024, 4032),
            ),
            ("mirror", vec![ispe(640, 480), imir], (640, 480)),
            (
                "clap then turn",
                vec![ispe(406, 540), clap((405, 1), (540, 1)), irot(1)],
                (540, 405),
            ),
            (
                "turn associated before the size (a Sony ILCE-7M4)",
                vec![
                    irot(1),
                    bx(b"pixi", &[0, 0, 0, 0, 3, 8, 8, 8]),
                    ispe(7008, 4672),
                ],
                (4672, 7008),
            ),
            (
                "turn associated before the crop: still cropped first",
                vec![ispe(406, 540), irot(1), clap((405, 1), (540, 1))],
                (540, 405),
            ),
            (
                "half-pixel clap",
                vec![ispe(406, 540), clap((811, 2), (1079, 2))],
                (406, 540),
            ),
            (
                "broken clap ignored",
                vec![ispe(406, 540), clap((405, 0), (540, 1))],
                (406, 540),
            ),
        ];
        for (name, props, display) in cases {
            for flags in [0, 1] {
                let got = sizes(&heif(&props, flags)).map(|s| s.1);
                assert_eq!(got, Some(display), "{name} (ipma flags {flags})");
            }
        }
    }

    /// libheif 1.15's decoder crop: edges rounded from the centre and clamped to the picture.
    #[test]
    fn clap_crops_as_libheif_decodes() {
        let c = |w: (u32, u32), off: i32| Clap {
            width: w,
            height: (540, 1),
            horiz_off: (off, 1),
            vert_off: (0, 1),
        };
        for (name, clap, want) in [
            ("odd crop of an even tile", c((405, 1), 0), Some((405, 540))),
            ("half-pixel width", c((811, 2), 0), Some((406, 540))),
            ("off to the left edge", c((200, 1), -103), Some((200, 540))),
            ("off past the right edge", c((200, 1), 300), Some((3, 540))),
            ("wider than the picture", c((500, 1), 0), Some((406, 540))),
            // The left edge falls on 1.5: rounded down to 1 (a top edge would round to 2).
            (
                "half a pixel off, at the edge",
                c((405, 1), 1),
                Some((405, 540)),
            ),
            ("entirely outside", c((200, 1), 1000), None),
            ("zero denominator", c((405, 0), 0), None),
        ] {
            assert_eq!(clap.crop((406, 540)), want, "{name}");
        }
    }

    #[test]
    fn stored_size_is_the_primary_items_ispe_not_the_first_one() {
        let got = sizes(&heif(&[ispe(405, 540)], 0));
        assert_eq!(got, Some(((405, 540), (405, 540))));
    }

    #[test]
    fn corrupt_and_truncated_files_give_none_and_never_panic() {
        let whole = heif(&[ispe(405, 540), clap((405, 1), (540, 1))], 1);
        for cut in 0..whole.len() {
            let _ = sizes(&whole[..cut]);
        }
        let mut lying = whole.clone();
        lying[3] = 0xFF; // ftyp claims more than the file
        assert_eq!(sizes(&lying), None);
        assert_eq!(sizes(b""), None);
        assert_eq!(sizes(&heif(&[], 0)), None, "no ispe for the primary item");
    }
}
