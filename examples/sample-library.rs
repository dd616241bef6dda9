//! `cargo run --example sample-library -- DIR [COUNT] [--sparse]`: writes a small photo
//! library for the browser test and for trying the page: COUNT (default 36) JPEGs across a
//! year and a half, with EXIF capture times, two cameras, GPS on every third, and one
//! byte-identical copy, so the grid has months, the filters have something to filter and
//! duplicates show. `--sparse` spreads them thinly instead, one to three a month from 2015 on
//! (no copy), for the grid's months that hold a single short row. `--similar` writes COUNT
//! near copies of one picture unlike the landscapes (each a size smaller than the last), for
//! a small group in the Similar view: the landscapes themselves all look alike. `--faces`
//! writes COUNT (at least 3) copies of the astronaut of tests/fixtures, each another size,
//! and the rocket (no face): one person for the People view, once the face and embedding
//! walks have seen them.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test, example or bench: a panic is the report

use exif::experimental::Writer;
use exif::{Field, In, Rational, Tag, Value};
use std::io::Cursor;
use std::path::Path;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let usage =
        || anyhow::anyhow!("usage: sample-library DIR [COUNT] [--sparse|--similar|--faces]");
    let dir = args.next().ok_or_else(usage)?;
    let count: u32 = args.next().map(|c| c.parse()).transpose()?.unwrap_or(36);
    let sparse = match args.next().as_deref() {
        None => false,
        Some("--sparse") => true,
        Some("--similar") => return near_copies(Path::new(&dir), count),
        Some("--faces") => return faces(Path::new(&dir), count),
        Some(_) => return Err(usage()),
    };
    let dir = Path::new(&dir);
    let months = if sparse {
        sparse_months(count)
    } else {
        (0..count)
            .map(|i| (2023 + i % 18 / 12, i % 18 % 12 + 1))
            .collect()
    };
    // Sparse photos get other numbers (and so other pictures and names) than dense ones.
    let first = if sparse { 5000 } else { 0 };
    for (i, (year, month)) in (first..).zip(months) {
        let folder = dir.join(format!("{year}/{month:02}"));
        std::fs::create_dir_all(&folder)?;
        let bytes = photo(i, year, month)?;
        std::fs::write(folder.join(format!("IMG_{:04}.JPG", 1000 + i)), &bytes)?;
        if i == 0 {
            std::fs::create_dir_all(dir.join("Backup"))?;
            std::fs::write(dir.join("Backup/IMG_1000 copy.JPG"), &bytes)?;
        }
    }
    let copy = if sparse { "" } else { " (and one copy)" };
    println!("wrote {count} photos{copy} under {}", dir.display());
    Ok(())
}

/// `count` JPEGs of the astronaut, the first at full size and each 48 px smaller (distinct
/// bytes: one asset each), and the rocket.
fn faces(dir: &Path, count: u32) -> anyhow::Result<()> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let astronaut = image::open(fixtures.join("astronaut.png"))?;
    std::fs::create_dir_all(dir)?;
    for i in 0..count.max(3) {
        let side = 512 - 48 * i.min(6);
        let copy = astronaut.resize(side, side, image::imageops::FilterType::Triangle);
        copy.to_rgb8()
            .save(dir.join(format!("FACE_{}.jpg", i + 1)))?;
    }
    std::fs::copy(fixtures.join("rocket.jpg"), dir.join("rocket.jpg"))?;
    println!(
        "wrote {} astronauts and a rocket under {}",
        count.max(3),
        dir.display()
    );
    Ok(())
}

/// `count` JPEGs of one picture, dark left and bright right around a ring (nothing like a
/// landscape's light top and green bottom), each 24 px narrower than the last, dated 2012.
fn near_copies(dir: &Path, count: u32) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    for i in 0..count {
        let (w, h) = (240 - 24 * i.min(8), 180 - 18 * i.min(8));
        let img = image::RgbImage::from_fn(w, h, |x, y| {
            let (fx, fy) = (x * 100 / w, y * 100 / h);
            let r2 = fx.abs_diff(50).pow(2) + fy.abs_diff(50).pow(2);
            let v = if (400..900).contains(&r2) {
                250
            } else if fx < 50 {
                20
            } else {
                200
            };
            image::Rgb([v as u8, (v / 2) as u8, (255 - v) as u8])
        });
        let path = dir.join(format!("SIM_{}.JPG", i + 1));
        img.save(&path)?;
        // No EXIF: the file time dates them, in 2012, at the grid's far end, out of the way of
        // the page test's first tiles.
        let june_2012 = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_339_761_600);
        std::fs::File::options()
            .write(true)
            .open(&path)?
            .set_modified(june_2012)?;
    }
    println!("wrote {count} near copies under {}", dir.display());
    Ok(())
}

