//! Shared set-up for the integration tests: a store on a real file in a temp dir, driven by
//! a fake clock.
#![allow(dead_code)]

use mediadex::clock::FakeClock;
use mediadex::model::{Counter, ScanRequest, Trigger};
use mediadex::store::{LeasePolicy, MIGRATIONS, Migration, Store, StoreOptions};
use std::sync::Arc;

pub const T0: i64 = 1_800_000_000_000;
pub const TTL: i64 = 30_000;

pub struct Env {
    pub dir: tempfile::TempDir,
    pub clock: Arc<FakeClock>,
    pub store: Store,
    /// The scratch schema the store lives in when the suite runs on PostgreSQL.
    pub pg: Option<PgSchema>,
}

/// The engine the contract suite runs on: SQLite (the default, `cargo test`), or with
/// `MEDIADEX_TEST_ENGINE=postgres` the server `MEDIADEX_TEST_PG_URL` names (the pg tier,
/// `scripts/pg-tier.sh`), each `Env` in a schema of its own.
pub fn on_postgres() -> bool {
    std::env::var("MEDIADEX_TEST_ENGINE").is_ok_and(|e| e == "postgres")
}

/// A schema of its own on the test server, dropped with it; `url` reaches into it.
pub struct PgSchema {
    pub url: String,
    base: String,
    name: String,
}

impl PgSchema {
    pub fn new() -> PgSchema {
        let base = std::env::var("MEDIADEX_TEST_PG_URL")
            .expect("MEDIADEX_TEST_PG_URL must name a PostgreSQL database (scripts/pg-tier.sh)");
        let name = format!("t_{}", uuid::Uuid::new_v4().simple());
        sql::off_runtime(|| {
            let mut client = postgres::Client::connect(&base, postgres::NoTls).expect("connect");
            client
                .batch_execute(&format!("CREATE SCHEMA {name}"))
                .expect("create schema");
        });
        let url = format!("{base} options='-c search_path={name}'");
        PgSchema { url, base, name }
    }

    /// The schema's name (also usable as an application name, to find its connections).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A connection of the test's own to the server.
    pub fn client(&self) -> postgres::Client {
        sql::pg_connect(&self.base)
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        sql::off_runtime(|| {
            if let Ok(mut client) = postgres::Client::connect(&self.base, postgres::NoTls) {
                let _ = client.batch_execute(&format!("DROP SCHEMA {} CASCADE", self.name));
            }
        });
    }
}

/// The tests about SQLite itself: its file, pragmas, locks, query plans and migration
/// history, which have no PostgreSQL twin. The PostgreSQL run leaves them out with one
/// `--skip` each (`pg_skip_args`); each starts with `sqlite_only(its name)`, which fails
/// it loudly if it runs on PostgreSQL anyway (it never passes there by doing nothing).
pub const SQLITE_ONLY: &[&str] = &[
    // The query plans (`EXPLAIN QUERY PLAN`): PostgreSQL's store answers SqliteOnly.
    "http::every_selective_filter_seeks_its_own_index_in_timeline_order",
    "http::the_asset_list_uses_the_timeline_index_without_sorting",
    "http::the_stack_of_an_asset_reads_no_whole_table",
    "people::a_persons_photos_and_a_photos_people_are_read_through_their_indexes",
    "similar::the_lookup_of_a_pictures_neighbours_reads_no_whole_table",
    // The file's page cap (`max_page_count`): a full disk as SQLite meets it.
    "scan::a_scan_that_meets_a_full_disk_keeps_what_it_indexed_and_carries_on_once_space_is_freed",
    // SQLite's migration history (schema 3, 4, 19 and 20) and its schema text.
    "trash::an_old_journal_upgrades_its_pending_moves_to_leased_work_and_keeps_its_last_trash",
    "trash::the_upgrade_to_autoincrement_keeps_every_row_index_trigger_and_key_and_skips_swept_ids",
    // SQLite's write groups: PostgreSQL's writer runs each grouped batch in a transaction of
    // its own, by design (src/store/pg_writer.rs's header), so no batch waits for a group.
    "assets::a_group_whose_lease_expired_before_its_commit_lands_none_of_its_batches",
    "assets::a_runs_batches_commit_together_at_the_group_bound_and_each_lands_whole",
    "assets::a_stale_batch_takes_its_groups_earlier_batches_back_with_it",
    // SQLite's write lock held by another connection (BEGIN IMMEDIATE on the file).
    "workers::a_scan_whose_batch_meets_a_locked_database_fails_with_a_successor_that_carries_on",
];

