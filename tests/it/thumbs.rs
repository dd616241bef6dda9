//! Thumbnails made by scans (issue 5: "generated on first request and by scans for new
//! images"): a scan's fenced completion queues a `thumbs` job for the pictures and videos it
//! published, in the same transaction (a stale scan worker queues nothing); the job, run
//! by the worker pool, leaves cache files without any request, under the key the first
//! request uses; a rescan of an unchanged library queues nothing, and a re-run of the job
//! rewrites nothing; a worker that lost its lease mid-batch advances nothing; a corrupt
//! picture, or a decoder that panics, costs its own thumbnail only, never the job.

use crate::support;

use mediadex::model::{
    FileReason, FileStamp, IngestItem, Job, JobState, MediaFacts, MediaKind, ScanEnd,
    THUMBS_JOB_KIND, Target, ThumbAsset, ThumbsPayload, hex,
};
use mediadex::queue::{
    Handlers, JobDone, JobHandler, LeaseGuard, NoHooks, PoolConfig, Registry, WorkError, WorkerPool,
};
use mediadex::scan::job::{ScanConfig, ScanJob};
use mediadex::store::Store;
use mediadex::thumbs::Thumbs;
use mediadex::thumbs::job::{MakeThumb, Outcome, ThumbsJob};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{Env, TTL, env};

fn photo(path: &Path, shade: u8) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    image::RgbImage::from_pixel(64, 48, image::Rgb([shade, 10, 20]))
        .save(path)
        .expect("write png");
}

/// A file that sniffs as a JPEG and does not decode.
fn corrupt_jpeg(path: &Path) {
    let mut bytes = vec![
        0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, b'J', b'F', b'I', b'F', 0,
    ];
    bytes.extend_from_slice(&[0x5A; 200]);
    std::fs::write(path, bytes).expect("write corrupt");
}

/// A library with two pictures, a corrupt one, a byte copy and a text file.
fn library(env: &Env) -> (i64, PathBuf) {
    let root = env.dir.path().join("photos");
    photo(&root.join("a.png"), 1);
    photo(&root.join("trip/b.png"), 2);
    corrupt_jpeg(&root.join("broken.jpg"));
    std::fs::copy(root.join("a.png"), root.join("copy.png")).expect("copy");
    std::fs::write(root.join("notes.txt"), "not a photo").expect("notes");
    let root = std::fs::canonicalize(&root).expect("canon");
    let lib = mediadex::app::add_library(&env.store, "photos", &root.to_string_lossy())
        .expect("add")
        .id;
    (lib, root)
}

fn thumbs(env: &Env) -> Arc<Thumbs> {
    // No ffmpeg: the same answer on every machine.
    Arc::new(Thumbs::with_ffmpeg(&env.dir.path().join("data"), None))
}

