//! The PostgreSQL engine's connections (a helper): opening one from the `database` URL with
//! the session settings the store relies on, the read pool, and the migration runner (the
//! baseline, then each later migration's PostgreSQL half, in one transaction under an
//! advisory lock, with the newer-database refusal and the migration guard SQLite has).
//! It owns no family's statement; the writer thread's loop is `pg_writer`'s.
//!
//! Every connection runs SERIALIZABLE: SQLite runs one write transaction at a time, so a
//! family's read-then-write (a fence answered by a SELECT, a claim's pick) acts on what
//! it read. Several hosts write one PostgreSQL at once; SERIALIZABLE keeps every
//! transaction as if it ran alone, and gives up one of two that would not
//! (`StoreError::Contended`, transient: the work runs again). The readers run REPEATABLE
//! READ: one snapshot for the whole read, as a SQLite reader in WAL mode has, and a
//! read-only snapshot is never given up (SERIALIZABLE's can be, for writers it overlaps).
//!
//! Must not import: http, scan, walks, queue, ops, axum
use super::db::{Db, POSTGRES_BASELINE, POSTGRES_BASELINE_VERSION, Statements};
use super::{StoreError, StoreOptions};
use crate::model::Millis;
use std::str::FromStr;
use std::time::Duration;

/// How many readers one process keeps open on the server.
const READERS: u32 = 4;

/// The key of the advisory lock every migration runs under: one process migrates, the
/// others wait for it and then find the schema current.
const MIGRATION_LOCK: i64 = 0x6d65_6469_6164_6578; // "mediadex"

/// A connection and the statements prepared on it.
pub(super) struct PgConn {
    pub(super) client: postgres::Client,
    pub(super) statements: Statements,
}

impl PgConn {
    /// A transaction on this connection as a `Db`.
    pub(super) fn db(&mut self) -> Result<Db<'_>, StoreError> {
        let tx = self.client.transaction()?;
        Ok(Db::postgres(tx, &mut self.statements))
    }
}

/// Where the server is and how long this process waits for it.
#[derive(Clone)]
pub(super) struct Server {
    config: postgres::Config,
    lock_timeout: Duration,
}

impl std::fmt::Debug for Server {
    /// Never the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", describe(&self.config))
    }
}

/// The server a configuration names, without its password: for messages and `status`.
pub(super) fn describe(config: &postgres::Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            postgres::config::Host::Tcp(name) => name.clone(),
            postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    format!(
        "postgres://{}@{}/{}",
        config.get_user().unwrap_or(""),
        hosts.join(","),
        config.get_dbname().unwrap_or("")
    )
}

impl Server {
    /// Parses a `postgres://` URL or a `key=value` string; a wrong one is refused before
    /// anything connects.
    pub(super) fn parse(url: &str, options: &StoreOptions) -> Result<Server, StoreError> {
        let mut config = postgres::Config::from_str(url).map_err(|e| StoreError::BadDatabase {
            reason: e.to_string(),
        })?;
        if config.get_application_name().is_none() {
            config.application_name("mediadex");
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        Ok(Server {
            config,
            lock_timeout: options.busy_timeout,
        })
    }

    pub(super) fn name(&self) -> String {
        describe(&self.config)
    }

    /// A new connection: SERIALIZABLE, or a reader's read-only REPEATABLE READ (see the
    /// header), waiting for another's lock no longer than `busy_timeout` (then `Locked`, as
    /// SQLite's busy timeout).
    pub(super) fn connect(&self, read_only: bool) -> Result<PgConn, StoreError> {
        let mut client = self.config.connect(postgres::NoTls)?;
        let (isolation, read_only) = match read_only {
            true => ("repeatable read", "on"),
            false => ("serializable", "off"),
        };
        let settings = format!(
            "SET default_transaction_isolation = '{isolation}';
             SET lock_timeout = {};
             SET default_transaction_read_only = {read_only};",
            self.lock_timeout.as_millis().max(1),
        );
        client.batch_execute(&settings)?;
        Ok(PgConn {
            client,
            statements: Statements::default(),
        })
    }
}

/// The server's time of day in milliseconds: lease times on a shared database.
pub(super) const SERVER_NOW: &str =
    "SELECT CAST(floor(extract(epoch FROM clock_timestamp()) * 1000) AS BIGINT)";

/// The `now` the open's migration guard compares leases against: the server's, unless a
/// test steps the clock.
pub(super) fn server_now(
    conn: &mut PgConn,
    clock: &crate::clock::SharedClock,
) -> Result<Millis, StoreError> {
    if !clock.tells_the_time_of_day() {
        return Ok(clock.now());
    }
    Ok(conn.client.query_one(SERVER_NOW, &[])?.get(0))
}

/// The read pool's connections.
pub(super) struct Readers(pub(super) Server);

impl r2d2::ManageConnection for Readers {
    type Connection = PgConn;
    type Error = StoreError;

