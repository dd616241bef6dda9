//! The watcher: kernel events and polling become scoped scan requests through admission,
//! and a library whose kernel watch fails degrades to polling and says so.

use crate::support;

use crossbeam_channel::Sender;
use mediadex::model::{RunState, ScanRun, Target, Trigger};
use mediadex::watch::{EventSource, WatchMode, WatchOptions, WatchStatus, Watcher};
use notify_debouncer_full::DebounceEventResult;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{Env, env};

const PATIENCE: Duration = Duration::from_secs(15);

fn library(env: &Env) -> (mediadex::model::Library, PathBuf) {
    let root = env.dir.path().join("photos");
    for dir in ["2024/summer", "2025", "@eaDir"] {
        std::fs::create_dir_all(root.join(dir)).expect("mkdir");
    }
    std::fs::write(root.join("2024/summer/a.jpg"), "a").expect("write");
    std::fs::write(root.join("2025/x.jpg"), "x").expect("write");
    let root = std::fs::canonicalize(&root).expect("canon");
    let library = env
        .store
        .add_library("photos", &root.to_string_lossy())
        .expect("add");
    (library, root)
}

fn options(force_poll: bool) -> WatchOptions {
    WatchOptions {
        debounce: Duration::from_millis(200),
        poll_interval: Duration::from_millis(300),
        force_poll,
        hourly_limit: None,
    }
}

fn no_wake() -> mediadex::watch::Waker {
    Arc::new(|| {})
}

/// Waits (bounded) until `check` holds; the deadline only fails a test that is broken.
fn eventually<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(start.elapsed() < PATIENCE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn status_of(watcher: &Watcher, library_id: i64) -> Option<WatchStatus> {
    watcher
        .statuses()
        .into_iter()
        .find(|s| s.library_id == library_id)
}

fn watching(watcher: &Watcher, library_id: i64, mode: WatchMode) -> WatchStatus {
    eventually("the watch to be set up", || {
        status_of(watcher, library_id).filter(|s| s.mode == mode)
    })
}

/// The waiting watch-triggered run, cancelled once read so the next change makes a new one.
fn next_request(env: &Env, library_id: i64) -> ScanRun {
    let run = eventually("a watch-triggered scan request", || {
        let runs = env.store.scan_runs(Some(library_id), 20).expect("runs");
        runs.into_iter()
            .find(|r| r.state == RunState::Accepted && r.trigger == Trigger::Watch)
    });
    assert!(env.store.cancel(Target::ScanRun, run.id).expect("cancel"));
    run
}

#[test]
fn kernel_events_become_scoped_scan_requests() {
    let env = env();
    let (library, root) = library(&env);
    let watcher = Watcher::start(
        &env.store,
        std::slice::from_ref(&library),
        options(false),
        no_wake(),
    );
    watching(&watcher, library.id, WatchMode::Events);

    std::fs::write(root.join("2024/summer/new.jpg"), "new").expect("create");
    let run = next_request(&env, library.id);
    assert_eq!(run.scope, "2024/summer");
    assert!(
        run.watch_event
            .as_deref()
            .is_some_and(|e| e.contains("created")),
        "{run:?}"
    );

    std::fs::write(root.join("2025/x.jpg"), "changed contents").expect("modify");
    assert_eq!(next_request(&env, library.id).scope, "2025");

    std::fs::rename(root.join("2025/x.jpg"), root.join("2025/y.jpg")).expect("rename");
    assert_eq!(next_request(&env, library.id).scope, "2025");

    std::fs::remove_file(root.join("2024/summer/a.jpg")).expect("delete");
    assert_eq!(next_request(&env, library.id).scope, "2024/summer");

    // A change the scan skips adds nothing: had it counted, the scope would widen to "".
    std::fs::write(root.join("@eaDir/thumb.jpg"), "junk").expect("junk");
    std::fs::write(root.join("2025/z.jpg"), "z").expect("create");
    assert_eq!(next_request(&env, library.id).scope, "2025");

    // A whole folder moved in from outside: its parent is the scope.
    let outside = env.dir.path().join("incoming");
    std::fs::create_dir_all(outside.join("trip")).expect("mkdir");
    std::fs::write(outside.join("trip/t.jpg"), "t").expect("write");
    std::fs::rename(outside.join("trip"), root.join("2024/trip")).expect("move in");
    assert_eq!(next_request(&env, library.id).scope, "2024");
    watcher.shutdown();
}

#[test]
fn a_polled_root_picks_up_changes_on_its_interval() {
    let env = env();
    let (library, root) = library(&env);
    let watcher = Watcher::start(
        &env.store,
        std::slice::from_ref(&library),
        options(true),
        no_wake(),
    );
    let status = watching(&watcher, library.id, WatchMode::Polling);
    assert!(!status.degraded, "polling was asked for, not a fallback");

    std::fs::write(root.join("2024/summer/b.jpg"), "b").expect("create");
    let run = next_request(&env, library.id);
    assert_eq!(run.scope, "2024/summer");
    assert!(
        run.watch_event
            .as_deref()
            .is_some_and(|e| e.starts_with("poll")),
        "{run:?}"
    );

    std::fs::remove_file(root.join("2025/x.jpg")).expect("delete");
    assert_eq!(next_request(&env, library.id).scope, "2025");
    watcher.shutdown();
}

/// An event source whose watches fail with the OS limit, or succeed and hand the test the
/// channel so it can report the limit later, as inotify does when a new folder appears.
struct FakeSource {
    fail_watch: bool,
    events: Sender<DebounceEventResult>,
    handed: Arc<Mutex<Option<Sender<DebounceEventResult>>>>,
}

impl EventSource for FakeSource {
    fn watch(&mut self, _root: &Path) -> notify::Result<()> {
        if self.fail_watch {
            return Err(notify::Error::new(notify::ErrorKind::MaxFilesWatch));
        }
        *self.handed.lock().expect("lock") = Some(self.events.clone());
        Ok(())
    }

    fn unwatch(&mut self, _root: &Path) {}
}

fn fake_watcher(
    env: &Env,
    library: &mediadex::model::Library,
    fail_watch: bool,
) -> (Watcher, Arc<Mutex<Option<Sender<DebounceEventResult>>>>) {
    let handed = Arc::new(Mutex::new(None));
    let slot = handed.clone();
    let watcher = Watcher::start_with(
        &env.store,
        std::slice::from_ref(library),
        options(false),
        no_wake(),
        move |tx| {
            Ok(Box::new(FakeSource {
                fail_watch,
                events: tx,
                handed: slot,
            }))
        },
    );
    (watcher, handed)
}

fn assert_degraded(watcher: &Watcher, env: &Env, library_id: i64, root: &Path) {
    let status = watching(watcher, library_id, WatchMode::Polling);
    assert!(status.degraded, "{status:?}");
    assert!(
        status
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("limit")),
        "{status:?}"
    );
    // What the failed watch may have missed is made up by a scan of the whole library.
    let catch_up = next_request(env, library_id);
    assert_eq!(catch_up.scope, "");
    assert!(
        catch_up
            .watch_event
            .as_deref()
            .is_some_and(|e| e.contains("degraded"))
    );
    // And from then on polling picks changes up.
    std::fs::write(root.join("2025/after.jpg"), "after").expect("create");
    assert_eq!(next_request(env, library_id).scope, "2025");
}