fn thumb_rows(store: &Store) -> Vec<Job> {
    let mut rows: Vec<Job> = store
        .jobs(10_000)
        .expect("jobs")
        .into_iter()
        .filter(|j| j.kind == THUMBS_JOB_KIND)
        .collect();
    rows.reverse();
    rows
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Scans the library with a pool that also runs `handler` for the thumbs job, until the
/// run has ended and no thumbs row is left waiting or running.
fn scan_and_settle(env: &Env, lib: i64, handler: Option<ThumbsJob>) {
    let (run, _) = env
        .store
        .request_scan(env.scan_request(lib, ""))
        .expect("request");
    let scan = ScanJob {
        store: env.store.clone(),
        config: ScanConfig::default(),
        extract: mediadex::media::extract_from,
    };
    let mut handlers = Handlers::default().scan(scan);
    let drain = handler.is_some();
    if let Some(h) = handler {
        handlers = handlers.job(THUMBS_JOB_KIND, h);
    }
    let pool = WorkerPool::start(&env.store, handlers, PoolConfig::with_ttl(1, TTL));
    wait_until("the scan and its thumbnails", || {
        let ended = env
            .store
            .scan_run(run.id)
            .expect("run")
            .is_some_and(|r| r.state.is_terminal());
        let settled = !drain || thumb_rows(&env.store).iter().all(|j| j.state.is_terminal());
        ended && settled
    });
    pool.shutdown();
}

fn live_by_path(env: &Env) -> BTreeMap<String, [u8; 32]> {
    let mut out = BTreeMap::new();
    for a in env.store.assets(false).expect("assets") {
        for p in &a.paths {
            out.insert(p.rel_path_text.clone(), a.checksum);
        }
    }
    out
}

/// Records what became of each asset, around the real maker.
struct Recording {
    inner: Arc<dyn MakeThumb>,
    seen: Mutex<BTreeMap<i64, Outcome>>,
}

impl MakeThumb for Recording {
    fn make(&self, asset: &ThumbAsset) -> Outcome {
        let out = self.inner.make(asset);
        self.seen
            .lock()
            .expect("lock")
            .insert(asset.asset.id, out.clone());
        out
    }
}

#[test]
fn a_scan_leaves_thumbnails_of_its_new_pictures_without_any_request() {
    let env = env();
    let (lib, _) = library(&env);
    let thumbs = thumbs(&env);
    let recording = Arc::new(Recording {
        inner: thumbs.clone(),
        seen: Mutex::default(),
    });
    let handler = ThumbsJob {
        store: env.store.clone(),
        maker: recording.clone(),
        batch: 2,
    };
    scan_and_settle(&env, lib, Some(handler));

    let live = live_by_path(&env);
    for name in ["a.png", "trip/b.png"] {
        let cached = thumbs.cache_path(&hex(&live[name]));
        let img = image::open(&cached).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!((img.width(), img.height()), (64, 48), "{name}");
        // The first request finds it: same function, same key.
        let t = thumbs
            .cached(&hex(&live[name]))
            .expect("cached for requests");
        assert!(t.immutable && t.content_type == "image/jpeg");
    }
    let broken = thumbs.cache_path(&hex(&live["broken.jpg"]));
    assert!(!broken.exists(), "a placeholder is never cached");
    let seen = recording.seen.lock().expect("lock").clone();
    assert_eq!(seen.len(), 3, "the three new pictures, once each: {seen:?}");
    assert_eq!(
        seen.values().filter(|o| **o == Outcome::Made).count(),
        2,
        "{seen:?}"
    );
    assert!(
        seen.values().any(|o| *o == Outcome::Placeholder),
        "{seen:?}"
    );

    // Three pictures in batches of two: two rows, both done, none retried.
    let rows = thumb_rows(&env.store);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(
        rows.iter()
            .all(|j| j.state == JobState::Done && j.attempts == 0),
        "{rows:?}"
    );
}

#[cfg(unix)]
fn inode(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).expect("meta").ino()
}

#[cfg(unix)]
#[test]
fn a_rescan_queues_nothing_and_a_rerun_of_the_job_rewrites_nothing() {
    let env = env();
    let (lib, _) = library(&env);
    let thumbs = thumbs(&env);
    scan_and_settle(&env, lib, Some(ThumbsJob::new(&env.store, thumbs.clone())));
    let rows = thumb_rows(&env.store);
    assert_eq!(rows.len(), 1);
    let live = live_by_path(&env);
    let a = thumbs.cache_path(&hex(&live["a.png"]));
    let before = inode(&a);

    scan_and_settle(&env, lib, Some(ThumbsJob::new(&env.store, thumbs.clone())));
    assert_eq!(
        thumb_rows(&env.store),
        rows,
        "an unchanged rescan queues nothing"
    );

    // The same run's job again (as after a crash between a batch and its commit): every
    // thumbnail is found cached; no file is rewritten.
    let payload = ThumbsPayload::parse(&rows[0].payload).expect("payload");
    env.store.enqueue(payload.job()).expect("re-run");
    let recording = Arc::new(Recording {
        inner: thumbs.clone(),
        seen: Mutex::default(),
    });
    let handler = ThumbsJob {
        store: env.store.clone(),
        maker: recording.clone(),
        batch: 8,
    };
    assert!(matches!(
        step(&env.store, &handler),
        Some(Ok(JobDone::Committed))
    ));
    let seen = recording.seen.lock().expect("lock").clone();
    assert_eq!(
        seen.values().filter(|o| **o == Outcome::Cached).count(),
        2,
        "{seen:?}"
    );
    assert!(!seen.values().any(|o| *o == Outcome::Made), "{seen:?}");
    assert_eq!(inode(&a), before, "the cached file was not rewritten");
}

