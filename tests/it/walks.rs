//! The walk chains (DESIGN.md section 7) driven batch by batch through the job handler with
//! a fake clock: one chain per kind across restarts, dead leases and two booting processes;
//! scheme bumps and payloads without a scheme restart from the beginning and the record is
//! written only at the end; the record is never lowered; a stale walker lands nothing; an
//! unreadable file does not block completion; an asset restored behind a chain's cursor (by
//! the user, or by a scan's claim) is walked before the chain records the end. Mixed versions on one database: an older
//! binary never claims, restarts or re-stamps a newer one's chain while that one holds a
//! lease, and its requests never lower the record; a rollback (no newer lease) re-walks under
//! the older scheme. The walks: content hash, faces (with a deterministic fake detector) and
//! similar (perceptual hashes; the seeded files are no pictures, stamped "no hash").

use crate::support;

use mediadex::model::{
    Claim, DetectedFace, FileReason, FileStamp, IngestItem, Job, JobFilter, JobState, MediaFacts,
    MediaKind, NewJob, ScanEnd, Target, WalkAsset, WalkKindId, WalkResults, WalkVisit,
};
use mediadex::queue::{JobDone, JobHandler, LeaseGuard, NoHooks, Registry, WorkError};
use mediadex::store::Store;
use mediadex::walks::content_hash::ContentHashWalk;
use mediadex::walks::faces::{DetectError, FaceDetector, FacesWalk};
use mediadex::walks::similar::SimilarWalk;
use mediadex::walks::{self, Payload, WalkJob, WalkKind};
use std::path::Path;
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;
use support::{Env, TTL};

/// A JPEG-shaped file: SOI, an APP1 carrying `meta`, a quantisation table, a scan holding
/// `pixels`, EOI. Its content hash depends on `pixels` only.
fn jpeg(meta: &[u8], pixels: u32) -> Vec<u8> {
    let seg = |marker: u8, payload: &[u8]| {
        let mut s = vec![0xFF, marker];
        s.extend_from_slice(&((payload.len() + 2) as u16).to_be_bytes());
        s.extend_from_slice(payload);
        s
    };
    let mut f = vec![0xFF, 0xD8];
    f.extend(seg(0xE1, meta));
    f.extend(seg(0xDB, &[1; 65]));
    f.extend(seg(0xDA, &[1, 1, 0, 0, 63, 0]));
    f.extend_from_slice(&pixels.to_be_bytes());
    f.extend_from_slice(&[0xFF, 0xD9]);
    f
}

struct Lib {
    id: i64,
    root: std::path::PathBuf,
    /// Asset ids in creation order.
    assets: Vec<i64>,
}

/// Writes `n` photos into a new library and indexes them through a scan lease, without
/// content hashes (as a database from before the content hash would hold them).
fn seed(env: &Env, n: u32) -> Lib {
    seed_in(env, "photos", 0..n)
}

/// `seed` into the library `name`, photo `i` of `photos` being the i-th distinct picture.
fn seed_in(env: &Env, name: &str, photos: std::ops::Range<u32>) -> Lib {
    let pictures: Vec<Picture> = photos
        .map(|i| Picture {
            meta: format!("camera {i}"),
            pixels: i,
            orientation: None,
        })
        .collect();
    seed_pictures(env, name, &pictures)
}

/// One photo to seed: its metadata, its pixels and the way up its metadata says it is shown.
struct Picture {
    meta: String,
    pixels: u32,
    orientation: Option<u16>,
}

/// `seed` of the given photos, the i-th written as `p{i:03}.jpg`.
fn seed_pictures(env: &Env, name: &str, pictures: &[Picture]) -> Lib {
    let id = env.library(name);
    let root = env.dir.path().join(name);
    let items: Vec<IngestItem> = (0u32..)
        .zip(pictures)
        .map(|(i, picture)| {
            let bytes = jpeg(picture.meta.as_bytes(), picture.pixels);
            let name = format!("p{i:03}.jpg");
            std::fs::write(root.join(&name), &bytes).expect("write photo");
            IngestItem {
                rel_path: name.clone().into_bytes(),
                rel_path_text: name,
                stamp: FileStamp {
                    size: bytes.len() as u64,
                    mtime_ns: 1,
                    dev: 1,
                    inode: u64::from(i) + 1,
                },
                reason: FileReason::New,
                checksum: Some(*blake3::hash(&bytes).as_bytes()),
                content_hash: None,
                facts: Some(MediaFacts {
                    kind: Some(MediaKind::Image),
                    mime: Some("image/jpeg".into()),
                    orientation: picture.orientation,
                    ..MediaFacts::default()
                }),
                error: None,
                namesake: true,
            }
        })
        .collect();
    env.store
        .request_scan(env.scan_request(id, ""))
        .expect("request");
    let (lease, _) = env
        .store
        .claim_scan_run(600_000)
        .expect("claim")
        .expect("a run");
    let report = env
        .store
        .ingest_batch(&lease, id, items, "")
        .expect("ingest");
    env.store
        .finish_full_scan(&lease, id, ScanEnd::breaker(1.0, true))
        .expect("finish");
    let assets = report
        .items
        .iter()
        .map(|o| {
            assert_eq!(o.claim, Claim::Created);
            o.asset_id.expect("asset")
        })
        .collect();
    Lib { id, root, assets }
}

/// Claims the next due row of `kind` on `store` that the handler takes (as its worker pool
/// would: a walk leaves a chain of a higher scheme to the binary walking it) and runs the
/// handler on it under a real lease guard. `None` when no row is due.
fn step(
    store: &Store,
    kind: WalkKindId,
    handler: &dyn JobHandler,
) -> Option<Result<JobDone, WorkError>> {
    let filter = JobFilter::new(kind.job_kind(), handler.max_scheme());
    let (lease, job) = store.claim_jobs(&[filter], TTL).expect("claim")?;
    let registry = Arc::new(Registry::default());
    let guard = LeaseGuard::register(store, lease, TTL, &registry);
    guard
        .begin(Duration::from_secs(3600), &NoHooks)
        .expect("first heartbeat");
    Some(handler.run(&guard, &job))
}

/// Runs batches until the chain has no due row; returns how many ran.
fn drain(store: &Store, kind: WalkKindId, handler: &dyn JobHandler) -> usize {
    let mut n = 0;
    while let Some(done) = step(store, kind, handler) {
        assert!(matches!(done, Ok(JobDone::Committed)), "{done:?}");
        n += 1;
        assert!(n < 1000, "the chain does not end");
    }
    n
}

fn chain_rows(store: &Store, kind: WalkKindId) -> Vec<Job> {
    let mut rows: Vec<Job> = store
        .jobs(10_000)
        .expect("jobs")
        .into_iter()
        .filter(|j| j.kind == kind.job_kind())
        .collect();
    rows.reverse();
    rows
}

fn live_rows(store: &Store, kind: WalkKindId) -> usize {
    chain_rows(store, kind)
        .iter()
        .filter(|j| !j.state.is_terminal())
        .count()
}

fn content_walk(env: &Env, scheme: i64, batch: usize) -> WalkJob<ContentHashWalk> {
    content_walk_on(&env.store, scheme, batch)
}

/// The content-hash walk of a binary of `scheme` on `store` (its process).
fn content_walk_on(store: &Store, scheme: i64, batch: usize) -> WalkJob<ContentHashWalk> {
    WalkJob::new(store, Arc::new(ContentHashWalk { scheme, batch }))
}

