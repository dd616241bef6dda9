//! `media::extract` on small files made here: JPEG/PNG generated with the `image` crate, EXIF
//! written by kamadak-exif's own writer, and broken inputs (truncated, random, empty,
//! mislabelled). Every case must return without panicking.

use crate::support::exif::{ascii, jpeg, jpeg_with_exif, rationals};
use exif::{Field, In, Tag, Value};
use mediadex::media::extract;
use mediadex::model::MediaKind;
use std::io::Cursor;
use std::path::{Path, PathBuf};

fn png(width: u32, height: u32) -> Vec<u8> {
    let img = image::GrayImage::from_fn(width, height, |x, _| image::Luma([x as u8]));
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn plain_jpeg_and_png_have_kind_mime_and_size() {
    let dir = tempfile::tempdir().unwrap();
    let f = extract(&write(dir.path(), "a.jpg", &jpeg(64, 48)));
    assert_eq!(f.kind, Some(MediaKind::Image));
    assert_eq!(f.mime.as_deref(), Some("image/jpeg"));
    assert_eq!((f.width, f.height), (Some(64), Some(48)));
    assert_eq!((f.display_width, f.display_height), (Some(64), Some(48)));
    assert_eq!((f.taken_local.as_ref(), f.error.as_ref()), (None, None));

    let f = extract(&write(dir.path(), "b.png", &png(10, 30)));
    assert_eq!(f.mime.as_deref(), Some("image/png"));
    assert_eq!((f.width, f.height, f.error), (Some(10), Some(30), None));
}

#[test]
fn exif_fields_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let fields = [
        ascii(Tag::Make, "Canon\0\0"),
        ascii(Tag::Model, " Canon EOS 5D "),
        Field {
            tag: Tag::Orientation,
            ifd_num: In::PRIMARY,
            value: Value::Short(vec![6]),
        },
        ascii(Tag::DateTimeOriginal, "2020:02:29 23:59:59"),
        ascii(Tag::SubSecTimeOriginal, "999"),
        ascii(Tag::OffsetTimeOriginal, "-08:00"),
        ascii(Tag::GPSLatitudeRef, "S"),
        rationals(Tag::GPSLatitude, &[(33, 1), (52, 1), (1234, 100)]),
        ascii(Tag::GPSLongitudeRef, "E"),
        rationals(Tag::GPSLongitude, &[(151, 1), (12, 1), (3000, 100)]),
    ];
    let f = extract(&write(
        dir.path(),
        "exif.jpg",
        &jpeg_with_exif(40, 20, &fields),
    ));
    assert_eq!(f.error, None);
    assert_eq!(f.make.as_deref(), Some("Canon"));
    assert_eq!(f.model.as_deref(), Some("Canon EOS 5D"));
    assert_eq!(f.orientation, Some(6));
    assert_eq!((f.width, f.height), (Some(40), Some(20)));
    assert_eq!((f.display_width, f.display_height), (Some(20), Some(40)));
    assert_eq!(f.taken_local.as_deref(), Some("2020-02-29T23:59:59.999"));
    assert_eq!(f.taken_offset_minutes, Some(-480));
    assert!((f.lat.unwrap() + (33.0 + 52.0 / 60.0 + 12.34 / 3600.0)).abs() < 1e-9);
    assert!((f.lon.unwrap() - (151.0 + 12.0 / 60.0 + 30.0 / 3600.0)).abs() < 1e-9);
}

#[test]
fn zero_original_date_falls_back_to_digitized() {
    let dir = tempfile::tempdir().unwrap();
    let fields = [
        ascii(Tag::DateTimeOriginal, "0000:00:00 00:00:00"),
        ascii(Tag::DateTimeDigitized, "2011:05:06 07:08:09"),
        ascii(Tag::DateTime, "2012:01:01 00:00:00"),
        ascii(Tag::OffsetTime, "+02:00"),
    ];
    let f = extract(&write(dir.path(), "d.jpg", &jpeg_with_exif(8, 8, &fields)));
    assert_eq!(f.taken_local.as_deref(), Some("2011-05-06T07:08:09"));
    assert_eq!(f.taken_offset_minutes, Some(120));

    let blank = [ascii(Tag::DateTimeOriginal, "    :  :     :  :  ")];
    let f = extract(&write(dir.path(), "e.jpg", &jpeg_with_exif(8, 8, &blank)));
    assert_eq!((f.taken_local, f.taken_offset_minutes), (None, None));
}