/// Claims the next thumbs row and runs the handler on it under a real lease guard.
fn step(store: &Store, handler: &dyn JobHandler) -> Option<Result<JobDone, WorkError>> {
    let (lease, job) = store.claim_job(&[THUMBS_JOB_KIND], TTL).expect("claim")?;
    let registry = Arc::new(Registry::default());
    let guard = LeaseGuard::register(store, lease, TTL, &registry);
    guard
        .begin(Duration::from_secs(3600), &NoHooks)
        .expect("first heartbeat");
    Some(handler.run(&guard, &job))
}

/// Runs `hook` once, before the first asset is made.
struct Hooked {
    inner: Arc<dyn MakeThumb>,
    hook: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl MakeThumb for Hooked {
    fn make(&self, asset: &ThumbAsset) -> Outcome {
        let hook = self.hook.lock().expect("lock").take();
        if let Some(hook) = hook {
            hook();
        }
        self.inner.make(asset)
    }
}

#[test]
fn a_thumbs_worker_that_lost_its_lease_mid_batch_advances_nothing() {
    let env = env();
    let (lib, _) = library(&env);
    // The scan only: its thumbs row waits in the queue.
    scan_and_settle(&env, lib, None);
    let rows = thumb_rows(&env.store);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].state, JobState::Queued);
    let job_id = rows[0].id;

    let other = env.other_process("other:2:0002");
    let hook: Box<dyn FnOnce() + Send> = Box::new(move || {
        assert!(other.release_unowned(Target::Job, job_id).expect("force"));
        assert!(other.claim_job(&[THUMBS_JOB_KIND], TTL).unwrap().is_some());
    });
    let handler = ThumbsJob {
        store: env.store.clone(),
        maker: Arc::new(Hooked {
            inner: thumbs(&env),
            hook: Mutex::new(Some(hook)),
        }),
        batch: 1,
    };
    let result = step(&env.store, &handler);
    assert!(
        matches!(result, Some(Err(WorkError::Guard(_)))),
        "{result:?}"
    );
    let rows = thumb_rows(&env.store);
    assert_eq!(rows.len(), 1, "no next row: {rows:?}");
    assert_eq!(
        rows[0].state,
        JobState::Running,
        "the other process holds it"
    );
    assert_eq!(rows[0].lease_owner.as_deref(), Some("other:2:0002"));
    let payload = ThumbsPayload::parse(&rows[0].payload).expect("payload");
    assert_eq!(payload.visited, 0, "the cursor did not move");
}

/// A decoder that panics on one asset.
struct Panicky {
    inner: Arc<dyn MakeThumb>,
    victim: i64,
}

impl MakeThumb for Panicky {
    fn make(&self, asset: &ThumbAsset) -> Outcome {
        assert_ne!(asset.asset.id, self.victim, "decoder blew up");
        self.inner.make(asset)
    }
}

