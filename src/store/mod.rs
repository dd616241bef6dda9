//! The store: the only module that imports rusqlite/postgres/r2d2 or holds SQL. It owns the
//! database (the SQLite file, or a PostgreSQL server's schema: issue 30), its pragmas, the migrations, the vetting of the file at every start (and moving a
//! damaged one aside), the one writer thread, the read pool, and one file of named
//! statements per table family. It must not know about HTTP, the scanner or workers:
//! callers hand it plain `model` types and get plain types back.
//!
//! Its modules come in three kinds, so that each engine's SQL for a table family sits in
//! one place (issue 30: a PostgreSQL engine gives each family a second implementation and
//! shares the rest unchanged):
//! - a **family** owns the SQL of its tables (named statements beside the one function
//!   that runs them, and the `Store` methods that touch only those tables) and calls
//!   helpers only, never another family or a composition;
//! - a **composition** is an operation that spans families (a scan batch's commit, a run's
//!   end, a walk batch's commit, a trash move, a repair, the read views that join a photo's
//!   parts): it calls families' functions inside the one transaction its `Store` method
//!   opens, in the order the operation needs, and holds no SQL of its own but statements
//!   that truly span tables, which its header names (a composition run inside another's
//!   transaction, `revive` or `run_end::finish`, opens none);
//! - a **helper** is neither: connections, the writer thread, migrations, the start's
//!   vetting, the lease fence's answers, and engine-neutral code several modules share
//!   (row decoding, path arithmetic).
//!
//! Families: assets, counters, decode_timeouts, faces, files, intents, jobs, libraries,
//! motion, move_jobs, pending, people, problems, scan_runs, sidecars, similar, stacks, walks.
//! Compositions: chains, check, ingest, job_ends, pixels, queries, removal, revive, run_end,
//! thumbs, trash.
//! Helpers: asset_fixtures, conn, copy, db, error, lease, migrate, pg, pg_writer, rows, stems, vet,
//! writer.
//! (`asset_fixtures` is test-only: the rows the asset families' checks insert.)
//!
//! A family's statement may read another table in a join or a guard (a Live Photo's
//! namesakes join `files` to `assets`; a sweep checks `trash_intents`): it is one statement,
//! and its family is the table it answers for (`move_jobs` answers for the `jobs` rows that
//! hold a move, beside `jobs`, which owns the queue's statements on every row).
//!
//! `tests/it/architecture.rs` checks that every module is sorted here, that a family names
//! helpers only, and that the store's modules name each other in no cycle.
//!
//! Must not import: http, scan, walks, queue, ops, axum

/// The fence of DESIGN.md section 4, written once: every worker write ends in it, so a write
/// lands only while `(id, generation)` is the row's lease, the row is running and the lease
/// has not expired at the transaction's `now`. Parameters: ?1 id, ?2 generation, ?3 now.
macro_rules! fenced {
    ($head:literal) => {
        fenced!($head, "")
    };
    ($head:literal, $tail:literal) => {
        concat!(
            $head,
            " WHERE id = ?1 AND generation = ?2 AND state = 'running' AND lease_expires_at > ?3 ",
            $tail
        )
    };
}

#[macro_use]
mod db;
#[macro_use]
mod rows;
#[macro_use]
mod stacks;
#[macro_use]
mod assets;
#[cfg(test)]
mod asset_fixtures;
mod chains;
mod check;
mod conn;
mod copy;
mod counters;
mod decode_timeouts;
mod error;
mod faces;
mod files;
mod ingest;
mod intents;
mod job_ends;
mod jobs;
mod lease;
mod libraries;
mod migrate;
mod motion;
mod move_jobs;
mod pending;
mod people;
mod pg;
mod pg_writer;
mod pixels;
mod problems;
mod queries;
mod removal;
mod revive;
mod run_end;
mod scan_runs;
mod sidecars;
mod similar;
mod stems;
mod thumbs;
mod trash;
mod vet;
mod walks;
mod writer;