#[test]
fn broken_inputs_return_an_error_or_other_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let whole = jpeg_with_exif(300, 200, &[ascii(Tag::Make, "X")]);
    let mut noise = Vec::new();
    let mut x: u32 = 12345;
    for _ in 0..5000 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        noise.push((x >> 16) as u8);
    }

    let f = extract(&write(dir.path(), "head.jpg", &whole[..20]));
    assert_eq!(f.kind, Some(MediaKind::Image));
    assert!(f.error.is_some(), "{f:?}");

    let f = extract(&write(dir.path(), "empty.jpg", b""));
    assert!(f.error.is_some() && f.kind.is_none(), "{f:?}");

    let f = extract(&write(
        dir.path(),
        "page.jpg",
        b"<html><body>not a photo</body></html>",
    ));
    assert_eq!(f.kind, Some(MediaKind::Other));
    assert!(f.error.is_some(), "{f:?}");

    let f = extract(&write(dir.path(), "notes.txt", b"shopping list"));
    assert_eq!((f.kind, f.error), (Some(MediaKind::Other), None));

    let f = extract(&write(dir.path(), "really-png.jpg", &png(5, 5)));
    assert_eq!(f.mime.as_deref(), Some("image/png"));
    assert_eq!((f.width, f.height), (Some(5), Some(5)));
    assert!(
        f.error.as_deref().is_some_and(|e| e.contains(".jpg")),
        "{f:?}"
    );

    let _ = extract(&write(dir.path(), "noise.jpg", &noise));
    let _ = extract(&dir.path().join("does-not-exist.jpg"))
        .error
        .unwrap();

    for cut in [100, whole.len() / 2, whole.len() - 10] {
        let f = extract(&write(dir.path(), "cut.jpg", &whole[..cut]));
        assert_eq!(f.kind, Some(MediaKind::Image));
    }
    let mut fake_mp4 = b"\0\0\0\x18ftypisom\0\0\0\0isommp41".to_vec();
    fake_mp4.extend_from_slice(&noise);
    let f = extract(&write(dir.path(), "v.mp4", &fake_mp4));
    assert_eq!(f.kind, Some(MediaKind::Video));
    assert!(f.error.is_some(), "{f:?}");
}

/// Every prefix of a JPEG with EXIF (step 7 bytes) and of a PNG: no panic escapes.
#[test]
fn every_prefix_is_survived() {
    let dir = tempfile::tempdir().unwrap();
    let fields = [
        ascii(Tag::Make, "Y"),
        ascii(Tag::DateTimeOriginal, "2001:01:01 01:01:01"),
    ];
    for bytes in [jpeg_with_exif(30, 30, &fields), png(30, 30)] {
        for cut in (0..bytes.len()).step_by(7) {
            let _ = extract(&write(dir.path(), "p", &bytes[..cut]));
        }
    }
}

/// The scan reads a small file once and hands its bytes over: the facts must be the same as
/// when the extractor opens the file itself, for good, broken and mislabelled inputs alike.
#[test]
fn facts_from_the_bytes_read_once_equal_facts_from_the_file() {
    use mediadex::media::extract_from;
    let dir = tempfile::tempdir().unwrap();
    let with_exif = jpeg_with_exif(
        40,
        20,
        &[
            ascii(Tag::Make, "Canon"),
            ascii(Tag::DateTimeOriginal, "2020:02:29 23:59:59"),
            Field {
                tag: Tag::Orientation,
                ifd_num: In::PRIMARY,
                value: Value::Short(vec![6]),
            },
        ],
    );
    let mut fake_mp4 = b"\0\0\0\x18ftypisom\0\0\0\0isommp41".to_vec();
    fake_mp4.extend_from_slice(&[7u8; 300]);
    let cases: [(&str, Vec<u8>); 7] = [
        ("exif.jpg", with_exif.clone()),
        ("plain.png", png(9, 4)),
        ("cut.jpg", with_exif[..with_exif.len() / 2].to_vec()),
        ("really-png.jpg", png(5, 5)),
        ("empty.jpg", Vec::new()),
        ("notes.txt", b"shopping list".to_vec()),
        ("v.mp4", fake_mp4),
    ];
    for (name, bytes) in cases {
        let path = write(dir.path(), name, &bytes);
        let from_file = extract(&path);
        assert_eq!(extract_from(&path, Some(&bytes)), from_file, "{name}");
        assert_eq!(extract_from(&path, None), from_file, "{name}");
    }
}