#[test]
fn a_corrupt_picture_or_a_panicking_decoder_never_fails_the_job() {
    let env = env();
    let (lib, _) = library(&env);
    scan_and_settle(&env, lib, None);
    let live = live_by_path(&env);
    let broken = env
        .store
        .assets(false)
        .expect("assets")
        .into_iter()
        .find(|a| a.checksum == live["broken.jpg"])
        .expect("the corrupt file is an asset");
    assert_eq!(broken.facts.kind, Some(MediaKind::Image));
    let a = env
        .store
        .assets(false)
        .expect("assets")
        .into_iter()
        .find(|x| x.checksum == live["a.png"])
        .expect("a");
    let thumbs = thumbs(&env);
    let handler = ThumbsJob {
        store: env.store.clone(),
        maker: Arc::new(Panicky {
            inner: thumbs.clone(),
            victim: a.id,
        }),
        batch: 8,
    };
    let result = step(&env.store, &handler);
    assert!(matches!(result, Some(Ok(JobDone::Committed))), "{result:?}");
    let rows = thumb_rows(&env.store);
    assert!(
        rows.iter()
            .all(|j| j.state == JobState::Done && j.attempts == 0),
        "{rows:?}"
    );
    assert!(
        !thumbs.cache_path(&hex(&live["a.png"])).exists(),
        "it panicked"
    );
    assert!(!thumbs.cache_path(&hex(&live["broken.jpg"])).exists());
    assert!(thumbs.cache_path(&hex(&live["trip/b.png"])).is_file());
}

// ---- the queueing, at the store ------------------------------------------------------

fn item(path: &str, content: u8, kind: MediaKind) -> IngestItem {
    IngestItem {
        rel_path: path.as_bytes().to_vec(),
        rel_path_text: path.to_string(),
        stamp: FileStamp {
            size: 100,
            mtime_ns: 1_000,
            dev: 7,
            inode: u64::from(content),
        },
        reason: FileReason::New,
        checksum: Some([content; 32]),
        content_hash: None,
        facts: Some(MediaFacts {
            kind: Some(kind),
            ..MediaFacts::default()
        }),
        error: None,
        namesake: true,
    }
}

#[test]
fn a_completion_queues_the_thumbnails_of_what_it_published_and_a_stale_one_queues_none() {
    let env = env();
    let lib = env.library("photos");
    env.store
        .request_scan(env.scan_request(lib, ""))
        .expect("request");
    let (lease, run) = env.store.claim_scan_run(TTL).expect("claim").expect("run");
    let items = vec![
        item("a.jpg", 1, MediaKind::Image),
        item("b.mp4", 2, MediaKind::Video),
        item("c.bin", 3, MediaKind::Other),
    ];
    let report = env
        .store
        .ingest_batch(&lease, lib, items, "")
        .expect("ingest");
    let ids: Vec<Option<i64>> = report.items.iter().map(|i| i.asset_id).collect();

    // The run's lease is lost before its completion: the completion lands nothing, and
    // nothing is queued for the assets it did not publish.
    assert!(
        env.store
            .release_unowned(Target::ScanRun, run.id)
            .expect("force")
    );
    assert!(
        env.store
            .finish_full_scan(&lease, lib, ScanEnd::breaker(0.2, true))
            .is_err()
    );
    assert!(
        thumb_rows(&env.store).is_empty(),
        "a stale completion queued work"
    );

    // The next holder completes it: one row for the picture and the video.
    let (lease, _) = env
        .store
        .claim_scan_run(TTL)
        .expect("claim")
        .expect("again");
    env.store
        .finish_full_scan(&lease, lib, ScanEnd::breaker(0.2, true))
        .expect("finish");
    let rows = thumb_rows(&env.store);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let payload = ThumbsPayload::parse(&rows[0].payload).expect("payload");
    let (a, b) = (ids[0].expect("a"), ids[1].expect("b"));
    assert_eq!(
        payload,
        ThumbsPayload::published(lease.id, a.min(b), a.max(b))
    );
    let batch = env
        .store
        .thumbs_batch(payload.after, payload.last, 10)
        .expect("batch");
    let kinds: Vec<MediaKind> = batch.iter().map(|t| t.kind).collect();
    assert_eq!(kinds, vec![MediaKind::Image, MediaKind::Video]);
}

/// A disk whose free space the test sets.
struct FakeDisk(std::sync::atomic::AtomicU64);

impl mediadex::disk::FreeSpace for FakeDisk {
    fn free_bytes(&self, _path: &Path) -> Option<u64> {
        Some(self.0.load(std::sync::atomic::Ordering::SeqCst))
    }
}

