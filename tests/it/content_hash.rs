//! The content hash (scheme 1) on real encoded pictures and through the built binary:
//! metadata inserted by hand keeps it, a pixel change changes it, truncated and malformed
//! files fall back to the whole-file hash; a scan stamps it, `duplicates` reports both kinds
//! of twins, `walk content-hash` re-stamps under a new scheme and `status` shows the walk.
//! The exiftool comparison is an ignored (extended) test: it skips loudly without exiftool.

use assert_cmd::cargo::cargo_bin_cmd;
use image::{ImageFormat, Rgb, RgbImage};
use mediadex::media::content_hash::{content_hash, hash_file};
use serde_json::Value;
use std::io::Cursor;
use std::path::Path;

fn picture(seed: u8) -> RgbImage {
    RgbImage::from_fn(64, 48, |x, y| {
        Rgb([(x * 4) as u8 ^ seed, (y * 5) as u8, seed.wrapping_mul(7)])
    })
}

fn encode(img: &RgbImage, format: ImageFormat) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, format).expect("encode");
    out.into_inner()
}

fn whole(bytes: &[u8]) -> [u8; 32] {
    *blake3::hash(bytes).as_bytes()
}

/// Inserts an APP1 (EXIF-like) and a COM segment right after SOI.
fn with_jpeg_metadata(jpeg: &[u8], text: &str) -> Vec<u8> {
    let seg = |marker: u8, payload: &[u8]| {
        let mut s = vec![0xFF, marker];
        s.extend_from_slice(&((payload.len() + 2) as u16).to_be_bytes());
        s.extend_from_slice(payload);
        s
    };
    let mut out = jpeg[..2].to_vec();
    out.extend(seg(0xE1, format!("Exif\0\0{text}").as_bytes()));
    out.extend(seg(0xFE, text.as_bytes()));
    out.extend_from_slice(&jpeg[2..]);
    out
}

/// Inserts a tEXt and a tIME chunk after IHDR (8-byte signature + 25-byte IHDR chunk).
fn with_png_metadata(png: &[u8], text: &str) -> Vec<u8> {
    let chunk = |kind: &[u8], data: &[u8]| {
        let mut c = (data.len() as u32).to_be_bytes().to_vec();
        c.extend_from_slice(kind);
        c.extend_from_slice(data);
        c.extend_from_slice(&[0, 0, 0, 0]);
        c
    };
    let mut out = png[..33].to_vec();
    out.extend(chunk(b"tEXt", format!("Comment\0{text}").as_bytes()));
    out.extend(chunk(b"tIME", &[7, 234, 11, 29, 12, 0, 0]));
    out.extend_from_slice(&png[33..]);
    out
}

#[test]
fn jpeg_metadata_keeps_the_content_hash_and_pixels_change_it() {
    let a = encode(&picture(1), ImageFormat::Jpeg);
    let tagged = with_jpeg_metadata(&a, "edited by hand");
    assert_ne!(whole(&a), whole(&tagged));
    assert_eq!(content_hash(&a), content_hash(&tagged));
    assert_ne!(content_hash(&a), whole(&a), "the JFIF APP0 is not essence");
    let b = encode(&picture(2), ImageFormat::Jpeg);
    assert_ne!(content_hash(&a), content_hash(&b));
    // A motion photo: the appended video is part of the identity.
    let mut motion = tagged.clone();
    motion.extend_from_slice(b"....ftypmp42 video bytes");
    assert_ne!(content_hash(&motion), content_hash(&tagged));
}

#[test]
fn png_metadata_keeps_the_content_hash_and_pixels_change_it() {
    let a = encode(&picture(1), ImageFormat::Png);
    let tagged = with_png_metadata(&a, "edited");
    assert_ne!(whole(&a), whole(&tagged));
    assert_eq!(content_hash(&a), content_hash(&tagged));
    let b = encode(&picture(3), ImageFormat::Png);
    assert_ne!(content_hash(&a), content_hash(&b));
}

