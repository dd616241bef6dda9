//! People (issue 28 items 3 and 4), driven batch by batch through the job handlers with a
//! fake clock and a fake encoder (each face's vector is its person's point, moved a little
//! per photo): the embedding walk stores one vector per face and embedder version, embeds
//! nothing twice (a restart, a rollback, a crash mid-walk), lands nothing under a lost lease,
//! and re-embeds a re-detected face; new faces join their person in the walk's own commit;
//! the recluster gives the same people whatever the scan order, never puts two faces of one
//! photo in one person, keeps the user's merges, splits, names and hidden people, and a
//! recluster read before a change of the user's writes nothing and runs again.

use crate::support;

use mediadex::model::{
    Claim, DetectedFace, FileReason, FileStamp, IngestItem, JobFilter, MediaFacts, MediaKind,
    RECLUSTER_JOB_KIND, Reclustered, ScanEnd, Target, WalkAsset, WalkKindId, WalkResults,
};
use mediadex::ops;
use mediadex::people::recluster::{ReclusterJob, regroup};
use mediadex::queue::{JobDone, JobHandler, LeaseGuard, NoHooks, Registry, WorkError};
use mediadex::store::{PeopleRefusal, Store};
use mediadex::walks::embeddings::{EmbeddingsWalk, FaceEncoder};
use mediadex::walks::faces::DetectError;
use mediadex::walks::{self, WalkJob, WalkKind};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{Env, TTL};

const KIND: WalkKindId = WalkKindId::Embeddings;

/// Each face's vector: its person's point (a letter of the photo's name, in the order of its
/// faces, e.g. `07-AB.jpg`: face 0 is A, face 1 is B; a face's box x is 100 times its
/// index), moved by the photo's number. People are 1.41 apart, a person's faces < 0.1.
pub(crate) struct Fake {
    version: i64,
    faces: Mutex<usize>,
}

impl Fake {
    pub(crate) fn new(version: i64) -> Arc<Fake> {
        Arc::new(Fake {
            version,
            faces: Mutex::new(0),
        })
    }

    fn embedded(&self) -> usize {
        *self.faces.lock().unwrap()
    }
}

impl FaceEncoder for Fake {
    fn encode(
        &self,
        path: &Path,
        faces: &[DetectedFace],
    ) -> Result<Vec<Option<Vec<f32>>>, DetectError> {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let (number, people) = name.split_once('-').unwrap();
        let n: usize = number.parse().unwrap();
        *self.faces.lock().unwrap() += faces.len();
        Ok(faces
            .iter()
            .map(|f| {
                let who = people.as_bytes()[(f.x / 100.0) as usize] - b'A';
                let mut v = vec![0.0f32; 128];
                v[who as usize] = 1.0;
                v[20 + n % 7] += 0.01 * (n % 5) as f32;
                Some(v)
            })
            .collect())
    }

    fn version(&self) -> i64 {
        self.version
    }
}