/// The arguments that leave `SQLITE_ONLY` out of a run (after `--`).
pub fn pg_skip_args() -> Vec<String> {
    SQLITE_ONLY
        .iter()
        .flat_map(|t| ["--skip".to_string(), t.to_string()])
        .collect()
}

/// Marks the test `name` (as `module::test`) SQLite-only: it must be in `SQLITE_ONLY`, and
/// on PostgreSQL it fails at once, saying the run should have skipped it.
pub fn sqlite_only(name: &str) {
    assert!(
        SQLITE_ONLY.contains(&name),
        "{name} is not listed in support::SQLITE_ONLY"
    );
    assert!(
        !on_postgres(),
        "{name} is about SQLite itself: the PostgreSQL run skips it ({})",
        pg_skip_args().join(" ")
    );
}

pub fn options() -> StoreOptions {
    StoreOptions {
        policy: LeasePolicy {
            backoff_base: 1_000,
            backoff_cap: 60_000,
            scan_max_attempts: 3,
        },
        ..StoreOptions::default()
    }
}

pub fn env() -> Env {
    env_with(options())
}

pub fn env_with(mut options: StoreOptions) -> Env {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = FakeClock::new(T0);
    let pg = (on_postgres() && options.database.is_none()).then(PgSchema::new);
    if let Some(pg) = &pg {
        options.database = Some(pg.url.clone());
    }
    let store =
        Store::open(&dir.path().join("mediadex.db"), clock.clone(), options).expect("open store");
    Env {
        dir,
        clock,
        store,
        pg,
    }
}

impl Env {
    /// A second handle on the same file, as another process would have, with its own
    /// lease owner.
    pub fn other_process(&self, owner: &str) -> Store {
        let options = StoreOptions {
            owner: owner.to_string(),
            database: self.pg.as_ref().map(|pg| pg.url.clone()),
            ..options()
        };
        Store::open(
            &self.dir.path().join("mediadex.db"),
            self.clock.clone(),
            options,
        )
        .expect("open second store")
    }

    pub fn counter(&self, which: Counter) -> i64 {
        self.store
            .counters()
            .expect("counters")
            .into_iter()
            .find(|(c, _)| *c == which)
            .map_or(0, |(_, v)| v)
    }

    /// A connection of the test's own on the store's database, on either engine, for
    /// planting what an older or defective binary left behind and reading rows back (no
    /// code of ours writes through it; `sql.rs` says how a statement reads on PostgreSQL).
    pub fn sql(&self) -> sql::Sql {
        match &self.pg {
            Some(pg) => sql::Sql::Pg(sql::pg_connect(&pg.url)),
            None => sql::Sql::Lite(self.raw()),
        }
    }

    /// A raw connection on the SQLite file itself, for the tests about that file (its
    /// pages, pragmas, locks and schema text: `SQLITE_ONLY`). Anything else goes through
    /// `sql()`, which reaches the store's database on either engine.
    pub fn raw(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(self.dir.path().join("mediadex.db")).expect("raw connection")
    }

