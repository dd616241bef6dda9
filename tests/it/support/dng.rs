//! Small DNGs made in the test, laid out as the corpus's pidng files are: uncompressed 16-bit
//! RGGB raw data (black 512, white 16383), EXIF and GPS IFDs, and either a JPEG preview in IFD0
//! with the raw in a SubIFD (the converters' layout) or the raw alone in IFD0.

/// What to put in a DNG.
pub struct Dng {
    pub make: &'static str,
    pub model: &'static str,
    /// EXIF form, `YYYY:MM:DD HH:MM:SS`.
    pub taken: &'static str,
    pub offset: &'static str,
    pub orientation: u16,
    /// Degrees, north and east positive.
    pub gps: Option<(f64, f64)>,
    /// Raw size (even sides).
    pub raw: (u32, u32),
    /// The value of the red, green and blue sites at a stored pixel, 0.0..=1.0.
    pub scene: fn(u32, u32, u32, u32) -> [f64; 3],
    /// A JPEG preview for IFD0, with its size.
    pub preview: Option<(Vec<u8>, u32, u32)>,
}

const BLACK: u32 = 512;
const WHITE: u32 = 16383;

pub(super) struct Entry(pub u16, pub u16, pub u32, pub Vec<u8>);

pub(super) fn short(tag: u16, v: &[u16]) -> Entry {
    Entry(
        tag,
        3,
        v.len() as u32,
        v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    )
}
pub(super) fn long(tag: u16, v: &[u32]) -> Entry {
    Entry(
        tag,
        4,
        v.len() as u32,
        v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    )
}
pub(super) fn ascii(tag: u16, s: &str) -> Entry {
    let mut b = s.as_bytes().to_vec();
    b.push(0);
    Entry(tag, 2, b.len() as u32, b)
}
pub(super) fn bytes(tag: u16, v: &[u8]) -> Entry {
    Entry(tag, 1, v.len() as u32, v.to_vec())
}
pub(super) fn rationals(tag: u16, v: &[(u32, u32)]) -> Entry {
    let b = v
        .iter()
        .flat_map(|(n, d)| [n.to_le_bytes(), d.to_le_bytes()].concat())
        .collect();
    Entry(tag, 5, v.len() as u32, b)
}

/// Writes an IFD (its long values right after it) at the end of `out`; answers its offset.
pub(super) fn ifd(out: &mut Vec<u8>, mut entries: Vec<Entry>) -> u32 {
    entries.sort_by_key(|e| e.0);
    if out.len() % 2 == 1 {
        out.push(0);
    }
    let at = out.len();
    let mut data_at = at + 2 + entries.len() * 12 + 4;
    let mut table = (entries.len() as u16).to_le_bytes().to_vec();
    let mut data = Vec::new();
    for Entry(tag, typ, count, value) in &entries {
        table.extend(tag.to_le_bytes());
        table.extend(typ.to_le_bytes());
        table.extend(count.to_le_bytes());
        if value.len() <= 4 {
            let mut v = value.clone();
            v.resize(4, 0);
            table.extend(v);
        } else {
            table.extend((data_at as u32).to_le_bytes());
            data.extend(value);
            if value.len() % 2 == 1 {
                data.push(0);
            }
            data_at = at + 2 + entries.len() * 12 + 4 + data.len();
        }
    }
    table.extend(0u32.to_le_bytes());
    out.extend(table);
    out.extend(data);
    at as u32
}

pub(super) fn dms(deg: f64) -> Vec<(u32, u32)> {
    let d = deg.abs();
    let m = (d.fract() * 60.0).floor();
    let s = ((d.fract() * 60.0 - m) * 60.0 * 100.0).round();
    vec![(d.floor() as u32, 1), (m as u32, 1), (s as u32, 100)]
}

/// The raw IFD's entries for raw data already written at `data_at` (one tile).
fn raw_entries(spec: &Dng, data_at: u32, len: u32) -> Vec<Entry> {
    let (w, h) = spec.raw;
    vec![
        long(0xFE, &[0]),
        long(0x100, &[w]),
        long(0x101, &[h]),
        short(0x102, &[16]),
        short(0x103, &[1]),
        short(0x106, &[32803]),
        short(0x115, &[1]),
        long(0x142, &[w]),
        long(0x143, &[h]),
        long(0x144, &[data_at]),
        long(0x145, &[len]),
        short(0x828D, &[2, 2]),
        bytes(0x828E, &[0, 1, 1, 2]),
        long(0xC61A, &[BLACK]),
        long(0xC61D, &[WHITE]),
    ]
}

fn mosaic(spec: &Dng) -> Vec<u8> {
    let (w, h) = spec.raw;
    let mut out = Vec::with_capacity((w * h * 2) as usize);
    for y in 0..h {
        for x in 0..w {
            let c = [0usize, 1, 1, 2][((y % 2) * 2 + x % 2) as usize];
            let v = (spec.scene)(x, y, w, h)[c];
            let v = BLACK + (v * f64::from(WHITE - BLACK)) as u32;
            out.extend((v as u16).to_le_bytes());
        }
    }
    out
}

impl Dng {
    /// Header and IFDs first, as cameras and pidng write them (a reader sniffs IFD0 from the
    /// first bytes), then the raw data and the preview.
    pub fn bytes(&self) -> Vec<u8> {
        let raw = mosaic(self);
        let measured = self.ifds(&raw, 0).len() as u32;
        let mut out = self.ifds(&raw, measured);
        out.extend(&raw);
        if let Some((jpeg, _, _)) = &self.preview {
            out.extend(jpeg);
        }
        out
    }

