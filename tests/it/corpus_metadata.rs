//! Extended tier: `media::extract` against exiftool on the `make-corpus` library.
//!
//! Run with `MEDIADEX_CORPUS=/path/to/lib cargo test --release --test it corpus_metadata:: --
//! --ignored --nocapture` (or `scripts/corpus-tier.sh`). exiftool (`-json -n -G`) is the
//! oracle (ffprobe for the video codec and displayed size); every regular file under the corpus is compared field by field and an agreement
//! table is printed. The test fails when a field agrees on fewer than `THRESHOLD` of the
//! files where the oracle has that field, or when any file exiftool calls media is missing a
//! kind.

use mediadex::media::extract;
use mediadex::model::{MediaFacts, MediaKind};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// 95%: the corpus has ~100-200 media files per field at small scales, so one or two known
/// disagreements (e.g. a date only in XMP) are tolerated, a systematic error is not.
const THRESHOLD: f64 = 0.95;
const COORD_EPS: f64 = 1e-5;
const DURATION_EPS_MS: i64 = 50;

/// One corpus file: its path, what we read, what exiftool read, what ffprobe read (videos).
type Checked = (
    PathBuf,
    MediaFacts,
    Option<Map<String, Value>>,
    Option<Probe>,
);

/// ffprobe's first video stream: codec name and the displayed size (rotation applied).
#[derive(Clone, Debug)]
struct Probe {
    codec: Option<String>,
    display: Option<(i64, i64)>,
}

fn ffprobe(path: &Path) -> Option<Probe> {
    let out = Command::new("ffprobe")
        .args(["-v", "quiet", "-print_format", "json", "-show_streams"])
        .args(["-select_streams", "v:0"])
        .arg(path)
        .output()
        .ok()?;
    let parsed: Value = serde_json::from_slice(&out.stdout).ok()?;
    let stream = parsed
        .get("streams")?
        .as_array()?
        .first()?
        .as_object()?
        .clone();
    let codec = stream
        .get("codec_name")
        .and_then(Value::as_str)
        .map(str::to_string);
    let (w, h) = (
        stream.get("width")?.as_i64()?,
        stream.get("height")?.as_i64()?,
    );
    let rotation = stream
        .get("side_data_list")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find_map(|d| d.get("rotation").and_then(Value::as_i64))
        .or_else(|| {
            let tags = stream.get("tags")?;
            tags.get("rotate")?.as_str()?.parse().ok()
        })
        .unwrap_or(0);
    let display = if rotation.rem_euclid(180) == 90 {
        (h, w)
    } else {
        (w, h)
    };
    Some(Probe {
        codec,
        display: Some(display),
    })
}

#[derive(Default)]
struct Tally {
    agree: u32,
    disagree: u32,
    only_ours: u32,
    only_oracle: u32,
    examples: Vec<String>,
}

