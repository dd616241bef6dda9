//! What the corpus tier's tests read beside a `make-corpus` library: its manifest, and
//! exiftool's JSON for one file (the oracle they compare with).

use serde_json::{Map, Value};
use std::path::Path;
use std::process::Command;

/// The rows of `<lib>.manifest.tsv` (its header left out), each row's tab-separated
/// columns: path, role, group, ..., note (see ../shared/corpus/README.md).
pub fn manifest_rows(lib: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(format!("{}.manifest.tsv", lib.display()))
        .expect("corpus manifest");
    text.lines()
        .skip(1)
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// Column `i` of a manifest row, if it has one.
pub fn col(row: &[String], i: usize) -> Option<String> {
    row.get(i).cloned()
}

/// The one object `exiftool -json ARGS path` prints.
pub fn exiftool(path: &Path, args: &[&str]) -> Map<String, Value> {
    let out = Command::new("exiftool")
        .arg("-json")
        .args(args)
        .arg(path)
        .output()
        .expect("exiftool is on PATH");
    let parsed: Value = serde_json::from_slice(&out.stdout).expect("exiftool -json");
    parsed[0].as_object().cloned().expect("one object")
}