#[test]
fn truncated_and_malformed_pictures_fall_back_to_the_whole_file() {
    let jpeg = with_jpeg_metadata(&encode(&picture(1), ImageFormat::Jpeg), "x");
    let png = with_png_metadata(&encode(&picture(1), ImageFormat::Png), "x");
    for file in [&jpeg, &png] {
        for cut in [file.len() * 2 / 5, 1500.min(file.len() - 1), file.len() - 1] {
            let part = &file[..cut];
            assert_eq!(content_hash(part), whole(part), "cut at {cut}");
        }
    }
    let mut bad = jpeg.clone();
    bad[4] = 0xFF; // the APP1 length now runs past the end
    bad[5] = 0xFF;
    assert_eq!(content_hash(&bad), whole(&bad));
    let mut bad = png.clone();
    bad[33] = 0x7F; // a chunk length far past the end
    assert_eq!(content_hash(&bad), whole(&bad));
}

fn mediadex(data: &Path, args: &[&str], envs: &[(&str, &str)]) -> std::process::Output {
    let mut c = cargo_bin_cmd!("mediadex");
    c.env_remove("MEDIADEX_DATA")
        .env_remove("MEDIADEX_CONTENT_HASH_SCHEME")
        .env("RUST_LOG", "warn")
        .arg("--data")
        .arg(data)
        .args(args);
    for (k, v) in envs {
        c.env(k, v);
    }
    c.output().expect("run mediadex")
}

fn ok_json(data: &Path, args: &[&str], envs: &[(&str, &str)]) -> (Value, String) {
    let out = mediadex(data, args, envs);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?}: {stderr}");
    let value = serde_json::from_slice(&out.stdout).expect("one JSON value");
    (value, stderr)
}

#[test]
fn a_scan_stamps_content_hashes_and_duplicates_reports_both_kinds_of_twins() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (data, lib) = (tmp.path().join("data"), tmp.path().join("lib"));
    std::fs::create_dir_all(&lib).expect("mkdir");
    let original = encode(&picture(5), ImageFormat::Jpeg);
    std::fs::write(lib.join("a.jpg"), &original).expect("write");
    std::fs::write(lib.join("a copy.jpg"), &original).expect("write");
    std::fs::write(
        lib.join("a edited.jpg"),
        with_jpeg_metadata(&original, "new"),
    )
    .expect("w");
    std::fs::write(lib.join("b.png"), encode(&picture(6), ImageFormat::Png)).expect("write");
    let lib_arg = lib.to_string_lossy().into_owned();
    ok_json(&data, &["library", "add", &lib_arg, "--json"], &[]);
    ok_json(&data, &["scan", "--wait", "--json"], &[]);

    let (assets, _) = ok_json(&data, &["assets", "--json"], &[]);
    let assets = assets.as_array().expect("array");
    assert_eq!(assets.len(), 3);
    for a in assets {
        assert_eq!(a["content_hash_scheme"], 1, "{a}");
        assert_eq!(a["faces"], Value::Array(vec![]));
        let path = lib.join(a["paths"][0].as_str().expect("path"));
        let expected = hash_file(&path).expect("hash").content_hash;
        assert_eq!(a["content_hash"], mediadex::model::hex(&expected));
    }
    let (groups, _) = ok_json(&data, &["duplicates", "--json"], &[]);
    let kinds: Vec<&str> = groups
        .as_array()
        .expect("array")
        .iter()
        .map(|g| g["kind"].as_str().expect("kind"))
        .collect();
    assert_eq!(kinds, ["identical", "same_content"], "{groups}");
    let twins = &groups[1];
    assert_eq!(twins["assets"].as_array().expect("assets").len(), 2);
    let mut paths: Vec<&str> = twins["paths"]
        .as_array()
        .expect("paths")
        .iter()
        .map(|p| p.as_str().expect("path"))
        .collect();
    paths.sort();
    assert_eq!(paths, ["a copy.jpg", "a edited.jpg", "a.jpg"]);
}

