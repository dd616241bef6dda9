//! Small Canon CR3s made in the test. No camera file is in this repository: the layout is the
//! one documented by Laurent Clévy (github.com/lclevy/canon_cr3, "CR3 file Structure") and
//! exiftool's Canon CR3 tags: ISO media with the `crx ` brand; `moov` holds Canon's uuid box
//! 85c0b687-820f-11e0-8111-f4ce462b6a48 with CMT1 (a TIFF: IFD0), CMT2 (a TIFF: the Exif IFD),
//! CMT3 (the MakerNote), CMT4 (a TIFF: the GPS IFD) and THMB (a small JPEG); a top-level uuid
//! box eaf42b5e-1c98-4b88-b9fb-b7dc406e4d16 holds, after 8 bytes, PRVW (the bigger JPEG).
//! THMB and PRVW put the JPEG 24 bytes into their box, its length at 16 (THMB) or 20 (PRVW).

use super::dng::{Entry, ascii, dms, ifd, long, rationals, short};

pub const CANON_UUID: [u8; 16] = [
    0x85, 0xc0, 0xb6, 0x87, 0x82, 0x0f, 0x11, 0xe0, 0x81, 0x11, 0xf4, 0xce, 0x46, 0x2b, 0x6a, 0x48,
];
pub const PREVIEW_UUID: [u8; 16] = [
    0xea, 0xf4, 0x2b, 0x5e, 0x1c, 0x98, 0x4b, 0x88, 0xb9, 0xfb, 0xb7, 0xdc, 0x40, 0x6e, 0x4d, 0x16,
];

/// What to put in a CR3.
pub struct Cr3 {
    pub make: &'static str,
    pub model: &'static str,
    /// EXIF form, `YYYY:MM:DD HH:MM:SS`.
    pub taken: &'static str,
    pub offset: &'static str,
    pub orientation: u16,
    /// Degrees, north and east positive.
    pub gps: Option<(f64, f64)>,
    /// The image size CMT1's IFD0 states (exiftool's ImageWidth x ImageHeight).
    pub size: (u32, u32),
    /// PRVW's JPEG and its size.
    pub preview: Option<(Vec<u8>, u16, u16)>,
    /// THMB's JPEG and its size.
    pub thumb: Option<(Vec<u8>, u16, u16)>,
}

pub fn bx(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
    let mut v = ((body.len() + 8) as u32).to_be_bytes().to_vec();
    v.extend_from_slice(kind);
    v.extend_from_slice(body);
    v
}

fn uuid(id: &[u8; 16], body: &[u8]) -> Vec<u8> {
    bx(b"uuid", &[&id[..], body].concat())
}

/// A little-endian TIFF whose IFD0 is `entries`.
fn tiff(entries: Vec<Entry>) -> Vec<u8> {
    let mut out = b"II*\0\0\0\0\0".to_vec();
    let at = ifd(&mut out, entries);
    out[4..8].copy_from_slice(&at.to_le_bytes());
    out
}

/// THMB (version 0) or PRVW: the JPEG at 24 bytes into the box.
fn jpeg_box(kind: &[u8; 4], (jpeg, w, h): &(Vec<u8>, u16, u16)) -> Vec<u8> {
    let len = (jpeg.len() as u32).to_be_bytes();
    let mut body = Vec::new();
    if kind == b"THMB" {
        body.extend([0, 0, 0, 0]);
        body.extend(w.to_be_bytes());
        body.extend(h.to_be_bytes());
        body.extend(len);
        body.extend([0, 0, 0, 1]);
    } else {
        body.extend([0, 0, 0, 0, 0, 1]);
        body.extend(w.to_be_bytes());
        body.extend(h.to_be_bytes());
        body.extend([0, 1]);
        body.extend(len);
    }
    body.extend(jpeg);
    bx(kind, &body)
}

impl Cr3 {
    fn cmts(&self) -> Vec<u8> {
        let (w, h) = self.size;
        let cmt1 = tiff(vec![
            long(0x100, &[w]),
            long(0x101, &[h]),
            ascii(0x10F, self.make),
            ascii(0x110, self.model),
            short(0x112, &[self.orientation]),
            ascii(0x132, self.taken),
        ]);
        let cmt2 = tiff(vec![
            Entry(0x9000, 7, 4, b"0231".to_vec()),
            ascii(0x9003, self.taken),
            ascii(0x9004, self.taken),
            ascii(0x9011, self.offset),
        ]);
        let cmt3 = tiff(vec![ascii(0x6, "Canon EOS R5")]);
        let mut out = [
            bx(b"CNCV", b"CanonCR3_001/00.10.00/00.00.00"),
            bx(b"CMT1", &cmt1),
            bx(b"CMT2", &cmt2),
            bx(b"CMT3", &cmt3),
        ]
        .concat();
        if let Some((lat, lon)) = self.gps {
            let cmt4 = tiff(vec![
                Entry(0x0, 1, 4, vec![2, 3, 0, 0]),
                ascii(0x1, if lat >= 0.0 { "N" } else { "S" }),
                rationals(0x2, &dms(lat)),
                ascii(0x3, if lon >= 0.0 { "E" } else { "W" }),
                rationals(0x4, &dms(lon)),
            ]);
            out.extend(bx(b"CMT4", &cmt4));
        }
        out
    }

    pub fn bytes(&self) -> Vec<u8> {
        let ftyp = bx(b"ftyp", b"crx \0\0\0\x01crx isom");
        let mut canon = self.cmts();
        if let Some(thumb) = &self.thumb {
            canon.extend(jpeg_box(b"THMB", thumb));
        }
        let moov = bx(
            b"moov",
            &[uuid(&CANON_UUID, &canon), bx(b"mvhd", &[0; 100])].concat(),
        );
        let mut out = [ftyp, moov].concat();
        if let Some(preview) = &self.preview {
            let body = [&[0, 0, 0, 0, 0, 0, 0, 1][..], &jpeg_box(b"PRVW", preview)].concat();
            out.extend(uuid(&PREVIEW_UUID, &body));
        }
        out.extend(bx(b"mdat", &[0xAB; 64]));
        out
    }
}

/// An EOS R5's CR3 in small: turned a quarter clockwise (Orientation 6), with GPS, a green
/// 48x32 PRVW and a red 16x12 THMB.
pub fn r5() -> Cr3 {
    Cr3 {
        make: "Canon",
        model: "Canon EOS R5",
        taken: "2023:06:10 14:15:16",
        offset: "+02:00",
        orientation: 6,
        gps: Some((48.858222, 2.2945)),
        size: (8192, 5464),
        preview: Some((super::dng::jpeg_of(48, 32, [0, 200, 0]), 48, 32)),
        thumb: Some((super::dng::jpeg_of(16, 12, [200, 0, 0]), 16, 12)),
    }
}
