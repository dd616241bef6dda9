//! Extended tier: where each date came from (issue 15 item 6), through a real scan of the
//! `make-corpus --extras` library. The oracles: exiftool for the dates a file carries (EXIF,
//! XMP, QuickTime, Matroska; `corpus_metadata::oracle_taken`, the extractor's precedence),
//! the manifest's `name_date=` for the `filename_date` role, the name's own digits for the
//! other names the parser dates, and the file's mtime in UTC for the rest. Prints a role →
//! agreement table and fails on any disagreement. Run with `MEDIADEX_CORPUS=/path/to/lib cargo
//! test --test it corpus_dates:: -- --ignored --nocapture` (or `scripts/corpus-tier.sh`).

use crate::corpus_metadata::{exiftool, oracle_taken};
use crate::support;
use mediadex::model::Asset;
use std::collections::BTreeMap;
use std::path::Path;

/// Whether the scan reads sidecars and Takeout JSON: it does (issue 15 items 4 and 5), so a
/// photo whose date is only beside it (`IMG_8103.jpg`'s sidecar, the Takeout photos) says
/// `sidecar` or `takeout`, with the date exiftool reads from that file.
const BESIDE_READ: bool = true;

/// The manifest beside the library: path → (role, note).
fn manifest(lib: &Path) -> BTreeMap<String, (String, String)> {
    use crate::support::corpus::{col, manifest_rows};
    manifest_rows(lib)
        .iter()
        .filter_map(|c| Some((col(c, 0)?, (col(c, 1)?, col(c, 4)?))))
        .collect()
}

/// Each photo that a sidecar or Takeout JSON with a date of its own is for: the source it
/// names and that file's path.
fn dated_beside(
    man: &BTreeMap<String, (String, String)>,
) -> BTreeMap<String, (&'static str, String)> {
    let mut out = BTreeMap::new();
    for (file, (role, note)) in man {
        let field = |k: &str| note.split(';').find_map(|f| f.strip_prefix(k));
        let Some(photo) = field("for=") else { continue };
        let source = match role.as_str() {
            "sidecar" if field("date=").is_some() => "sidecar",
            "takeout_json" => "takeout",
            _ => continue,
        };
        out.insert(photo.to_string(), (source, file.clone()));
    }
    out
}

/// exiftool's reading of the date in a sidecar (its XMP date) or a Takeout JSON (its
/// `photoTakenTime`, seconds in UTC), as `seconds` gives it.
fn beside_date(lib: &Path, source: &str, file: &str) -> String {
    let tags = exiftool(&lib.join(file)).expect("exiftool reads the file beside");
    if source == "takeout" {
        let stamp = &tags["JSON:PhotoTakenTimeTimestamp"];
        let secs = stamp
            .as_i64()
            .or_else(|| stamp.as_str().and_then(|s| s.parse().ok()))
            .expect("photoTakenTime");
        let at = chrono::DateTime::from_timestamp(secs, 0).expect("a time");
        return at.format("%Y-%m-%dT%H:%M:%SZ").to_string();
    }
    let (local, offset, _) = oracle_taken(&tags).expect("the sidecar's date");
    seconds(&local, offset)
}

/// The seconds of a date as an instant when it has an offset, else as a wall time.
fn seconds(local: &str, offset: Option<i64>) -> String {
    let wall = local.get(..19).unwrap_or(local);
    match offset {
        Some(m) => {
            let t = chrono::NaiveDateTime::parse_from_str(wall, "%Y-%m-%dT%H:%M:%S").expect("date");
            (t - chrono::Duration::minutes(m))
                .format("%Y-%m-%dT%H:%M:%SZ")
                .to_string()
        }
        None => wall.to_string(),
    }
}