/// The stamps of the assets: content hash scheme per asset (None: unstamped).
fn content_stamps(store: &Store, ids: &[i64]) -> Vec<Option<i64>> {
    ids.iter()
        .map(|&id| {
            let a = store.asset(id).expect("asset").expect("row");
            a.content_hash.map(|c| c.scheme)
        })
        .collect()
}

/// A deterministic detector: one face per image, its box from the file's size; counts calls.
struct FakeDetector {
    version: i64,
    calls: Mutex<Vec<std::path::PathBuf>>,
}

impl FakeDetector {
    fn new(version: i64) -> Arc<Self> {
        Arc::new(FakeDetector {
            version,
            calls: Mutex::new(vec![]),
        })
    }
}

impl FaceDetector for FakeDetector {
    fn detect(&self, path: &Path) -> Result<Vec<DetectedFace>, DetectError> {
        self.calls.lock().expect("calls").push(path.to_path_buf());
        let size = std::fs::metadata(path)
            .map_err(|source| DetectError::Read {
                path: path.display().to_string(),
                source,
            })?
            .len() as f32;
        Ok(vec![DetectedFace {
            x: size,
            y: 2.0,
            w: 3.0,
            h: 4.0,
            score: 0.9,
            landmarks: [(1.0, 1.0), (2.0, 1.0), (1.5, 2.0), (1.0, 3.0), (2.0, 3.0)],
        }])
    }

    fn version(&self) -> i64 {
        self.version
    }
}

fn faces_walk(env: &Env, detector: Arc<FakeDetector>, batch: usize) -> WalkJob<FacesWalk> {
    let scheme = detector.version;
    WalkJob::new(
        &env.store,
        Arc::new(FacesWalk {
            detector,
            scheme,
            batch,
        }),
    )
}

fn face_stamps(store: &Store, ids: &[i64]) -> Vec<Option<i64>> {
    ids.iter()
        .map(|&id| store.asset(id).expect("asset").expect("row").faces_scheme)
        .collect()
}

/// The similar walk of a binary of `scheme`, with the real hasher.
fn similar_walk(scheme: i64, batch: usize) -> SimilarWalk {
    SimilarWalk {
        batch,
        ..SimilarWalk::new(Arc::new(mediadex::similar::WalkHasher), Some(scheme))
    }
}

/// The perceptual-hash scheme stamped on each asset (None: unstamped).
fn similar_stamps(store: &Store, ids: &[i64]) -> Vec<Option<i64>> {
    ids.iter()
        .map(|&id| store.picture_hash_stamp(id).expect("stamp").map(|(_, s)| s))
        .collect()
}

/// The two walks, run the same way by the tests that hold for both.
#[derive(Clone, Copy, Debug)]
enum Which {
    Content,
    Faces,
    /// The seeded files are no pictures: the similar walk stamps them "no hash".
    Similar,
}

impl Which {
    fn kind(self) -> WalkKindId {
        match self {
            Which::Content => WalkKindId::ContentHash,
            Which::Faces => WalkKindId::Faces,
            Which::Similar => WalkKindId::Similar,
        }
    }

    fn handler(self, env: &Env, batch: usize) -> Box<dyn JobHandler> {
        self.handler_on(&env.store, 1, batch)
    }

    /// The walk of a binary of `scheme` on `store` (its process).
    fn handler_on(self, store: &Store, scheme: i64, batch: usize) -> Box<dyn JobHandler> {
        match self {
            Which::Content => Box::new(content_walk_on(store, scheme, batch)),
            Which::Faces => Box::new(WalkJob::new(
                store,
                Arc::new(FacesWalk {
                    detector: FakeDetector::new(scheme),
                    scheme,
                    batch,
                }),
            )),
            Which::Similar => Box::new(WalkJob::new(store, Arc::new(similar_walk(scheme, batch)))),
        }
    }

    fn stamps(self, store: &Store, ids: &[i64]) -> Vec<Option<i64>> {
        match self {
            Which::Content => content_stamps(store, ids),
            Which::Faces => face_stamps(store, ids),
            Which::Similar => similar_stamps(store, ids),
        }
    }
}

fn payload(job: &Job) -> Payload {
    Payload::parse(&job.payload)
}

/// A restart while the chain's next row is queued finds that row: boot enqueues nothing,
/// the walk goes on from the cursor, and the kind never has two live rows.
fn restart_with_next_row_queued(which: Which) {
    let env = support::env();
    let lib = seed(&env, 10);
    let kind = which.kind();
    let handler = which.handler(&env, 3);
    let first = walks::boot(&env.store, kind, 1, TTL).expect("boot");
    assert!(first.chain.expect("scheduled").created);
    assert!(step(&env.store, kind, handler.as_ref()).is_some());
    let next = env.store.live_job(kind.job_kind()).unwrap().expect("next");
    assert_eq!(
        (next.state, payload(&next).after),
        (JobState::Queued, lib.assets[2])
    );

    // "Restart": another process boots on the same file.
    let other = env.other_process("other:2:0002");
    let again = walks::boot(&other, kind, 1, TTL).expect("boot again");
    assert_eq!(
        again.chain.expect("found"),
        mediadex::store::Enqueued {
            id: next.id,
            created: false
        }
    );
    assert_eq!(live_rows(&env.store, kind), 1);
    assert_eq!(drain(&other, kind, handler.as_ref()), 3);
    assert!(
        which
            .stamps(&env.store, &lib.assets)
            .iter()
            .all(|s| *s == Some(1))
    );
    let rows = chain_rows(&env.store, kind);
    assert_eq!(rows.len(), 4, "one chain of four batches: {rows:?}");
    let cursors: Vec<i64> = rows.iter().map(|j| payload(j).after).collect();
    assert_eq!(cursors, [0, lib.assets[2], lib.assets[5], lib.assets[8]]);
    assert_eq!(
        env.store.walk_record(kind).unwrap().expect("record").scheme,
        1
    );
}

#[test]
fn content_hash_restart_with_the_next_row_queued_continues_the_one_chain() {
    restart_with_next_row_queued(Which::Content);
}

#[test]
fn faces_restart_with_the_next_row_queued_continues_the_one_chain() {
    restart_with_next_row_queued(Which::Faces);
}

#[test]
fn similar_restart_with_the_next_row_queued_continues_the_one_chain() {
    restart_with_next_row_queued(Which::Similar);
}

/// A process dies holding the chain's row: a restart finds the running row (no second
/// chain), maintenance reclaims it, and the walk resumes at that row's cursor.
fn restart_with_row_running_under_a_dead_lease(which: Which) {
    let env = support::env();
    let lib = seed(&env, 7);
    let kind = which.kind();
    let handler = which.handler(&env, 3);
    walks::boot(&env.store, kind, 1, TTL).expect("boot");
    assert!(step(&env.store, kind, handler.as_ref()).is_some());
    // The dead process: claimed the next row, then nothing more.
    let dead = env.other_process("dead:1:0001");
    let (lease, job) = dead
        .claim_job(&[kind.job_kind()], TTL)
        .unwrap()
        .expect("row");
    drop(dead);
    let booted = walks::boot(&env.store, kind, 1, TTL).expect("boot while it looks alive");
    assert_eq!(booted.chain.expect("found").id, job.id);
    env.clock.advance(TTL + 1);
    let booted = walks::boot(&env.store, kind, 1, TTL).expect("boot after it expired");
    assert_eq!(booted.chain.expect("found").id, job.id);
    assert_eq!(live_rows(&env.store, kind), 1);
    let report = env.store.reclaim_stale().expect("reclaim");
    assert_eq!(report.jobs_requeued, 1);
    env.clock.advance(60_000); // past the retry backoff
    assert_eq!(drain(&env.store, kind, handler.as_ref()), 2);
    let rows = chain_rows(&env.store, kind);
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(rows[1].id, lease.id);
    assert_eq!(
        payload(&rows[1]).after,
        lib.assets[2],
        "resumed at its cursor"
    );
    assert!(
        which
            .stamps(&env.store, &lib.assets)
            .iter()
            .all(|s| *s == Some(1))
    );
}

