//! The writer's batch insert against the size of the index (issue 29 item 5): one scan
//! batch of 4,096 new files (`Store::ingest_batch`: the fenced claim of each file's asset,
//! its file row, the run's counters, one synced commit) into an index that already holds
//! 10,000, 100,000 or 1,000,000 assets. A linear first index needs this cost flat in the
//! index's size; a random-key index whose leaves a batch rewrites makes it grow.
//!
//! Each size's index is made once per run through the store's own fenced ingest
//! (`tests/it/support/synthetic.rs`, as `examples/bench_fill.rs` makes them; 1M takes about
//! 100 s) and copied for the measurements, so a measured batch lands on an index of that size
//! plus at most a tenth (the copy is made again, unmeasured, once the batches added more).
//! Figures are files per second of the batch.
//!
//! `cargo bench --bench writer`. Environment: WRITER_SIZES (comma-separated asset counts;
//! default 10000,100000,1000000), WRITER_DIR (where the indexes go; the system's tempdir).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test, example or bench: a panic is the report

#[path = "../tests/it/support/synthetic.rs"]
mod synthetic;

use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use mediadex::clock::{SharedClock, SystemClock};
use mediadex::model::{Lease, ScanRequest, Trigger};
use mediadex::store::{CheckpointMode, Store, StoreOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Files per measured batch: the scan's batch (`scan::job`'s 4,096).
const BATCH: u64 = 4096;

fn open(db: &Path) -> Store {
    let clock: SharedClock = Arc::new(SystemClock);
    Store::open(db, clock, StoreOptions::default()).unwrap()
}

/// An index of `n` synthetic assets in library 1, its log checkpointed into the file.
fn template(dir: &Path, n: u64) -> PathBuf {
    let db = dir.join(format!("template-{n}.db"));
    let store = open(&db);
    let root = dir.join("library");
    std::fs::create_dir_all(&root).unwrap();
    let library = mediadex::app::add_library(&store, "bench", root.to_str().unwrap()).unwrap();
    let start = Instant::now();
    let mut done = 0;
    while done < n {
        let chunk = (n - done).min(20_000);
        synthetic::fill(&store, library.id, &format!("s{done}"), done, chunk).unwrap();
        done += chunk;
    }
    store.checkpoint(CheckpointMode::Truncate).unwrap();
    eprintln!(
        "index of {n} assets made in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    db
}

/// A working copy of the template with a scan run claimed on it.
struct Copy {
    store: Store,
    lease: Lease,
    added: u64,
}

fn copy_of(template: &Path, work: &Path) -> Copy {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", work.display()));
    }
    std::fs::copy(template, work).unwrap();
    let store = open(work);
    store
        .request_scan(ScanRequest {
            library_id: 1,
            scope: "new".into(),
            trigger: Trigger::Manual,
            watch_event: None,
        })
        .unwrap();
    let (lease, _) = store.claim_scan_run(3_600_000).unwrap().unwrap();
    Copy {
        store,
        lease,
        added: 0,
    }
}

fn batch_insert(c: &mut Criterion) {
    let sizes: Vec<u64> = std::env::var("WRITER_SIZES")
        .unwrap_or_else(|_| "10000,100000,1000000".into())
        .split(',')
        .map(|s| s.trim().parse().unwrap())
        .collect();
    let dir = match std::env::var_os("WRITER_DIR") {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
    .unwrap();
    let mut group = c.benchmark_group("writer_batch_insert");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10))
        .throughput(Throughput::Elements(BATCH));
    for n in sizes {
        let template = template(dir.path(), n);
        let work = dir.path().join("work.db");
        let mut copy = copy_of(&template, &work);
        let mut next_seed = 1u64 << 40;
        group.bench_function(BenchmarkId::from_parameter(format!("{n}_assets")), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    if (copy.added + BATCH) * 10 > n {
                        drop(std::mem::replace(&mut copy, copy_of(&template, &work)));
                    }
                    let items = (next_seed..next_seed + BATCH)
                        .map(|i| synthetic::item(&format!("new/{i}.jpg"), i, synthetic::facts(i)))
                        .collect();
                    next_seed += BATCH;
                    let start = Instant::now();
                    copy.store
                        .ingest_batch(&copy.lease, 1, items, "{}")
                        .unwrap();
                    total += start.elapsed();
                    copy.added += BATCH;
                }
                total
            })
        });
        let _ = std::fs::remove_file(&template);
    }
    group.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    batch_insert(&mut c);
    c.final_summary();
}
