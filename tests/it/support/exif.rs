//! JPEGs with EXIF made in the test: pixels from the `image` crate, the EXIF written by
//! kamadak-exif's own writer (no tool needed).

use exif::experimental::Writer;
use exif::{Field, In, Rational, Tag, Value};
use std::io::Cursor;

pub fn jpeg(width: u32, height: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(width, height, |x, y| image::Rgb([x as u8, y as u8, 90]));
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Jpeg).unwrap();
    out.into_inner()
}

pub fn ascii(tag: Tag, text: &str) -> Field {
    Field {
        tag,
        ifd_num: In::PRIMARY,
        value: Value::Ascii(vec![text.as_bytes().to_vec()]),
    }
}

pub fn rationals(tag: Tag, parts: &[(u32, u32)]) -> Field {
    let value = Value::Rational(
        parts
            .iter()
            .map(|&(num, denom)| Rational { num, denom })
            .collect(),
    );
    Field {
        tag,
        ifd_num: In::PRIMARY,
        value,
    }
}

/// A JPEG with an APP1 EXIF segment (written by kamadak-exif) right after SOI.
pub fn jpeg_with_exif(width: u32, height: u32, fields: &[Field]) -> Vec<u8> {
    with_exif(&jpeg(width, height), fields)
}

/// `body` (a JPEG) with an APP1 EXIF segment of `fields` right after its SOI.
pub fn with_exif(body: &[u8], fields: &[Field]) -> Vec<u8> {
    let mut writer = Writer::new();
    for f in fields {
        writer.push_field(f);
    }
    let mut tiff = Cursor::new(Vec::new());
    writer.write(&mut tiff, false).unwrap();
    let tiff = tiff.into_inner();
    let mut out = body[..2].to_vec();
    out.extend_from_slice(&[0xFF, 0xE1]);
    out.extend_from_slice(&((tiff.len() + 8) as u16).to_be_bytes());
    out.extend_from_slice(b"Exif\0\0");
    out.extend_from_slice(&tiff);
    out.extend_from_slice(&body[2..]);
    out
}

/// An Apple MakerNote whose ContentIdentifier (tag 0x0011) is `id`.
pub fn apple_note(id: &str) -> Vec<u8> {
    let mut n = b"Apple iOS\0\0\x01MM".to_vec();
    n.extend_from_slice(&1u16.to_be_bytes());
    let value_at = 14 + 2 + 12 + 4;
    n.extend_from_slice(&0x0011u16.to_be_bytes());
    n.extend_from_slice(&2u16.to_be_bytes());
    n.extend_from_slice(&(id.len() as u32 + 1).to_be_bytes());
    n.extend_from_slice(&(value_at as u32).to_be_bytes());
    n.extend_from_slice(&[0; 4]);
    n.extend_from_slice(id.as_bytes());
    n.push(0);
    n
}