/// A library of photos named `NN-LETTERS.jpg`, indexed through a scan lease, each with one
/// stored face per letter. Answers the asset ids by name.
pub(crate) fn photos(env: &Env, names: &[&str]) -> BTreeMap<String, i64> {
    let library = env.library("photos");
    let root = env.dir.path().join("photos");
    let items: Vec<IngestItem> = names
        .iter()
        .map(|name| {
            let bytes = format!("a photo called {name}").into_bytes();
            std::fs::write(root.join(name), &bytes).unwrap();
            IngestItem {
                rel_path: name.as_bytes().to_vec(),
                rel_path_text: name.to_string(),
                stamp: FileStamp {
                    size: bytes.len() as u64,
                    mtime_ns: 1,
                    dev: 1,
                    inode: 1,
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
            }
        })
        .collect();
    env.store
        .request_scan(env.scan_request(library, ""))
        .unwrap();
    let (lease, _) = env.store.claim_scan_run(600_000).unwrap().unwrap();
    let report = env.store.ingest_batch(&lease, library, items, "").unwrap();
    env.store
        .finish_full_scan(&lease, library, ScanEnd::breaker(1.0, true))
        .unwrap();
    let mut ids = BTreeMap::new();
    for (name, o) in names.iter().zip(&report.items) {
        assert_eq!(o.claim, Claim::Created);
        let id = o.asset_id.unwrap();
        detect(env, id, name);
        ids.insert(name.to_string(), id);
    }
    ids
}

/// Stores one face per letter of `name` for asset `id` (detector 1), as a detection does.
fn detect(env: &Env, id: i64, name: &str) {
    let letters = name
        .split_once('-')
        .unwrap()
        .1
        .trim_end_matches(".jpg")
        .len();
    let faces = (0..letters)
        .map(|i| DetectedFace {
            x: 100.0 * i as f32,
            y: 10.0,
            w: 50.0,
            h: 50.0,
            score: 0.9,
            landmarks: [(1.0, 1.0); 5],
        })
        .collect();
    assert!(env.store.store_faces(id, 1, faces).unwrap());
}

fn walk_of(store: &Store, encoder: Arc<Fake>, batch: usize) -> WalkJob<EmbeddingsWalk> {
    let scheme = encoder.version;
    WalkJob::new(
        store,
        Arc::new(EmbeddingsWalk {
            batch,
            ..EmbeddingsWalk::new(store, encoder, Some(scheme))
        }),
    )
}

/// Claims the next due row of `kind` that `handler` takes and runs it under a real guard.
fn step(
    store: &Store,
    kind: &str,
    scheme: Option<i64>,
    handler: &dyn JobHandler,
) -> Option<Result<JobDone, WorkError>> {
    let filter = JobFilter::new(kind, scheme);
    let (lease, job) = store.claim_jobs(&[filter], TTL).unwrap()?;
    let registry = Arc::new(Registry::default());
    let guard = LeaseGuard::register(store, lease, TTL, &registry);
    guard.begin(Duration::from_secs(3600), &NoHooks).unwrap();
    Some(handler.run(&guard, &job))
}

/// Runs the embedding chain until no row is due; answers how many batches ran.
fn drain(env: &Env, handler: &WalkJob<EmbeddingsWalk>) -> usize {
    let mut n = 0;
    while let Some(done) = step(&env.store, KIND.job_kind(), handler.max_scheme(), handler) {
        assert!(matches!(done, Ok(JobDone::Committed)), "{done:?}");
        n += 1;
        assert!(n < 100, "the chain does not end");
    }
    n
}

/// Boots the walk under the encoder's version and runs it to the end.
pub(crate) fn walk(env: &Env, encoder: &Arc<Fake>, batch: usize) -> usize {
    walks::boot(&env.store, KIND, encoder.version, TTL).unwrap();
    drain(env, &walk_of(&env.store, encoder.clone(), batch))
}

/// Runs the queued recluster (queueing one if none waits).
pub(crate) fn recluster(env: &Env) {
    ops::people::recluster(&ops::Services::new(env.store.clone())).unwrap();
    let handler = ReclusterJob::new(&env.store, 1);
    let done = step(&env.store, RECLUSTER_JOB_KIND, None, &handler).expect("a recluster");
    assert!(matches!(done, Ok(JobDone::Committed)), "{done:?}");
}

/// Each person's photos, by name, as a set of sets (ids aside).
fn people_by_name(env: &Env, names: &BTreeMap<String, i64>) -> BTreeSet<Vec<String>> {
    let by_id: BTreeMap<i64, &String> = names.iter().map(|(n, id)| (*id, n)).collect();
    env.store
        .people(true)
        .unwrap()
        .iter()
        .map(|p| {
            let photos = env.store.photos_of(p.id, 0, 1000).unwrap();
            let mut names: Vec<String> = photos.iter().map(|id| by_id[id].clone()).collect();
            names.sort();
            names
        })
        .collect()
}

/// Rows of a table, raw.
fn count(env: &Env, sql: &str) -> i64 {
    env.sql().int(sql, &[]).expect("a count")
}

fn embed_stamps(env: &Env, ids: &BTreeMap<String, i64>) -> Vec<Option<i64>> {
    let mut sql = env.sql();
    ids.values()
        .map(|&id| {
            sql.int(
                "SELECT embed_scheme FROM assets WHERE id = ?1",
                &[id.into()],
            )
        })
        .collect()
}

#[test]
fn the_walk_stores_a_vector_per_face_and_version_and_embeds_nothing_twice() {
    let env = support::env();
    let ids = photos(&env, &["01-A.jpg", "02-A.jpg", "03-AB.jpg", "04-B.jpg"]);
    let v1 = Fake::new(1);
    walk(&env, &v1, 2);
    assert_eq!(v1.embedded(), 5);
    assert_eq!(env.store.face_vectors(1).unwrap().len(), 5);
    assert_eq!(embed_stamps(&env, &ids), vec![Some(1); 4]);
    // A restart visits every picture again and embeds nothing: each face has its vector.
    walks::request(&env.store, KIND, 1, true).unwrap();
    drain(&env, &walk_of(&env.store, v1.clone(), 2));
    assert_eq!(v1.embedded(), 5);
    // A new embedder embeds every face under its version and keeps the old vectors.
    let v2 = Fake::new(2);
    walk(&env, &v2, 2);
    assert_eq!(v2.embedded(), 5);
    assert_eq!(env.store.face_vectors(1).unwrap().len(), 5);
    assert_eq!(env.store.face_vectors(2).unwrap().len(), 5);
    assert_eq!(embed_stamps(&env, &ids), vec![Some(2); 4]);
    // A rollback to the first re-stamps, and re-embeds nothing it had seen.
    walk(&env, &v1, 2);
    assert_eq!(v1.embedded(), 5);
    assert_eq!(embed_stamps(&env, &ids), vec![Some(1); 4]);
}

#[test]
fn a_redetected_face_is_re_embedded_and_nothing_else() {
    let env = support::env();
    let ids = photos(&env, &["01-A.jpg", "02-A.jpg", "03-AB.jpg"]);
    let v1 = Fake::new(1);
    walk(&env, &v1, 8);
    assert_eq!(v1.embedded(), 4);
    // The face walk finds the faces of 03 again: new rows, the stamp cleared, the chain asked.
    detect(&env, ids["03-AB.jpg"], "03-AB.jpg");
    assert_eq!(embed_stamps(&env, &ids), vec![Some(1), Some(1), None]);
    assert!(env.store.live_job(KIND.job_kind()).unwrap().is_some());
    drain(&env, &walk_of(&env.store, v1.clone(), 8));
    assert_eq!(v1.embedded(), 6, "only the two new faces");
    assert_eq!(env.store.face_vectors(1).unwrap().len(), 4);
    assert_eq!(embed_stamps(&env, &ids), vec![Some(1); 3]);
    assert_eq!(count(&env, "SELECT count(*) FROM face_vectors"), 4);
}

/// A face walk's batch re-detects pictures far into the library: the embedding chain it
/// queues starts at the picture when the walk had reached the end under the claimer's
/// embedder (before: every batch's chain began again at the first asset, a visit that grew
/// with the library), and from the beginning under any other embedder.
#[test]
fn a_redetections_chain_starts_at_its_picture_under_the_embedder_that_walked_to_the_end() {
    let env = support::env();
    let names = ["01-A.jpg", "02-A.jpg", "03-A.jpg", "04-AB.jpg", "05-B.jpg"];
    let ids = photos(&env, &names);
    let v1 = Fake::new(1);
    walk(&env, &v1, 8);
    // An asset behind the re-detected one without its stamp (the record says walked to the
    // end, so none should be): only a chain that started at the beginning stamps it.
    (env.sql())
        .execute(
            "UPDATE assets SET embed_scheme = NULL WHERE id = ?1",
            &[ids["02-A.jpg"].into()],
        )
        .unwrap();
    detect(&env, ids["04-AB.jpg"], "04-AB.jpg");
    let row = env
        .store
        .live_job(KIND.job_kind())
        .unwrap()
        .expect("a chain");
    let payload = walks::Payload::parse(&row.payload);
    assert_eq!(
        (payload.after, payload.since),
        (ids["04-AB.jpg"] - 1, Some(1))
    );
    assert_eq!(drain(&env, &walk_of(&env.store, v1.clone(), 8)), 1);
    assert_eq!(
        embed_stamps(&env, &ids),
        vec![Some(1), None, Some(1), Some(1), Some(1)],
        "the chain began at 04"
    );
    // A binary of another embedder claims the next such chain: it walks from the beginning.
    detect(&env, ids["04-AB.jpg"], "04-AB.jpg");
    let v2 = Fake::new(2);
    assert_eq!(drain(&env, &walk_of(&env.store, v2.clone(), 8)), 1);
    assert_eq!(v2.embedded(), 6, "every face of every picture");
    assert_eq!(embed_stamps(&env, &ids), vec![Some(2); 5]);
}

/// The recluster a walk's end asks for waits a minute (a face walk's batches each end a short
/// chain: their asks are one recluster); the user's "recluster" makes it due now.
#[test]
fn the_walks_end_puts_its_recluster_off_a_minute_and_the_users_ask_runs_it_now() {
    let env = support::env();
    let ids = photos(&env, &["01-A.jpg", "02-A.jpg", "03-A.jpg"]);
    walk(&env, &Fake::new(1), 8);
    let handler = ReclusterJob::new(&env.store, 1);
    assert!(
        step(&env.store, RECLUSTER_JOB_KIND, None, &handler).is_none(),
        "not yet due"
    );
    env.clock
        .advance(mediadex::walks::embeddings::RECLUSTER_AFTER);
    assert!(
        step(&env.store, RECLUSTER_JOB_KIND, None, &handler).is_some(),
        "due a minute on"
    );
    // Another end's ask, then the user's: one row, due at once.
    detect(&env, ids["02-A.jpg"], "02-A.jpg");
    drain(&env, &walk_of(&env.store, Fake::new(1), 8));
    assert!(
        step(&env.store, RECLUSTER_JOB_KIND, None, &handler).is_none(),
        "not yet due"
    );
    assert!(!ops::people::recluster(&ops::Services::new(env.store.clone())).unwrap());
    assert!(
        step(&env.store, RECLUSTER_JOB_KIND, None, &handler).is_some(),
        "the user's: now"
    );
}

#[test]
fn a_crash_mid_walk_resumes_at_its_cursor_and_embeds_nothing_twice() {
    let env = support::env();
    let names: Vec<String> = (1..=7).map(|i| format!("{i:02}-A.jpg")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let ids = photos(&env, &names);
    let v1 = Fake::new(1);
    let handler = walk_of(&env.store, v1.clone(), 3);
    walks::boot(&env.store, KIND, 1, TTL).unwrap();
    assert!(step(&env.store, KIND.job_kind(), Some(1), &handler).is_some());
    assert_eq!(v1.embedded(), 3);
    // The dead process: claimed the next row, then nothing more.
    let dead = env.other_process("dead:1:0001");
    assert!(dead.claim_job(&[KIND.job_kind()], TTL).unwrap().is_some());
    drop(dead);
    env.clock.advance(TTL + 1);
    assert_eq!(env.store.reclaim_stale().unwrap().jobs_requeued, 1);
    env.clock.advance(60_000); // past the retry backoff
    assert_eq!(drain(&env, &handler), 2);
    assert_eq!(v1.embedded(), 7, "each face once");
    assert_eq!(embed_stamps(&env, &ids), vec![Some(1); 7]);
    assert_eq!(
        count(
            &env,
            "SELECT count(*) FROM jobs WHERE kind = 'people:recluster'"
        ),
        1,
        "the end asked for a recluster"
    );
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
    fn on_complete(&self) -> Option<mediadex::model::NewJob> {
        self.inner.on_complete()
    }
}

#[test]
fn a_lease_lost_mid_batch_writes_no_vector_stamp_person_or_recluster() {
    let env = support::env();
    let first = photos(&env, &["01-A.jpg", "02-A.jpg", "03-A.jpg"]);
    walk(&env, &Fake::new(1), 8);
    recluster(&env);
    let people = env.store.people(false).unwrap();
    assert_eq!(people.len(), 1, "{people:?}");
    // A new photo of A: the batch would embed it and put it in A at once.
    let more = more_photos(&env, &["04-A.jpg"])["04-A.jpg"];
    let job_id = env.store.live_job(KIND.job_kind()).unwrap().unwrap().id;
    let thief = env.other_process("other:2:0002");
    let hook = Box::new(move || {
        assert!(thief.release_unowned(Target::Job, job_id).unwrap());
        assert!(thief.claim_job(&[KIND.job_kind()], TTL).unwrap().is_some());
    });
    let v1 = Fake::new(1);
    let inner = EmbeddingsWalk::new(&env.store, v1.clone(), Some(1));
    let hooked = WalkJob::new(&env.store, Arc::new(Hooked { inner, hook }));
    let done = step(&env.store, KIND.job_kind(), Some(1), &hooked);
    assert!(matches!(done, Some(Err(WorkError::Guard(_)))), "{done:?}");
    assert_eq!(v1.embedded(), 1, "the batch did embed the new face");
    assert_eq!(
        env.store.face_vectors(1).unwrap().len(),
        3,
        "no vector landed"
    );
    let stamp = (env.sql()).int(
        "SELECT embed_scheme FROM assets WHERE id = ?1",
        &[more.into()],
    );
    assert_eq!(stamp, None);
    assert_eq!(
        count(&env, "SELECT count(*) FROM face_people"),
        3,
        "nobody joined"
    );
    assert_eq!(
        count(
            &env,
            "SELECT count(*) FROM jobs WHERE kind = 'people:recluster' AND state = 'queued'"
        ),
        0
    );
    assert_eq!(embed_stamps(&env, &first), vec![Some(1); 3]);
}

#[test]
fn a_new_face_joins_its_person_in_the_walks_commit_and_a_stranger_waits() {
    let env = support::env();
    let mut ids = photos(&env, &["01-A.jpg", "02-A.jpg", "03-A.jpg", "04-B.jpg"]);
    walk(&env, &Fake::new(1), 8);
    recluster(&env);
    assert_eq!(env.store.people(false).unwrap().len(), 1, "B alone waits");
    let anna = env.store.people(false).unwrap()[0].id;
    // The next scan brings a fifth photo of A and a second of B.
    let added = more_photos(&env, &["05-A.jpg", "06-B.jpg"]);
    ids.extend(added.clone());
    walk(&env, &Fake::new(1), 8);
    let in05 = env.store.photo_people(added["05-A.jpg"]).unwrap();
    assert_eq!(in05[0].person_id, Some(anna), "joined at once: {in05:?}");
    let in06 = env.store.photo_people(added["06-B.jpg"]).unwrap();
    assert_eq!(in06[0].person_id, None, "a pair is nobody yet");
    // A third photo of B, and the recluster that the walk's end queued (due a minute on)
    // makes B a person.
    more_photos(&env, &["07-B.jpg"]);
    walk(&env, &Fake::new(1), 8);
    env.clock
        .advance(mediadex::walks::embeddings::RECLUSTER_AFTER);
    let handler = ReclusterJob::new(&env.store, 1);
    while let Some(done) = step(&env.store, RECLUSTER_JOB_KIND, None, &handler) {
        assert!(matches!(done, Ok(JobDone::Committed)), "{done:?}");
    }
    assert_eq!(env.store.people(false).unwrap().len(), 2);
}

/// Indexes more photos into library 1 (as a later scan does) and detects their faces.
fn more_photos(env: &Env, names: &[&str]) -> BTreeMap<String, i64> {
    let root = env.dir.path().join("photos");
    let lease = env.claimed_scan(1, "");
    let items = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let bytes = format!("a photo called {name}").into_bytes();
            std::fs::write(root.join(name), &bytes).unwrap();
            IngestItem {
                rel_path: name.as_bytes().to_vec(),
                rel_path_text: name.to_string(),
                stamp: FileStamp {
                    size: bytes.len() as u64,
                    mtime_ns: 1,
                    dev: 1,
                    inode: 100 + i as u64,
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
            }
        })
        .collect();
    let report = env.store.ingest_batch(&lease, 1, items, "").unwrap();
    env.store
        .finish_full_scan(&lease, 1, ScanEnd::breaker(1.0, true))
        .unwrap();
    let mut ids = BTreeMap::new();
    for (name, o) in names.iter().zip(&report.items) {
        let id = o.asset_id.unwrap();
        detect(env, id, name);
        ids.insert(name.to_string(), id);
    }
    ids
}

const HOUSEHOLD: [&str; 10] = [
    "01-A.jpg",
    "02-AB.jpg",
    "03-A.jpg",
    "04-B.jpg",
    "05-BA.jpg",
    "06-C.jpg",
    "07-C.jpg",
    "08-A.jpg",
    "09-B.jpg",
    "10-D.jpg",
];

#[test]
fn the_same_faces_make_the_same_people_whatever_the_scan_order() {
    let mut seen = None;
    for order in [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        [9, 4, 7, 0, 2, 8, 1, 6, 3, 5],
    ] {
        let env = support::env();
        let names: Vec<&str> = order.iter().map(|&i| HOUSEHOLD[i]).collect();
        let ids = photos(&env, &names);
        walk(&env, &Fake::new(1), 3);
        recluster(&env);
        let people = people_by_name(&env, &ids);
        let a: Vec<String> = ["01-A.jpg", "02-AB.jpg", "03-A.jpg", "05-BA.jpg", "08-A.jpg"]
            .map(String::from)
            .into();
        assert!(people.contains(&a), "{people:?}");
        assert_eq!(people.len(), 2, "A and B; C and D wait: {people:?}");
        match &seen {
            None => seen = Some(people),
            Some(first) => assert_eq!(&people, first),
        }
    }
}

#[test]
fn a_merge_a_split_a_name_and_a_hidden_person_survive_a_recluster() {
    let env = support::env();
    let ids = photos(
        &env,
        &[
            "01-A.jpg", "02-A.jpg", "03-A.jpg", "04-A.jpg", "05-B.jpg", "06-B.jpg", "07-B.jpg",
            "08-C.jpg", "09-C.jpg", "10-C.jpg",
        ],
    );
    walk(&env, &Fake::new(1), 4);
    recluster(&env);
    let s = ops::Services::new(env.store.clone());
    let who = |name: &str| {
        env.store.photo_people(ids[name]).unwrap()[0]
            .person_id
            .unwrap()
    };
    let (a, b, c) = (who("01-A.jpg"), who("05-B.jpg"), who("08-C.jpg"));
    ops::people::name(&s, a, "Anna").unwrap();
    ops::people::merge(&s, a, b).unwrap();
    ops::people::hide(&s, c, true).unwrap();
    // A split: the user says 04's face is someone else.
    let face04 = env.store.photo_people(ids["04-A.jpg"]).unwrap()[0].face_id;
    let split = ops::people::move_face(&s, face04, None).unwrap().id;
    let before = people_by_name(&env, &ids);
    recluster(&env);
    assert_eq!(people_by_name(&env, &ids), before);
    let anna = env.store.person(a).unwrap().unwrap();
    assert_eq!(anna.name.as_deref(), Some("Anna"));
    assert_eq!(anna.photos, 6, "A's three left and B's three: {anna:?}");
    assert!(env.store.person(b).unwrap().is_none(), "B was merged away");
    assert!(env.store.person(c).unwrap().unwrap().hidden);
    assert_eq!(
        env.store.photos_of(split, 0, 10).unwrap(),
        vec![ids["04-A.jpg"]]
    );
    assert_eq!(
        ops::people::list(&s, false).unwrap().len(),
        2,
        "C is hidden"
    );
}

#[test]
fn two_faces_of_one_photo_are_never_one_person() {
    let env = support::env();
    // Three photos of twins A (both faces near A's point), and one of A alone.
    let ids = photos(&env, &["01-AA.jpg", "02-AA.jpg", "03-AA.jpg", "04-A.jpg"]);
    walk(&env, &Fake::new(1), 8);
    recluster(&env);
    for p in env.store.people(true).unwrap() {
        let photos = env.store.photos_of(p.id, 0, 100).unwrap();
        assert_eq!(photos.len() as i64, p.faces, "one photo twice in {p:?}");
    }
    // The user cannot say it either: a merge of the two faces' people is refused.
    let twins = env.store.photo_people(ids["01-AA.jpg"]).unwrap();
    let s = ops::Services::new(env.store.clone());
    if let (Some(x), Some(y)) = (twins[0].person_id, twins[1].person_id) {
        let refused = ops::people::merge(&s, x, y).unwrap_err();
        assert!(
            matches!(refused, ops::Error::People(PeopleRefusal::SharedPhoto(..))),
            "{refused}"
        );
    }
    // Moving the second twin into the first's person takes the clustering's face out: the
    // user's word wins, and still one face of the photo per person.
    let first = twins[0].person_id.expect("the first twin is someone");
    ops::people::move_face(&s, twins[1].face_id, Some(first)).unwrap();
    let now = env.store.photo_people(ids["01-AA.jpg"]).unwrap();
    assert_eq!(now[1].person_id, Some(first));
    assert_eq!(now[0].person_id, None, "{now:?}");
    // Once the user put a face there, another face of the photo is refused.
    let refused = ops::people::move_face(&s, twins[0].face_id, Some(first)).unwrap_err();
    assert!(
        matches!(
            refused,
            ops::Error::People(PeopleRefusal::PhotoTaken { .. })
        ),
        "{refused}"
    );
}

#[test]
fn a_recluster_read_before_a_users_change_writes_nothing_and_runs_again() {
    let env = support::env();
    let ids = photos(&env, &["01-A.jpg", "02-A.jpg", "03-A.jpg"]);
    walk(&env, &Fake::new(1), 8);
    env.store
        .enqueue_now(mediadex::store::recluster_job())
        .unwrap();
    let (lease, _) = env
        .store
        .claim_job(&[RECLUSTER_JOB_KIND], TTL)
        .unwrap()
        .unwrap();
    let state = env.store.people_state().unwrap();
    let faces = env.store.face_vectors(1).unwrap();
    let r = regroup(&faces, &state, mediadex::people::PARAMS);
    assert_eq!(r.new.len(), 1, "{r:?}");
    // Meanwhile the user makes a person of 01's face.
    let s = ops::Services::new(env.store.clone());
    let face = env.store.photo_people(ids["01-A.jpg"]).unwrap()[0].face_id;
    let mine = ops::people::move_face(&s, face, None).unwrap().id;
    assert_eq!(
        env.store.commit_recluster(&lease, r).unwrap(),
        Reclustered::Again
    );
    assert_eq!(count(&env, "SELECT count(*) FROM face_people"), 1);
    assert_eq!(
        env.store.photos_of(mine, 0, 10).unwrap(),
        vec![ids["01-A.jpg"]]
    );
    assert!(env.store.live_job(RECLUSTER_JOB_KIND).unwrap().is_some());
}

/// "All photos of X" and "who is in this photo" are index ranges, never a read of a whole
/// table: what keeps them fast at a million assets (docs/performance.md).
#[test]
fn a_persons_photos_and_a_photos_people_are_read_through_their_indexes() {
    support::sqlite_only(
        "people::a_persons_photos_and_a_photos_people_are_read_through_their_indexes",
    );
    let env = support::env();
    let plans = env.store.people_plans().unwrap();
    let (photos, faces) = (&plans[0], &plans[1]);
    assert!(
        photos
            .iter()
            .any(|l| l.contains("USING COVERING INDEX face_people_person")),
        "{photos:?}"
    );
    assert!(faces.iter().any(|l| l.contains("faces_asset")), "{faces:?}");
    for plan in [photos, faces] {
        assert!(!plan.iter().any(|l| l.starts_with("SCAN")), "{plan:?}");
    }
    // The list reads the people (their kept counts), the trashed photos' faces and one
    // entry of the cover index each: never every face.
    let list = &plans[2];
    let scans: Vec<&String> = list.iter().filter(|l| l.contains("SCAN")).collect();
    assert!(
        scans
            .iter()
            .all(|l| l.ends_with("SCAN p") || l.contains("SCAN g")),
        "{list:?}"
    );
    assert!(
        list.iter().any(|l| l.contains("assets_trashed")),
        "{list:?}"
    );
    assert!(
        list.iter().any(|l| l.contains("face_people_cover")),
        "{list:?}"
    );
}

/// The list's counts are the people's kept counts less the trashed photos' faces: after
/// walks, a recluster, the user's moves and merge, a trash, a restore, a re-detection and a
/// swept photo, each person's count is what counting their live faces gives.
#[test]
fn the_lists_counts_follow_every_change_without_counting_each_face() {
    let env = support::env();
    let names: Vec<String> = (1..=9)
        .map(|i| format!("{i:02}-{}.jpg", ["A", "B", "AB"][i % 3]))
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let ids = photos(&env, &names);
    walk(&env, &Fake::new(1), 8);
    recluster(&env);
    let s = ops::Services::new(env.store.clone());
    let check = |when: &str| {
        for p in env.store.people(true).unwrap() {
            let live = count(
                &env,
                &format!(
                    "SELECT count(*) FROM face_people fp JOIN assets a ON a.id = fp.asset_id
                      WHERE fp.person_id = {} AND a.trashed_at IS NULL",
                    p.id
                ),
            );
            assert_eq!((p.faces, p.photos), (live, live), "{when}: person {}", p.id);
        }
    };
    check("after the recluster");
    let who = |name: &str| env.store.photo_people(ids[name]).unwrap()[0].clone();
    let (a, b) = (
        who("03-A.jpg").person_id.unwrap(),
        who("04-B.jpg").person_id.unwrap(),
    );
    ops::people::move_face(&s, who("01-B.jpg").face_id, None).unwrap();
    check("after a split");
    ops::people::merge(&s, a, b).unwrap_err();
    let split = who("01-B.jpg").person_id.unwrap();
    ops::people::merge(&s, b, split).unwrap();
    check("after a merge");
    let trashed = ids["03-A.jpg"];
    (env.sql())
        .execute(
            "UPDATE assets SET trashed_at = 1, trash_reason = 'user' WHERE id = ?1",
            &[trashed.into()],
        )
        .unwrap();
    check("after a trash");
    detect(&env, ids["04-B.jpg"], "04-B.jpg");
    check("after a re-detection");
    let mut sql = env.sql();
    sql.batch("PRAGMA foreign_keys = ON").unwrap();
    (sql.execute("DELETE FROM assets WHERE id = ?1", &[trashed.into()])).unwrap();
    check("after a sweep");
}

// ---- the real models through the built binary ----------------------------------------------

fn mediadex(data: &Path, args: &[&str]) -> std::process::Output {
    let mut c = assert_cmd::cargo::cargo_bin_cmd!("mediadex");
    c.env_remove("MEDIADEX_DATA")
        .env_remove("MEDIADEX_FACE_SCHEME")
        .env_remove("MEDIADEX_EMBED_SCHEME")
        .env("RUST_LOG", "warn")
        .arg("--data")
        .arg(data)
        .args(args);
    c.output().expect("run mediadex")
}

fn ok_json(data: &Path, args: &[&str]) -> serde_json::Value {
    let out = mediadex(data, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    serde_json::from_slice(&out.stdout).expect("one JSON value")
}

fn ok(data: &Path, args: &[&str]) {
    let out = mediadex(data, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
}

/// Three copies of the astronaut (the original, a JPEG re-encode, a smaller one) and a
/// rocket, through scan, the face walk, the embedding walk and a recluster: one person of
/// three faces, whom the user names, splits, merges back and hides.
#[test]
fn the_cli_finds_the_astronaut_as_one_person_and_keeps_what_the_user_says() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, lib) = (tmp.path().join("data"), tmp.path().join("lib"));
    std::fs::create_dir_all(&lib).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let astronaut = image::open(fixtures.join("astronaut.png")).unwrap();
    std::fs::copy(fixtures.join("astronaut.png"), lib.join("a1.png")).unwrap();
    astronaut.to_rgb8().save(lib.join("a2.jpg")).unwrap();
    astronaut
        .thumbnail(400, 400)
        .to_rgb8()
        .save(lib.join("a3.jpg"))
        .unwrap();
    std::fs::copy(fixtures.join("rocket.jpg"), lib.join("rocket.jpg")).unwrap();
    ok_json(&data, &["library", "add", &lib.to_string_lossy(), "--json"]);
    ok_json(&data, &["scan", "--wait", "--json"]);
    ok_json(&data, &["walk", "faces", "--wait", "--json"]);
    let walked = ok_json(&data, &["walk", "embeddings", "--wait", "--json"]);
    assert_eq!(walked["scheme"], mediadex::faces::EMBED_SCHEME, "{walked}");
    ok(&data, &["people", "recluster", "--wait"]);
    let people = ok_json(&data, &["people", "--json"]);
    assert_eq!(people.as_array().unwrap().len(), 1, "{people}");
    assert_eq!(
        (people[0]["faces"].clone(), people[0]["photos"].clone()),
        (3.into(), 3.into())
    );
    let id = people[0]["id"].as_i64().unwrap().to_string();
    let named = ok_json(&data, &["people", "name", &id, "Astronaut", "--json"]);
    assert_eq!(named["name"], "Astronaut");
    let shown = ok_json(&data, &["people", "show", &id, "--json"]);
    let face = shown["in_photos"][0]["face_id"]
        .as_i64()
        .unwrap()
        .to_string();
    let photo = shown["in_photos"][0]["asset_id"]
        .as_i64()
        .unwrap()
        .to_string();
    // A split, kept by a recluster; then merged back.
    let split = ok_json(&data, &["people", "move", &face, "new", "--json"]);
    assert_eq!(split["faces"], 1);
    ok(&data, &["people", "recluster", "--wait"]);
    let people = ok_json(&data, &["people", "--json"]);
    assert_eq!(people.as_array().unwrap().len(), 2, "{people}");
    let in_photo = ok_json(&data, &["people", "photo", &photo, "--json"]);
    assert_eq!(in_photo[0]["person"], split["id"], "{in_photo}");
    assert_eq!(in_photo[0]["confirmed"], true);
    let split_id = split["id"].as_i64().unwrap().to_string();
    let merged = ok_json(&data, &["people", "merge", &id, &split_id, "--json"]);
    assert_eq!(
        (merged["faces"].clone(), merged["name"].clone()),
        (3.into(), "Astronaut".into())
    );
    let hidden = ok_json(&data, &["people", "hide", &id, "--json"]);
    assert_eq!(hidden["hidden"], true);
    assert_eq!(ok_json(&data, &["people", "--json"]), serde_json::json!([]));
    assert_eq!(
        ok_json(&data, &["people", "--hidden", "--json"])[0]["id"].to_string(),
        id
    );
    // An unknown person is the user's mistake: exit 2 and a message that says so.
    let out = mediadex(&data, &["people", "name", "999", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no person 999"));
}

/// Stores `faces` boxes (x, width) for asset `id` as detector `version` finds them.
fn redetect(env: &Env, id: i64, version: i64, boxes: &[(f32, f32)]) {
    let faces = boxes
        .iter()
        .map(|&(x, w)| DetectedFace {
            x,
            y: 12.0,
            w,
            h: w,
            score: 0.9,
            landmarks: [(1.0, 1.0); 5],
        })
        .collect();
    assert!(env.store.store_faces(id, version, faces).unwrap());
}

#[test]
fn a_new_detector_keeps_what_the_user_said_about_each_face_it_finds_again() {
    let env = support::env();
    let ids = photos(
        &env,
        &["01-A.jpg", "02-A.jpg", "03-A.jpg", "04-AB.jpg", "05-A.jpg"],
    );
    walk(&env, &Fake::new(1), 8);
    recluster(&env);
    let s = ops::Services::new(env.store.clone());
    let face = |name: &str| env.store.photo_people(ids[name]).unwrap()[0].clone();
    let named = |name: &str| name.to_string();
    let a = face("01-A.jpg").person_id.expect("A is someone");
    // The user's word: 04's face is someone else (a split), 05's face is not A.
    let split = ops::people::move_face(&s, face("04-AB.jpg").face_id, None)
        .unwrap()
        .id;
    ops::people::reject(&s, face("05-A.jpg").face_id, a).unwrap();

    // Detector 2 finds each face again, a few pixels off (04's B beside its A).
    for (name, id) in &ids {
        let mut boxes = vec![(3.0, 54.0)];
        if *name == named("04-AB.jpg") {
            boxes.push((103.0, 54.0));
        }
        redetect(&env, *id, 2, &boxes);
    }
    walk(&env, &Fake::new(1), 8);
    recluster(&env);

    let now = env.store.photo_people(ids["04-AB.jpg"]).unwrap();
    let found_again = now.iter().find(|f| f.x < 100.0).expect("04's A");
    assert_eq!(
        found_again.person_id,
        Some(split),
        "the split is undone: {now:?}"
    );
    assert!(found_again.confirmed, "{now:?}");
    let other = now.iter().find(|f| f.x >= 100.0).expect("04's B");
    assert_ne!(
        other.person_id,
        Some(split),
        "the word went to the wrong face"
    );
    let five = face("05-A.jpg");
    assert_ne!(five.person_id, Some(a), "05 is back in A: {five:?}");
    assert_eq!(
        env.store.photos_of(split, 0, 10).unwrap(),
        vec![ids["04-AB.jpg"]]
    );
    // The clustering's person keeps its faces found again, rather than losing them all.
    let mut of_a = env.store.photos_of(a, 0, 10).unwrap();
    of_a.sort();
    assert_eq!(
        of_a,
        vec![ids["01-A.jpg"], ids["02-A.jpg"], ids["03-A.jpg"]]
    );
}