pub use assets::Swept;
pub use copy::{CopyCheck, TableDigest};
pub use error::{Damage, StoreError};
pub use jobs::Enqueued;
pub use migrate::{MIGRATIONS, Migration};
pub use people::{PeopleRefusal, recluster_job};

/// The SQLite compiled into this binary (bundled), for `mediadex --version`.
pub fn sqlite_version() -> &'static str {
    rusqlite::version()
}
pub use problems::PER_RUN as PROBLEMS_PER_RUN;
pub use scan_runs::{Admission, AdmissionOptions};
pub use vet::{COMMAND_CHECK_BYTES, StartCheck, move_aside, salvage_libraries};
pub use writer::{Committed, GroupLimits, WriteStats};

use crate::clock::SharedClock;
use crate::model::{Lease, Millis, Target};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use writer::Writer;

/// How many times a write given up for another host's transaction (`Contended`) is tried
/// before the caller is told: two hosts contend for one row at a time, and the loser of
/// each round wins the next, so a handful covers what a household's hosts do at once.
const CONTENDED_TRIES: u32 = 8;

/// The pause before try `tries + 1`: up to 2^tries ms, at random (at most 128 ms). Not a
/// race anyone waits to win: each try is a whole transaction the server serializes, so any
/// order of the hosts' tries is correct; the pause only makes a second collision unlikely.
fn contended_pause(tries: u32) -> Duration {
    let ceiling = 1u128 << tries.min(7);
    let random = uuid::Uuid::new_v4().as_u128();
    Duration::from_millis(u64::try_from(random % ceiling).unwrap_or(0) + 1)
}

/// A cap below the current size is raised to it by SQLite: the file may not grow.
const CAP_SIZE: &str = "PRAGMA max_page_count = 1";
/// SQLite's own upper bound.
const UNCAP_SIZE: &str = "PRAGMA max_page_count = 4294967294";

type ReadPool = r2d2::Pool<r2d2_sqlite::SqliteConnectionManager>;

/// The read pool of either engine.
enum Reads {
    Sqlite(ReadPool),
    /// The pool, and the server for the work notices' listener.
    Postgres(pg::PgPool, Box<pg::Server>),
}

/// The rules the store applies on behalf of the lease protocol.
#[derive(Clone, Debug)]
pub struct LeasePolicy {
    /// First retry delay of a failed or expired job; doubles per attempt.
    pub backoff_base: Millis,
    /// Longest retry delay.
    pub backoff_cap: Millis,
    /// A scan run whose lease expired this many times in a row gets no further successor.
    pub scan_max_attempts: i64,
}

impl Default for LeasePolicy {
    fn default() -> Self {
        LeasePolicy {
            backoff_base: 2_000,
            backoff_cap: 10 * 60_000,
            scan_max_attempts: 5,
        }
    }
}

/// How to open the store.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// `synchronous=FULL` (a returned commit is on disk). Only the simulation tests turn it
    /// off, to run hundreds of thousands of transactions on a real file quickly.
    pub durable: bool,
    /// How long one connection waits for another process's lock before giving up.
    pub busy_timeout: Duration,
    /// Up to how many queued write operations share one transaction.
    pub max_batch: usize,
    pub policy: LeasePolicy,
    /// The schema this binary carries; tests substitute a longer list to exercise upgrades.
    pub migrations: &'static [Migration],
    /// `host:pid:boot-nonce` written into every lease this process takes.
    pub owner: String,
    /// This host's id: whose library roots this handle reads, and whose libraries' work it
    /// claims. `None` (the default) is the id kept beside the database (`host::
    /// load_or_create` on its folder): every handle on one data dir, a test's or a tool's
    /// as much as the binary's, is the same host. Tests of several hosts on one file name
    /// each.
    pub host: Option<String>,
    /// How much of an existing file the start reads before trusting it (see `vet.rs`).
    pub check: StartCheck,
    /// When a scan's batches sharing one transaction commit at the latest (`writer`).
    pub group_limits: GroupLimits,
    /// A PostgreSQL server's URL (`postgres://user@host/db` or `host=... dbname=...`):
    /// the index lives there, shared by every host that names it, instead of in the
    /// SQLite file at the store's path (issue 30). The data dir still holds this host's
    /// id and its thumbnails.
    pub database: Option<String>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            durable: true,
            busy_timeout: Duration::from_secs(10),
            max_batch: 64,
            policy: LeasePolicy::default(),
            migrations: MIGRATIONS,
            owner: process_owner().to_string(),
            host: None,
            check: StartCheck::Full,
            group_limits: GroupLimits::default(),
            database: None,
        }
    }
}

