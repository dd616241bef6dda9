//! Keeps the walls of DESIGN.md section 2 standing: rusqlite, r2d2 and SQL live only in
//! `src/store/` (and migrations in `schema/`).

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn outside_store() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![];
    rust_files(&root.join("src"), &mut files);
    files
        .into_iter()
        .filter(|p| !p.starts_with(root.join("src/store")))
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("read source");
            (p, text)
        })
        .collect()
}

#[test]
fn database_crates_are_used_only_inside_the_store() {
    let offenders: Vec<_> = outside_store()
        .into_iter()
        .filter(|(_, text)| ["rusqlite", "r2d2"].iter().any(|c| text.contains(c)))
        .map(|(p, _)| p)
        .collect();
    assert!(
        offenders.is_empty(),
        "database crates outside src/store: {offenders:?}"
    );
}

#[test]
fn sql_statements_are_written_only_inside_the_store() {
    let sql = [
        "SELECT ",
        "INSERT INTO",
        "UPDATE ",
        "DELETE FROM",
        "CREATE TABLE",
        "PRAGMA ",
        "BEGIN IMMEDIATE",
    ];
    let offenders: Vec<_> = outside_store()
        .into_iter()
        .filter_map(|(p, text)| {
            let hits: Vec<&str> = sql.iter().copied().filter(|s| text.contains(s)).collect();
            (!hits.is_empty()).then_some((p, hits))
        })
        .collect();
    assert!(offenders.is_empty(), "SQL outside src/store: {offenders:?}");
}

#[test]
fn every_module_says_what_it_owns() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![];
    rust_files(&root.join("src"), &mut files);
    let silent: Vec<_> = files
        .into_iter()
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            !text.trim_start().starts_with("//!")
        })
        .collect();
    assert!(
        silent.is_empty(),
        "modules without a //! header: {silent:?}"
    );
}
