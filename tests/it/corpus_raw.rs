//! Extended tier (issue 15 item 2): camera RAWs of the make-corpus extras (roles `raw` and
//! `raw_pair`) against exiftool (`-json -n -G1`): MIME type, make, model, raw size
//! (Composite:ImageSize, the full-resolution IFD's), orientation, the date with its offset
//! (Composite:SubSecDateTimeOriginal) and GPS; each gets a real JPEG thumbnail; and a scan
//! shows the RAW+JPEG pair as one stack. Run with `MEDIADEX_CORPUS=/path/to/lib cargo test
//! --test it corpus_raw:: -- --ignored --nocapture` on a library built with `--extras`.
//! Prints a role/field -> agree table and fails on any disagreement.

use mediadex::media::extract;
use mediadex::model::MediaKind;
use mediadex::thumbs::{Source, Thumbs};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn exiftool(path: &Path) -> Map<String, Value> {
    crate::support::corpus::exiftool(path, &["-n", "-G1"])
}

fn text(tags: &Map<String, Value>, key: &str) -> Option<String> {
    tags.get(key).map(|v| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// The RAW files of the two roles, from the manifest beside the library.
fn raws(lib: &Path) -> Vec<(String, String)> {
    use crate::support::corpus::{col, manifest_rows};
    manifest_rows(lib)
        .iter()
        .filter_map(|c| Some((col(c, 0)?, col(c, 1)?)))
        .filter(|(path, role)| {
            (role == "raw" || role == "raw_pair") && !path.to_ascii_lowercase().ends_with(".jpg")
        })
        .collect()
}

/// exiftool's `YYYY:MM:DD HH:MM:SS[.ff]±HH:MM` as `taken_at` gives it.
fn iso(exif: &str) -> String {
    let mut s = exif.replacen(':', "-", 2);
    s.replace_range(10..11, "T");
    s
}

fn lib() -> PathBuf {
    let lib = std::env::var_os("MEDIADEX_CORPUS").expect("MEDIADEX_CORPUS");
    std::fs::canonicalize(lib).expect("corpus dir")
}

#[test]
#[ignore = "needs MEDIADEX_CORPUS (a make-corpus --extras library) and exiftool; see scripts/corpus-tier.sh"]
fn raw_files_agree_with_exiftool_and_get_real_thumbnails() {
    let lib = lib();
    let files = raws(&lib);
    assert!(files.len() >= 3, "a corpus without --extras: {files:?}");
    let mut table: BTreeMap<(String, &str), (u32, Vec<String>)> = BTreeMap::new();
    let data = tempfile::tempdir().unwrap();
    let thumbs = Thumbs::with_ffmpeg(data.path(), None);
    for (n, (rel, role)) in files.iter().enumerate() {
        let path = lib.join(rel);
        let f = extract(&path);
        let x = exiftool(&path);
        let lat = |v: Option<f64>| v.map(|d| format!("{d:.5}"));
        let num = |k: &str| x.get(k).and_then(Value::as_f64);
        let size = f.width.zip(f.height).map(|(w, h)| format!("{w} {h}"));
        let date = text(&x, "Composite:SubSecDateTimeOriginal").map(|d| iso(&d));
        let thumb = thumbs
            .get(
                &Source {
                    checksum_hex: &format!("{n:04x}"),
                    kind: f.kind,
                    mime: f.mime.as_deref(),
                    orientation: f.orientation,
                    pixels: None,
                },
                &path,
            )
            .expect("thumbnail");
        let jpeg = (thumb.content_type == "image/jpeg")
            .then(|| image::load_from_memory(&thumb.bytes).ok())
            .flatten()
            .map(|img| {
                let (w, h) = (img.width(), img.height());
                // Upright: as wide or as tall as the display size says.
                let d = (f.display_width.unwrap_or(0), f.display_height.unwrap_or(0));
                ((w >= h) == (d.0 >= d.1)).to_string()
            });
        let rows: [(&str, Option<String>, Option<String>); 9] = [
            (
                "kind",
                f.kind.map(|k| k.as_str().into()),
                Some(MediaKind::Image.as_str().into()),
            ),
            ("mime", f.mime.clone(), text(&x, "File:MIMEType")),
            ("make", f.make.clone(), text(&x, "IFD0:Make")),
            ("model", f.model.clone(), text(&x, "IFD0:Model")),
            ("size", size, text(&x, "Composite:ImageSize")),
            (
                "orientation",
                f.orientation.map(|o| o.to_string()),
                text(&x, "IFD0:Orientation"),
            ),
            ("taken_at", f.taken_at(), date),
            (
                "lat,lon",
                lat(f.lat).zip(lat(f.lon)).map(|(a, b)| format!("{a},{b}")),
                lat(num("Composite:GPSLatitude"))
                    .zip(lat(num("Composite:GPSLongitude")))
                    .map(|(a, b)| format!("{a},{b}")),
            ),
            ("upright JPEG thumbnail", jpeg, Some("true".into())),
        ];
        for (field, ours, oracle) in rows {
            let entry = table.entry((role.clone(), field)).or_default();
            if ours == oracle {
                entry.0 += 1;
            } else {
                entry
                    .1
                    .push(format!("{rel}: ours {ours:?}, exiftool {oracle:?}"));
            }
        }
    }
    let mut bad = Vec::new();
    println!("{:<10} {:<24} agree/compared", "role", "field");
    for ((role, field), (agree, dis)) in &table {
        println!(
            "{role:<10} {field:<24} {agree}/{}",
            *agree as usize + dis.len()
        );
        bad.extend(dis.iter().cloned());
    }
    assert!(bad.is_empty(), "disagreements:\n{}", bad.join("\n"));
}

/// The `raw_pair` role: the corpus's DNG and JPEG of one name and second, scanned, are one
/// stack: the JPEG listed with both files, the DNG its own asset behind it.
#[test]
#[ignore = "needs MEDIADEX_CORPUS (a make-corpus --extras library); see scripts/corpus-tier.sh"]
fn the_raw_pair_is_one_stack() {
    let lib = lib();
    let pairs: Vec<String> = raws(&lib)
        .into_iter()
        .filter(|(_, role)| role == "raw_pair")
        .map(|(path, _)| path)
        .collect();
    assert!(!pairs.is_empty(), "a corpus without --extras");
    let env = crate::support::env();
    let library =
        mediadex::app::add_library(&env.store, "corpus", &lib.to_string_lossy()).expect("add");
    for raw in &pairs {
        let dir = Path::new(raw)
            .parent()
            .expect("a folder")
            .to_string_lossy()
            .into_owned();
        crate::support::scan_now(&env, library.id, &dir);
        let listed = env.store.assets(false).expect("assets");
        let shown: Vec<_> = listed
            .iter()
            .filter(|a| a.stack.iter().any(|m| &m.rel_path_text == raw))
            .collect();
        assert_eq!(
            shown.len(),
            1,
            "{raw}: one listed asset names it: {listed:#?}"
        );
        let members: Vec<(&str, bool)> = shown[0]
            .stack
            .iter()
            .map(|m| (m.rel_path_text.as_str(), m.primary))
            .collect();
        let jpeg = format!("{}.JPG", raw.trim_end_matches(".DNG"));
        assert_eq!(
            members,
            [(jpeg.as_str(), true), (raw.as_str(), false)],
            "{raw}"
        );
        assert!(
            listed
                .iter()
                .all(|a| a.paths.iter().all(|p| &p.rel_path_text != raw)),
            "{raw}: left out"
        );
        println!("raw_pair {raw}: one stack with {jpeg}");
    }
}