#[test]
fn content_hash_restart_with_the_row_running_under_a_dead_lease_makes_no_second_chain() {
    restart_with_row_running_under_a_dead_lease(Which::Content);
}

#[test]
fn faces_restart_with_the_row_running_under_a_dead_lease_makes_no_second_chain() {
    restart_with_row_running_under_a_dead_lease(Which::Faces);
}

/// A similar walk killed mid-way (its row held by a dead process) resumes at its cursor.
#[test]
fn similar_restart_with_the_row_running_under_a_dead_lease_makes_no_second_chain() {
    restart_with_row_running_under_a_dead_lease(Which::Similar);
}

#[test]
fn two_processes_booting_at_once_make_one_chain_per_kind() {
    let env = support::env();
    seed(&env, 4);
    let stores = [env.store.clone(), env.other_process("other:2:0002")];
    for kind in [WalkKindId::ContentHash, WalkKindId::Faces] {
        let barrier = Arc::new(Barrier::new(2));
        let booted: Vec<_> = stores
            .iter()
            .map(|s| {
                let (s, barrier) = (s.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    walks::boot(&s, kind, 1, TTL)
                        .expect("boot")
                        .chain
                        .expect("chain")
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().expect("boot thread"))
            .collect();
        assert_eq!(booted[0].id, booted[1].id, "{kind}: {booted:?}");
        assert_eq!(booted.iter().filter(|e| e.created).count(), 1);
        assert_eq!(chain_rows(&env.store, kind).len(), 1);
    }
}

/// A running walk's `left` is the chain's own count, carried in its row, so that a status
/// reads one row and not the assets table (240-580 ms at 1M assets while a walk ran): the
/// start that scheduled the chain counts (else its first batch), each batch lowers the count
/// by what it visited. Assets added meanwhile are visited (they come after the cursor) but
/// not counted.
#[test]
fn a_running_walks_left_is_counted_once_for_its_chain_and_lowered_by_each_batch() {
    let env = support::env();
    seed(&env, 8);
    let kind = WalkKindId::ContentHash;
    let walk = content_walk(&env, 1, 3);
    walks::boot(&env.store, kind, 1, TTL).expect("boot");
    let left = || {
        let state = walks::state(&env.store, kind, 1).expect("state");
        let row = env.store.live_job(kind.job_kind()).expect("job");
        (
            state.chain.map(|c| c.left),
            row.and_then(|j| payload(&j).left),
        )
    };
    assert_eq!(
        left(),
        (Some(8), Some(8)),
        "counted by the start that scheduled it"
    );
    assert!(step(&env.store, kind, &walk).is_some());
    assert_eq!(left(), (Some(5), Some(5)));
    let added = seed_in(&env, "more", 100..104);
    assert_eq!(
        left(),
        (Some(5), Some(5)),
        "the chain's count, not the table's"
    );
    assert!(step(&env.store, kind, &walk).is_some());
    assert_eq!(left(), (Some(2), Some(2)));
    assert_eq!(
        drain(&env.store, kind, &walk),
        3,
        "the added assets are visited"
    );
    assert_eq!(content_stamps(&env.store, &added.assets), vec![Some(1); 4]);
    assert_eq!(left(), (None, None), "no chain is left");
    // A requested chain is counted by its first batch; until then a status counts.
    walks::request(&env.store, kind, 1, true).expect("a restart");
    assert_eq!(left(), (Some(12), None));
    assert!(step(&env.store, kind, &walk).is_some());
    assert_eq!(left(), (Some(9), Some(9)));
}

#[test]
fn a_scheme_bump_restarts_from_the_beginning_and_records_only_at_the_end() {
    let env = support::env();
    let lib = seed(&env, 8);
    let kind = WalkKindId::ContentHash;
    let old = content_walk(&env, 1, 3);
    walks::boot(&env.store, kind, 1, TTL).expect("boot");
    drain(&env.store, kind, &old);
    assert_eq!(env.store.walk_record(kind).unwrap().unwrap().scheme, 1);
    // Scheme 2 arrives while a scheme-1 chain is mid-way (its second row queued).
    walks::request(&env.store, kind, 1, true).expect("a fresh scheme-1 chain");
    assert!(step(&env.store, kind, &old).is_some());
    let mid = env
        .store
        .live_job(kind.job_kind())
        .unwrap()
        .expect("mid-way");
    assert_eq!(payload(&mid).after, lib.assets[2]);

    let new = content_walk(&env, 2, 3);
    let boot = walks::boot(&env.store, kind, 2, TTL).expect("boot scheme 2");
    assert_eq!(boot.chain.expect("the old chain").id, mid.id);
    let mut batches = 0;
    while let Some(done) = step(&env.store, kind, &new) {
        done.expect("batch");
        batches += 1;
        let record = env.store.walk_record(kind).unwrap().unwrap();
        let stamps = content_stamps(&env.store, &lib.assets);
        if stamps.iter().any(|s| *s != Some(2)) {
            assert_eq!(record.scheme, 1, "recorded before the end: {stamps:?}");
        }
    }
    // From the beginning: the first batch re-stamped the assets the old chain had passed.
    assert_eq!(batches, 3);
    assert_eq!(content_stamps(&env.store, &lib.assets), vec![Some(2); 8]);
    assert_eq!(env.store.walk_record(kind).unwrap().unwrap().scheme, 2);
}

#[test]
fn a_payload_without_a_scheme_restarts_from_the_beginning() {
    let env = support::env();
    let lib = seed(&env, 5);
    let kind = WalkKindId::Faces;
    let detector = FakeDetector::new(1);
    let handler = faces_walk(&env, detector.clone(), 2);
    let legacy = NewJob::new(kind.job_kind(), format!("{{\"after\": {}}}", lib.assets[3]))
        .unique(kind.job_kind());
    env.store.enqueue(legacy).expect("legacy row");
    assert_eq!(drain(&env.store, kind, &handler), 3);
    assert_eq!(face_stamps(&env.store, &lib.assets), vec![Some(1); 5]);
    assert_eq!(detector.calls.lock().unwrap().len(), 5);
    assert_eq!(env.store.walk_record(kind).unwrap().unwrap().scheme, 1);
    let face = &env.store.asset(lib.assets[0]).unwrap().unwrap().faces;
    assert_eq!(face.len(), 1);
    assert_eq!(face[0].landmarks[2], (1.5, 2.0));
}

/// A newer binary walked scheme 2 to the end; a scheme-1 chain an older process left
/// queued completes afterwards: it lowers neither the record nor a stamp. Then the newer
/// binary is gone (it holds no lease) and the older one starts: a rollback, reported, and
/// the walk goes again under scheme 1, re-stamping what the newer one did.
#[test]
fn a_stale_chain_lowers_nothing_and_a_rollback_re_walks_under_the_older_scheme() {
    let env = support::env();
    let lib = seed(&env, 4);
    let kind = WalkKindId::ContentHash;
    let newer = env.other_process("newer:2:0002");
    walks::boot(&newer, kind, 2, TTL).expect("boot 2");
    drain(&newer, kind, &content_walk_on(&newer, 2, 3));
    let record = env.store.walk_record(kind).unwrap().unwrap();
    assert_eq!((record.scheme, record.seen), (2, 2));
    let stale =
        NewJob::new(kind.job_kind(), Payload::fresh(1, true).to_json()).unique(kind.job_kind());
    env.store.enqueue(stale).expect("stale chain");
    drain(&env.store, kind, &content_walk(&env, 1, 3));
    assert_eq!(
        content_stamps(&env.store, &lib.assets),
        vec![Some(2); 4],
        "a stale chain re-stamped what the newer scheme stamped"
    );
    let record = env.store.walk_record(kind).unwrap().unwrap();
    assert_eq!(
        (record.scheme, record.seen),
        (2, 2),
        "lowered by a stale chain"
    );
    drop(newer);
    // The older binary starts: a rollback, reported; the record is clamped to its scheme.
    let boot = walks::boot(&env.store, kind, 1, TTL).expect("boot 1");
    assert!(boot.rollback);
    assert_eq!((boot.record.scheme, boot.record.seen), (1, 2));
    assert!(boot.chain.is_some(), "a rollback walks again");
    drain(&env.store, kind, &content_walk(&env, 1, 3));
    assert_eq!(content_stamps(&env.store, &lib.assets), vec![Some(1); 4]);
    let state = walks::state(&env.store, kind, 1).expect("state");
    assert_eq!((state.scheme, state.seen, state.current), (1, 2, 1));
    assert_eq!(state.other, None);
}

/// Each asset's stamp is at least what it was: no step lowered one.
fn assert_not_lowered(which: Which, store: &Store, ids: &[i64], last: &mut Vec<Option<i64>>) {
    let now = which.stamps(store, ids);
    assert!(
        now.iter().zip(last.iter()).all(|(n, l)| n >= l),
        "{which:?}: a stamp was lowered: {last:?} -> {now:?}"
    );
    *last = now;
}

/// Two binaries, of schemes 1 and 2, share one database and claim the one chain in turn.
/// The older never claims or restarts the newer's chain (nor lowers a stamp); the chain
/// completes under scheme 2 and the record ends at 2.
fn two_binaries_claiming_in_turn(which: Which) {
    let env = support::env();
    let lib = seed(&env, 8);
    let kind = which.kind();
    let newer_store = env.other_process("newer:2:0002");
    let older = which.handler_on(&env.store, 1, 3);
    let newer = which.handler_on(&newer_store, 2, 3);
    walks::boot(&env.store, kind, 1, TTL).expect("boot 1");
    walks::boot(&newer_store, kind, 2, TTL).expect("boot 2");
    let mut last = which.stamps(&env.store, &lib.assets);
    for turn in 0.. {
        assert!(turn < 20, "{which:?}: the walk never ends: {last:?}");
        let a = step(&env.store, kind, older.as_ref());
        assert_not_lowered(which, &env.store, &lib.assets, &mut last);
        let b = step(&newer_store, kind, newer.as_ref());
        assert_not_lowered(which, &env.store, &lib.assets, &mut last);
        if a.is_none() && b.is_none() {
            break;
        }
        for done in [a, b].into_iter().flatten() {
            assert!(matches!(done, Ok(JobDone::Committed)), "{done:?}");
        }
    }
    assert_eq!(which.stamps(&env.store, &lib.assets), vec![Some(2); 8]);
    let record = env.store.walk_record(kind).unwrap().expect("record");
    assert_eq!((record.scheme, record.seen), (2, 2));
    // Once the newer binary walked the chain, every row of it walks scheme 2.
    let schemes: Vec<Option<i64>> = chain_rows(&env.store, kind)
        .iter()
        .map(|j| payload(j).scheme)
        .collect();
    assert!(
        schemes.windows(2).all(|w| w[0] <= w[1]),
        "{which:?}: the older binary restarted the newer's chain: {schemes:?}"
    );
}

#[test]
fn content_hash_binaries_of_schemes_1_and_2_claiming_in_turn_complete_under_2() {
    two_binaries_claiming_in_turn(Which::Content);
}

#[test]
fn faces_binaries_of_schemes_1_and_2_claiming_in_turn_complete_under_2() {
    two_binaries_claiming_in_turn(Which::Faces);
}

#[test]
fn similar_binaries_of_schemes_1_and_2_claiming_in_turn_complete_under_2() {
    two_binaries_claiming_in_turn(Which::Similar);
}

/// The older binary's scans and restores ask for walks (`walks::request`) while a newer
/// binary is live: the record the newer one raised stays, and the chain the older one
/// asked for re-stamps nothing the newer one stamped.
#[test]
fn the_older_binarys_requests_after_scans_and_restores_never_lower_the_record() {
    let env = support::env();
    let lib = seed(&env, 4);
    let newer_store = env.other_process("newer:2:0002");
    for which in [Which::Content, Which::Faces, Which::Similar] {
        let kind = which.kind();
        walks::boot(&env.store, kind, 1, TTL).expect("the older binary started first");
        walks::boot(&newer_store, kind, 2, TTL).expect("boot 2");
        drain(
            &newer_store,
            kind,
            which.handler_on(&newer_store, 2, 3).as_ref(),
        );
        let record = env.store.walk_record(kind).unwrap().expect("record");
        assert_eq!((record.scheme, record.seen), (2, 2));
        // After a scan (faces) and a restore (faces), and `walk` (either kind).
        walks::request(&env.store, kind, 1, false).expect("request");
        walks::request(&env.store, kind, 1, false).expect("request again");
        let record = env.store.walk_record(kind).unwrap().expect("record");
        assert_eq!(
            (record.scheme, record.seen),
            (2, 2),
            "{which:?}: lowered during work"
        );
        drain(
            &env.store,
            kind,
            which.handler_on(&env.store, 1, 3).as_ref(),
        );
        assert_eq!(which.stamps(&env.store, &lib.assets), vec![Some(2); 4]);
        let record = env.store.walk_record(kind).unwrap().expect("record");
        assert_eq!((record.scheme, record.seen), (2, 2), "{which:?}");
    }
}

/// The newer binary walks a batch, then scans (it holds a scan lease): past the hand-off
/// period its queued chain row is still not the older binary's to take, and the older's
/// status and boot name it. Once no lease of it is live, the older binary takes the chain
/// (a rollback) and walks it from the beginning under its own scheme.
#[test]
fn the_older_binary_takes_a_newer_chain_only_once_no_newer_binary_holds_a_lease() {
    let env = support::env();
    let lib = seed(&env, 7);
    let kind = WalkKindId::ContentHash;
    let newer_store = env.other_process("newer:2:0002");
    let older = content_walk(&env, 1, 3);
    walks::boot(&newer_store, kind, 2, TTL).expect("boot 2");
    assert!(step(&newer_store, kind, &content_walk_on(&newer_store, 2, 3)).is_some());
    newer_store
        .request_scan(env.scan_request(lib.id, ""))
        .expect("request");
    let scan_ttl = 10 * TTL;
    let (_scan, _) = newer_store
        .claim_scan_run(scan_ttl)
        .expect("claim")
        .expect("a run");
    assert!(
        step(&env.store, kind, &older).is_none(),
        "taken from the newer binary right after its commit"
    );
    env.clock.advance(TTL + 1);
    assert!(
        step(&env.store, kind, &older).is_none(),
        "taken while the newer binary holds a lease"
    );
    let other = walks::state(&env.store, kind, 1)
        .expect("state")
        .other
        .expect("the newer binary shows");
    assert_eq!((other.scheme, other.owner.as_str()), (2, "newer:2:0002"));
    assert_eq!(other.pid.as_deref(), Some("2"));
    assert_eq!(
        other.describe(kind),
        "another mediadex with content-hash scheme 2 is using this database (pid 2)"
    );
    let boot = walks::boot(&env.store, kind, 1, TTL).expect("boot 1 while the newer one is live");
    assert!(!boot.rollback, "a live newer binary is no rollback");
    assert_eq!(content_stamps(&env.store, &lib.assets)[..3], [Some(2); 3]);
    // The newer binary stops: its scan lease runs out.
    drop(newer_store);
    env.clock.advance(scan_ttl);
    assert_eq!(drain(&env.store, kind, &older), 3);
    assert_eq!(content_stamps(&env.store, &lib.assets), vec![Some(1); 7]);
    let record = env.store.walk_record(kind).unwrap().expect("record");
    assert_eq!((record.scheme, record.seen), (1, 2));
}

/// A walk kind that runs `hook` between processing a batch and committing it.
struct Hooked<K: WalkKind> {
    inner: K,
    hook: Box<dyn Fn() + Send + Sync>,
}

impl<K: WalkKind> WalkKind for Hooked<K> {
    fn id(&self) -> WalkKindId {
        self.inner.id()
    }
    fn scheme(&self) -> i64 {
        self.inner.scheme()
    }
    fn batch_size(&self) -> usize {
        self.inner.batch_size()
    }
    fn process(&self, batch: &[WalkAsset]) -> WalkResults {
        let out = self.inner.process(batch);
        (self.hook)();
        out
    }
}

/// The walker's row is force-released (and claimed by another process) between processing
/// and commit: the commit lands nothing — no stamps, no faces, no next row, no record.
fn a_stale_walkers_batch_lands_nothing(which: Which) {
    let env = support::env();
    let lib = seed(&env, 5);
    let kind = which.kind();
    walks::boot(&env.store, kind, 1, TTL).expect("boot");
    let job_id = env
        .store
        .live_job(kind.job_kind())
        .unwrap()
        .expect("chain")
        .id;
    let other = env.other_process("other:2:0002");
    let thief = other.clone();
    let hook = Box::new(move || {
        assert!(thief.release_unowned(Target::Job, job_id).expect("force"));
        assert!(thief.claim_job(&[kind.job_kind()], TTL).unwrap().is_some());
    });
    let result = match which {
        Which::Content => {
            let inner = ContentHashWalk {
                scheme: 1,
                batch: 3,
            };
            let h = WalkJob::new(&env.store, Arc::new(Hooked { inner, hook }));
            step(&env.store, kind, &h)
        }
        Which::Faces => {
            let inner = FacesWalk {
                detector: FakeDetector::new(1),
                scheme: 1,
                batch: 3,
            };
            let h = WalkJob::new(&env.store, Arc::new(Hooked { inner, hook }));
            step(&env.store, kind, &h)
        }
        Which::Similar => {
            let inner = similar_walk(1, 3);
            let h = WalkJob::new(&env.store, Arc::new(Hooked { inner, hook }));
            step(&env.store, kind, &h)
        }
    };
    assert!(
        matches!(result, Some(Err(WorkError::Guard(_)))),
        "{result:?}"
    );
    assert_eq!(which.stamps(&env.store, &lib.assets), vec![None; 5]);
    for &id in &lib.assets {
        assert!(env.store.faces(id, 1).unwrap().is_empty());
    }
    let rows = chain_rows(&env.store, kind);
    assert_eq!(rows.len(), 1, "no next row: {rows:?}");
    assert_eq!(
        rows[0].state,
        JobState::Running,
        "the other process holds it"
    );
    assert_eq!(rows[0].lease_owner.as_deref(), Some("other:2:0002"));
    assert!(env.store.walk_record(kind).unwrap().unwrap().scheme < 1);
}

#[test]
fn a_stale_content_hash_walkers_batch_lands_nothing() {
    a_stale_walkers_batch_lands_nothing(Which::Content);
}

#[test]
fn a_stale_face_walkers_batch_lands_nothing() {
    a_stale_walkers_batch_lands_nothing(Which::Faces);
}

#[test]
fn a_stale_similar_walkers_batch_lands_nothing() {
    a_stale_walkers_batch_lands_nothing(Which::Similar);
}

/// The older binary's face batch is processed when the newer binary re-detects one of its
/// assets (scheme 2) before the commit: the commit keeps the newer stamp and its faces, and
/// stamps the others.
#[test]
fn a_batch_commit_keeps_what_a_newer_scheme_stamped_meanwhile() {
    let env = support::env();
    let lib = seed(&env, 3);
    let kind = WalkKindId::Faces;
    walks::boot(&env.store, kind, 1, TTL).expect("boot");
    let newer = env.other_process("newer:2:0002");
    let first = lib.assets[0];
    let face = DetectedFace {
        x: 9.0,
        y: 9.0,
        w: 9.0,
        h: 9.0,
        score: 0.9,
        landmarks: [(0.0, 0.0); 5],
    };
    let hook = Box::new(move || {
        assert!(newer.store_faces(first, 2, vec![face]).expect("re-detect"));
    });
    let inner = FacesWalk {
        detector: FakeDetector::new(1),
        scheme: 1,
        batch: 10,
    };
    let walk = WalkJob::new(&env.store, Arc::new(Hooked { inner, hook }));
    assert_eq!(drain(&env.store, kind, &walk), 1);
    assert_eq!(
        face_stamps(&env.store, &lib.assets),
        [Some(2), Some(1), Some(1)]
    );
    assert!(env.store.faces(first, 1).unwrap().is_empty());
    assert_eq!(env.store.faces(first, 2).unwrap(), [face]);
}

#[test]
fn an_unreadable_file_keeps_its_old_stamp_and_does_not_block_the_record() {
    let env = support::env();
    let lib = seed(&env, 5);
    let kind = WalkKindId::ContentHash;
    walks::boot(&env.store, kind, 1, TTL).expect("boot");
    drain(&env.store, kind, &content_walk(&env, 1, 2));
    let before = env
        .store
        .asset(lib.assets[1])
        .unwrap()
        .unwrap()
        .content_hash;
    // One file vanishes, another is overwritten with other bytes (not the asset's any more).
    std::fs::remove_file(lib.root.join("p001.jpg")).expect("remove");
    std::fs::write(lib.root.join("p003.jpg"), b"other bytes").expect("overwrite");
    walks::boot(&env.store, kind, 2, TTL).expect("boot 2");
    drain(&env.store, kind, &content_walk(&env, 2, 2));
    assert_eq!(
        content_stamps(&env.store, &lib.assets),
        [Some(2), Some(1), Some(2), Some(1), Some(2)]
    );
    let after = env
        .store
        .asset(lib.assets[1])
        .unwrap()
        .unwrap()
        .content_hash;
    assert_eq!(before, after, "the old stamp is kept");
    assert_eq!(env.store.walk_record(kind).unwrap().unwrap().scheme, 2);
    let _ = lib.id;
}

#[test]
fn trashed_assets_are_content_hashed_but_skipped_by_the_face_walk() {
    let env = support::env();
    let lib = seed(&env, 3);
    mediadex::trash::trash(&env.store, lib.assets[1]).expect("trash");
    walks::boot(&env.store, WalkKindId::ContentHash, 1, TTL).expect("boot");
    drain(
        &env.store,
        WalkKindId::ContentHash,
        &content_walk(&env, 1, 10),
    );
    assert_eq!(content_stamps(&env.store, &lib.assets), vec![Some(1); 3]);
    let detector = FakeDetector::new(1);
    walks::boot(&env.store, WalkKindId::Faces, 1, TTL).expect("boot");
    drain(
        &env.store,
        WalkKindId::Faces,
        &faces_walk(&env, detector.clone(), 10),
    );
    assert_eq!(
        face_stamps(&env.store, &lib.assets),
        [Some(1), None, Some(1)]
    );
    assert_eq!(detector.calls.lock().unwrap().len(), 2);
    assert_eq!(
        env.store
            .walk_record(WalkKindId::Faces)
            .unwrap()
            .unwrap()
            .scheme,
        1
    );
    // A new boot finds nothing to do: the trashed asset does not hold the faces walk back.
    let boot = walks::boot(&env.store, WalkKindId::Faces, 1, TTL).expect("boot again");
    assert_eq!(boot.chain, None);
}

#[test]
fn the_sweep_deletes_the_faces_of_swept_assets() {
    let env = support::env();
    let lib = seed(&env, 2);
    let face = DetectedFace {
        x: 1.0,
        y: 2.0,
        w: 3.0,
        h: 4.0,
        score: 0.5,
        landmarks: [(0.0, 0.0); 5],
    };
    for &id in &lib.assets {
        assert!(env.store.store_faces(id, 7, vec![face, face]).unwrap());
    }
    mediadex::trash::trash(&env.store, lib.assets[0]).expect("trash");
    env.clock.advance(31 * 24 * 3600 * 1000);
    assert_eq!(env.store.sweep_trash(30 * 24 * 3600 * 1000).unwrap(), 1);
    assert!(env.store.asset(lib.assets[0]).unwrap().is_none());
    assert!(env.store.faces(lib.assets[0], 7).unwrap().is_empty());
    assert_eq!(env.store.faces(lib.assets[1], 7).unwrap().len(), 2);
}

/// Restores `id` as the user's `restore` does, queueing the walk of `kind` (and nothing
/// else) in the transaction that makes it live again.
fn restore_queueing(store: &Store, id: i64, kind: WalkKindId) {
    let config = mediadex::trash::MoveConfig {
        faces: Some(walks::follow_up(store, kind, 1)),
        ..mediadex::trash::MoveConfig::default()
    };
    mediadex::trash::restore_with(store, id, &config, &mediadex::trash::NoMoveHooks)
        .expect("restore");
}

/// A restore while the chain's next row waits, its cursor already past the restored asset:
/// the chain goes back for it before it says it walked to the end.
fn a_restore_behind_a_waiting_chains_cursor_is_walked_before_the_end(which: Which) {
    let env = support::env();
    let lib = seed(&env, 3);
    let kind = which.kind();
    mediadex::trash::trash(&env.store, lib.assets[0]).expect("trash");
    walks::boot(&env.store, kind, 1, TTL).expect("boot");
    let handler = which.handler(&env, 1);
    assert!(step(&env.store, kind, handler.as_ref()).is_some());
    let next = env.store.live_job(kind.job_kind()).unwrap().expect("next");
    assert_eq!(
        payload(&next).after,
        lib.assets[1],
        "past the trashed asset"
    );
    restore_queueing(&env.store, lib.assets[0], kind);
    drain(&env.store, kind, handler.as_ref());
    assert_eq!(which.stamps(&env.store, &lib.assets), [Some(1); 3]);
    assert_eq!(env.store.walk_record(kind).unwrap().unwrap().scheme, 1);
}

#[test]
fn a_restore_behind_a_waiting_face_chains_cursor_is_walked_before_the_end() {
    a_restore_behind_a_waiting_chains_cursor_is_walked_before_the_end(Which::Faces);
}

#[test]
fn a_restore_behind_a_waiting_similar_chains_cursor_is_walked_before_the_end() {
    a_restore_behind_a_waiting_chains_cursor_is_walked_before_the_end(Which::Similar);
}

/// A restore while the face chain's last batch runs (between its processing and its
/// commit): that commit does not record the walk as done; the chain goes back for the
/// restored asset, and only then says it walked to the end, every live image stamped.
#[test]
fn a_restore_while_the_face_chains_last_batch_runs_is_walked_before_the_end() {
    let env = support::env();
    let lib = seed(&env, 3);
    let kind = WalkKindId::Faces;
    let restored = lib.assets[0];
    mediadex::trash::trash(&env.store, restored).expect("trash");
    walks::boot(&env.store, kind, 1, TTL).expect("boot");
    let store = env.store.clone();
    let once = std::sync::Once::new();
    let hook = Box::new(move || once.call_once(|| restore_queueing(&store, restored, kind)));
    let inner = FacesWalk {
        detector: FakeDetector::new(1),
        scheme: 1,
        batch: 10,
    };
    let walk = WalkJob::new(&env.store, Arc::new(Hooked { inner, hook }));
    assert!(step(&env.store, kind, &walk).is_some());
    assert_eq!(
        face_stamps(&env.store, &lib.assets),
        [None, Some(1), Some(1)]
    );
    let record = env.store.walk_record(kind).unwrap().expect("record");
    assert!(
        record.scheme < 1,
        "not walked to the end while the restored image lacks its faces"
    );
    drain(&env.store, kind, &walk);
    assert_eq!(face_stamps(&env.store, &lib.assets), [Some(1); 3]);
    assert_eq!(env.store.walk_record(kind).unwrap().unwrap().scheme, 1);
    assert_eq!(live_rows(&env.store, kind), 0);
}

/// A scan that finds a trashed photo's bytes again restores its asset by id (the claim): a
/// face chain already past that asset goes back for it too.
#[test]
fn a_scans_restore_behind_a_face_chains_cursor_is_walked_before_the_end() {
    let env = support::env();
    let lib = seed(&env, 3);
    let kind = WalkKindId::Faces;
    mediadex::trash::trash(&env.store, lib.assets[0]).expect("trash");
    walks::boot(&env.store, kind, 1, TTL).expect("boot");
    let handler = faces_walk(&env, FakeDetector::new(1), 1);
    assert!(step(&env.store, kind, &handler).is_some());
    // The user copies the photo back under another name; a scan reads it.
    let bytes = jpeg(b"camera 0", 0);
    std::fs::write(lib.root.join("again.jpg"), &bytes).expect("write");
    let item = IngestItem {
        rel_path: b"again.jpg".to_vec(),
        rel_path_text: "again.jpg".into(),
        stamp: FileStamp {
            size: bytes.len() as u64,
            mtime_ns: 1,
            dev: 1,
            inode: 99,
        },
        reason: FileReason::New,
        checksum: Some(*blake3::hash(&bytes).as_bytes()),
        content_hash: None,
        facts: Some(MediaFacts {
            kind: Some(MediaKind::Image),
            mime: Some("image/jpeg".into()),
            ..MediaFacts::default()
        }),
        error: None,
        namesake: true,
    };
    let lease = env.claimed_scan(lib.id, "again.jpg");
    let report = env
        .store
        .ingest_batch(&lease, lib.id, vec![item], "")
        .expect("ingest");
    assert_eq!(
        (report.items[0].claim, report.items[0].asset_id),
        (Claim::Restored, Some(lib.assets[0]))
    );
    drain(&env.store, kind, &handler);
    assert_eq!(face_stamps(&env.store, &lib.assets), [Some(1); 3]);
    assert_eq!(env.store.walk_record(kind).unwrap().unwrap().scheme, 1);
}

/// A face detector and perceptual hasher that decode through a stand-in heif-dec which
/// sleeps past a 100 ms deadline (no sleep races anything: the decoder is killed at its
/// deadline whatever it did), counting the decodes it is asked for.
#[cfg(unix)]
struct SlowHeif {
    dec: mediadex::media::heif_dec::HeifDec,
    calls: Mutex<u32>,
}

#[cfg(unix)]
impl SlowHeif {
    fn new(dir: &Path) -> Arc<SlowHeif> {
        use std::os::unix::fs::PermissionsExt;
        let script = dir.join("slow-heif-dec");
        std::fs::write(&script, "#!/bin/sh\nexec sleep 600\n").expect("script");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let dec = mediadex::media::heif_dec::HeifDec::at(script)
            .with_limits(Duration::from_millis(100), 1024 * 1024)
            .with_slope(Duration::ZERO);
        Arc::new(SlowHeif {
            dec,
            calls: Mutex::new(0),
        })
    }

    fn decode(&self, path: &Path) -> Result<(), mediadex::faces::FaceError> {
        *self.calls.lock().expect("calls") += 1;
        mediadex::faces::open_with_decoder(path, Some(&self.dec)).map(|_| ())
    }

    fn calls(&self) -> u32 {
        *self.calls.lock().expect("calls")
    }
}

#[cfg(unix)]
impl FaceDetector for SlowHeif {
    fn detect(&self, path: &Path) -> Result<Vec<DetectedFace>, DetectError> {
        mediadex::faces::walk_result(path, self.decode(path).map(|()| Vec::new()))
    }
    fn version(&self) -> i64 {
        1
    }
}

#[cfg(unix)]
impl mediadex::walks::similar::PictureHasher for SlowHeif {
    fn hash(&self, path: &Path) -> Result<Option<u64>, mediadex::walks::similar::HashError> {
        mediadex::similar::walk_hash(path, self.decode(path).map(|()| 7))
    }
    fn version(&self) -> i64 {
        1
    }
}

/// Indexes `name` (its bytes as they are now) in library `lib` through a scan lease,
/// recorded with `stamp` for `reason`; answers its asset.
fn index_one(
    env: &Env,
    lib: i64,
    root: &Path,
    name: &str,
    stamp: FileStamp,
    reason: FileReason,
) -> i64 {
    let bytes = std::fs::read(root.join(name)).expect("read");
    let item = IngestItem {
        rel_path: name.as_bytes().to_vec(),
        rel_path_text: name.to_string(),
        stamp,
        reason,
        checksum: Some(*blake3::hash(&bytes).as_bytes()),
        content_hash: None,
        facts: Some(MediaFacts {
            kind: Some(MediaKind::Image),
            mime: Some("image/heic".into()),
            ..MediaFacts::default()
        }),
        error: None,
        namesake: true,
    };
    env.store
        .request_scan(env.scan_request(lib, ""))
        .expect("request");
    let (lease, _) = env
        .store
        .claim_scan_run(600_000)
        .expect("claim")
        .expect("a run");
    let report = env
        .store
        .ingest_batch(&lease, lib, vec![item], "")
        .expect("ingest");
    env.store
        .finish_full_scan(&lease, lib, ScanEnd::breaker(1.0, true))
        .expect("finish");
    report.items[0].asset_id.expect("an asset")
}

/// Issue 26 deliverable 8: a HEIC whose heif-dec runs to its deadline is remembered in the
/// index for the file's stamp: the next walk (of either kind) does not decode it again and
/// the asset keeps its old stamp; once a scan records a new stamp for the file (re-saved)
/// it is decoded again, and `scan --force`'s read of it forgets the timeout.
#[cfg(unix)]
fn a_timed_out_decode_is_remembered_for_the_files_stamp(which: Which) {
    let env = support::env();
    let lib = env.library("photos");
    let root = env.dir.path().join("photos");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/astronaut_half.heic"),
        root.join("a.heic"),
    )
    .expect("copy");
    let size = std::fs::metadata(root.join("a.heic")).expect("stat").len();
    let stamp = |mtime_ns| FileStamp {
        size,
        mtime_ns,
        dev: 1,
        inode: 1,
    };
    let id = index_one(&env, lib, &root, "a.heic", stamp(5), FileReason::New);
    let slow = SlowHeif::new(env.dir.path());
    let kind = which.kind();
    let walk: Box<dyn JobHandler> = match which {
        Which::Faces => Box::new(WalkJob::new(
            &env.store,
            Arc::new(FacesWalk::new(slow.clone(), None)),
        )),
        _ => Box::new(WalkJob::new(
            &env.store,
            Arc::new(SimilarWalk::new(slow.clone(), None)),
        )),
    };
    let walk_again = |restart| {
        walks::request(&env.store, kind, 1, restart).expect("a walk");
        drain(&env.store, kind, walk.as_ref());
    };
    walks::boot(&env.store, kind, 1, TTL).expect("boot");
    drain(&env.store, kind, walk.as_ref());
    assert_eq!(slow.calls(), 1);
    assert_eq!(env.store.decode_timeout(id).expect("read"), Some(0));
    assert_eq!(
        which.stamps(&env.store, &[id]),
        [None],
        "it keeps its old stamp"
    );

    walk_again(false);
    walk_again(true);
    assert_eq!(slow.calls(), 1, "a later walk ran heif-dec again");

    // Re-saved: the scan records a new stamp for the file, and the fact no longer holds.
    let same = index_one(&env, lib, &root, "a.heic", stamp(6), FileReason::Mtime);
    assert_eq!(same, id);
    assert_eq!(env.store.decode_timeout(id).expect("read"), None);
    walk_again(false);
    assert_eq!(slow.calls(), 2, "a changed stamp is decoded again");
    assert_eq!(env.store.decode_timeout(id).expect("read"), Some(0));

    // `scan --force` reads it again and forgets the timeout.
    index_one(&env, lib, &root, "a.heic", stamp(6), FileReason::Forced);
    assert_eq!(env.store.decode_timeout(id).expect("read"), None);
}

#[cfg(unix)]
#[test]
fn a_face_walks_timed_out_decode_is_remembered_for_the_files_stamp() {
    a_timed_out_decode_is_remembered_for_the_files_stamp(Which::Faces);
}

#[cfg(unix)]
#[test]
fn a_similar_walks_timed_out_decode_is_remembered_for_the_files_stamp() {
    a_timed_out_decode_is_remembered_for_the_files_stamp(Which::Similar);
}

/// The content-hash walk with a byte budget of one file a batch, however many it selects.
struct OneFileABatch(ContentHashWalk);

impl WalkKind for OneFileABatch {
    fn id(&self) -> WalkKindId {
        self.0.id()
    }
    fn scheme(&self) -> i64 {
        self.0.scheme()
    }
    fn batch_size(&self) -> usize {
        self.0.batch_size()
    }
    fn batch_bytes(&self) -> Option<u64> {
        Some(1)
    }
    fn process(&self, batch: &[WalkAsset]) -> WalkResults {
        assert_eq!(batch.len(), 1, "the budget let a second file in");
        self.0.process(batch)
    }
}

/// A batch cut short by its byte budget (issue 29: batches of 8,192 small files, at most
/// 512 MiB of large ones) is not the chain's last: the next row walks on from it, and the
/// walk completes only after the last asset.
#[test]
fn a_walk_batch_cut_by_its_bytes_is_not_taken_for_the_last_one() {
    let env = support::env();
    let lib = seed(&env, 4);
    let kind = WalkKindId::ContentHash;
    walks::boot(&env.store, kind, 1, TTL).expect("boot");
    let walk = OneFileABatch(ContentHashWalk {
        scheme: 1,
        batch: 100,
    });
    let handler = WalkJob::new(&env.store, Arc::new(walk));
    assert_eq!(drain(&env.store, kind, &handler), 4, "one batch per file");
    assert_eq!(content_stamps(&env.store, &lib.assets), vec![Some(1); 4]);
    assert_eq!(env.store.walk_record(kind).unwrap().unwrap().scheme, 1);
}

/// A hasher that counts the pictures it reads and hashes each by its file's size.
struct CountingHasher(Mutex<Vec<std::path::PathBuf>>);

impl mediadex::walks::similar::PictureHasher for CountingHasher {
    fn hash(&self, path: &Path) -> Result<Option<u64>, mediadex::walks::similar::HashError> {
        self.0.lock().expect("calls").push(path.to_path_buf());
        Ok(std::fs::metadata(path).ok().map(|m| m.len()))
    }

    fn version(&self) -> i64 {
        1
    }
}

/// Issue 29 item 4: assets of one content hash shown the same way up have the same pixels,
/// so the faces and similar walks read one of them and give the others its result, in one
/// batch and across batches; a copy turned by its metadata is read itself, and so is every
/// copy while the content hashes are not known yet.
#[test]
fn the_picture_walks_read_each_picture_once_whatever_its_copies_metadata() {
    let env = support::env();
    let copy = |meta: &str, pixels, orientation| Picture {
        meta: meta.into(),
        pixels,
        orientation,
    };
    let lib = seed_pictures(
        &env,
        "photos",
        &[
            copy("first", 7, None),
            copy("second, longer", 7, None),
            copy("other picture", 8, None),
            copy("third", 7, None),
            copy("turned", 7, Some(6)),
            copy("fourth and last", 7, None),
        ],
    );
    let ids = &lib.assets;
    // Before the content hashes: no copy is known as one, each is read.
    let detector = FakeDetector::new(1);
    walks::boot(&env.store, WalkKindId::Faces, 1, TTL).expect("boot");
    drain(
        &env.store,
        WalkKindId::Faces,
        &faces_walk(&env, detector.clone(), 2),
    );
    assert_eq!(detector.calls.lock().unwrap().len(), 6);
    walks::boot(&env.store, WalkKindId::ContentHash, 1, TTL).expect("boot");
    drain(
        &env.store,
        WalkKindId::ContentHash,
        &content_walk(&env, 1, 100),
    );
    // A new detector, in batches of 2: p000 and p001 in the first (p001 takes p000's
    // result), p003 and p005 in later ones (they take what the first batch stored).
    let detector = FakeDetector::new(2);
    walks::boot(&env.store, WalkKindId::Faces, 2, TTL).expect("boot 2");
    drain(
        &env.store,
        WalkKindId::Faces,
        &faces_walk(&env, detector.clone(), 2),
    );
    let read: Vec<String> = detector
        .calls
        .lock()
        .unwrap()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        read,
        ["p000.jpg", "p002.jpg", "p004.jpg"],
        "each picture once"
    );
    assert_eq!(face_stamps(&env.store, ids), vec![Some(2); 6]);
    let faces = |i: usize| env.store.faces(ids[i], 2).unwrap();
    for i in [1, 3, 5] {
        assert_eq!(faces(i), faces(0), "p00{i} has p000's faces");
    }
    assert_ne!(faces(2), faces(0));
    let hasher = Arc::new(CountingHasher(Mutex::new(vec![])));
    let similar = SimilarWalk {
        batch: 2,
        ..SimilarWalk::new(hasher.clone(), None)
    };
    walks::boot(&env.store, WalkKindId::Similar, 1, TTL).expect("boot");
    drain(
        &env.store,
        WalkKindId::Similar,
        &WalkJob::new(&env.store, Arc::new(similar)),
    );
    assert_eq!(
        hasher.0.lock().unwrap().len(),
        3,
        "each picture hashed once"
    );
    let phash = |i: usize| env.store.picture_hash_stamp(ids[i]).unwrap();
    for i in [1, 3, 5] {
        assert_eq!(phash(i), phash(0), "p00{i} has p000's hash");
    }
    assert_ne!(phash(4), phash(0), "the turned copy was hashed itself");
}

