//! `enqueue_unique` under real concurrency: two processes on one database file, two writers
//! (two `Store` handles) in one process, one shared `Store` used from two threads, and a chain
//! advancing itself (done + next link in one fenced transaction) while others enqueue the
//! same key. The partial unique index decides, never a check-then-insert.
//!
//! The two-process test re-executes this test binary: the child test
//! `child_process_hammering_enqueue_unique` is ignored, and runs only as that child (the
//! parent passes `--ignored --exact` and the `MEDIADEX_MP_*` variables).

use mediadex::clock::{FakeClock, SharedClock, SystemClock};
use mediadex::model::{Job, JobState, NewJob};
use mediadex::store::{Store, StoreOptions};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

const SHARED_KEY: &str = "the-one-key";
const HAMMER: usize = 150;
const ROUNDS: usize = 60;

fn options(owner: &str) -> StoreOptions {
    StoreOptions {
        owner: owner.to_string(),
        ..Default::default()
    }
}

fn open(path: &Path, owner: &str) -> Store {
    let clock: SharedClock = Arc::new(SystemClock);
    Store::open(path, clock, options(owner)).expect("open the store")
}

/// What one contender saw: per key, the ids it was answered with and how many of its calls
/// created the row.
#[derive(Default, Debug)]
struct Seen {
    ids: BTreeMap<String, Vec<i64>>,
    created: BTreeMap<String, usize>,
}

impl Seen {
    fn record(&mut self, key: &str, id: i64, created: bool) {
        self.ids.entry(key.to_string()).or_default().push(id);
        *self.created.entry(key.to_string()).or_default() += created as usize;
    }

    fn to_text(&self) -> String {
        let mut out = String::new();
        for (key, ids) in &self.ids {
            for id in ids {
                out.push_str(&format!("{key} {id}\n"));
            }
            out.push_str(&format!("created {key} {}\n", self.created[key]));
        }
        out
    }

    fn from_text(text: &str) -> Seen {
        let mut seen = Seen::default();
        for line in text.lines() {
            let parts: Vec<&str> = line.split(' ').collect();
            match parts.as_slice() {
                ["created", key, n] => {
                    seen.created.insert(key.to_string(), n.parse().unwrap());
                }
                [key, id] => seen
                    .ids
                    .entry(key.to_string())
                    .or_default()
                    .push(id.parse().unwrap()),
                _ => panic!("bad line {line:?}"),
            }
        }
        seen
    }
}

/// The contention both contenders run: the same key many times, then a round of fresh keys
/// that both race to create.
fn hammer(store: &Store) -> Seen {
    let mut seen = Seen::default();
    for i in 0..HAMMER {
        let e = store
            .enqueue_unique("walk", SHARED_KEY, &format!("{{\"i\":{i}}}"))
            .expect("enqueue_unique");
        seen.record(SHARED_KEY, e.id, e.created);
    }
    for round in 0..ROUNDS {
        let key = format!("round-{round}");
        let e = store
            .enqueue_unique("walk", &key, "{}")
            .expect("enqueue_unique");
        seen.record(&key, e.id, e.created);
    }
    seen
}

/// Every key has exactly one live row, every contender was answered with that row's id, and
/// exactly one call in all created it.
fn assert_one_row_per_key(store: &Store, contenders: &[Seen]) {
    let jobs: Vec<Job> = store.jobs(i64::MAX).unwrap();
    let mut keys: Vec<String> = vec![SHARED_KEY.to_string()];
    keys.extend((0..ROUNDS).map(|r| format!("round-{r}")));
    assert_eq!(
        jobs.len(),
        keys.len(),
        "one row per key, no more: {jobs:#?}"
    );
    for key in &keys {
        let live: Vec<&Job> = jobs
            .iter()
            .filter(|j| j.unique_key.as_deref() == Some(key) && j.state == JobState::Queued)
            .collect();
        assert_eq!(live.len(), 1, "exactly one live row for {key}");
        let id = live[0].id;
        let mut created = 0;
        for (n, seen) in contenders.iter().enumerate() {
            let ids = &seen.ids[key];
            assert!(
                ids.iter().all(|&i| i == id),
                "contender {n} saw ids {ids:?} for {key}, the row is {id}"
            );
            created += seen.created[key];
        }
        assert_eq!(created, 1, "exactly one call created the row for {key}");
    }
}

fn wait_for(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "no start signal at {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The child side of `enqueue_unique_from_two_processes_creates_one_row`.
#[test]
#[ignore = "the child process of enqueue_unique_from_two_processes_creates_one_row"]
fn child_process_hammering_enqueue_unique() {
    let var = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} is not set"));
    let db = var("MEDIADEX_MP_DB");
    let start = PathBuf::from(var("MEDIADEX_MP_START"));
    let out = PathBuf::from(var("MEDIADEX_MP_OUT"));
    let owner = format!("child:{}:mp", std::process::id());
    let store = open(Path::new(&db), &owner);
    std::fs::write(out.with_extension("ready"), "").unwrap();
    wait_for(&start);
    let seen = hammer(&store);
    std::fs::write(&out, seen.to_text()).unwrap();
}