/// The (year, month) of each of `count` photos: 1, 2, 3, 1, 2, 3, ... a month from 2015-01.
fn sparse_months(count: u32) -> Vec<(u32, u32)> {
    (0u32..)
        .flat_map(|m| std::iter::repeat_n((2015 + m / 12, m % 12 + 1), 1 + m as usize % 3))
        .take(count as usize)
        .collect()
}

/// A landscape-ish picture: a sky gradient, a sun and hills, tinted per index. Integer
/// math and a small size, because examples build without optimisation.
fn pixels(i: u32) -> image::RgbImage {
    let (w, h) = if i % 5 == 4 { (120, 160) } else { (160, 120) };
    let tint = i * 47 % 255;
    image::RgbImage::from_fn(w, h, |x, y| {
        let (fx, fy) = (x * 100 / w, y * 100 / h);
        let (dx, dy) = (fx.abs_diff(70), fy.abs_diff(30));
        let wave = [0, 3, 6, 8, 6, 3, 0, 3, 6, 8][((fx / 10 + tint / 40) % 10) as usize];
        let rgb = if dx * dx + dy * dy < 64 {
            [255, 220, 120]
        } else if fy > 62 + wave {
            [40 + tint / 3, 110 + fy / 2, 50]
        } else {
            [
                90 + tint * (100 - fy) / 250,
                140 + (100 - fy) / 2,
                230 - tint / 4,
            ]
        };
        image::Rgb(rgb.map(|c| c.min(255) as u8))
    })
}

fn ascii(tag: Tag, text: &str) -> Field {
    Field {
        tag,
        ifd_num: In::PRIMARY,
        value: Value::Ascii(vec![text.as_bytes().to_vec()]),
    }
}

fn rationals(tag: Tag, parts: &[(u32, u32)]) -> Field {
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

fn photo(i: u32, year: u32, month: u32) -> anyhow::Result<Vec<u8>> {
    let mut jpeg = Cursor::new(Vec::new());
    pixels(i).write_to(&mut jpeg, image::ImageFormat::Jpeg)?;
    let jpeg = jpeg.into_inner();
    let (make, model) = if i.is_multiple_of(2) {
        ("Canon", "Canon EOS R6")
    } else {
        ("Apple", "iPhone 13")
    };
    let taken = format!(
        "{year}:{month:02}:{:02} {:02}:{:02}:00",
        1 + i % 27,
        8 + i % 12,
        i % 60
    );
    let mut fields = vec![
        ascii(Tag::Make, make),
        ascii(Tag::Model, model),
        ascii(Tag::DateTimeOriginal, &taken),
    ];
    if i.is_multiple_of(3) {
        fields.push(ascii(Tag::GPSLatitudeRef, "N"));
        fields.push(rationals(
            Tag::GPSLatitude,
            &[(48, 1), (51, 1), (2400 + i, 100)],
        ));
        fields.push(ascii(Tag::GPSLongitudeRef, "E"));
        fields.push(rationals(
            Tag::GPSLongitude,
            &[(2, 1), (21, 1), (600 + i, 100)],
        ));
    }
    let mut writer = Writer::new();
    for f in &fields {
        writer.push_field(f);
    }
    let mut tiff = Cursor::new(Vec::new());
    writer.write(&mut tiff, false)?;
    let tiff = tiff.into_inner();
    // APP1 "Exif" right after SOI.
    let mut out = jpeg[..2].to_vec();
    out.extend_from_slice(&[0xFF, 0xE1]);
    out.extend_from_slice(&u16::try_from(tiff.len() + 8)?.to_be_bytes());
    out.extend_from_slice(b"Exif\0\0");
    out.extend_from_slice(&tiff);
    out.extend_from_slice(&jpeg[2..]);
    Ok(out)
}