/// A walk batch reads its assets' files in one range when their ids are dense and one by
/// one when they are spread thin (issue 29: per-asset lookups were most of a content-hash
/// batch's selection); either way each asset gets exactly the files `asset_files` gives it,
/// in its order, a file gone from the disk among them.
#[test]
fn a_walk_batch_gives_each_asset_its_own_files_whether_its_ids_are_dense_or_spread() {
    let env = support::env();
    let lib = seed(&env, 40);
    std::fs::remove_file(lib.root.join("p003.jpg")).expect("remove");
    let copy = lib.root.join("copy of p005.jpg");
    std::fs::copy(lib.root.join("p005.jpg"), &copy).expect("copy");
    support::scan_now(&env, lib.id, "");
    let (visit, every) = (
        WalkVisit {
            scheme: 1,
            force: false,
            rollback: false,
        },
        WalkVisit {
            scheme: 1,
            force: true,
            rollback: false,
        },
    );
    let check = |batch: Vec<WalkAsset>, want: &[i64]| {
        let got: Vec<i64> = batch.iter().map(|a| a.id).collect();
        assert_eq!(got, want);
        for a in batch {
            assert_eq!(
                a.files,
                env.store.asset_files(a.id).unwrap(),
                "asset {}",
                a.id
            );
        }
    };
    let dense = env.store.walk_batch(WalkKindId::ContentHash, every, 0, 100);
    check(dense.unwrap(), &lib.assets);
    // One asset in ten without its content hash: the batch spans ten times its size.
    (env.sql())
        .execute(
            "UPDATE assets SET content_hash = NULL, content_hash_scheme = NULL WHERE id % 10 = 4",
            &[],
        )
        .unwrap();
    let spread: Vec<i64> = lib
        .assets
        .iter()
        .copied()
        .filter(|id| id % 10 == 4)
        .collect();
    let sparse = env.store.walk_batch(WalkKindId::ContentHash, visit, 0, 100);
    check(sparse.unwrap(), &spread);
}