impl Tally {
    fn rate(&self) -> f64 {
        let with_oracle = self.agree + self.disagree + self.only_oracle;
        if with_oracle == 0 {
            1.0
        } else {
            f64::from(self.agree) / f64::from(with_oracle)
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum V {
    S(String),
    I(i64),
    F(f64),
}

fn same(field: &str, a: &V, b: &V) -> bool {
    match (a, b) {
        (V::F(x), V::F(y)) => (x - y).abs() <= COORD_EPS,
        (V::I(x), V::I(y)) if field == "duration_ms" => (x - y).abs() <= DURATION_EPS_MS,
        _ => a == b,
    }
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            files_under(&path, out);
        } else if meta.is_file() {
            out.push(path);
        }
    }
}

pub(crate) fn exiftool(path: &Path) -> Option<Map<String, Value>> {
    let out = Command::new("exiftool")
        .args(["-json", "-n", "-G", "-q", "-q"])
        .arg(path)
        .output()
        .ok()?;
    let parsed: Value = serde_json::from_slice(&out.stdout).ok()?;
    parsed.as_array()?.first()?.as_object().cloned()
}

fn text(tags: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| match tags.get(*k)? {
        Value::String(s) => Some(s.trim().to_string()).filter(|s| !s.is_empty()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

fn number(tags: &Map<String, Value>, key: &str) -> Option<f64> {
    match tags.get(key)? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok().or_else(|| hms_seconds(s)),
        _ => None,
    }
}

/// exiftool's Matroska duration even under `-n`: `HH:MM:SS.fffffffff`.
fn hms_seconds(text: &str) -> Option<f64> {
    let mut parts = text.trim().split(':');
    let (h, m, s) = (parts.next()?, parts.next()?, parts.next()?);
    Some(h.parse::<f64>().ok()? * 3600.0 + m.parse::<f64>().ok()? * 60.0 + s.parse::<f64>().ok()?)
}

/// Manifest roles (`<corpus>.manifest.tsv`) whose files must come back with an error.
const BAD_ROLES: &[&str] = &["bad-truncated", "bad-empty", "bad-text", "wrong-extension"];

/// Paths of the corpus's deliberately broken files, from the manifest beside it (if any).
fn bad_paths(root: &Path) -> Vec<String> {
    let manifest = root.with_extension("manifest.tsv");
    let Ok(text) = std::fs::read_to_string(manifest) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| {
            let mut cols = line.split('\t');
            let (path, role) = (cols.next()?, cols.next()?);
            BAD_ROLES.contains(&role).then(|| path.to_string())
        })
        .collect()
}

/// `YYYY:MM:DD HH:MM:SS[.fff][+HH:MM|Z]` → (`YYYY-MM-DDTHH:MM:SS[.fff]`, offset minutes).
fn oracle_date(raw: &str) -> Option<(String, Option<i64>)> {
    let raw = raw.trim();
    if raw.len() < 19 || raw.starts_with("0000") || !raw[..4].bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let (date, time) = (raw[..10].replace(':', "-"), &raw[11..19]);
    let mut rest = &raw[19..];
    let mut local = format!("{date}T{time}");
    if let Some(frac) = rest.strip_prefix('.') {
        let digits: String = frac.chars().take_while(char::is_ascii_digit).collect();
        local = format!("{local}.{digits}");
        rest = &frac[digits.len()..];
    }
    Some((local, oracle_offset(rest)))
}

fn oracle_offset(text: &str) -> Option<i64> {
    let t = text.trim();
    if t == "Z" {
        return Some(0);
    }
    let sign = match t.chars().next()? {
        '+' => 1,
        '-' => -1,
        _ => return None,
    };
    let (h, m) = t[1..].split_once(':')?;
    Some(sign * (h.parse::<i64>().ok()? * 60 + m.parse::<i64>().ok()?))
}

/// Capture time as exiftool reports it, following the same precedence the extractor
/// promises: EXIF original → digitized → modify date (each with its sub-seconds and offset),
/// then XMP, then Apple's QuickTime CreationDate (local + offset), QuickTime CreateDate (UTC),
/// Matroska's date (UTC). With it, the `taken_at_source` that precedence names.
pub(crate) fn oracle_taken(t: &Map<String, Value>) -> Option<(String, Option<i64>, &'static str)> {
    let exif = [
        (
            "EXIF:DateTimeOriginal",
            "EXIF:SubSecTimeOriginal",
            "EXIF:OffsetTimeOriginal",
        ),
        (
            "EXIF:CreateDate",
            "EXIF:SubSecTimeDigitized",
            "EXIF:OffsetTimeDigitized",
        ),
        ("EXIF:ModifyDate", "EXIF:SubSecTime", "EXIF:OffsetTime"),
    ];
    for (date, sub, off) in exif {
        if let Some((mut local, _)) = text(t, &[date]).as_deref().and_then(oracle_date) {
            if let Some(s) = text(t, &[sub]) {
                local = format!("{local}.{s}");
            }
            let offset = text(t, &[off, "EXIF:OffsetTime"])
                .as_deref()
                .and_then(oracle_offset);
            return Some((local, offset, "exif"));
        }
    }
    for key in ["XMP:DateTimeOriginal", "XMP:CreateDate", "XMP:DateCreated"] {
        if let Some((local, offset)) = text(t, &[key]).as_deref().and_then(oracle_date) {
            return Some((local, offset, "xmp"));
        }
    }
    if let Some((local, offset)) = text(t, &["QuickTime:CreationDate"])
        .as_deref()
        .and_then(oracle_date)
    {
        return Some((local, offset, "quicktime"));
    }
    if let Some((local, _)) = text(t, &["QuickTime:CreateDate"])
        .as_deref()
        .and_then(oracle_date)
    {
        return Some((local, Some(0), "quicktime"));
    }
    let mkv = t
        .iter()
        .find(|(k, _)| k.starts_with("Matroska:") && k.ends_with("DateTimeOriginal"));
    let (local, offset) = mkv.and_then(|(_, v)| v.as_str()).and_then(oracle_date)?;
    Some((local, offset, "quicktime"))
}

fn oracle_kind(mime: Option<&str>) -> &'static str {
    match mime {
        Some(m) if m.starts_with("image/") => "image",
        Some(m) if m.starts_with("video/") => "video",
        _ => "other",
    }
}

fn our_kind(f: &MediaFacts) -> Option<&'static str> {
    Some(match f.kind? {
        MediaKind::Image => "image",
        MediaKind::Video => "video",
        MediaKind::Other => "other",
    })
}

