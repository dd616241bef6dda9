//! The seeded mutator: a replayable random source, the length fields of a seed's format
//! (JPEG segments, PNG chunks, RIFF chunks, ISO-BMFF boxes, EBML elements, TIFF/EXIF IFDs)
//! and the edits made to a seed: bit flips, byte sets, inserts, deletes, truncation,
//! splices between seeds, and length fields set to 0, huge, or off by one.

/// The random source: ChaCha8 from a seed, the same stream on every platform and version (the
/// torture and the simulation use it too), so that a printed seed replays its run.
pub type Rng = rand_chacha::ChaCha8Rng;

/// What the mutator asks of its random source.
pub trait Draw {
    /// A number in `0..n`, or 0 when `n` is 0 (an empty input has nothing to pick).
    fn below(&mut self, n: usize) -> usize;
    fn next(&mut self) -> u64;
}

impl Draw for Rng {
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            rand::Rng::random_range(self, 0..n)
        }
    }
    fn next(&mut self) -> u64 {
        rand::RngCore::next_u64(self)
    }
}

/// How a length field is stored.
#[derive(Clone, Copy, Debug)]
pub enum Width {
    Be16,
    Be32,
    Be64,
    Le16,
    Le32,
    /// An EBML size: a variable-length integer of this many bytes.
    Vint(u8),
}

#[derive(Clone, Copy, Debug)]
pub struct Field {
    pub at: usize,
    pub width: Width,
    /// The bytes the field measures, when it is a length (an offset or count is not).
    pub body: Option<(usize, usize)>,
}

pub struct Seed {
    pub bytes: Vec<u8>,
    pub mime: String,
    pub fields: Vec<Field>,
}

impl Seed {
    pub fn new(bytes: Vec<u8>, mime: String) -> Seed {
        let mut fields = Vec::new();
        formats::find(&bytes, &mut fields);
        Seed {
            bytes,
            mime,
            fields,
        }
    }
}

/// An input made from seed `pick`: a length-field edit first (while the seed's offsets
/// still hold), then one to eight blind edits.
pub fn mutate(rng: &mut Rng, seeds: &[Seed], pick: usize) -> Vec<u8> {
    let seed = &seeds[pick];
    let mut out = seed.bytes.clone();
    if !seed.fields.is_empty() && rng.below(3) > 0 {
        let field = seed.fields[rng.below(seed.fields.len())];
        if rng.below(4) == 0 {
            inflate(rng, &mut out, field);
        } else {
            set_length(rng, &mut out, field);
        }
    }
    for _ in 0..1 + rng.below(8).min(rng.below(8)) {
        blind_edit(rng, &mut out, seeds);
    }
    out
}

/// Words the parsers look for: markers, box and chunk names, XMP keys.
const DICTIONARY: [&[u8]; 36] = [
    b"\xFF\xD8",
    b"\xFF\xD9",
    b"\xFF\xDA",
    b"\xFF\xE1",
    b"\xFF\x00",
    b"Exif\0\0",
    b"http://ns.adobe.com/xap/1.0/\0",
    b"XML:com.adobe.xmp\0",
    b"iTXt",
    b"eXIf",
    b"IEND",
    b"VP8X",
    b"EXIF",
    b"XMP ",
    b"ftyp",
    b"moov",
    b"trak",
    b"mdia",
    b"minf",
    b"stbl",
    b"hdlr",
    b"vide",
    b"stsd",
    b"tkhd",
    b"mdat",
    b"meta",
    b"iloc",
    b"<tiff:Make ",
    b" tiff:Model=\"",
    b"<exif:DateTimeOriginal\n",
    // Sidecars and Takeout JSON (issue 15).
    b" xmp:Rating=\"",
    b"<rdf:li>",
    b"</rdf:RDF>",
    b" exif:GPSLatitude=\"9",
    b"{\"photoTakenTime\": {\"timestamp\": \"",
    b"\"geoData\": {\"latitude\": ",
];

/// XML-aware: an opening tag's head (`<ns:Key`, up to its `>`) and a space, repeated many
/// times where it stands.
fn repeat_tag(rng: &mut Rng, out: &mut Vec<u8>) {
    let from = rng.below(out.len() + 1);
    let Some(start) = out[from..]
        .iter()
        .position(|b| *b == b'<')
        .map(|p| from + p)
    else {
        return;
    };
    let Some(len) = out[start..].iter().take(64).position(|b| *b == b'>') else {
        return;
    };
    let mut head = out[start..start + len].to_vec();
    head.push(b' ');
    let repeated = head.repeat(1 << rng.below(17));
    out.splice(start..start, repeated);
}