// The fuzz targets and their bounds, exactly as examples/fuzz runs them; their counting
// allocator is this binary's, so a saved blow-up is caught here too.
#[path = "../../examples/fuzz/targets.rs"]
#[allow(dead_code)] // which seeds feed a target is the driver's business
pub(crate) mod fuzz_targets;

/// `f` on a thread of its own whose allocations are counted: `Err` when they went over
/// `limit` bytes at any moment (the allocator parks that thread for good and says so).
pub(crate) fn within_memory<T: Send + 'static>(
    limit: usize,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let (done, outcome) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        fuzz_targets::limit_memory(limit);
        let got = f();
        fuzz_targets::limit_memory(0);
        let _ = done.send(got);
    });
    // A thread over its limit never answers: the allocator says so at once.
    let blown = || fuzz_targets::BLOWN.load(std::sync::atomic::Ordering::SeqCst) > 0;
    for _ in 0..3000 {
        match outcome.recv_timeout(std::time::Duration::from_millis(100)) {
            Ok(got) => return Ok(got),
            Err(_) if blown() => return Err(format!("allocated over {} MiB", limit >> 20)),
            Err(_) => {}
        }
    }
    Err("did not return within 300 s".into())
}

#[global_allocator]
static ALLOC: fuzz_targets::Counting = fuzz_targets::Counting;

/// What one saved input did in its parser, on a thread of its own within the time limit:
/// `None` when it returned in bounds with its invariants kept.
fn replay(target: &'static fuzz_targets::Target, bytes: Vec<u8>, mime: String) -> Option<String> {
    use std::sync::atomic::Ordering;
    let (done, outcome) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        fuzz_targets::limit_memory(fuzz_targets::MEMORY_LIMIT);
        let result = std::panic::catch_unwind(|| (target.run)(&bytes, &mime));
        fuzz_targets::limit_memory(0);
        let _ = done.send(result);
    });
    match outcome.recv_timeout(fuzz_targets::TIME_LIMIT) {
        Ok(Ok(Ok(()))) => None,
        Ok(Ok(Err(broken))) => Some(broken),
        Ok(Err(_)) => Some("panicked".into()),
        Err(_) if fuzz_targets::BLOWN.load(Ordering::SeqCst) > 0 => Some(format!(
            "allocated over {} MiB",
            fuzz_targets::MEMORY_LIMIT >> 20
        )),
        Err(_) => Some(format!("ran over {:?}", fuzz_targets::TIME_LIMIT)),
    }
}

/// Every finding of the fuzzer (issue 13, part 5), saved as
/// tests/fixtures/fuzz/<target>/<mime>-<hash>.bin, goes through the parser that found it
/// again: it must return within the fuzzer's time and memory bounds, without a panic and
/// with the target's invariants kept.
#[test]
fn every_saved_fuzz_finding_returns_in_bounds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fuzz");
    let mut failures = Vec::new();
    let mut replayed = 0;
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        let name = dir.file_name().unwrap().to_str().unwrap().to_string();
        let target = fuzz_targets::target(&name).unwrap_or_else(|| panic!("no target {name}"));
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|f| f.unwrap().path())
            .collect();
        files.sort();
        for file in files {
            let stem = file.file_stem().unwrap().to_str().unwrap();
            let (kind, _hash) = stem.rsplit_once('-').unwrap();
            let mime = if kind == "none" {
                String::new()
            } else {
                kind.replacen('_', "/", 1)
            };
            let bytes = std::fs::read(&file).unwrap();
            if let Some(what) = replay(target, bytes, mime) {
                failures.push(format!("{}: {what}", file.display()));
            }
            replayed += 1;
        }
    }
    assert!(replayed > 0, "no saved findings under {}", root.display());
    assert!(failures.is_empty(), "{failures:#?}");
}

/// A fixture of tests/fixtures/placed/ (tests/fixtures/make-placed.sh; README.md there says
/// what each one is): metadata where real cameras and tools put it (issue 26).
fn placed(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/placed")
        .join(name)
}

fn heif_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn near(got: Option<f64>, want: f64) -> bool {
    got.is_some_and(|g| (g - want).abs() < 1e-5)
}