#[test]
fn the_cache_stops_at_its_reserve_and_carries_on_once_space_is_back() {
    use std::sync::atomic::Ordering;
    let env = env();
    let (lib, _) = library(&env);
    let disk = Arc::new(FakeDisk(1_000.into()));
    let data = env.dir.path().join("data");
    let thumbs = Arc::new(Thumbs::with_ffmpeg(&data, None).with_space(disk.clone(), 64 * 1024));
    let scan = ScanJob {
        store: env.store.clone(),
        config: ScanConfig::default(),
        extract: mediadex::media::extract_from,
    };
    let handlers = Handlers::default()
        .scan(scan)
        .job(THUMBS_JOB_KIND, ThumbsJob::new(&env.store, thumbs.clone()));
    let mut config = PoolConfig::with_ttl(1, TTL);
    config.poll_every = Duration::from_millis(20);
    let pool = WorkerPool::start(&env.store, handlers, config);
    env.store
        .request_scan(env.scan_request(lib, ""))
        .expect("request");
    wait_until("the thumbnails to pause", || {
        thumb_rows(&env.store)
            .first()
            .is_some_and(|j| j.last_error.is_some())
    });
    let paused = thumb_rows(&env.store).remove(0);
    assert_eq!(paused.state, JobState::Queued, "{paused:?}");
    assert_eq!(paused.attempts, 0, "a pause spends no attempt");
    let why = paused.last_error.clone().unwrap_or_default();
    assert_eq!(
        why,
        format!(
            "the disk holding {} is full (1000 bytes free); mediadex paused the thumbnails \
             (it keeps 65536 bytes free for the database) and will carry on when space is freed",
            data.display()
        )
    );
    let live = live_by_path(&env);
    let a = thumbs.cache_path(&hex(&live["a.png"]));
    assert!(!a.exists(), "nothing is cached below the reserve");
    // A request is still answered, but caches nothing either.
    let src = mediadex::thumbs::Source {
        checksum_hex: &hex(&live["a.png"]),
        kind: Some(MediaKind::Image),
        mime: Some("image/png"),
        orientation: None,
        pixels: None,
    };
    let root = env.dir.path().join("photos");
    let served = thumbs.get(&src, &root.join("a.png")).expect("served");
    assert!(served.immutable, "a real thumbnail, not the placeholder");
    assert!(!a.exists(), "a request caches nothing below the reserve");

    disk.0.store(1 << 30, Ordering::SeqCst);
    env.clock.advance(mediadex::store::PAUSED_RETRY);
    pool.wake();
    wait_until("the thumbnails once space is back", || {
        thumb_rows(&env.store)
            .iter()
            .all(|j| j.state == JobState::Done)
    });
    pool.shutdown();
    assert!(a.is_file(), "made once space is back");
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn heif_source<'a>(sum: &'a str, mime: &'a str) -> mediadex::thumbs::Source<'a> {
    mediadex::thumbs::Source {
        checksum_hex: sum,
        kind: Some(MediaKind::Image),
        mime: Some(mime),
        orientation: None,
        pixels: Some(405 * 540),
    }
}

/// JPEG magic and the decoded size of a thumbnail.
fn jpeg_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(bytes.get(..3), Some(&[0xFF, 0xD8, 0xFF][..]), "JPEG magic");
    let img = image::load_from_memory_with_format(bytes, image::ImageFormat::Jpeg)
        .expect("decodes as JPEG");
    (img.width(), img.height())
}

/// A stand-in for heif-dec that writes `png` where it is told to: the thumbnailer's side of
/// the decoder, on every machine.
#[cfg(unix)]
fn fake_heif_dec(dir: &Path, png: &Path) -> mediadex::media::heif_dec::HeifDec {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("heif-dec");
    let body = format!("#!/bin/sh\ncp '{}' \"$4\"\n", png.display());
    std::fs::write(&script, body).expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    mediadex::media::heif_dec::HeifDec::at(script)
}

