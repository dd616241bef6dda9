//! Extended tier (issue 15 items 4 and 5): `media::sidecar` and `media::takeout` against
//! exiftool on the make-corpus extras (`Extras/Sidecars`, role `sidecar`; `Extras/Takeout`,
//! role `takeout_json`). Run with `MEDIADEX_CORPUS=/path/to/lib cargo test --test it
//! corpus_sidecars:: -- --ignored --nocapture` on a library built with `--extras`. exiftool
//! (`-json -n -G1`, which reads .xmp and .json files directly) is the oracle; the table of
//! field -> agree/disagree is printed per role, and any disagreement fails.

use mediadex::media::{sidecar, takeout};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const COORD_EPS: f64 = 1e-5;

#[derive(Default)]
struct Tally {
    agree: usize,
    disagree: Vec<String>,
    neither: usize,
}

type Table = BTreeMap<(&'static str, &'static str), Tally>;

fn exiftool(path: &Path) -> Map<String, Value> {
    crate::support::corpus::exiftool(path, &["-n", "-G1"])
}

/// A tag's value as text items (a list tag, or one scalar).
fn texts(tags: &Map<String, Value>, key: &str) -> Vec<String> {
    let one = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match tags.get(key) {
        Some(Value::Array(items)) => items.iter().map(one).collect(),
        Some(v) => vec![one(v)],
        None => vec![],
    }
}

fn text(tags: &Map<String, Value>, key: &str) -> Option<String> {
    texts(tags, key)
        .into_iter()
        .next()
        .filter(|t| !t.is_empty())
}

/// exiftool's `YYYY:MM:DD HH:MM:SS[.ff][±HH:MM]` in the model's `YYYY-MM-DDTHH:MM:SS` form.
fn iso(exif: &str) -> String {
    let mut s = exif.replacen(':', "-", 2);
    s.replace_range(10..11, "T");
    s
}

fn record(
    table: &mut Table,
    role: &'static str,
    field: &'static str,
    file: &str,
    pair: (Option<String>, Option<String>),
) {
    let tally = table.entry((role, field)).or_default();
    match pair {
        (None, None) => tally.neither += 1,
        (a, b) if a == b => tally.agree += 1,
        (ours, oracle) => tally
            .disagree
            .push(format!("{file}: ours {ours:?}, exiftool {oracle:?}")),
    }
}

fn coord(ours: Option<f64>, oracle: Option<f64>) -> (Option<String>, Option<String>) {
    match (ours, oracle) {
        (Some(a), Some(b)) if (a - b).abs() < COORD_EPS => {
            (Some(b.to_string()), Some(b.to_string()))
        }
        (a, b) => (a.map(|v| v.to_string()), b.map(|v| v.to_string())),
    }
}

fn files_in(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case(ext)))
        .collect();
    found.sort();
    found
}