    /// The binary on this `Env`'s data folder and its store's database (the PostgreSQL
    /// schema when the suite runs there).
    pub fn cli(&self) -> assert_cmd::Command {
        let mut cmd = assert_cmd::cargo::cargo_bin_cmd!("mediadex");
        cmd.env_remove("MEDIADEX_DATA")
            .env_remove("MEDIADEX_DATABASE_URL")
            .arg("--data")
            .arg(self.dir.path());
        if let Some(pg) = &self.pg {
            cmd.env("MEDIADEX_DATABASE_URL", &pg.url);
        }
        cmd
    }

    /// `cli` with `args`, which must succeed and print one JSON value.
    pub fn cli_json(&self, args: &[&str]) -> serde_json::Value {
        json_of(self.cli(), args)
    }

    pub fn library(&self, name: &str) -> i64 {
        let root = self.dir.path().join(name);
        std::fs::create_dir_all(&root).expect("library dir");
        self.store
            .add_library(name, &root.to_string_lossy())
            .expect("add library")
            .id
    }

    /// Requests and claims a scan of `scope`: the lease a scan worker would hold.
    pub fn claimed_scan(&self, library_id: i64, scope: &str) -> mediadex::model::Lease {
        self.store
            .request_scan(self.scan_request(library_id, scope))
            .expect("request a scan");
        self.store
            .claim_scan_run(TTL)
            .expect("claim")
            .expect("a run to claim")
            .0
    }

    /// Makes every write that queues a face walk fail, as a crash right there would leave
    /// it: what must be one transaction with that write is refused with it.
    pub fn refuse_face_walks(&self) {
        let trigger = if self.pg.is_some() {
            "CREATE FUNCTION refuse_face_walks() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 IF NEW.kind = 'walk:faces' THEN
                     RAISE EXCEPTION 'injected: no face walk';
                 END IF;
                 RETURN NEW;
             END $$;
             CREATE TRIGGER refuse_face_walks BEFORE INSERT ON jobs
                FOR EACH ROW EXECUTE FUNCTION refuse_face_walks();"
        } else {
            "CREATE TRIGGER refuse_face_walks BEFORE INSERT ON jobs
              WHEN NEW.kind = 'walk:faces'
             BEGIN SELECT RAISE(ABORT, 'injected: no face walk'); END;"
        };
        self.sql().batch(trigger).expect("trigger");
    }

    pub fn scan_request(&self, library_id: i64, scope: &str) -> ScanRequest {
        ScanRequest {
            library_id,
            scope: scope.to_string(),
            trigger: Trigger::Manual,
            watch_event: None,
        }
    }
}
pub mod corpus;
pub mod cr3;
pub mod dng;
pub mod exif;
pub mod help;
pub mod sql;
pub mod synthetic;

/// Whether a face walk chain waits or runs.
pub fn face_walk_queued(env: &Env) -> bool {
    env.store
        .live_job(mediadex::model::WalkKindId::Faces.job_kind())
        .expect("live job")
        .is_some()
}

/// The extended tier's set-up: the `MEDIADEX_CORPUS` library (canonical root) added to a
/// fresh store, with a full scan of it requested.
pub fn corpus_scan_requested() -> (
    Env,
    std::path::PathBuf,
    mediadex::model::Library,
    mediadex::model::ScanRun,
) {
    let lib = std::env::var_os("MEDIADEX_CORPUS").expect("MEDIADEX_CORPUS");
    let lib = std::fs::canonicalize(lib).expect("corpus dir");
    let env = env();
    let library =
        mediadex::app::add_library(&env.store, "corpus", &lib.to_string_lossy()).expect("add");
    let (run, _) = env
        .store
        .request_scan(env.scan_request(library.id, ""))
        .expect("request");
    (env, lib, library, run)
}

/// This binary's migrations up to and including `version`, the last one followed by `seed`
/// (rows as an older binary would have written them).
pub fn schema_up_to(version: i64, seed: &str) -> &'static [Migration] {
    let mut out: Vec<Migration> = MIGRATIONS
        .iter()
        .filter(|m| m.version <= version)
        .map(|m| Migration {
            version: m.version,
            name: m.name,
            sql: m.sql,
        })
        .collect();
    if let Some(last) = out.last_mut() {
        last.sql = Box::leak(format!("{}\n{seed}", last.sql).into_boxed_str());
    }
    Box::leak(out.into_boxed_slice())
}