#[cfg(unix)]
#[test]
fn heif_pictures_get_a_jpeg_through_the_decoder_and_a_placeholder_without_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = fixture("astronaut_half.heic");
    let without = Thumbs::with_ffmpeg(&dir.path().join("a"), None).with_heif(None);
    let src = heif_source("aa01", "image/heic");
    let t = without.get(&src, &file).expect("placeholder");
    assert_eq!(t.content_type, "image/svg+xml");
    assert_eq!(
        without.lacking(),
        ["image/heic", "image/heif", "image/avif", "video"]
    );

    let decoder = fake_heif_dec(dir.path(), &fixture("astronaut.png"));
    let with = Thumbs::with_ffmpeg(&dir.path().join("b"), None).with_heif(Some(decoder));
    for mime in ["image/heic", "image/avif"] {
        let sum = format!("bb{}", mime.len());
        let t = with.get(&heif_source(&sum, mime), &file).expect("thumb");
        assert!(t.immutable && t.content_type == "image/jpeg", "{mime}");
        assert_eq!(jpeg_size(&t.bytes), (320, 320), "{mime}");
        assert!(with.cache_path(&sum).is_file(), "{mime} cached");
    }
    assert_eq!(with.lacking(), ["video"]);
}

/// The viewer's previews go through the same decoder as the thumbnails, at 2048 px on the
/// long side, and are cached apart from them.
#[cfg(unix)]
#[test]
fn heif_previews_are_large_jpegs_through_the_decoder_cached_apart_from_thumbnails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = fixture("astronaut_half.heic");
    let big = dir.path().join("big.png");
    image::RgbImage::from_pixel(2400, 3000, image::Rgb([9, 80, 160]))
        .save(&big)
        .expect("png");
    let decoder = fake_heif_dec(dir.path(), &big);
    let thumbs = Thumbs::with_ffmpeg(&dir.path().join("c"), None).with_heif(Some(decoder));
    let previews = thumbs.previews();
    assert_eq!(previews.size(), mediadex::thumbs::PREVIEW_SIZE);
    for mime in ["image/heic", "image/avif"] {
        let sum = format!("dd{}", mime.len());
        let p = previews
            .get(&heif_source(&sum, mime), &file)
            .expect("preview");
        assert!(p.immutable && p.content_type == "image/jpeg", "{mime}");
        assert_eq!(jpeg_size(&p.bytes), (1638, 2048), "{mime}");
        assert!(previews.cache_path(&sum).is_file(), "{mime} cached");
        assert!(!thumbs.cache_path(&sum).exists(), "{mime}: apart");
    }
}

/// The corpus's HEIC and AVIF previews through the real heif-dec, at their own size.
#[test]
#[ignore = "needs heif-dec"]
fn heic_and_avif_fixtures_get_real_jpeg_previews() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decoder = mediadex::media::heif_dec::HeifDec::find().expect("heif-dec on PATH");
    let previews = Thumbs::with_ffmpeg(dir.path(), None)
        .with_heif(Some(decoder))
        .previews();
    for (name, mime, size) in [
        ("astronaut_half.heic", "image/heic", (405, 540)),
        ("astronaut_384.avif", "image/avif", (384, 384)),
    ] {
        let sum = format!("ee{}", name.len());
        let p = previews
            .get(&heif_source(&sum, mime), &fixture(name))
            .expect(name);
        assert!(p.immutable, "{name}: a real preview");
        assert_eq!(jpeg_size(&p.bytes), size, "{name}");
    }
}

/// The corpus's HEIC and AVIF through the real heif-dec: JPEG thumbnails of their shape.
#[test]
#[ignore = "needs heif-dec"]
fn heic_and_avif_fixtures_get_real_jpeg_thumbnails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decoder = mediadex::media::heif_dec::HeifDec::find().expect("heif-dec on PATH");
    let thumbs = Thumbs::with_ffmpeg(dir.path(), None).with_heif(Some(decoder));
    for (name, mime, size) in [
        ("astronaut_half.heic", "image/heic", (240, 320)),
        ("astronaut_384.avif", "image/avif", (320, 320)),
    ] {
        let sum = format!("cc{}", name.len());
        let t = thumbs
            .get(&heif_source(&sum, mime), &fixture(name))
            .expect(name);
        assert!(t.immutable, "{name}: a real thumbnail");
        assert_eq!(jpeg_size(&t.bytes), size, "{name}");
    }
}