/// Issue 26 finding 7. exiftool 12.57 on classic_moov.mov (no ftyp, `moov` first): ImageSize
/// 96x96, Duration 1.00 s, CreateDate 2007:06:15 14:30:00 (QuickTime's UTC).
#[test]
fn a_classic_quicktime_without_ftyp_is_sized_and_dated() {
    use mediadex::media::extract_from;
    use mediadex::model::TakenAtSource;
    let path = placed("classic_moov.mov");
    let moov_first = std::fs::read(&path).unwrap();
    // Other first atoms of QuickTime files without ftyp: a free or skip atom, a wide atom
    // before the mdat (the file's own moov still follows).
    let free_first = [&b"\0\0\0\x10free\0\0\0\0\0\0\0\0"[..], &moov_first].concat();
    let skip_first = [&b"\0\0\0\x08skip"[..], &moov_first].concat();
    // The moov moved to the end (its chunk offsets no longer match, which no fact here
    // reads): wide then mdat first, or mdat first.
    let moov_len = u32::from_be_bytes(moov_first[..4].try_into().unwrap()) as usize;
    let (moov, rest) = moov_first.split_at(moov_len);
    assert_eq!(&rest[4..8], b"wide");
    let wide_first = [rest, moov].concat();
    let mdat_first = [&rest[8..], moov].concat();
    for (what, bytes) in [
        ("moov first", moov_first.clone()),
        ("free first", free_first),
        ("skip first", skip_first),
        ("wide first", wide_first),
        ("mdat first", mdat_first),
    ] {
        let f = extract_from(&path, Some(&bytes));
        assert_eq!(f.error, None, "{what}: {f:?}");
        assert_eq!(f.kind, Some(MediaKind::Video), "{what}");
        assert_eq!(f.mime.as_deref(), Some("video/quicktime"), "{what}");
        assert_eq!((f.width, f.height), (Some(96), Some(96)), "{what}");
        assert_eq!(f.duration_ms, Some(1000), "{what}");
        assert_eq!(
            f.taken_local.as_deref(),
            Some("2007-06-15T14:30:00"),
            "{what}"
        );
        assert_eq!(f.taken_offset_minutes, Some(0), "{what}");
        assert_eq!(f.taken_at_source, Some(TakenAtSource::Quicktime), "{what}");
        assert_eq!(f.video_codec.as_deref(), Some("mjpeg"), "{what}");
    }
    assert_eq!(extract(&path), extract_from(&path, Some(&moov_first)));
}

/// Issue 26 finding 8. exiftool 12.57 on gps_datestamp_with_time.jpg: GPSDateStamp
/// "2011:07:04 12:34:56" (20 bytes where EXIF says 11), GPSLatitude 35 deg 39' 30.89" N,
/// GPSLongitude 139 deg 44' 43.56" E, DateTimeOriginal 2011:07:04 21:34:56, Make Canon.
/// A neighbour of it made worse in the test, as other writers do: the latitude and
/// longitude as signed rationals (exiftool -n: 35.658581, 139.745433).
#[test]
fn a_bad_gps_datestamp_costs_no_other_field() {
    let path = placed("gps_datestamp_with_time.jpg");
    let file = std::fs::read(&path).unwrap();
    // Big-endian entries: tag, type (5 rational, 10 signed rational, 2 ASCII), count.
    let patch = |bytes: &mut Vec<u8>, entry: &[u8], at: usize, with: &[u8]| {
        let found = bytes.windows(entry.len()).position(|w| w == entry).unwrap();
        bytes[found + at..found + at + with.len()].copy_from_slice(with);
    };
    let mut signed = file.clone();
    patch(&mut signed, b"\0\x02\0\x05\0\0\0\x03", 2, b"\0\x0a");
    patch(&mut signed, b"\0\x04\0\x05\0\0\0\x03", 2, b"\0\x0a");
    for (what, bytes) in [("as written", file), ("signed", signed)] {
        let f = mediadex::media::extract_from(&path, Some(&bytes));
        assert!(near(f.lat, 35.658581), "{what}: {f:?}");
        assert!(near(f.lon, 139.745433), "{what}: {f:?}");
        assert_eq!(f.make.as_deref(), Some("Canon"), "{what}");
        assert_eq!(
            f.model.as_deref(),
            Some("Canon PowerShot SX230 HS"),
            "{what}"
        );
        assert_eq!(
            f.taken_local.as_deref(),
            Some("2011-07-04T21:34:56"),
            "{what}"
        );
        assert_eq!((f.width, f.height), (Some(160), Some(107)), "{what}");
    }
}