/// A handle on one database file. Cheap to clone; the writer thread stops when the last
/// clone is dropped.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    writer: Writer,
    reads: Reads,
    clock: SharedClock,
    /// The database server's clock less this host's, as the last write read it
    /// (PostgreSQL with a clock that tells the time of day; 0 otherwise).
    skew: std::sync::atomic::AtomicI64,
    owner: String,
    host: String,
    policy: LeasePolicy,
    path: PathBuf,
    database: String,
}

impl Store {
    /// Opens (creating if needed) the database at `path`, applies pending migrations under
    /// the migration guard, and starts the writer thread. A damaged file (`Damaged`) or one
    /// from a newer binary (`NewerSchema`) is refused before anything writes to it, and left
    /// as it was.
    pub fn open(
        path: &Path,
        clock: SharedClock,
        mut options: StoreOptions,
    ) -> Result<Store, StoreError> {
        let host = match options.host.take() {
            Some(host) => host,
            None => crate::host::load_or_create(path.parent().unwrap_or(Path::new(".")))?,
        };
        if let Some(url) = options.database.take() {
            return Store::open_postgres(path, &url, clock, options, host);
        }
        let latest = options.migrations.last().map_or(0, |m| m.version);
        vet::vet(path, latest, options.check)?;
        let mut conn = conn::open_writer(path, &options)?;
        migrate::migrate(&mut conn, options.migrations, clock.now(), &options.owner)?;
        libraries::take_unhosted(&db::Db::sqlite(&conn), &host)?;
        let reads = Reads::Sqlite(conn::read_pool(path, &options)?);
        let writer = Writer::start(conn, options.max_batch, options.group_limits)?;
        let name = path.display().to_string();
        Ok(Store::with(
            writer,
            reads,
            clock,
            options,
            host,
            (path, name),
        ))
    }

    /// `open` on a PostgreSQL server: the schema brought to this binary's under the
    /// migration lock, then the writer's connection and the read pool. `path` is where
    /// the SQLite file would be: its folder is the data dir.
    fn open_postgres(
        path: &Path,
        url: &str,
        clock: SharedClock,
        options: StoreOptions,
        host: String,
    ) -> Result<Store, StoreError> {
        let server = pg::Server::parse(url, &options)?;
        let mut conn = server.connect(false)?;
        let now = pg::server_now(&mut conn, &clock)?;
        pg::migrate(&mut conn, now, &options.owner)?;
        {
            let db = conn.db()?;
            libraries::take_unhosted(&db, &host)?;
            db.commit()?;
        }
        let reads = Reads::Postgres(pg::read_pool(&server)?, Box::new(server.clone()));
        let name = server.name();
        let writer = pg_writer::start(pg_writer::Link::new(server, conn), options.max_batch)?;
        Ok(Store::with(
            writer,
            reads,
            clock,
            options,
            host,
            (path, name),
        ))
    }

    fn with(
        writer: Writer,
        reads: Reads,
        clock: SharedClock,
        options: StoreOptions,
        host: String,
        (path, database): (&Path, String),
    ) -> Store {
        Store {
            inner: Arc::new(Inner {
                writer,
                reads,
                clock,
                skew: std::sync::atomic::AtomicI64::new(0),
                owner: options.owner,
                host,
                policy: options.policy,
                path: path.to_path_buf(),
                database,
            }),
        }
    }