/// Block repetition inside what a length field measures, the field grown to match (when
/// it can hold the new length): many boxes, long packets, repeated keys.
fn inflate(rng: &mut Rng, out: &mut Vec<u8>, field: Field) {
    let Some((start, end)) = field.body.filter(|(s, e)| s < e && *e <= out.len()) else {
        return;
    };
    let at = start + rng.below(end - start);
    let block: Vec<u8> = if rng.below(2) == 0 {
        DICTIONARY[rng.below(DICTIONARY.len())].to_vec()
    } else {
        out[at..(at + 1 + rng.below(16)).min(end)].to_vec()
    };
    let times = 1usize << rng.below(17);
    let grown = block.len() * times;
    let (n, max) = capacity(field.width);
    let Some(slot) = out.get_mut(field.at..field.at + n) else {
        return;
    };
    let value = read(slot, field.width).saturating_add(grown as u64);
    if value >= max {
        return;
    }
    write(slot, field.width, value);
    let repeated = block.repeat(times);
    out.splice(at..at, repeated);
}

const INTERESTING: [u64; 10] = [0, 1, 2, 7, 8, 0x7F, 0x80, 0xFF, 0x7FFF_FFFF, u64::MAX];

fn blind_edit(rng: &mut Rng, out: &mut Vec<u8>, seeds: &[Seed]) {
    let len = out.len();
    let at = rng.below(len + 1);
    match rng.below(11) {
        0 if len > 0 => out[at.min(len - 1)] ^= 1 << rng.below(8),
        1 if len > 0 => out[at.min(len - 1)] = INTERESTING[rng.below(INTERESTING.len())] as u8,
        2 => {
            let n = 1 + rng.below(16);
            let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            out.splice(at..at, bytes);
        }
        3 => {
            let end = (at + 1 + rng.below(64)).min(len);
            out.drain(at.min(end)..end);
        }
        4 => out.truncate(at),
        5 => {
            // Splice: this input's head, another seed's tail.
            let other = &seeds[rng.below(seeds.len())].bytes;
            let from = rng.below(other.len() + 1);
            out.truncate(at);
            out.extend_from_slice(&other[from..]);
        }
        6 if len > 0 => {
            // A copy of a piece elsewhere: repeated boxes, segments, chunks.
            let start = rng.below(len);
            let end = (start + 1 + rng.below(256)).min(len);
            let piece = out[start..end].to_vec();
            out.splice(at..at, piece);
        }
        7 if len >= 4 => {
            let value = INTERESTING[rng.below(INTERESTING.len())] as u32;
            let bytes = if rng.below(2) == 0 {
                value.to_be_bytes()
            } else {
                value.to_le_bytes()
            };
            let at = at.min(len - 4);
            out[at..at + 4].copy_from_slice(&bytes);
        }
        9 => repeat_tag(rng, out),
        8 => {
            let word = DICTIONARY[rng.below(DICTIONARY.len())];
            out.splice(at..at, word.iter().copied());
        }
        _ => {
            if len > 0 {
                out[at.min(len - 1)] = rng.next() as u8;
            }
        }
    }
}

/// Sets a length field to 0, its largest value, one off, twice, or anything.
fn set_length(rng: &mut Rng, out: &mut [u8], field: Field) {
    let (n, max) = capacity(field.width);
    let Some(slot) = out.get_mut(field.at..field.at + n) else {
        return;
    };
    let old = read(slot, field.width);
    let new = match rng.below(7) {
        0 => 0,
        1 => max,
        2 => max - 1,
        3 => old.wrapping_add(1),
        4 => old.wrapping_sub(1),
        5 => old.wrapping_mul(2),
        _ => rng.next(),
    } & max;
    write(slot, field.width, new);
}

/// A field's size in bytes and its largest value (an EBML size's all-ones is "unknown").
fn capacity(width: Width) -> (usize, u64) {
    match width {
        Width::Be16 | Width::Le16 => (2, u64::from(u16::MAX)),
        Width::Be32 | Width::Le32 => (4, u64::from(u32::MAX)),
        Width::Be64 => (8, u64::MAX),
        Width::Vint(n) => (usize::from(n), (1u64 << (7 * u32::from(n))) - 1),
    }
}

fn read(slot: &[u8], width: Width) -> u64 {
    match width {
        Width::Le16 | Width::Le32 => slot.iter().rev().fold(0, |v, b| (v << 8) | u64::from(*b)),
        Width::Vint(n) => {
            let first = u64::from(slot[0]) & (0xFF >> n);
            slot[1..]
                .iter()
                .fold(first, |v, b| (v << 8) | u64::from(*b))
        }
        _ => slot.iter().fold(0, |v, b| (v << 8) | u64::from(*b)),
    }
}