#[test]
fn walk_content_hash_restamps_under_a_new_scheme_and_status_shows_it_and_a_rollback() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (data, lib) = (tmp.path().join("data"), tmp.path().join("lib"));
    std::fs::create_dir_all(&lib).expect("mkdir");
    for i in 0..5u8 {
        let file = lib.join(format!("p{i}.jpg"));
        std::fs::write(file, encode(&picture(i), ImageFormat::Jpeg)).expect("write");
    }
    let lib_arg = lib.to_string_lossy().into_owned();
    ok_json(&data, &["library", "add", &lib_arg, "--json"], &[]);
    ok_json(&data, &["scan", "--wait", "--json"], &[]);
    let two = [("MEDIADEX_CONTENT_HASH_SCHEME", "2")];
    let (walk, _) = ok_json(&data, &["walk", "content-hash", "--wait", "--json"], &two);
    assert_eq!(walk["kind"], "content-hash");
    assert_eq!(
        (walk["current_scheme"].clone(), walk["scheme"].clone()),
        (2.into(), 2.into())
    );
    assert_eq!(walk["chain"], Value::Null);
    let (assets, _) = ok_json(&data, &["assets", "--json"], &two);
    for a in assets.as_array().expect("array") {
        assert_eq!(a["content_hash_scheme"], 2, "{a}");
        let path = lib.join(a["paths"][0].as_str().expect("path"));
        let expected = hash_file(&path).expect("hash").content_hash;
        assert_eq!(a["content_hash"], mediadex::model::hex(&expected));
    }
    let (status, _) = ok_json(&data, &["status", "--json"], &two);
    assert_eq!(status["walks"]["content-hash"]["scheme"], 2);
    assert_eq!(status["walks"]["content-hash"]["rollback"], false);

    // Back to this binary's scheme 1: a rollback, said on stderr and in the status.
    let (walk, stderr) = ok_json(&data, &["walk", "content-hash", "--json"], &[]);
    assert!(stderr.contains("ROLLBACK"), "{stderr}");
    assert_eq!(
        (walk["scheme"].clone(), walk["seen"].clone()),
        (1.into(), 2.into())
    );
    assert_eq!(walk["rollback"], true);
    assert_eq!(walk["chain"]["state"], "queued");
    assert_eq!(walk["chain"]["left"], 5);
    let (status, _) = ok_json(&data, &["status", "--json"], &[]);
    assert_eq!(status["walks"]["content-hash"]["rollback"], true);

    // This build carries RetinaFace: the face walk runs to the end and stamps every picture.
    let (walk, _) = ok_json(&data, &["walk", "faces", "--wait", "--json"], &[]);
    assert_eq!(walk["kind"], "faces");
    assert_eq!(walk["scheme"], mediadex::faces::SCHEME);
    assert_eq!(walk["chain"], Value::Null);
}

/// Run by `scripts/corpus-tier.sh`, which installs exiftool.
#[test]
#[ignore = "needs exiftool"]
fn an_exiftool_metadata_edit_keeps_the_content_hash_and_a_pixel_change_does_not() {
    std::process::Command::new("exiftool")
        .arg("-ver")
        .output()
        .expect("exiftool is installed (apt-get install libimage-exiftool-perl)");
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, format) in [("p.jpg", ImageFormat::Jpeg), ("p.png", ImageFormat::Png)] {
        let path = dir.path().join(name);
        std::fs::write(&path, encode(&picture(9), format)).expect("write");
        let before = hash_file(&path).expect("hash");
        let edited = std::process::Command::new("exiftool")
            .args([
                "-q",
                "-overwrite_original",
                "-Artist=Someone Else",
                "-DateTimeOriginal=2001:02:03 04:05:06",
                "-XMP:Title=edited",
                "-Comment=a comment",
            ])
            .arg(&path)
            .status()
            .expect("exiftool");
        assert!(edited.success());
        let after = hash_file(&path).expect("hash");
        assert_ne!(
            before.checksum, after.checksum,
            "{name}: exiftool changed nothing"
        );
        assert_eq!(before.content_hash, after.content_hash, "{name}");
        std::fs::write(&path, encode(&picture(10), format)).expect("write");
        assert_ne!(
            hash_file(&path).expect("hash").content_hash,
            after.content_hash
        );
    }
}