/// Writes a small real PNG (the scan pipeline indexes it as a picture); `shade` makes it
/// unique.
pub fn photo(path: &std::path::Path, shade: u8) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    image::RgbImage::from_pixel(8, 6, image::Rgb([shade, 10, 20]))
        .save(path)
        .expect("write png");
}

/// One scan of `scope` in `library`, run to its end by a one-worker pool of the real
/// pipeline. Returns the finished run.
pub fn scan_now(env: &Env, library: i64, scope: &str) -> mediadex::model::ScanRun {
    scan_now_with(
        env,
        library,
        scope,
        mediadex::scan::job::ScanConfig::default(),
    )
}

/// `scan_now` with the scan's settings.
pub fn scan_now_with(
    env: &Env,
    library: i64,
    scope: &str,
    config: mediadex::scan::job::ScanConfig,
) -> mediadex::model::ScanRun {
    let job = mediadex::scan::job::ScanJob {
        store: env.store.clone(),
        config,
        extract: mediadex::media::extract_from,
    };
    let pool_config = mediadex::queue::PoolConfig::with_ttl(1, TTL);
    let (run, pool) = start_scan(env, library, scope, job, pool_config);
    let done = run_ended(env, run.id);
    pool.shutdown();
    done
}

/// Requests a scan of `scope` in `library` and starts a pool running `job` with `pool`'s
/// settings; the pool keeps running (successors too) until the caller shuts it down.
pub fn start_scan(
    env: &Env,
    library: i64,
    scope: &str,
    job: mediadex::scan::job::ScanJob,
    pool: mediadex::queue::PoolConfig,
) -> (mediadex::model::ScanRun, mediadex::queue::WorkerPool) {
    use mediadex::queue::{Handlers, WorkerPool};
    let (run, _) = env
        .store
        .request_scan(env.scan_request(library, scope))
        .expect("request");
    let pool = WorkerPool::start(&env.store, Handlers::default().scan(job), pool);
    (run, pool)
}