fn write(slot: &mut [u8], width: Width, value: u64) {
    let n = slot.len();
    for (i, b) in slot.iter_mut().enumerate() {
        let shift = match width {
            Width::Le16 | Width::Le32 => 8 * i,
            _ => 8 * (n - 1 - i),
        };
        *b = (value >> shift) as u8;
    }
    if let Width::Vint(len) = width {
        // Keep the length marker so the vint stays this long.
        slot[0] = (slot[0] & (0xFFu16 >> len) as u8) | (0x80u8 >> (len - 1));
    }
}

/// Where the length fields of each format are.
mod formats {
    use super::{Field, Width};

    const MAX_FIELDS: usize = 4096;

    pub fn find(b: &[u8], out: &mut Vec<Field>) {
        if b.starts_with(&[0xFF, 0xD8]) {
            jpeg(b, out);
        } else if b.starts_with(b"\x89PNG\r\n\x1a\n") {
            png(b, out);
        } else if b.starts_with(b"RIFF") {
            riff(b, out);
        } else if b.starts_with(&[0x1A, 0x45, 0xDF, 0xA3]) {
            ebml(b, 0, b.len(), 0, out);
        } else if b.starts_with(b"II*\0") || b.starts_with(b"MM\0*") {
            tiff(b, 0, out);
        } else if b.get(4..8).is_some_and(|k| k == b"ftyp") {
            bmff(b, 0, b.len(), 0, out);
        }
    }

    fn be(b: &[u8], at: usize, n: usize) -> Option<usize> {
        let s = b.get(at..at.checked_add(n)?)?;
        Some(s.iter().fold(0usize, |v, x| (v << 8) | usize::from(*x)))
    }

    fn le(b: &[u8], at: usize, n: usize) -> Option<usize> {
        let s = b.get(at..at.checked_add(n)?)?;
        Some(
            s.iter()
                .rev()
                .fold(0usize, |v, x| (v << 8) | usize::from(*x)),
        )
    }

    /// Segment lengths up to the start of scan, and the EXIF inside APP1.
    fn jpeg(b: &[u8], out: &mut Vec<Field>) {
        let mut at = 2;
        while out.len() < MAX_FIELDS && b.get(at) == Some(&0xFF) {
            let Some(&marker) = b.get(at + 1) else { return };
            if marker == 0xFF || marker == 0x01 || (0xD0..=0xD8).contains(&marker) {
                at += if marker == 0xFF { 1 } else { 2 };
                continue;
            }
            let Some(len) = be(b, at + 2, 2) else { return };
            out.push(Field {
                at: at + 2,
                width: Width::Be16,
                body: Some((at + 4, at + 2 + len)),
            });
            if marker == 0xE1 && b.get(at + 4..at + 10) == Some(b"Exif\0\0") {
                tiff(b, at + 10, out);
            }
            if marker == 0xDA || marker == 0xD9 {
                return;
            }
            at += 2 + len;
        }
    }

    fn png(b: &[u8], out: &mut Vec<Field>) {
        let mut at = 8;
        while out.len() < MAX_FIELDS {
            let Some(len) = be(b, at, 4) else { return };
            out.push(Field {
                at,
                width: Width::Be32,
                body: Some((at + 8, at + 8 + len)),
            });
            if b.get(at + 4..at + 8) == Some(b"eXIf") {
                tiff(b, at + 8, out);
            }
            let Some(next) = at.checked_add(12 + len) else {
                return;
            };
            at = next;
        }
    }

    fn riff(b: &[u8], out: &mut Vec<Field>) {
        out.push(Field {
            at: 4,
            width: Width::Le32,
            body: None,
        });
        let mut at = 12;
        while out.len() < MAX_FIELDS {
            let Some(len) = le(b, at + 4, 4) else { return };
            out.push(Field {
                at: at + 4,
                width: Width::Le32,
                body: Some((at + 8, at + 8 + len)),
            });
            if b.get(at..at + 4) == Some(b"EXIF") {
                tiff(b, at + 8, out);
            }
            let Some(next) = at.checked_add(8 + len + (len & 1)) else {
                return;
            };
            at = next;
        }
    }