    fn connect(&self) -> Result<PgConn, StoreError> {
        self.0.connect(true)
    }

    fn is_valid(&self, conn: &mut PgConn) -> Result<(), StoreError> {
        Ok(conn.client.batch_execute("")?)
    }

    fn has_broken(&self, conn: &mut PgConn) -> bool {
        conn.client.is_closed()
    }
}

/// The read pool. Its connections are closed off any tokio runtime: the synchronous
/// client closes by blocking on a runtime of its own, which panics inside another, and the
/// last handle of a store may be dropped by an async task (the event poller at a stop).
pub(super) struct PgPool(Option<r2d2::Pool<Readers>>);

impl Drop for PgPool {
    fn drop(&mut self) {
        let Some(pool) = self.0.take() else { return };
        if tokio::runtime::Handle::try_current().is_ok() {
            std::thread::scope(|s| {
                s.spawn(move || drop(pool));
            });
        }
    }
}

/// The read pool: a read waits for a connection as long as a write waits for a lock (not
/// r2d2's 30 s), so that a page asking while the server is away hears so soon.
pub(super) fn read_pool(server: &Server) -> Result<PgPool, StoreError> {
    let pool = r2d2::Pool::builder()
        .max_size(READERS)
        .min_idle(Some(0))
        .connection_timeout(server.lock_timeout.max(Duration::from_secs(1)))
        .build(Readers(server.clone()))?;
    Ok(PgPool(Some(pool)))
}

/// A reader from the pool. r2d2 gives up with the last error of its tries to connect when
/// it had one: then the server is away (`Away`, which passes), not the pool busy.
pub(super) fn reader(pool: &PgPool) -> Result<r2d2::PooledConnection<Readers>, StoreError> {
    let Some(pool) = &pool.0 else {
        return Err(StoreError::WriterGone);
    };
    pool.get().map_err(|e| {
        let words = e.to_string();
        if words.len() > BUSY_WORDS.len() && words.starts_with(BUSY_WORDS) {
            StoreError::Away(words)
        } else {
            StoreError::Pool(e)
        }
    })
}

/// What r2d2 says when no connection was free in time; a cause follows when one failed.
const BUSY_WORDS: &str = "timed out waiting for connection";

/// A later migration's PostgreSQL half (the baseline covers everything up to
/// `POSTGRES_BASELINE_VERSION`).
pub(super) struct PgMigration {
    pub(super) version: i64,
    pub(super) sql: &'static str,
}

/// The PostgreSQL halves of the migrations after the baseline, in order.
pub(super) const PG_MIGRATIONS: &[PgMigration] = &[];

/// The schema version this binary's PostgreSQL schema reaches.
pub(super) fn latest() -> i64 {
    PG_MIGRATIONS
        .last()
        .map_or(POSTGRES_BASELINE_VERSION, |m| m.version)
}

/// Brings the database to `latest()` under the migration lock: an empty database gets the
/// baseline; a newer one is refused; an older one is upgraded only while no other process
/// holds a live lease (the migration guard), in one transaction.
pub(super) fn migrate(conn: &mut PgConn, now: Millis, own_owner: &str) -> Result<(), StoreError> {
    let latest = latest();
    let mut tx = conn.client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    let found = schema_version(&mut tx)?;
    if found > latest {
        return Err(StoreError::NewerSchema {
            found,
            supported: latest,
        });
    }
    if found == latest {
        return Ok(tx.commit()?);
    }
    if found == 0 {
        tracing::info!(
            version = POSTGRES_BASELINE_VERSION,
            "creating the index on PostgreSQL"
        );
        tx.batch_execute(POSTGRES_BASELINE)?;
    } else {
        let db = Db::postgres(tx.savepoint("guard")?, &mut conn.statements);
        super::migrate::refuse_if_leased(&db, now, own_owner)?;
        db.commit()?;
    }
    for m in PG_MIGRATIONS
        .iter()
        .filter(|m| m.version > found.max(POSTGRES_BASELINE_VERSION))
    {
        tracing::info!(version = m.version, "applying migration");
        tx.batch_execute(m.sql)?;
        tx.execute("UPDATE schema_version SET version = $1", &[&m.version])?;
    }
    Ok(tx.commit()?)
}

/// The database's schema version; 0 when it has no index yet.
fn schema_version(tx: &mut postgres::Transaction<'_>) -> Result<i64, StoreError> {
    let exists: bool = tx
        .query_one("SELECT to_regclass('schema_version') IS NOT NULL", &[])?
        .get(0);
    if !exists {
        return Ok(0);
    }
    let row = tx.query_opt("SELECT version FROM schema_version", &[])?;
    Ok(row.map_or(0, |r| r.get(0)))
}

/// The channel the schema's work notice (`work_notice()`) is sent on.
const WORK_CHANNEL: &str = "mediadex_work";

/// How long the listener waits for a notice before it looks whether it should stop.
const LISTEN_TICK: Duration = Duration::from_millis(500);

/// A thread that listens for the work notice and calls `wake` for each; it connects again
/// after a lost connection (the workers' poll covers the gap). Stops when dropped.
pub(super) struct Listener {
    /// Dropped to stop the thread: it waits on this, so a stop never waits out a pause.
    stop: Option<crossbeam_channel::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Listener {
    pub(super) fn start(
        server: Server,
        wake: Box<dyn Fn() + Send>,
    ) -> Result<Listener, StoreError> {
        let (stop, stopped) = crossbeam_channel::bounded::<()>(0);
        let thread = std::thread::Builder::new()
            .name("mediadex-listen".into())
            .spawn(move || listen(&server, &*wake, &stopped))
            .map_err(|_| StoreError::WriterGone)?;
        Ok(Listener {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Whether the listener was told to stop, waiting up to `pause` for it: the pause before
/// connecting again is not a race with anything (the workers poll meanwhile), and a stop
/// ends it at once.
fn stopped(stop: &crossbeam_channel::Receiver<()>, pause: Duration) -> bool {
    stop.recv_timeout(pause).is_err_and(|e| e.is_disconnected())
}

fn listen(server: &Server, wake: &dyn Fn(), stop: &crossbeam_channel::Receiver<()>) {
    let stopping = || stopped(stop, Duration::ZERO);
    while !stopping() {
        let connected = server.connect(false).and_then(|mut conn| {
            let schema = listen_on(&mut conn)?;
            Ok((conn, schema))
        });
        let (mut conn, schema) = match connected {
            Ok(listening) => listening,
            Err(e) => {
                tracing::debug!(error = %e, "cannot listen for work yet; the workers poll");
                if stopped(stop, LISTEN_TICK * 4) {
                    return;
                }
                continue;
            }
        };
        // Work may have come while nobody listened.
        wake();
        while !stopping() && !conn.client.is_closed() {
            let mut notices = conn.client.notifications();
            let mut heard = notices.timeout_iter(LISTEN_TICK);
            match postgres::fallible_iterator::FallibleIterator::next(&mut heard) {
                Ok(Some(notice)) if notice.payload() == schema => wake(),
                Ok(Some(_)) => {}
                Ok(None) => {}
                Err(e) => {
                    tracing::debug!(error = %e, "lost the work notices; listening again");
                    break;
                }
            }
        }
    }
}

/// Listens for the work notice; answers the schema whose notices are this index's.
fn listen_on(conn: &mut PgConn) -> Result<String, StoreError> {
    conn.client
        .batch_execute(&format!("LISTEN {WORK_CHANNEL}"))?;
    Ok(conn
        .client
        .query_one("SELECT current_schema()", &[])?
        .get(0))
}

#[cfg(test)]
mod tests {
    use super::super::db::tests::PgScratch;
    use super::*;

    /// A statement that adds a job wakes a listening host once its transaction commits,
    /// and not before.
    #[test]
    #[ignore = "needs PostgreSQL: MEDIADEX_TEST_PG_URL (.ci/run starts one)"]
    fn on_postgres_a_new_job_wakes_a_listening_host_at_its_commit() {
        let mut pg = PgScratch::new();
        pg.client.batch_execute(POSTGRES_BASELINE).unwrap();
        let url = format!("{} options='-c search_path={}'", pg.url, pg.schema);
        let server = Server::parse(&url, &StoreOptions::default()).unwrap();
        let (woke, heard) = crossbeam_channel::unbounded();
        let _listener = Listener::start(
            server,
            Box::new(move || {
                let _ = woke.send(());
            }),
        )
        .unwrap();
        // The first wake is the listener's own, once it listens.
        heard.recv_timeout(Duration::from_secs(20)).unwrap();
        let mut tx = pg.client.transaction().unwrap();
        tx.batch_execute(
            "INSERT INTO jobs (kind, payload, state, run_at, created_at, updated_at) \
             VALUES ('thumbnail', '{}', 'queued', 0, 0, 0)",
        )
        .unwrap();
        assert!(
            heard.recv_timeout(LISTEN_TICK * 3).is_err(),
            "woken before the commit"
        );
        tx.commit().unwrap();
        heard.recv_timeout(Duration::from_secs(20)).unwrap();
    }
}