/// Issue 26 finding 10, IFD0. exiftool 12.57 on ifd0_datetime_only.jpg: IFD0 ModifyDate
/// 2009:12:24 18:00:05, Make EPSON, no Exif IFD; on ifd0_datetimeoriginal.jpg: IFD0
/// DateTimeOriginal 2010:05:06 07:08:09 and IFD0 ModifyDate 2015:01:02 03:04:05.
#[test]
fn a_date_in_ifd0_dates_the_picture() {
    use mediadex::model::TakenAtSource;
    for (name, make, date) in [
        ("ifd0_datetime_only.jpg", "EPSON", "2009-12-24T18:00:05"),
        (
            "ifd0_datetimeoriginal.jpg",
            "SAMSUNG",
            "2010-05-06T07:08:09",
        ),
    ] {
        let f = extract(&placed(name));
        assert_eq!(f.error, None, "{name}");
        assert_eq!(f.make.as_deref(), Some(make), "{name}");
        assert_eq!(f.taken_local.as_deref(), Some(date), "{name}");
        assert_eq!(f.taken_at_source, Some(TakenAtSource::Exif), "{name}");
    }
}

/// Issue 26 finding 10, PNG text chunks. exiftool 12.57 on raw_profile_exif.png (tEXt "Raw
/// profile type exif"): Make Canon, Model Canon PowerShot A520, DateTimeOriginal 2006:07:08
/// 09:10:11, GPSLatitude 48 deg 51' 29.60" N, GPSLongitude 2 deg 17' 40.20" E. ImageMagick's
/// raw_profile_app1.png (zTXt "Raw profile type app1") holds the same profile, byte for byte
/// (exiftool reads only the key `APP1` spelled in capitals, so it shows this one as binary).
#[test]
fn exif_in_a_png_raw_profile_text_chunk_is_read() {
    use mediadex::model::TakenAtSource;
    for name in ["raw_profile_exif.png", "raw_profile_app1.png"] {
        let f = extract(&placed(name));
        assert_eq!(f.error, None, "{name}");
        assert_eq!((f.width, f.height), (Some(64), Some(43)), "{name}");
        assert_eq!(f.make.as_deref(), Some("Canon"), "{name}");
        assert_eq!(f.model.as_deref(), Some("Canon PowerShot A520"), "{name}");
        assert_eq!(
            f.taken_local.as_deref(),
            Some("2006-07-08T09:10:11"),
            "{name}"
        );
        assert_eq!(f.taken_at_source, Some(TakenAtSource::Exif), "{name}");
        assert!(
            near(f.lat, 48.0 + 51.0 / 60.0 + 29.60 / 3600.0),
            "{name}: {f:?}"
        );
        assert!(
            near(f.lon, 2.0 + 17.0 / 60.0 + 40.20 / 3600.0),
            "{name}: {f:?}"
        );
    }
}

/// Issue 26 finding 10, compressed XMP. exiftool 12.57 on xmp_ztxt.png (zTXt
/// "XML:com.adobe.xmp"): XMP-exif DateTimeOriginal 2012:04:05 06:07:08+02:00, XMP-tiff Make
/// FUJIFILM, Model FinePix X100.
#[test]
fn xmp_in_a_compressed_png_text_chunk_is_read() {
    use mediadex::model::TakenAtSource;
    let f = extract(&placed("xmp_ztxt.png"));
    assert_eq!(f.error, None);
    assert_eq!(f.make.as_deref(), Some("FUJIFILM"));
    assert_eq!(f.model.as_deref(), Some("FinePix X100"));
    assert_eq!(f.taken_local.as_deref(), Some("2012-04-05T06:07:08"));
    assert_eq!(f.taken_offset_minutes, Some(120));
    assert_eq!(f.taken_at_source, Some(TakenAtSource::Xmp));
}

/// Issue 26 finding 10, an image sequence's movie header. exiftool 12.57 on animated.avif
/// (brand avis): ImageSize 64x64, QuickTime CreateDate 2021:08:14 10:00:00 (UTC).
#[test]
fn an_animated_avif_is_dated_by_its_movie_header() {
    use mediadex::model::TakenAtSource;
    let f = extract(&placed("animated.avif"));
    assert_eq!(f.error, None);
    assert_eq!(f.mime.as_deref(), Some("image/avif"));
    assert_eq!((f.width, f.height), (Some(64), Some(64)));
    assert_eq!(f.taken_local.as_deref(), Some("2021-08-14T10:00:00"));
    assert_eq!(f.taken_offset_minutes, Some(0));
    assert_eq!(f.taken_at_source, Some(TakenAtSource::Quicktime));
}