    /// Boxes that hold boxes, and how many bytes come before their first child.
    fn container(kind: &[u8]) -> Option<usize> {
        match kind {
            b"moov" | b"trak" | b"mdia" | b"minf" | b"stbl" | b"udta" | b"edts" | b"dinf"
            | b"iprp" | b"ipco" | b"mvex" | b"moof" | b"traf" | b"ilst" => Some(0),
            b"meta" => Some(4),
            b"stsd" | b"dref" => Some(8),
            b"iinf" => Some(6),
            _ => None,
        }
    }

    fn bmff(b: &[u8], start: usize, end: usize, depth: u32, out: &mut Vec<Field>) {
        let mut at = start;
        while at + 8 <= end && out.len() < MAX_FIELDS {
            let Some(size32) = be(b, at, 4) else { return };
            let (size, header) = match size32 {
                0 => (end - at, 8),
                1 => (be(b, at + 8, 8).unwrap_or(0), 16),
                n => (n, 8),
            };
            let box_end = at.saturating_add(size).min(end);
            let body = Some((at + header, box_end));
            out.push(Field {
                at,
                width: Width::Be32,
                body: body.filter(|_| size32 > 1),
            });
            if size32 == 1 {
                out.push(Field {
                    at: at + 8,
                    width: Width::Be64,
                    body,
                });
            }
            if size < header {
                return;
            }
            if let Some(skip) = container(&b[at + 4..at + 8]).filter(|_| depth < 12) {
                bmff(b, at + header + skip, box_end, depth + 1, out);
            }
            at = box_end;
        }
    }

    /// An EBML vint's length from its first byte (1..=8; 0 when invalid).
    fn vint_len(first: u8) -> usize {
        first.leading_zeros() as usize + 1
    }

    fn ebml(b: &[u8], start: usize, end: usize, depth: u32, out: &mut Vec<Field>) {
        const MASTERS: [usize; 8] = [
            0x1A45_DFA3,
            0x1853_8067,
            0x1654_AE6B,
            0xAE,
            0xE0,
            0x1549_A966,
            0x114D_9B74,
            0x4DBB,
        ];
        let mut at = start;
        while at < end && out.len() < MAX_FIELDS {
            let Some(&first) = b.get(at) else { return };
            let id_len = vint_len(first);
            let Some(id) = be(b, at, id_len).filter(|_| id_len <= 4) else {
                return;
            };
            let size_at = at + id_len;
            let Some(&size_first) = b.get(size_at) else {
                return;
            };
            let size_len = vint_len(size_first);
            if size_len > 8 {
                return;
            }
            let Some(raw) = be(b, size_at, size_len) else {
                return;
            };
            let size = raw & ((1usize << (7 * size_len)) - 1);
            let body = size_at + size_len;
            let elem_end = body.saturating_add(size).min(end);
            let width = Width::Vint(size_len as u8);
            out.push(Field {
                at: size_at,
                width,
                body: Some((body, elem_end)),
            });
            if MASTERS.contains(&id) && depth < 8 {
                ebml(b, body, elem_end, depth + 1, out);
            }
            if elem_end <= at {
                return;
            }
            at = elem_end;
        }
    }

    /// IFD0 and the EXIF and GPS IFDs of a TIFF at `base`: the IFD offsets, entry counts,
    /// and each entry's value count and offset.
    fn tiff(b: &[u8], base: usize, out: &mut Vec<Field>) {
        let little = b.get(base..base + 2) == Some(b"II");
        let (w16, w32) = if little {
            (Width::Le16, Width::Le32)
        } else {
            (Width::Be16, Width::Be32)
        };
        let get = |at: usize, n: usize| if little { le(b, at, n) } else { be(b, at, n) };
        out.push(Field {
            at: base + 4,
            width: w32,
            body: None,
        });
        let mut ifds = vec![get(base + 4, 4)];
        let mut visited = 0;
        while let Some(Some(offset)) = ifds.pop() {
            // A cycle of IFD pointers must not loop here either.
            visited += 1;
            if visited > 8 {
                return;
            }
            let at = base + offset;
            let Some(count) = get(at, 2) else { continue };
            out.push(Field {
                at,
                width: w16,
                body: None,
            });
            for i in 0..count.min(256) {
                let entry = at + 2 + 12 * i;
                out.push(Field {
                    at: entry + 4,
                    width: w32,
                    body: None,
                });
                out.push(Field {
                    at: entry + 8,
                    width: w32,
                    body: None,
                });
                if matches!(get(entry, 2), Some(0x8769 | 0x8825)) {
                    ifds.push(get(entry + 8, 4));
                }
            }
            if out.len() > MAX_FIELDS {
                return;
            }
        }
    }
}