    /// The header and every IFD, for raw data at `blobs_at` and the preview after it.
    fn ifds(&self, raw: &[u8], blobs_at: u32) -> Vec<u8> {
        let mut out = b"II*\0\0\0\0\0".to_vec();
        let (raw_at, raw_len) = (blobs_at, raw.len() as u32);
        let exif = ifd(
            &mut out,
            vec![
                ascii(0x9003, self.taken),
                ascii(0x9004, self.taken),
                ascii(0x9011, self.offset),
                Entry(0x9000, 7, 4, b"0232".to_vec()),
            ],
        );
        let mut ifd0 = vec![
            ascii(0x10F, self.make),
            ascii(0x110, self.model),
            short(0x112, &[self.orientation]),
            ascii(0x131, "mediadex tests"),
            ascii(0x132, self.taken),
            bytes(0xC612, &[1, 4, 0, 0]),
            bytes(0xC613, &[1, 1, 0, 0]),
            ascii(0xC614, self.model),
            long(0x8769, &[exif]),
        ];
        if let Some((lat, lon)) = self.gps {
            let gps = ifd(
                &mut out,
                vec![
                    bytes(0x0, &[2, 3, 0, 0]),
                    ascii(0x1, if lat >= 0.0 { "N" } else { "S" }),
                    rationals(0x2, &dms(lat)),
                    ascii(0x3, if lon >= 0.0 { "E" } else { "W" }),
                    rationals(0x4, &dms(lon)),
                ],
            );
            ifd0.push(long(0x8825, &[gps]));
        }
        match &self.preview {
            None => ifd0.extend(raw_entries(self, raw_at, raw_len)),
            Some((jpeg, w, h)) => {
                let sub = ifd(&mut out, raw_entries(self, raw_at, raw_len));
                ifd0.extend([
                    long(0xFE, &[1]),
                    long(0x100, &[*w]),
                    long(0x101, &[*h]),
                    short(0x102, &[8, 8, 8]),
                    short(0x103, &[7]),
                    short(0x106, &[6]),
                    long(0x111, &[raw_at + raw_len]),
                    short(0x115, &[3]),
                    long(0x116, &[*h]),
                    long(0x117, &[jpeg.len() as u32]),
                    long(0x14A, &[sub]),
                ]);
            }
        }
        let first = ifd(&mut out, ifd0);
        out[4..8].copy_from_slice(&first.to_le_bytes());
        if out.len() % 2 == 1 {
            out.push(0);
        }
        out
    }
}

/// A plain JPEG of one colour.
pub fn jpeg_of(width: u32, height: u32, rgb: [u8; 3]) -> Vec<u8> {
    let img = image::RgbImage::from_pixel(width, height, image::Rgb(rgb));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Jpeg).unwrap();
    out.into_inner()
}

/// The corpus's IMGP0421.DNG in small: a preview in IFD0 (green), the raw in a SubIFD (blue).
pub fn with_preview() -> Vec<u8> {
    Dng {
        make: "PENTAX",
        model: "PENTAX K-1 Mark II",
        taken: "2020:05:09 11:12:13",
        offset: "+02:00",
        orientation: 1,
        gps: None,
        raw: (96, 64),
        scene: |_, _, _, _| [0.0, 0.0, 1.0],
        preview: Some((jpeg_of(48, 32, [0, 200, 0]), 48, 32)),
    }
    .bytes()
}

/// The corpus's R0001234.DNG in small: the raw alone in IFD0, stored wide and turned a
/// quarter clockwise (Orientation 6), with GPS. Its stored top half is red, the rest black.
pub fn raw_only() -> Vec<u8> {
    Dng {
        make: "RICOH IMAGING COMPANY, LTD.",
        model: "RICOH GR III",
        taken: "2022:10:02 08:30:00",
        offset: "+09:00",
        orientation: 6,
        gps: Some((35.658581, 139.745433)),
        raw: (128, 64),
        scene: |_, y, _, h| if y < h / 2 { [1.0, 0.0, 0.0] } else { [0.0; 3] },
        preview: None,
    }
    .bytes()
}

/// A CR2 in Canon's layout, small: the `CR` header word after the TIFF header, IFD0 with the
/// full-size JPEG (as StripOffsets, old-style JPEG compression) and the EXIF, and a last IFD
/// holding the raw data as lossless-JPEG slices with no size tags of its own.
pub fn cr2(jpeg: &[u8], width: u32, height: u32) -> Vec<u8> {
    let mut out = b"II*\0\x10\0\0\0CR\x02\0\0\0\0\0".to_vec();
    let jpeg_at = out.len() as u32;
    out.extend(jpeg);
    let slices_at = out.len() as u32;
    out.extend([0xFF, 0xD8, 0xFF, 0xC3, 0, 0]);
    let raw = ifd(
        &mut out,
        vec![
            short(0x103, &[6]),
            long(0x111, &[slices_at]),
            long(0x117, &[6]),
            short(0xC5D8, &[1]),
        ],
    );
    let exif = ifd(&mut out, vec![ascii(0x9003, "2019:01:02 03:04:05")]);
    let at = ifd(
        &mut out,
        vec![
            long(0x100, &[width]),
            long(0x101, &[height]),
            short(0x103, &[6]),
            ascii(0x10F, "Canon"),
            ascii(0x110, "Canon EOS 5D Mark IV"),
            long(0x111, &[jpeg_at]),
            short(0x112, &[1]),
            long(0x117, &[jpeg.len() as u32]),
            long(0x8769, &[exif]),
        ],
    );
    // IFD0's next-IFD pointer: the raw IFD (Canon's IFD3, here the second).
    let next_at = at as usize + 2 + 9 * 12;
    out[next_at..next_at + 4].copy_from_slice(&raw.to_le_bytes());
    out[4..8].copy_from_slice(&at.to_le_bytes());
    out
}