/// The run `id` once it has ended (within 20 s).
pub fn run_ended(env: &Env, id: i64) -> mediadex::model::ScanRun {
    let start = std::time::Instant::now();
    loop {
        let run = env.store.scan_run(id).expect("run").expect("row");
        if run.state.is_terminal() {
            return run;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "run {id} did not end"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Writes a library of hostile names under `root`, one unique PNG each, and returns their
/// library-relative path bytes: names that are not UTF-8, a backslash (the stored text turns
/// it into `/`), a 255-byte name, newlines, tabs, carriage returns and other control
/// characters, a 4,000-byte path and a file 1,000 folders deep. `root` must be short enough
/// that root + 4,000 bytes stays under PATH_MAX (4,096).
#[cfg(unix)]
pub fn hostile_library(root: &std::path::Path) -> Vec<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    assert!(
        root.as_os_str().len() < 80,
        "root too long: {}",
        root.display()
    );
    let long_dirs: Vec<u8> = std::iter::repeat_n([b'd'; 199].as_slice(), 19)
        .flat_map(|d| d.iter().copied().chain([b'/']))
        .collect();
    let long_path = [long_dirs, [b'f'; 196].to_vec(), b".png".to_vec()].concat();
    assert_eq!(long_path.len(), 4000);
    let deep = [b"d/".repeat(1000), b"deep.png".to_vec()].concat();
    let names: Vec<Vec<u8>> = vec![
        b"caf\xe9.png".to_vec(),
        b"\xff\xfe\x80.png".to_vec(),
        b"dir\xc3/inner.png".to_vec(),
        b"back\\slash.png".to_vec(),
        [vec![b'n'; 251], b".png".to_vec()].concat(),
        b"line\nbreak.png".to_vec(),
        b"tab\there.png".to_vec(),
        b"cr\rreturn.png".to_vec(),
        b"ctl\x01\x1b[31mred\x7f.png".to_vec(),
        b"plain.png".to_vec(),
        long_path,
        deep,
    ];
    for (shade, rel) in names.iter().enumerate() {
        let path = root.join(std::ffi::OsStr::from_bytes(rel));
        photo(&path, u8::try_from(shade).expect("few names") * 10);
    }
    names
}

/// The absolute path of library-relative path bytes.
#[cfg(unix)]
pub fn join_bytes(root: &std::path::Path, rel: &[u8]) -> std::path::PathBuf {
    use std::os::unix::ffi::OsStrExt;
    root.join(std::ffi::OsStr::from_bytes(rel))
}

/// Standard base64 (RFC 4648, padded), as the JSON outputs carry exact path bytes.
pub fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect("base64")
}

/// The exact bytes of one path as the JSON outputs give it: the base64 `bytes` when there,
/// else the `text` (then exact by the contract).
pub fn json_path_bytes(text: &serde_json::Value, bytes: &serde_json::Value) -> Vec<u8> {
    match bytes.as_str() {
        Some(b) => base64_decode(b),
        None => text.as_str().expect("path text").as_bytes().to_vec(),
    }
}

/// The page size of a new index (`store/conn.rs`).
pub const PAGE: u64 = 16384;

/// A file's length and blake3, None when it is not there: compared, never printed whole.
pub type Digest = Option<(usize, blake3::Hash)>;

pub fn digest(path: &std::path::Path) -> Digest {
    std::fs::read(path)
        .ok()
        .map(|b| (b.len(), blake3::hash(&b)))
}

/// `path` with `suffix` added to its name: the `-wal` and `-shm` beside a database.
pub fn sibling(path: &std::path::Path, suffix: &str) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    name.into()
}

/// Overwrites page `page` (from 1) of a database file with zeros.
pub fn zero_page(path: &std::path::Path, page: u64) {
    use std::io::{Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open");
    f.seek(SeekFrom::Start((page - 1) * PAGE)).expect("seek");
    f.write_all(&[0u8; PAGE as usize]).expect("zero");
}

#[cfg(unix)]
/// Makes `dir` unwritable for this process: mode bits for a user, a read-only bind mount of
/// it onto itself for root (whom mode bits do not stop). Undone on drop.
pub struct ReadOnly(std::path::PathBuf, bool);

#[cfg(unix)]
impl ReadOnly {
    pub fn make(dir: &std::path::Path) -> ReadOnly {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).expect("chmod");
        if std::fs::write(dir.join(".probe"), b"").is_err() {
            return ReadOnly(dir.to_path_buf(), false);
        }
        std::fs::remove_file(dir.join(".probe")).expect("rm probe");
        let mount = |args: &[&str]| {
            let ok = std::process::Command::new("mount")
                .args(args)
                .status()
                .expect("mount");
            assert!(ok.success(), "mount {args:?}: root without CAP_SYS_ADMIN?");
        };
        let d = dir.to_str().expect("utf8");
        mount(&["--bind", d, d]);
        mount(&["-o", "remount,bind,ro", d]);
        ReadOnly(dir.to_path_buf(), true)
    }
}

#[cfg(unix)]
impl Drop for ReadOnly {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        if self.1 {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
        let _ = std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(0o755));
    }
}

/// `mediadex --json`'s one JSON value for `args`, run as a user would on the data dir
/// `data` (a test's store may be open on it: the CLI is another process on the same file).
pub fn cli_json(data: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let mut cmd = assert_cmd::cargo::cargo_bin_cmd!("mediadex");
    cmd.env_remove("MEDIADEX_DATA")
        .env_remove("MEDIADEX_DATABASE_URL")
        .arg("--data")
        .arg(data);
    json_of(cmd, args)
}

