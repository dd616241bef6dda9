//! Queue throughput on one database file with the real defaults (durable: synchronous=FULL,
//! one writer thread batching concurrent operations): claim+complete with 1, 2 and 8 worker
//! threads, and enqueue with 1 and 8 threads. Figures are operations (jobs) per second.
//!
//! `cargo bench --bench queue` (add `-- --quick` for a fast look).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test, example or bench: a panic is the report

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mediadex::clock::{SharedClock, SystemClock};
use mediadex::model::NewJob;
use mediadex::store::{Store, StoreOptions};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// Jobs per measured batch.
const BATCH: u64 = 128;
const TTL: i64 = 60_000;

fn open(dir: &tempfile::TempDir) -> Store {
    let clock: SharedClock = Arc::new(SystemClock);
    Store::open(&dir.path().join("bench.db"), clock, StoreOptions::default()).expect("open")
}

/// Runs `work(thread index)` on `threads` threads started together; returns the wall time.
fn timed_on_threads(threads: usize, work: impl Fn(usize) + Sync) -> Duration {
    let barrier = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (barrier, work) = (&barrier, &work);
            s.spawn(move || {
                barrier.wait();
                work(t);
            });
        }
        barrier.wait();
        let start = Instant::now();
        // The scope joins every thread before returning.
        start
    })
    .elapsed()
}

fn claim_complete(c: &mut Criterion) {
    let mut group = c.benchmark_group("claim_complete");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .throughput(Throughput::Elements(BATCH));
    for threads in [1usize, 2, 8] {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        group.bench_function(
            BenchmarkId::from_parameter(format!("{threads}_threads")),
            |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        // Not measured: fill the queue (8 producers, so the writer batches).
                        timed_on_threads(8, |_| {
                            for _ in 0..BATCH / 8 {
                                store.enqueue(NewJob::new("walk", "{}")).unwrap();
                            }
                        });
                        total += timed_on_threads(threads, |_| {
                            while let Some((lease, _job)) = store.claim_job(&["walk"], TTL).unwrap()
                            {
                                store.complete_job(&lease).unwrap();
                            }
                        });
                    }
                    total
                })
            },
        );
    }
    group.finish();
}

fn enqueue(c: &mut Criterion) {
    let mut group = c.benchmark_group("enqueue");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .throughput(Throughput::Elements(BATCH));
    for threads in [1usize, 8] {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        group.bench_function(
            BenchmarkId::from_parameter(format!("{threads}_threads")),
            |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        total += timed_on_threads(threads, |_| {
                            for _ in 0..BATCH / threads as u64 {
                                store.enqueue(NewJob::new("walk", "{}")).unwrap();
                            }
                        });
                    }
                    total
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, claim_complete, enqueue);
criterion_main!(benches);