/// What the chain should have given `asset`: its source and its date's seconds.
fn expected(
    lib: &Path,
    a: &Asset,
    role: &str,
    note: &str,
    beside: Option<&(&'static str, String)>,
) -> (String, String) {
    let path = support::join_bytes(lib, &a.paths[0].rel_path);
    if let Some((local, offset, source)) = exiftool(&path).as_ref().and_then(oracle_taken) {
        return (source.into(), seconds(&local, offset));
    }
    if let (Some((source, file)), true) = (beside, BESIDE_READ) {
        return ((*source).into(), beside_date(lib, source, file));
    }
    if role == "filename_date" {
        let named = note
            .split(';')
            .find_map(|f| f.split("name_date=").nth(1))
            .expect("name_date");
        return (
            "filename".into(),
            named.get(..19).expect("a date").replace(' ', "T"),
        );
    }
    // A name the manifest does not annotate: its digits must hold the date the parser read.
    let f = &a.facts;
    if f.taken_at_source.map(|s| s.as_str()) == Some("filename") {
        let ours = f.taken_local.clone().unwrap_or_default();
        let digits = |s: &str| s.chars().filter(char::is_ascii_digit).collect::<String>();
        let name = a.paths[0]
            .rel_path_text
            .rsplit('/')
            .next()
            .unwrap_or("")
            .to_string();
        let wanted = digits(ours.get(..19).unwrap_or(""));
        let seen = if ours.ends_with("T00:00:00") {
            &wanted[..8]
        } else {
            &wanted[..]
        };
        let source = if digits(&name).contains(seen) {
            "filename"
        } else {
            "(not in the name)"
        };
        return (source.into(), seconds(&ours, None));
    }
    let mtime = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .expect("mtime");
    let utc: chrono::DateTime<chrono::Utc> = mtime.into();
    ("mtime".into(), utc.format("%Y-%m-%dT%H:%M:%SZ").to_string())
}

#[test]
#[ignore = "needs MEDIADEX_CORPUS (a make-corpus --extras library) and exiftool; see scripts/corpus-tier.sh"]
fn every_role_says_where_its_date_came_from_as_exiftool_and_the_names_do() {
    let lib = std::env::var_os("MEDIADEX_CORPUS").expect("MEDIADEX_CORPUS");
    let lib = std::fs::canonicalize(lib).expect("corpus dir");
    let man = manifest(&lib);
    let beside = dated_beside(&man);
    assert!(
        man.values().any(|(r, _)| r == "filename_date"),
        "a corpus without --extras"
    );
    let env = support::env();
    let library =
        mediadex::app::add_library(&env.store, "corpus", &lib.to_string_lossy()).expect("add");
    support::scan_now(&env, library.id, "");
    let mut by_role: BTreeMap<String, (u32, u32, Vec<String>)> = BTreeMap::new();
    for a in env.store.assets(false).expect("assets") {
        let rel = a.paths[0].rel_path_text.clone();
        let (role, note) = man.get(&rel).cloned().unwrap_or_default();
        let source = beside.get(&rel);
        let (want_source, want_at) = expected(&lib, &a, &role, &note, source);
        let f = &a.facts;
        let ours_source = f.taken_at_source.map_or("none", |s| s.as_str()).to_string();
        let offset = f.taken_offset_minutes.map(i64::from);
        let ours_at = f
            .taken_local
            .as_deref()
            .map_or(String::new(), |l| seconds(l, offset));
        let label = match source {
            Some((s, _)) => format!("{role} (date only in its {s})"),
            None if role.is_empty() => "(not in the manifest)".to_string(),
            None => role,
        };
        let entry = by_role.entry(label).or_default();
        entry.0 += 1;
        if (&ours_source, &ours_at) == (&want_source, &want_at) {
            entry.1 += 1;
        } else {
            entry.2.push(format!(
                "{rel}: ours {ours_source} {ours_at}, oracle {want_source} {want_at}"
            ));
        }
    }
    println!("{:<44} agree/assets", "role");
    let mut wrong = Vec::new();
    for (role, (n, ok, bad)) in &by_role {
        println!("{role:<44} {ok}/{n}");
        wrong.extend(bad.iter().cloned());
    }
    assert!(
        wrong.is_empty(),
        "taken_at_source disagrees:\n{}",
        wrong.join("\n")
    );
}