fn json_of(mut cmd: assert_cmd::Command, args: &[&str]) -> serde_json::Value {
    let out = cmd
        .env_remove("RUST_LOG")
        .args(args)
        .output()
        .expect("run mediadex");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON value on stdout")
}

/// Where the latest trash of `asset` put its file `rel` (library-relative) under `root`, as
/// the trash journal says: a trash folder is the move's own (`model::trash_path`).
pub fn trashed_to(
    store: &Store,
    root: &std::path::Path,
    asset: i64,
    rel: &str,
) -> std::path::PathBuf {
    let files = store.check_trashed_files_of(asset).expect("journal");
    let file = (files.iter())
        .find(|f| f.from_path == rel.as_bytes())
        .unwrap_or_else(|| panic!("no trash of asset {asset} moved {rel}: {files:?}"));
    root.join(String::from_utf8_lossy(&file.to_path).as_ref())
}

// ---- async tests off the runtime ------------------------------------------------------------
//
// The store's PostgreSQL client is synchronous: it runs a runtime of its own, which cannot
// start on a thread that drives a tokio runtime. So an async test's body runs on its own
// thread under `block_on` (no tokio there: the store is called as anywhere else), and what
// needs tokio (the server's requests, its event poller, a blocking task) runs on `rt()`.

/// The tokio runtime the in-process servers of the tests run on (shared, on threads of its
/// own).
pub fn rt() -> &'static tokio::runtime::Runtime {
    static RT: std::sync::LazyLock<tokio::runtime::Runtime> = std::sync::LazyLock::new(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .expect("the tests' runtime")
    });
    &RT
}

/// Runs `future` to its end on this thread, with no tokio runtime's context: an async
/// test's body (`#[test] fn x() { support::block_on(async { .. }) }`).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

/// The stop of a server started by `app_state`: dropped, it tells the server to stop and
/// waits (at most 20 s) until its event poller and streams have let go of their receivers,
/// so that no poll of a finished test's store runs on into the next test. (The poller may
/// hold the store's last handle when it ends: a store on PostgreSQL closes its readers off
/// the runtime then, `store::pg::PgPool`.)
pub struct Stop(pub tokio::sync::watch::Sender<bool>);

impl Stop {
    pub fn channel() -> (Stop, tokio::sync::watch::Receiver<bool>) {
        let (tx, rx) = tokio::sync::watch::channel(false);
        (Stop(tx), rx)
    }
}

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = self.0.send(true);
        // Until the last receiver is gone; no panic here (it may run while a failed test
        // unwinds): at worst it stops waiting.
        let closed = self.0.closed();
        let _ = rt().block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(20), closed).await
        });
    }
}

/// The server's state, its event poller started on `rt()`.
pub fn app_state(
    config: mediadex::http::HttpConfig,
    stop: tokio::sync::watch::Receiver<bool>,
) -> mediadex::http::AppState {
    // Entered for its spawn only: this thread drives no runtime, so the store's calls in
    // `start` run as on any thread.
    let _rt = rt().enter();
    mediadex::http::AppState::start(config, stop).expect("state")
}

/// One request to `router`, answered on `rt()`: the response's head and its whole body (at
/// most `limit` bytes).
pub async fn respond(
    router: &axum::Router,
    request: axum::http::Request<axum::body::Body>,
    limit: usize,
) -> (axum::http::response::Parts, axum::body::Bytes) {
    use tower::ServiceExt;
    let router = router.clone();
    let answer = rt().spawn(async move {
        let response = router.oneshot(request).await.expect("infallible");
        let (parts, body) = response.into_parts();
        let body = axum::body::to_bytes(body, limit).await.expect("body");
        (parts, body)
    });
    answer.await.expect("the request's task")
}

/// `f` on `rt()`'s blocking pool, awaited (a worker the test runs beside its requests).
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    rt().spawn_blocking(f).await.expect("the blocking task")
}