#[test]
fn the_watch_limit_at_start_degrades_the_library_to_polling() {
    let env = env();
    let (library, root) = library(&env);
    let (watcher, _) = fake_watcher(&env, &library, true);
    assert_degraded(&watcher, &env, library.id, &root);
    watcher.shutdown();
}

#[test]
fn the_watch_limit_reported_later_degrades_the_library_to_polling() {
    let env = env();
    let (library, root) = library(&env);
    let (watcher, handed) = fake_watcher(&env, &library, false);
    watching(&watcher, library.id, WatchMode::Events);
    let events = handed
        .lock()
        .expect("lock")
        .clone()
        .expect("watch was called");
    let limit = notify::Error::new(notify::ErrorKind::MaxFilesWatch);
    events.send(Err(vec![limit])).expect("send");
    assert_degraded(&watcher, &env, library.id, &root);
    watcher.shutdown();
}

#[test]
fn a_request_refused_by_the_hourly_limit_is_retried_not_lost() {
    let env = env();
    let (library, root) = library(&env);
    let mut opts = options(false);
    opts.hourly_limit = Some(1);
    let watcher = Watcher::start(&env.store, std::slice::from_ref(&library), opts, no_wake());
    watching(&watcher, library.id, WatchMode::Events);

    std::fs::write(root.join("2025/one.jpg"), "1").expect("create");
    assert_eq!(next_request(&env, library.id).scope, "2025");
    std::fs::write(root.join("2024/summer/two.jpg"), "2").expect("create");
    let pending = eventually("the refused change to be held", || {
        status_of(&watcher, library.id).and_then(|s| s.pending_scope)
    });
    assert_eq!(pending, "2024/summer");
    env.clock.advance(3_600_001);
    assert_eq!(next_request(&env, library.id).scope, "2024/summer");
    assert_eq!(
        status_of(&watcher, library.id).and_then(|s| s.pending_scope),
        None
    );
    watcher.shutdown();
}

/// Issue 15 item 4: a sidecar written beside a photo is a change of its folder like any
/// other; the scan the watcher asks for reads the photo again with it, into the same asset.
#[test]
fn a_sidecar_written_beside_a_photo_gives_the_watched_photo_its_rating() {
    use mediadex::queue::{Handlers, PoolConfig, WorkerPool};
    let env = env();
    let (library, root) = library(&env);
    support::photo(&root.join("2024/summer/p.png"), 7);
    support::scan_now(&env, library.id, "");
    let asset = |env: &Env| {
        let all = env.store.assets(false).expect("assets");
        let p = all
            .into_iter()
            .find(|a| a.paths[0].rel_path_text == "2024/summer/p.png");
        p.expect("the photo's asset")
    };
    let before = asset(&env);
    let watcher = Watcher::start(
        &env.store,
        std::slice::from_ref(&library),
        options(false),
        no_wake(),
    );
    watching(&watcher, library.id, WatchMode::Events);
    let xmp = r#"<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF><rdf:Description
        xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmp:Rating="3"/></rdf:RDF></x:xmpmeta>"#;
    std::fs::write(root.join("2024/summer/p.png.xmp"), xmp).expect("write the sidecar");
    let run = eventually("a watch-triggered scan request", || {
        let runs = env.store.scan_runs(Some(library.id), 20).expect("runs");
        runs.into_iter()
            .find(|r| r.state == RunState::Accepted && r.trigger == Trigger::Watch)
    });
    watcher.shutdown();
    assert_eq!(run.scope, "2024/summer");
    let job = mediadex::scan::job::ScanJob {
        store: env.store.clone(),
        config: mediadex::scan::job::ScanConfig::default(),
        extract: mediadex::media::extract_from,
    };
    let pool = WorkerPool::start(
        &env.store,
        Handlers::default().scan(job),
        PoolConfig::with_ttl(1, support::TTL),
    );
    support::run_ended(&env, run.id);
    pool.shutdown();
    let after = asset(&env);
    assert_eq!(after.id, before.id, "the same asset");
    assert_eq!(after.facts.notes.rating, Some(3));
}