fn siblings(path: &Path) -> Vec<String> {
    let dir = path.parent().expect("a folder");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read the folder")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

fn name(path: &Path) -> String {
    path.file_name()
        .expect("a name")
        .to_string_lossy()
        .into_owned()
}

fn check_sidecar(table: &mut Table, path: &Path) {
    const ROLE: &str = "sidecar";
    let file = name(path);
    let tags = exiftool(path);
    let facts = sidecar::parse(&std::fs::read(path).expect("read")).expect("a sidecar parses");
    let mut oracle_tags = texts(&tags, "XMP-dc:Subject");
    for t in texts(&tags, "XMP-lr:HierarchicalSubject") {
        if !oracle_tags.contains(&t) {
            oracle_tags.push(t);
        }
    }
    let joined = |t: Vec<String>| (!t.is_empty()).then(|| t.join(" / "));
    let date = [
        "XMP-exif:DateTimeOriginal",
        "XMP-xmp:CreateDate",
        "XMP-photoshop:DateCreated",
    ]
    .iter()
    .find_map(|k| text(&tags, k));
    let ours_date = facts
        .taken_local
        .clone()
        .map(|local| match facts.taken_offset_minutes {
            Some(m) => format!(
                "{local}{}{:02}:{:02}",
                if m < 0 { '-' } else { '+' },
                m.abs() / 60,
                m.abs() % 60
            ),
            None => local,
        });
    let number = |k: &str| tags.get(k).and_then(Value::as_f64);
    let rows = [
        (
            "rating",
            (
                facts.rating.map(|r| r.to_string()),
                text(&tags, "XMP-xmp:Rating"),
            ),
        ),
        ("tags", (joined(facts.tags.clone()), joined(oracle_tags))),
        ("title", (facts.title.clone(), text(&tags, "XMP-dc:Title"))),
        (
            "description",
            (facts.description.clone(), text(&tags, "XMP-dc:Description")),
        ),
        ("date", (ours_date, date.as_deref().map(iso))),
        ("latitude", coord(facts.lat, number("XMP-exif:GPSLatitude"))),
        (
            "longitude",
            coord(facts.lon, number("XMP-exif:GPSLongitude")),
        ),
    ];
    for (field, pair) in rows {
        record(table, ROLE, field, &file, pair);
    }
    // The pairing's oracle is the corpus README: each sidecar belongs to the one photo in
    // its folder whose name it starts with its stem.
    let names = siblings(path);
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let stem = file.split('.').next().expect("a stem");
    let photo = names
        .iter()
        .find(|n| n.starts_with(stem) && !sidecar::is_sidecar(n))
        .cloned();
    let ours = photo
        .as_deref()
        .and_then(|p| sidecar::sidecar_of(p, &refs))
        .map(String::from);
    record(
        table,
        ROLE,
        "photo's sidecar",
        &file,
        (ours, Some(file.clone())),
    );
}

fn check_takeout(table: &mut Table, path: &Path) {
    const ROLE: &str = "takeout_json";
    let file = name(path);
    let tags = exiftool(path);
    let facts = takeout::parse(&std::fs::read(path).expect("read")).expect("a JSON parses");
    let number = |k: &str| tags.get(k).and_then(Value::as_f64);
    // Takeout's 0.0/0.0 is "no place": the oracle's raw numbers with that rule applied.
    let place = match (
        number("JSON:GeoDataLatitude"),
        number("JSON:GeoDataLongitude"),
    ) {
        (Some(a), Some(b)) if (a, b) != (0.0, 0.0) => (Some(a), Some(b)),
        _ => (None, None),
    };
    let rows = [
        (
            "taken (UTC seconds)",
            (
                facts.taken_utc.map(|s| s.to_string()),
                text(&tags, "JSON:PhotoTakenTimeTimestamp"),
            ),
        ),
        ("latitude", coord(facts.lat, place.0)),
        ("longitude", coord(facts.lon, place.1)),
        ("title", (facts.title.clone(), text(&tags, "JSON:Title"))),
        (
            "description",
            (facts.description.clone(), text(&tags, "JSON:Description")),
        ),
    ];
    for (field, pair) in rows {
        record(table, ROLE, field, &file, pair);
    }
    // Takeout's title is its photo's file name: the naming rule must find that photo.
    let names = siblings(path);
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let ours = takeout::photo_for_json(&file, &refs).map(String::from);
    record(
        table,
        ROLE,
        "photo (title)",
        &file,
        (ours, text(&tags, "JSON:Title")),
    );
}

#[test]
#[ignore = "needs MEDIADEX_CORPUS (a make-corpus --extras library) and exiftool; see scripts/corpus-tier.sh"]
fn sidecars_and_takeout_json_agree_with_exiftool() {
    let root = PathBuf::from(std::env::var_os("MEDIADEX_CORPUS").expect("set MEDIADEX_CORPUS"));
    let sidecars = files_in(&root.join("Extras/Sidecars"), "xmp");
    let jsons = files_in(&root.join("Extras/Takeout"), "json");
    assert!(
        !sidecars.is_empty() && !jsons.is_empty(),
        "no extras under {}: build it with --extras",
        root.display()
    );
    let mut table = Table::new();
    sidecars.iter().for_each(|p| check_sidecar(&mut table, p));
    jsons.iter().for_each(|p| check_takeout(&mut table, p));

    println!(
        "{:<14} {:<20} {:>6} {:>9} {:>8}",
        "role", "field", "agree", "disagree", "neither"
    );
    let mut wrong = Vec::new();
    for ((role, field), t) in &table {
        println!(
            "{role:<14} {field:<20} {:>6} {:>9} {:>8}",
            t.agree,
            t.disagree.len(),
            t.neither
        );
        wrong.extend(t.disagree.iter().map(|d| format!("{role} {field}: {d}")));
    }
    assert!(
        wrong.is_empty(),
        "disagreements with exiftool:\n{}",
        wrong.join("\n")
    );
}

/// What exiftool reads of the photo itself (its own date as `taken_at` shows one, its own
/// place), to know which of the sidecar's or JSON's date and place the scan must take.
fn own_date_and_place(photo: &Path) -> (Option<String>, Option<(f64, f64)>) {
    let tags = crate::corpus_metadata::exiftool(photo).expect("exiftool reads the photo");
    let date = crate::corpus_metadata::oracle_taken(&tags).map(|(local, offset, _)| {
        mediadex::model::MediaFacts {
            taken_local: Some(local),
            taken_offset_minutes: offset.and_then(|m| i32::try_from(m).ok()),
            ..Default::default()
        }
        .taken_at()
        .unwrap_or_default()
    });
    let number = |k: &str| tags.get(k).and_then(Value::as_f64);
    let place = number("Composite:GPSLatitude").zip(number("Composite:GPSLongitude"));
    (date, place)
}

fn at_offset(local: &str, offset: Option<&str>) -> String {
    format!("{local}{}", offset.unwrap_or(""))
}

/// One scanned photo against exiftool's reading of the file beside it (`xmp` or `json`) and
/// of the photo itself: the notes always, the date and the place only where the photo has
/// none of its own.
fn check_scanned(
    table: &mut Table,
    role: &'static str,
    a: &mediadex::model::Asset,
    lib: &Path,
    beside: &Path,
) {
    let file = name(beside);
    let photo = support_path(lib, a);
    let (own_date, own_place) = own_date_and_place(&photo);
    let tags = exiftool(beside);
    let f = &a.facts;
    let number = |k: &str| tags.get(k).and_then(Value::as_f64);
    let (date, place, description) = if role == "sidecar" {
        let date = [
            "XMP-exif:DateTimeOriginal",
            "XMP-xmp:CreateDate",
            "XMP-photoshop:DateCreated",
        ]
        .iter()
        .find_map(|k| text(&tags, k))
        .map(|d| {
            let d = iso(&d);
            let (local, offset) = d.split_at(d.len().min(19));
            at_offset(local, Some(offset).filter(|o| !o.is_empty()))
        });
        let mut oracle_tags = texts(&tags, "XMP-dc:Subject");
        for t in texts(&tags, "XMP-lr:HierarchicalSubject") {
            if !oracle_tags.iter().any(|o| o.eq_ignore_ascii_case(&t)) {
                oracle_tags.push(t);
            }
        }
        let joined = |t: &[String]| (!t.is_empty()).then(|| t.join(" / "));
        record(
            table,
            role,
            "scan: rating",
            &file,
            (
                f.notes.rating.map(|r| r.to_string()),
                text(&tags, "XMP-xmp:Rating"),
            ),
        );
        record(
            table,
            role,
            "scan: tags",
            &file,
            (joined(&f.notes.tags), joined(&oracle_tags)),
        );
        record(
            table,
            role,
            "scan: title",
            &file,
            (f.notes.title.clone(), text(&tags, "XMP-dc:Title")),
        );
        let place = number("XMP-exif:GPSLatitude").zip(number("XMP-exif:GPSLongitude"));
        (date, place, text(&tags, "XMP-dc:Description"))
    } else {
        let date = text(&tags, "JSON:PhotoTakenTimeTimestamp")
            .and_then(|s| s.parse::<i64>().ok())
            .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
            .map(|t| t.format("%Y-%m-%dT%H:%M:%S+00:00").to_string());
        let place = number("JSON:GeoDataLatitude")
            .zip(number("JSON:GeoDataLongitude"))
            .filter(|p| *p != (0.0, 0.0));
        (date, place, text(&tags, "JSON:Description"))
    };
    record(
        table,
        role,
        "scan: description",
        &file,
        (f.notes.description.clone(), description),
    );
    let want_date = own_date.or(date);
    record(table, role, "scan: date", &file, (f.taken_at(), want_date));
    let want_place = own_place.or(place);
    record(
        table,
        role,
        "scan: latitude",
        &file,
        coord(f.lat, want_place.map(|p| p.0)),
    );
    record(
        table,
        role,
        "scan: longitude",
        &file,
        coord(f.lon, want_place.map(|p| p.1)),
    );
}

fn support_path(lib: &Path, a: &mediadex::model::Asset) -> PathBuf {
    crate::support::join_bytes(lib, &a.paths[0].rel_path)
}

#[test]
#[ignore = "needs MEDIADEX_CORPUS (a make-corpus --extras library) and exiftool; see scripts/corpus-tier.sh"]
fn a_scan_gives_each_photo_what_its_sidecar_or_json_says_as_exiftool_reads_it() {
    let root = PathBuf::from(std::env::var_os("MEDIADEX_CORPUS").expect("set MEDIADEX_CORPUS"));
    let lib = std::fs::canonicalize(root.join("Extras")).expect("an --extras library");
    let env = crate::support::env();
    let library =
        mediadex::app::add_library(&env.store, "extras", &lib.to_string_lossy()).expect("add");
    crate::support::scan_now(&env, library.id, "");
    let assets = env.store.assets(false).expect("assets");
    let by_path = |p: &Path| {
        let rel = p
            .strip_prefix(&lib)
            .expect("inside")
            .to_string_lossy()
            .into_owned();
        assets
            .iter()
            .find(|a| a.paths.iter().any(|f| f.rel_path_text == rel))
            .unwrap_or_else(|| panic!("no asset for {rel}"))
    };
    let mut table = Table::new();
    let mut pairs = 0;
    for xmp in files_in(&lib.join("Sidecars"), "xmp") {
        let names = siblings(&xmp);
        let file = name(&xmp);
        let stem = file.split('.').next().expect("a stem");
        let photo = names
            .iter()
            .find(|n| n.starts_with(stem) && !sidecar::is_sidecar(n))
            .expect("its photo");
        check_scanned(
            &mut table,
            "sidecar",
            by_path(&xmp.with_file_name(photo)),
            &lib,
            &xmp,
        );
        pairs += 1;
    }
    for json in files_in(&lib.join("Takeout"), "json") {
        let names = siblings(&json);
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let photo = takeout::photo_for_json(&name(&json), &refs).expect("its photo");
        check_scanned(
            &mut table,
            "takeout_json",
            by_path(&json.with_file_name(photo)),
            &lib,
            &json,
        );
        pairs += 1;
    }
    assert!(
        pairs >= 4,
        "the extras have 3 sidecars and 2 JSON files, found {pairs}"
    );
    let sidecar_assets = assets
        .iter()
        .filter(|a| {
            a.paths.iter().any(|p| {
                crate::support::join_bytes(&lib, &p.rel_path)
                    .extension()
                    .is_some_and(|e| e == "xmp" || e == "json")
            })
        })
        .count();
    assert_eq!(sidecar_assets, 0, "a sidecar or JSON is no asset");
    let mut wrong = Vec::new();
    println!(
        "{:<14} {:<20} {:>6} {:>9} {:>8}",
        "role", "field", "agree", "disagree", "neither"
    );
    for ((role, field), t) in &table {
        println!(
            "{role:<14} {field:<20} {:>6} {:>9} {:>8}",
            t.agree,
            t.disagree.len(),
            t.neither
        );
        wrong.extend(t.disagree.iter().map(|d| format!("{role} {field}: {d}")));
    }
    assert!(
        wrong.is_empty(),
        "disagreements with exiftool:\n{}",
        wrong.join("\n")
    );
}