/// `status --json` under a PATH holding only `programs` (empty stand-ins).
#[cfg(unix)]
fn status_with_programs(programs: &[&str]) -> serde_json::Value {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).expect("bin");
    for p in programs {
        let path = bin.join(p);
        std::fs::write(&path, "#!/bin/sh\nexit 1\n").expect("stand-in");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mediadex"))
        .env_remove("MEDIADEX_DATA")
        .env_remove("RUST_LOG")
        .env("PATH", &bin)
        .arg("--data")
        .arg(dir.path().join("data"))
        .args(["status", "--json"])
        .output()
        .expect("run mediadex");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

#[cfg(unix)]
#[test]
fn status_names_the_formats_that_get_only_a_placeholder() {
    let none = status_with_programs(&[]);
    let all = ["image/heic", "image/heif", "image/avif", "video"];
    assert_eq!(none["no_thumbnails"], serde_json::json!(all));
    let old_name = status_with_programs(&["heif-convert", "ffmpeg"]);
    assert_eq!(old_name["no_thumbnails"], serde_json::json!([]));
    let new_name = status_with_programs(&["heif-dec"]);
    assert_eq!(new_name["no_thumbnails"], serde_json::json!(["video"]));
}

fn picture_source<'a>(
    sum: &'a str,
    mime: &'a str,
    pixels: Option<u64>,
) -> mediadex::thumbs::Source<'a> {
    mediadex::thumbs::Source {
        checksum_hex: sum,
        kind: Some(MediaKind::Image),
        mime: Some(mime),
        orientation: None,
        pixels,
    }
}

/// Issue 26 finding 12: a scanner's TIFF gets a real thumbnail, not the grey placeholder.
#[test]
fn a_tiff_scan_gets_a_real_thumbnail() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scan = dir.path().join("scan.tif");
    image::open(fixture("astronaut.png"))
        .expect("fixture")
        .save_with_format(&scan, image::ImageFormat::Tiff)
        .expect("a TIFF");
    let thumbs = Thumbs::with_ffmpeg(&dir.path().join("data"), None);
    let src = picture_source("ee01", "image/tiff", Some(512 * 512));
    assert!(thumbs.makes(&src), "a TIFF is made here");
    let t = thumbs.get(&src, &scan).expect("thumb");
    assert!(
        t.immutable && t.content_type == "image/jpeg",
        "{}",
        t.content_type
    );
    assert_eq!(jpeg_size(&t.bytes), (320, 320));
}

/// Issue 26 deliverable 8: a JPEG declaring 17000x17000, with no size in the index, is
/// refused on its header's word: the placeholder, and nothing near the picture's 867 MB
/// allocated (the thread's allocations are counted).
#[test]
fn a_jpeg_declaring_17000x17000_gets_the_placeholder_without_allocating() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bomb = fixture("bomb_17000.jpg");
    let thumbs = Thumbs::with_ffmpeg(&dir.path().join("data"), None);
    let t = crate::media_extract::within_memory(16 << 20, move || {
        thumbs.get(&picture_source("ee02", "image/jpeg", None), &bomb)
    })
    .expect("within its memory")
    .expect("an answer");
    assert_eq!(t.content_type, "image/svg+xml", "the placeholder");
}