/// (field, ours, oracle) for one file.
fn compare(
    f: &MediaFacts,
    t: &Map<String, Value>,
    probe: Option<&Probe>,
) -> Vec<(&'static str, Option<V>, Option<V>)> {
    let mime = text(t, &["File:MIMEType"]);
    let media = oracle_kind(mime.as_deref()) != "other";
    let (w, h) = text(t, &["Composite:ImageSize"])
        .and_then(|s| {
            let (a, b) = s.split_once(['x', ' '])?;
            Some((a.trim().parse::<i64>().ok()?, b.trim().parse::<i64>().ok()?))
        })
        .unzip();
    let taken = oracle_taken(t);
    let duration = ["QuickTime:Duration", "Matroska:Duration"]
        .iter()
        .find_map(|k| number(t, k))
        .map(|s| V::I((s * 1000.0).round() as i64));
    let int = |v: Option<u32>| v.map(|v| V::I(i64::from(v)));
    let s = |v: &Option<String>| v.clone().map(V::S);
    let media_only = |v: Option<V>| v.filter(|_| media);
    // A position is both coordinates, and 0,0 is no place (what a camera without a fix
    // writes; docs/api.md, issue 27): exiftool reports it as read.
    let place = number(t, "Composite:GPSLatitude")
        .zip(number(t, "Composite:GPSLongitude"))
        .filter(|&(lat, lon)| lat != 0.0 || lon != 0.0);
    vec![
        (
            "kind",
            our_kind(f).map(|k| V::S(k.into())),
            mime.as_ref().map(|m| V::S(oracle_kind(Some(m)).into())),
        ),
        ("mime", media_only(s(&f.mime)), media_only(mime.map(V::S))),
        ("width", int(f.width), media_only(w.map(V::I))),
        ("height", int(f.height), media_only(h.map(V::I))),
        (
            "taken_local",
            s(&f.taken_local),
            media_only(taken.as_ref().map(|(l, _, _)| V::S(l.clone()))),
        ),
        (
            "taken_offset",
            f.taken_offset_minutes.map(|m| V::I(i64::from(m))),
            media_only(taken.as_ref().and_then(|(_, o, _)| *o).map(V::I)),
        ),
        (
            "taken_at_source",
            f.taken_at_source.map(|s| V::S(s.as_str().into())),
            media_only(taken.map(|(_, _, source)| V::S(source.into()))),
        ),
        (
            "make",
            s(&f.make),
            media_only(text(t, &["EXIF:Make", "QuickTime:Make", "XMP:Make"]).map(V::S)),
        ),
        (
            "model",
            s(&f.model),
            media_only(text(t, &["EXIF:Model", "QuickTime:Model", "XMP:Model"]).map(V::S)),
        ),
        ("lat", f.lat.map(V::F), media_only(place.map(|p| V::F(p.0)))),
        ("lon", f.lon.map(V::F), media_only(place.map(|p| V::F(p.1)))),
        (
            "orientation",
            f.orientation.map(|o| V::I(i64::from(o))),
            number(t, "EXIF:Orientation").map(|o| V::I(o as i64)),
        ),
        ("duration_ms", f.duration_ms.map(V::I), media_only(duration)),
        (
            "video_codec",
            s(&f.video_codec),
            probe.and_then(|p| p.codec.clone()).map(V::S),
        ),
        (
            "video_display",
            f.display_width
                .zip(f.display_height)
                .filter(|_| f.kind == Some(MediaKind::Video))
                .map(|(w, h)| V::S(format!("{w}x{h}"))),
            probe
                .and_then(|p| p.display)
                .map(|(w, h)| V::S(format!("{w}x{h}"))),
        ),
    ]
}

