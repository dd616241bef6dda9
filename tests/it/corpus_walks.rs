//! Extended tier: the `make-corpus` library scanned, then walked under a bumped content-hash
//! scheme. The manifest's near-duplicate copies that are metadata-only edits (exiftool
//! stripped the metadata, same JPEG scan data) are found as same-content twins of their
//! group's original, by the scan and again by the walk; no other near-duplicate kind (a
//! re-encode, a resize) is. Run with `MEDIADEX_CORPUS=/path/to/lib cargo test --release
//! --test it corpus_walks:: -- --ignored --nocapture` (or `scripts/corpus-tier.sh`).

use crate::support;

use mediadex::model::WalkKindId;
use mediadex::queue::{Handlers, PoolConfig, WorkerPool};
use mediadex::scan::job::{ScanConfig, ScanJob};
use mediadex::walks::WalkJob;
use mediadex::walks::content_hash::ContentHashWalk;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Manifest rows: (path, role, group, note).
fn manifest(lib: &Path) -> Vec<(String, String, String, String)> {
    use crate::support::corpus::{col, manifest_rows};
    manifest_rows(lib)
        .iter()
        .filter_map(|c| Some((col(c, 0)?, col(c, 1)?, col(c, 2)?, col(c, 4)?)))
        .collect()
}

/// Groups of paths whose assets share a content hash.
fn twin_groups(store: &mediadex::store::Store) -> BTreeSet<BTreeSet<String>> {
    store
        .content_twins()
        .expect("twins")
        .into_iter()
        .map(|g| {
            g.assets
                .iter()
                .flat_map(|a| a.paths.iter().map(|p| p.rel_path_text.clone()))
                .collect()
        })
        .collect()
}

fn wait_until(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(900),
            "{what} did not end"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
#[ignore = "needs MEDIADEX_CORPUS (scripts/corpus-tier.sh)"]
fn metadata_only_near_duplicates_are_found_by_the_scan_and_by_the_walk() {
    let (env, lib, _library, run) = support::corpus_scan_requested();
    let walk = ContentHashWalk {
        scheme: 2,
        batch: 64,
    };
    let handlers = Handlers::default()
        .scan(ScanJob {
            store: env.store.clone(),
            config: ScanConfig::default(),
            extract: mediadex::media::extract_from,
        })
        .job(
            WalkKindId::ContentHash.job_kind(),
            WalkJob::new(&env.store, Arc::new(walk)),
        );
    let pool = WorkerPool::start(&env.store, handlers, PoolConfig::with_ttl(2, 600_000));
    wait_until("the scan", || {
        env.store
            .scan_run(run.id)
            .expect("run")
            .is_some_and(|r| r.state.is_terminal())
    });
    let after_scan = twin_groups(&env.store);
    mediadex::walks::boot(&env.store, WalkKindId::ContentHash, 2, support::TTL)
        .expect("boot scheme 2");
    pool.wake();
    wait_until("the walk", || {
        env.store
            .live_job(WalkKindId::ContentHash.job_kind())
            .expect("chain")
            .is_none()
    });
    pool.shutdown();
    let record = env
        .store
        .walk_record(WalkKindId::ContentHash)
        .unwrap()
        .unwrap();
    assert_eq!(record.scheme, 2);
    let after_walk = twin_groups(&env.store);

    let rows = manifest(&lib);
    let originals: BTreeMap<&str, &str> = rows
        .iter()
        .filter(|r| r.1 == "photo" && r.2.starts_with("near"))
        .flat_map(|r| r.2.split(',').map(move |g| (g, r.0.as_str())))
        .collect();
    let mut found = 0;
    for (path, role, group, note) in &rows {
        if role != "near-duplicate" {
            continue;
        }
        let original = originals.get(group.as_str()).expect("the group's original");
        let twins = |groups: &BTreeSet<BTreeSet<String>>| {
            groups
                .iter()
                .any(|g| g.contains(path) && g.contains(*original))
        };
        let metadata_only = note.starts_with("metadata stripped by exiftool");
        for (when, groups) in [("scan", &after_scan), ("walk", &after_walk)] {
            assert_eq!(
                twins(groups),
                metadata_only,
                "{when}: {path} ({note}) vs {original}"
            );
        }
        found += usize::from(metadata_only);
        println!("{:<5} {path} ~ {original}: {note}", metadata_only);
    }
    assert!(found > 0, "the corpus has no metadata-only near-duplicates");
    println!(
        "metadata-only near-duplicates found: {found}; twin groups: {}",
        after_walk.len()
    );
}