/// Issue 26 finding 13: a HEIF whose decode ran to its deadline gets the placeholder saying
/// so, and the answer says it timed out (the caller remembers it in the index); the job does
/// not decode an asset the index remembers so (`WalkAsset::timed_out`).
#[cfg(unix)]
#[test]
fn a_timed_out_decode_says_so_and_the_job_skips_one_the_index_remembers() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let ran = dir.path().join("ran");
    let script = dir.path().join("heif-dec");
    let body = format!(
        "#!/bin/sh\necho run >> '{}'\nexec sleep 600\n",
        ran.display()
    );
    std::fs::write(&script, body).expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let dec = mediadex::media::heif_dec::HeifDec::at(script)
        .with_limits(Duration::from_millis(100), 1024 * 1024)
        .with_slope(Duration::ZERO);
    let thumbs = Thumbs::with_ffmpeg(&dir.path().join("data"), None).with_heif(Some(dec));
    let file = fixture("astronaut_half.heic");
    let sum = hex(&[0xff; 32]);
    let src = heif_source(&sum, "image/heic");
    let runs = || std::fs::read_to_string(&ran).map_or(0, |s| s.lines().count());
    let t = thumbs.get(&src, &file).expect("placeholder");
    assert_eq!(t.content_type, "image/svg+xml");
    assert_eq!(t.timed_out, Some(0), "the answer says it timed out");
    let svg = String::from_utf8(t.bytes).expect("svg");
    assert!(svg.contains("decoding timed out after 0 s"), "{svg}");
    assert_eq!(runs(), 1);
    let mut asset = ThumbAsset {
        asset: mediadex::model::WalkAsset {
            id: 1,
            checksum: [0xff; 32],
            trashed: false,
            files: Vec::new(),
            timed_out: Some(30),
            same_pixels: None,
            known: None,
        },
        kind: MediaKind::Image,
        mime: Some("image/heic".into()),
        orientation: None,
        width: Some(405),
        height: Some(540),
    };
    assert_eq!(
        thumbs.make(&asset),
        Outcome::Placeholder,
        "the job does not decode it"
    );
    assert_eq!(
        runs(),
        1,
        "heif-dec ran again though the index remembers it"
    );
    asset.asset.timed_out = None;
    assert_eq!(
        thumbs.make(&asset),
        Outcome::NoFile,
        "not remembered: looked for"
    );
}

/// Issue 26 deliverable 8: the thumbs job's decode that ran to its deadline lands in the
/// index with the batch's fenced commit, for the file's stamp (a request and the walks then
/// skip it).
#[cfg(unix)]
#[test]
fn the_jobs_timed_out_decode_is_remembered_with_its_batch() {
    use std::os::unix::fs::PermissionsExt;
    let env = env();
    let root = env.dir.path().join("photos");
    std::fs::create_dir_all(&root).expect("mkdir");
    std::fs::copy(fixture("astronaut_half.heic"), root.join("a.heic")).expect("copy");
    photo(&root.join("b.png"), 3);
    let lib = mediadex::app::add_library(&env.store, "photos", &root.to_string_lossy())
        .expect("add")
        .id;
    let script = env.dir.path().join("heif-dec");
    std::fs::write(&script, "#!/bin/sh\nexec sleep 600\n").expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let dec = mediadex::media::heif_dec::HeifDec::at(script)
        .with_limits(Duration::from_millis(100), 1024 * 1024)
        .with_slope(Duration::ZERO);
    let thumbs =
        Arc::new(Thumbs::with_ffmpeg(&env.dir.path().join("data"), None).with_heif(Some(dec)));
    let recording = Arc::new(Recording {
        inner: thumbs,
        seen: Mutex::default(),
    });
    let handler = ThumbsJob {
        store: env.store.clone(),
        maker: recording.clone(),
        batch: 8,
    };
    scan_and_settle(&env, lib, Some(handler));
    let id_of = |rel: &str| {
        let assets = env.store.assets(false).expect("assets");
        let a = assets
            .iter()
            .find(|a| a.paths.iter().any(|p| p.rel_path_text == rel));
        a.expect("indexed").id
    };
    let (heic, png) = (id_of("a.heic"), id_of("b.png"));
    let seen = recording.seen.lock().expect("lock").clone();
    assert!(matches!(seen[&heic], Outcome::TimedOut(_)), "{seen:?}");
    assert_eq!(seen[&png], Outcome::Made);
    assert_eq!(env.store.decode_timeout(heic).expect("read"), Some(0));
    assert_eq!(env.store.decode_timeout(png).expect("read"), None);
}