/// Issue 26 finding 1: a 135 KB Exif item (a phone's maker note), over kamadak-exif 0.6.2's
/// 131,070-byte cap, in two extents (scripts/heif-fixtures.py). exiftool 12.57: Make Xiaomi,
/// Model "Big Exif", DateTimeOriginal 2023:07:14 18:22:05, OffsetTimeOriginal +02:00,
/// GPSPosition 48 deg 51' 29.60" N, 2 deg 17' 40.20" E.
#[test]
fn a_heifs_exif_item_over_128_kib_is_read_whole() {
    let f = extract(&heif_fixture("heif_big_exif.heic"));
    assert_eq!(f.error, None);
    assert_eq!(f.make.as_deref(), Some("Xiaomi"));
    assert_eq!(f.model.as_deref(), Some("Big Exif"));
    let taken = f.taken_at();
    assert_eq!(taken.as_deref(), Some("2023-07-14T18:22:05+02:00"));
    assert!(
        near(f.lat, 48.0 + 51.0 / 60.0 + 29.6 / 3600.0),
        "{:?}",
        f.lat
    );
    assert!(
        near(f.lon, 2.0 + 17.0 / 60.0 + 40.2 / 3600.0),
        "{:?}",
        f.lon
    );
}

/// Issue 26 finding 2: the primary item's Exif (in `idat`) comes first in `iinf`, a second
/// image's Exif (in `mdat`) last, 2 s later and elsewhere. libheif 1.15's heif-convert keeps
/// the primary's in its JPEG (exiftool on it: Model "Primary", 2019:06:01 12:00:00 -07:00,
/// 37 deg 20' 5.64" N, 122 deg 0' 32.40" W); exiftool 12.57 on the HEIC itself, like
/// kamadak-exif, reports the last one ("Other").
#[test]
fn a_heif_with_two_exif_items_reports_its_primary_items() {
    let f = extract(&heif_fixture("heif_two_exif.heic"));
    assert_eq!(f.error, None);
    assert_eq!(f.model.as_deref(), Some("Primary"));
    let taken = f.taken_at();
    assert_eq!(taken.as_deref(), Some("2019-06-01T12:00:00-07:00"));
    assert!(
        near(f.lat, 37.0 + 20.0 / 60.0 + 5.64 / 3600.0),
        "{:?}",
        f.lat
    );
    assert!(near(f.lon, -(122.0 + 32.4 / 3600.0)), "{:?}", f.lon);
}

/// Issue 26 finding 3: `irot` associated before `pixi` and `ispe` (a Sony ILCE-7M4 portrait
/// HIF's order). libheif 1.15's heif-convert decodes it to 540x405 (its heif-info, walking
/// the properties in association order, says 405x540).
#[test]
fn a_heif_turned_before_its_size_is_indexed_turned() {
    let f = extract(&heif_fixture("heif_irot_first.heic"));
    assert_eq!(f.error, None);
    assert_eq!((f.width, f.height), (Some(540), Some(405)));
    assert_eq!((f.display_width, f.display_height), (Some(540), Some(405)));
}

/// Issue 26 finding 10: a HEIF's XMP item (`mime`, application/rdf+xml, `cdsc` to the
/// primary item), written by exiftool 12.57, whose reading of it is: Title "Eileen Collins",
/// Make NASA, Model "Hasselblad 500 EL/M", CreateDate 2021:08:14 10:20:30+02:00, Rating 4.
#[test]
fn a_heifs_xmp_item_gives_its_date_camera_rating_and_title() {
    use mediadex::model::TakenAtSource;
    let f = extract(&heif_fixture("heif_xmp.heic"));
    assert_eq!(f.error, None);
    assert_eq!(f.make.as_deref(), Some("NASA"));
    assert_eq!(f.model.as_deref(), Some("Hasselblad 500 EL/M"));
    let taken = f.taken_at();
    assert_eq!(taken.as_deref(), Some("2021-08-14T10:20:30+02:00"));
    assert_eq!(f.taken_at_source, Some(TakenAtSource::Xmp));
    assert_eq!(f.notes.rating, Some(4));
    assert_eq!(f.notes.title.as_deref(), Some("Eileen Collins"));
}
