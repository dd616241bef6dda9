//! Extended tier: a full scan of the `make-corpus` library (real photos and videos, broken
//! files, awkward names, symlink loops) completes, and every file the manifest lists is
//! indexed or recorded as it should be. Run with `MEDIADEX_CORPUS=/path/to/lib cargo test
//! --release --test it corpus_scan:: -- --ignored --nocapture` (or `scripts/corpus-tier.sh`).

use crate::support;

use mediadex::model::RunState;
use mediadex::queue::{Handlers, PoolConfig, WorkerPool};
use mediadex::scan::job::{ScanConfig, ScanJob};
use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

/// The manifest `make-corpus` writes beside the library: path, role, ...
fn manifest(lib: &std::path::Path) -> Vec<(String, String)> {
    use crate::support::corpus::{col, manifest_rows};
    manifest_rows(lib)
        .iter()
        .filter_map(|c| Some((col(c, 0)?, col(c, 1)?)))
        .collect()
}

#[test]
#[ignore = "needs MEDIADEX_CORPUS (scripts/corpus-tier.sh)"]
fn a_full_scan_of_the_corpus_completes_and_records_every_file() {
    let (env, lib, library, run) = support::corpus_scan_requested();
    let job = ScanJob {
        store: env.store.clone(),
        config: ScanConfig::default(),
        extract: mediadex::media::extract_from,
    };
    let pool = WorkerPool::start(
        &env.store,
        Handlers::default().scan(job),
        PoolConfig::with_ttl(2, 600_000),
    );
    let start = Instant::now();
    let run = loop {
        let r = env.store.scan_run(run.id).expect("run").expect("row");
        if r.state.is_terminal() {
            break r;
        }
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "the scan did not end"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    pool.shutdown();
    assert_eq!(run.state, RunState::Completed, "{:?}", run.reason);

    let known: HashSet<String> = env
        .store
        .known_files(library.id, "")
        .expect("files")
        .into_iter()
        .map(|k| String::from_utf8_lossy(&k.rel_path).into_owned())
        .collect();
    let assets = env.store.assets(false).expect("assets");
    let mut by_role: BTreeMap<String, (u32, u32)> = BTreeMap::new();
    for (path, role) in manifest(&lib) {
        let name = path.rsplit('/').next().unwrap_or(&path);
        // A link to a file or a folder inside the library is that file or folder, indexed at
        // its own path (issue 27: a symlink and its target are one file, not two copies).
        let link = role == "symlink";
        let skipped = mediadex::scan::walk::is_junk(name)
            || link
            || matches!(
                role.as_str(),
                "hidden" | "hidden-thumbnail" | "symlink-loop" | "symlink-dangling"
            );
        // A folder is indexed when a file under it is (a link to one inside the library is not followed).
        let dir_prefix = format!("{path}/");
        let indexed = known.contains(&path) || known.iter().any(|k| k.starts_with(&dir_prefix));
        let ok = indexed != skipped || role == "non-utf8-name"; // the manifest escapes those
        let entry = by_role.entry(role.clone()).or_default();
        if ok {
            entry.0 += 1
        } else {
            entry.1 += 1
        }
        if role == "exact-duplicate" {
            let asset = assets
                .iter()
                .find(|a| a.paths.iter().any(|p| p.rel_path_text == path))
                .expect("a duplicate is an asset");
            assert!(asset.paths.len() >= 2, "{path} shares its asset");
        }
    }
    println!("{:<20} {:>5} {:>5}", "role", "ok", "wrong");
    for (role, (ok, wrong)) in &by_role {
        println!("{role:<20} {ok:>5} {wrong:>5}");
    }
    let progress: serde_json::Value =
        serde_json::from_str(run.progress.as_deref().unwrap_or("{}")).expect("progress");
    println!("progress: {progress}");
    assert!(
        progress["problems"].as_u64().unwrap_or(0) >= 3,
        "loops and dangling links recorded"
    );
    let wrong: u32 = by_role.values().map(|v| v.1).sum();
    assert_eq!(wrong, 0, "files not indexed or recorded as expected");
}