    /// Where the index is, in words for `status`: the SQLite file's path, or the
    /// PostgreSQL server and database (never its password).
    pub fn database(&self) -> &str {
        &self.inner.database
    }

    /// Whether the index is on a PostgreSQL server (for `status` and the page).
    pub fn is_shared(&self) -> bool {
        matches!(self.inner.reads, Reads::Postgres(..))
    }

    /// Calls `wake` whenever any host adds or hands back work (a job or a scan run), for
    /// as long as the answer is kept: on PostgreSQL a listener of the schema's work notice;
    /// `None` on SQLite, where only this process writes and wakes its workers itself.
    pub fn on_new_work(
        &self,
        wake: impl Fn() + Send + 'static,
    ) -> Result<Option<WorkListener>, StoreError> {
        match &self.inner.reads {
            Reads::Sqlite(_) => Ok(None),
            Reads::Postgres(_, server) => Ok(Some(WorkListener(pg::Listener::start(
                (**server).clone(),
                Box::new(wake),
            )?))),
        }
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The folder holding the database (the data dir): the disk a full-disk message names.
    pub fn dir(&self) -> &Path {
        self.inner.path.parent().unwrap_or(Path::new("."))
    }

    /// Test seam for a full disk: caps the database at its current size, so that a write
    /// that needs one more page fails with SQLITE_FULL as on a full disk (`StoreError::
    /// DiskFull`); `false` lifts the cap (the space was freed).
    pub fn cap_size(&self, capped: bool) -> Result<(), StoreError> {
        let sql = if capped { CAP_SIZE } else { UNCAP_SIZE };
        self.write_lite(move |conn, _| Ok(conn.query_row(sql, [], |_| Ok(()))?))
    }

    pub fn owner(&self) -> &str {
        &self.inner.owner
    }

    /// This host's id: the library roots this handle sees are this host's.
    pub fn host(&self) -> &str {
        &self.inner.host
    }

    /// The time leases are measured in: this host's clock, or on PostgreSQL (with a
    /// clock that tells the time of day) the server's, as the last write read it.
    pub fn now(&self) -> Millis {
        let skew = self.inner.skew.load(std::sync::atomic::Ordering::Relaxed);
        self.inner.clock.now().saturating_add(skew)
    }

    pub fn clock(&self) -> &SharedClock {
        &self.inner.clock
    }

    /// Runs `op` on the writer connection inside a savepoint of a batched IMMEDIATE
    /// transaction; returns once the batch is committed (or the op failed and was rolled
    /// back). `op` receives the clock's `now` read inside the transaction: fences compare
    /// against the time the write happens, not the time it was asked for.
    ///
    /// On PostgreSQL a transaction another host's made impossible to serialize is given
    /// up whole (`Contended`: nothing of it landed) and `op` runs again in a new one, up to
    /// `CONTENDED_TRIES` times, each after a short random pause so that two hosts that
    /// collided do not collide again in step. SQLite never answers `Contended`.
    fn write<T, F>(&self, op: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Fn(&db::Db<'_>, Millis) -> Result<T, StoreError> + Send + Sync + 'static,
    {
        let op = Arc::new(op);
        let mut tries = 1;
        loop {
            let (clock, inner, op) = (self.inner.clock.clone(), self.inner.clone(), op.clone());
            let answer = self
                .inner
                .writer
                .call(move |db| op(db, write_time(db, &clock, &inner.skew)?));
            match answer {
                Err(StoreError::Contended(why)) if tries < CONTENDED_TRIES => {
                    tracing::debug!(tries, %why, "a write given up for another host's; again");
                    std::thread::sleep(contended_pause(tries));
                    tries += 1;
                }
                answer => return answer,
            }
        }
    }

    /// `write` on the SQLite connection itself (its pragmas, its plans; `Db::lite`).
    fn write_lite<T, F>(&self, op: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Fn(&rusqlite::Connection, Millis) -> Result<T, StoreError> + Send + Sync + 'static,
    {
        self.write(move |db, now| op(db.lite()?, now))
    }

    /// `write` for an operation of group `id` (a scan run's batches): answered once it has
    /// run, its commit answered apart (see `writer`). `seal` is run, with the time of the
    /// commit, just before the group commits.
    fn write_grouped<T, F, S>(
        &self,
        id: i64,
        weight: u64,
        seal: S,
        op: F,
    ) -> Result<(T, Committed), StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&db::Db<'_>, Millis) -> Result<T, StoreError> + Send + 'static,
        S: FnOnce(&db::Db<'_>, Millis) -> Result<(), StoreError> + Send + 'static,
    {
        let (clock, inner) = (self.inner.clock.clone(), self.inner.clone());
        let (sealed, sealed_inner) = (clock.clone(), inner.clone());
        let group = writer::Group {
            id,
            weight,
            seal: Box::new(move |db| seal(db, write_time(db, &sealed, &sealed_inner.skew)?)),
        };
        let op = move |db: &db::Db<'_>| op(db, write_time(db, &clock, &inner.skew)?);
        self.inner.writer.call_grouped(group, op)
    }

    /// Waits until every write asked for before it has committed: a grouped operation's
    /// open transaction commits now.
    pub fn settle(&self) -> Result<(), StoreError> {
        self.write(|_, _| Ok(()))
    }

    fn read<T>(
        &self,
        op: impl FnOnce(&db::Db<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match &self.inner.reads {
            Reads::Sqlite(pool) => op(&db::Db::sqlite(&*pool.get()?)),
            Reads::Postgres(pool, _) => {
                let mut conn = pg::reader(pool)?;
                let db = conn.db()?;
                let out = op(&db)?;
                db.commit()?;
                Ok(out)
            }
        }
    }

    /// `read` on the SQLite connection itself (`Db::lite`).
    fn read_lite<T>(
        &self,
        op: impl FnOnce(&rusqlite::Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.read(|db| op(db.lite()?))
    }

    /// `read` inside one read transaction: one snapshot for all of `op`'s statements, and
    /// one lock of the log's shared memory (two `fcntl` calls) instead of one per statement;
    /// those locks were 9% of the content-hash walk's samples (issue 29).
    fn read_snapshot<T>(
        &self,
        op: impl FnOnce(&db::Db<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let Reads::Sqlite(pool) = &self.inner.reads else {
            // A PostgreSQL read is one transaction already.
            return self.read(op);
        };
        let conn = pool.get()?;
        let tx = conn.unchecked_transaction()?;
        let out = op(&db::Db::sqlite(&tx))?;
        tx.finish()?;
        Ok(out)
    }

    /// Extends a lease by `ttl` from now. The heartbeat: fenced like every other worker write.
    pub fn renew(&self, lease: &Lease, ttl: Millis) -> Result<Lease, StoreError> {
        let lease = lease.clone();
        self.write(move |db, now| {
            let expires_at = match lease.target {
                Target::Job => jobs::renew(db, &lease, now, ttl)?,
                Target::ScanRun => scan_runs::renew(db, &lease, now, ttl)?,
            };
            Ok(Lease {
                expires_at,
                ..lease.clone()
            })
        })
    }

    /// Hands a held lease back (graceful shutdown): the row becomes claimable again and its
    /// generation moves on, so anything still in flight under the old lease is a no-op.
    pub fn release(&self, lease: &Lease) -> Result<(), StoreError> {
        let lease = lease.clone();
        self.write(move |db, now| match lease.target {
            Target::Job => jobs::release(db, &lease, now),
            Target::ScanRun => scan_runs::release(db, &lease, now),
        })
    }

    /// Operator force: puts a running row back without holding its lease. Bumps the
    /// generation whatever the row's holder is doing. Returns false if the row was finished.
    pub fn release_unowned(&self, target: Target, id: i64) -> Result<bool, StoreError> {
        self.write(move |db, now| match target {
            Target::Job => jobs::release_unowned(db, id, now),
            Target::ScanRun => scan_runs::release_unowned(db, id, now),
        })
    }

    /// Cancels a waiting or running row (bumping its generation). False if it had finished.
    /// A scan run is cancelled as `cancel_scan_run` does: with its library's other waiting
    /// and running runs, and through the successor reclaim made of it.
    pub fn cancel(&self, target: Target, id: i64) -> Result<bool, StoreError> {
        self.write(move |db, now| match target {
            Target::Job => jobs::cancel(db, id, now),
            Target::ScanRun => scan_runs::cancel(db, id, now),
        })
    }

    /// Requeues expired jobs and retires expired scan runs with successors, in one
    /// transaction.
    pub fn reclaim_stale(&self) -> Result<crate::model::ReclaimReport, StoreError> {
        let policy = self.inner.policy.clone();
        self.write(move |db, now| {
            let mut report = jobs::reclaim(db, now, &policy)?;
            scan_runs::reclaim(db, now, &policy, &mut report)?;
            counters::record_reclaim(db, &report)?;
            Ok(report)
        })
    }

    /// Deletes finished jobs and runs older than the retentions. The newest finished run of
    /// each library is always kept (it answers "when did this library last scan?").
    pub fn prune(&self, job_retention: Millis, run_retention: Millis) -> Result<u64, StoreError> {
        self.write(move |db, now| {
            let jobs = jobs::prune(db, now - job_retention)?;
            let runs = scan_runs::prune(db, now - run_retention)?;
            Ok(jobs + runs)
        })
    }

    /// Bumps a counter outside any lease (e.g. a local fence rejection that never reached
    /// the database).
    pub fn bump_counter(&self, counter: crate::model::Counter) -> Result<(), StoreError> {
        self.write(move |db, _| counters::bump(db, counter, 1))
    }

    /// What this process's writer has committed so far (operations, rows changed).
    pub fn write_stats(&self) -> WriteStats {
        self.inner.writer.stats()
    }

    pub fn counters(&self) -> Result<Vec<(crate::model::Counter, i64)>, StoreError> {
        self.read(counters::all)
    }

    /// Copies the write-ahead log back into the database file. `Passive` never waits for
    /// anyone; `Truncate` waits (up to the busy timeout) for readers and the writer, then
    /// empties the log file. Runs on its own connection, outside any transaction (a
    /// checkpoint cannot run inside one, and it changes no rows).
    pub fn checkpoint(&self, mode: CheckpointMode) -> Result<CheckpointReport, StoreError> {
        if self.is_shared() {
            // The server keeps its own log; there is no file of ours to copy it into.
            return Ok(CheckpointReport::default());
        }
        let conn = rusqlite::Connection::open(&self.inner.path)?;
        conn.busy_timeout(Duration::from_secs(10))?;
        let sql = match mode {
            CheckpointMode::Passive => "PRAGMA wal_checkpoint(PASSIVE)",
            CheckpointMode::Truncate => "PRAGMA wal_checkpoint(TRUNCATE)",
        };
        Ok(conn.query_row(sql, [], |r| {
            Ok(CheckpointReport {
                busy: r.get::<_, i64>(0)? != 0,
                log_frames: r.get(1)?,
                checkpointed_frames: r.get(2)?,
            })
        })?)
    }

    /// `PRAGMA integrity_check` on a connection of the read pool: the problems SQLite
    /// finds, none when the file is sound.
    pub fn integrity_check(&self) -> Result<Vec<String>, StoreError> {
        if self.is_shared() {
            // A server checks its own pages (its checksums, `amcheck`): not a client's job.
            return Ok(Vec::new());
        }
        self.read_lite(|conn| {
            let found: Vec<String> = conn
                .prepare("PRAGMA integrity_check")?
                .query_map([], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            Ok(found.into_iter().filter(|line| line != "ok").collect())
        })
    }

    /// Lets SQLite refresh the statistics its planner uses where they went stale. Through
    /// the writer: it may write the statistics tables.
    pub fn optimize(&self) -> Result<(), StoreError> {
        const OPTIMIZE: db::Pair = db::Pair {
            sqlite: "PRAGMA optimize",
            postgres: "ANALYZE",
        };
        self.write(|db, _| db.execute(db.pick(&OPTIMIZE), args!()).map(|_| ()))
    }
}

/// The `now` a write compares leases against: the clock's, read inside the transaction;
/// on PostgreSQL with a clock that tells the time of day, the server's (kept as `skew`
/// for `Store::now`), so that hosts whose clocks differ agree on every lease.
fn write_time(
    db: &db::Db<'_>,
    clock: &SharedClock,
    skew: &std::sync::atomic::AtomicI64,
) -> Result<Millis, StoreError> {
    let local = clock.now();
    if !(db.is_postgres() && clock.tells_the_time_of_day()) {
        return Ok(local);
    }
    let server = db.one(pg::SERVER_NOW, args!(), |r| r.get::<i64>(0))?;
    skew.store(server - local, std::sync::atomic::Ordering::Relaxed);
    Ok(server)
}

/// Listens for other hosts' new work until dropped (`Store::on_new_work`).
pub struct WorkListener(#[allow(dead_code)] pg::Listener);

/// How hard a checkpoint tries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckpointMode {
    Passive,
    Truncate,
}

/// What a checkpoint did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckpointReport {
    /// It could not finish because a reader or writer was busy.
    pub busy: bool,
    /// Frames in the log, and how many of them are now in the database file.
    pub log_frames: i64,
    pub checkpointed_frames: i64,
}

/// This process's lease owner: `host:pid:boot-nonce`. The nonce tells two processes apart
/// even when a pid is reused after a restart.
pub fn process_owner() -> &'static str {
    static OWNER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    OWNER.get_or_init(|| {
        let nonce = uuid::Uuid::now_v7().simple().to_string();
        format!(
            "{}:{}:{}",
            host_name(),
            std::process::id(),
            &nonce[nonce.len() - 8..]
        )
    })
}

fn host_name() -> String {
    let from_file = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .map(|s| s.trim().to_string());
    from_file
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_string())
        .replace(':', "_")
}

/// Reads a TEXT column holding one of a `model` enum's names, on either engine.
fn parse_at<T>(
    row: &db::Row<'_>,
    idx: usize,
    parse: fn(&str) -> Option<T>,
) -> Result<T, StoreError> {
    let text: String = row.get(idx)?;
    parse(&text).ok_or_else(|| StoreError::Column {
        index: idx,
        name: String::new(),
        problem: format!("holds the unknown value {text:?}"),
    })
}

/// The lines of `EXPLAIN QUERY PLAN` for `sql`, every parameter NULL.
fn plan(conn: &rusqlite::Connection, sql: &str) -> Result<Vec<String>, StoreError> {
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
    let nulls = vec![rusqlite::types::Null; stmt.parameter_count()];
    let rows = stmt.query_map(rusqlite::params_from_iter(nulls), |r| r.get(3))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// How long work that met a full disk waits before it tries again (`Store::pause_scan`,
/// `Store::defer_job`): short, because a freed disk should be put to use at once, and each
/// try costs only a claim and a stat of what is already indexed.
pub const PAUSED_RETRY: Millis = 15_000;

/// Retry delay after `attempts` earlier failures: base, 2x base, 4x base, ... up to the cap.
fn backoff(policy: &LeasePolicy, attempts: i64) -> Millis {
    let factor = 1i64 << attempts.clamp(0, 30);
    policy
        .backoff_base
        .saturating_mul(factor)
        .min(policy.backoff_cap)
}