#[test]
fn enqueue_unique_from_two_processes_creates_one_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("mp.db");
    // The schema exists before the children race (migration is not what this test is about).
    drop(open(&db, "parent:0:mp"));
    let start = dir.path().join("start");
    let exe = std::env::current_exe().unwrap();
    let outs: Vec<PathBuf> = (0..2)
        .map(|n| dir.path().join(format!("child{n}.txt")))
        .collect();
    let children: Vec<_> = outs
        .iter()
        .map(|out| {
            Command::new(&exe)
                .args([
                    "--ignored",
                    "--exact",
                    "multiprocess::child_process_hammering_enqueue_unique",
                    "--nocapture",
                ])
                .env("MEDIADEX_MP_DB", &db)
                .env("MEDIADEX_MP_START", &start)
                .env("MEDIADEX_MP_OUT", out)
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("spawn a child test process")
        })
        .collect();
    // Both children have their store open before either starts.
    for out in &outs {
        wait_for(&out.with_extension("ready"));
    }
    std::fs::write(&start, "go").unwrap();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "a child failed: {}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout)
        );
    }
    let seen: Vec<Seen> = outs
        .iter()
        .map(|out| Seen::from_text(&std::fs::read_to_string(out).expect("child output")))
        .collect();
    let store = open(&db, "parent:0:mp");
    assert_one_row_per_key(&store, &seen);
}

#[test]
fn enqueue_unique_from_two_writers_in_one_process_creates_one_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("two-writers.db");
    let stores = [open(&db, "host:1:aaaa"), open(&db, "host:2:bbbb")];
    let barrier = Barrier::new(2);
    let seen: Vec<Seen> = std::thread::scope(|s| {
        let handles: Vec<_> = stores
            .iter()
            .map(|store| {
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    hammer(store)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_one_row_per_key(&stores[0], &seen);
}

#[test]
fn enqueue_unique_from_two_threads_sharing_one_store_creates_one_row() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("shared.db"), "host:1:aaaa");
    let barrier = Barrier::new(2);
    let seen: Vec<Seen> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (store, barrier) = (store.clone(), &barrier);
                s.spawn(move || {
                    barrier.wait();
                    hammer(&store)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_one_row_per_key(&store, &seen);
}

#[test]
fn a_chain_advancing_itself_never_trips_the_unique_index() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chain.db");
    let clock = FakeClock::new(1_700_000_000_000);
    let open_fake = |owner: &str| {
        let clock: SharedClock = clock.clone();
        Store::open(&db, clock, options(owner)).unwrap()
    };
    let worker = open_fake("host:1:worker");
    let other = open_fake("host:2:other");
    const LINKS: usize = 40;
    let first = worker.enqueue_unique("walk", "chain", "0").unwrap();
    assert!(first.created);

    let done = std::sync::atomic::AtomicBool::new(false);
    let (ids, foreign) = std::thread::scope(|s| {
        // Another process keeps asking for the same key while the chain advances: it must
        // always be answered with the live link, never create a second one, never fail.
        let foreign = s.spawn(|| {
            let mut answers = Vec::new();
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                let e = other
                    .enqueue_unique("walk", "chain", "{}")
                    .expect("enqueue_unique");
                answers.push(e);
            }
            answers
        });
        let mut ids = vec![first.id];
        for link in 1..=LINKS {
            let (lease, job) = worker
                .claim_job(&["walk"], 60_000)
                .unwrap()
                .expect("the live link");
            assert_eq!(job.id, *ids.last().unwrap());
            let next = worker
                .complete_job_and_enqueue(
                    &lease,
                    NewJob::new("walk", link.to_string()).unique("chain"),
                )
                .expect("done + next link in one transaction");
            assert!(next.created, "the next link is a new row");
            ids.push(next.id);
        }
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        (ids, foreign.join().unwrap())
    });

    assert!(
        foreign.iter().all(|e| !e.created),
        "the other process never created a link"
    );
    assert!(foreign.iter().all(|e| ids.contains(&e.id)));
    let jobs = worker.jobs(i64::MAX).unwrap();
    assert_eq!(jobs.len(), LINKS + 1);
    let live: Vec<&Job> = jobs
        .iter()
        .filter(|j| j.state == JobState::Queued)
        .collect();
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].id, *ids.last().unwrap());
    assert!(
        jobs.iter()
            .filter(|j| j.id != live[0].id)
            .all(|j| j.state == JobState::Done)
    );
}