#[test]
#[ignore = "needs MEDIADEX_CORPUS (a make-corpus library) and exiftool; see scripts/corpus-tier.sh"]
fn metadata_agrees_with_exiftool() {
    let root = PathBuf::from(std::env::var_os("MEDIADEX_CORPUS").expect("set MEDIADEX_CORPUS"));
    let mut files = Vec::new();
    files_under(&root, &mut files);
    files.sort();
    assert!(!files.is_empty(), "no files under {}", root.display());

    let results: Vec<Checked> = std::thread::scope(|scope| {
        let chunks: Vec<_> = files.chunks(files.len().div_ceil(2)).collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .map(|p| {
                            let facts = extract(p);
                            let probe = (facts.kind == Some(MediaKind::Video))
                                .then(|| ffprobe(p))
                                .flatten();
                            (p.clone(), facts, exiftool(p), probe)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("worker"))
            .collect()
    });

    let mut table: BTreeMap<&'static str, Tally> = BTreeMap::new();
    let mut unkinded = Vec::new();
    for (path, facts, tags, probe) in &results {
        let Some(tags) = tags else { continue };
        let rel = path
            .strip_prefix(&root)
            .unwrap_or(path)
            .to_string_lossy()
            .to_string();
        if oracle_kind(text(tags, &["File:MIMEType"]).as_deref()) != "other" && facts.kind.is_none()
        {
            unkinded.push(rel.clone());
        }
        for (field, ours, oracle) in compare(facts, tags, probe.as_ref()) {
            let tally = table.entry(field).or_default();
            match (&ours, &oracle) {
                (Some(a), Some(b)) if same(field, a, b) => tally.agree += 1,
                (None, None) => {}
                _ => {
                    match (&ours, &oracle) {
                        (Some(_), Some(_)) => tally.disagree += 1,
                        (Some(_), None) => tally.only_ours += 1,
                        _ => tally.only_oracle += 1,
                    }
                    tally.examples.push(format!(
                        "{rel}: ours {ours:?} oracle {oracle:?} err {:?}",
                        facts.error
                    ));
                }
            }
        }
    }

    println!(
        "\n{} files compared under {}",
        results.len(),
        root.display()
    );
    println!(
        "{:<14}{:>7}{:>10}{:>10}{:>13}{:>10}",
        "field", "agree", "disagree", "only-ours", "only-oracle", "agree%"
    );
    let mut failing = Vec::new();
    for (field, t) in &table {
        let rate = t.rate();
        println!(
            "{field:<14}{:>7}{:>10}{:>10}{:>13}{:>9.1}%",
            t.agree,
            t.disagree,
            t.only_ours,
            t.only_oracle,
            rate * 100.0
        );
        if rate < THRESHOLD {
            failing.push(*field);
        }
    }
    for (field, t) in &table {
        for example in t.examples.iter().take(8) {
            println!("  {field}: {example}");
        }
    }
    let errors = results
        .iter()
        .filter(|(_, f, _, _)| f.error.is_some())
        .count();
    println!("{errors} files recorded an error");
    let bad = bad_paths(&root);
    let mut unflagged = Vec::new();
    for (path, f, _, _) in &results {
        let rel = path
            .strip_prefix(&root)
            .unwrap_or(path)
            .to_string_lossy()
            .to_string();
        match (bad.contains(&rel), &f.error) {
            (true, Some(e)) => println!("bad input {rel}: {e}"),
            (true, None) => unflagged.push(rel),
            (false, Some(e)) => println!("error on a file not marked bad: {rel}: {e}"),
            (false, None) => {}
        }
    }
    assert!(!bad.is_empty(), "manifest lists no broken files");
    assert!(
        unflagged.is_empty(),
        "broken files without a recorded error: {unflagged:?}"
    );
    assert!(
        unkinded.is_empty(),
        "media files without a kind: {unkinded:?}"
    );
    assert!(
        failing.is_empty(),
        "fields under {:.0}% agreement: {failing:?}",
        THRESHOLD * 100.0
    );
}
