//! The store's error type: every failure a caller of the store can see, each with a message
//! a user can act on, and whether it passes by itself (`is_transient`).

use crate::model::Target;
use postgres::error::SqlState;
use rusqlite::ErrorCode;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A fenced write matched no row: the lease is stale. The write was rolled back.
    #[error("lease lost on {target:?} {id} (generation {generation})")]
    LeaseLost {
        target: Target,
        id: i64,
        generation: i64,
    },
    #[error(
        "the database schema is version {found}, newer than this mediadex understands \
         (up to {supported}); run a newer mediadex or point --data elsewhere"
    )]
    NewerSchema { found: i64, supported: i64 },
    #[error(
        "cannot upgrade the database while another mediadex process is working on it \
         ({what} {id} leased by {owner}, for {remaining_ms} ms more); stop that process and retry"
    )]
    MigrationBlocked {
        owner: String,
        what: &'static str,
        id: i64,
        remaining_ms: i64,
    },
    /// A migration would leave rows whose foreign keys point nowhere; it was rolled back.
    #[error(
        "the upgrade to schema version {version} would break {broken} foreign keys; \
         nothing was changed (please report this)"
    )]
    MigrationBrokeKeys { version: i64, broken: i64 },
    #[error("the database is locked by another process and stayed locked; try again later")]
    Locked,
    #[error(
        "the disk holding the database is full: nothing was written; try again once space is freed"
    )]
    DiskFull,
    #[error("{0}")]
    Conflict(String),
    #[error(
        "library {library_id} already had {limit} scans in the last hour; \
         try again in {} s", (retry_after_ms + 999) / 1000
    )]
    RateLimited {
        library_id: i64,
        limit: u32,
        retry_after_ms: i64,
    },
    #[error("{0}")]
    NotFound(String),
    /// The file is not a sound index of ours: SQLite cannot read it, finds it malformed, or
    /// it (or the WAL replayed over it) belongs to another database.
    #[error("the index {path} is damaged ({damage})")]
    Damaged { path: String, damage: Damage },
    #[error("cannot move the damaged index {path} aside: {source}")]
    MoveAside {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open the database {path}: {source}")]
    Open {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error("database error: {0}")]
    Sqlite(rusqlite::Error),
    #[error("database error: {}", pg_words(.0))]
    Postgres(postgres::Error),
    /// PostgreSQL gave up this transaction for another that touched the same rows
    /// (a serialization failure or a deadlock); running it again succeeds.
    /// Kept in words (the server's error is not `Clone`): a batch's rollback hands the same
    /// answer to each of its operations, and it must still pass.
    #[error(
        "the database gave up this transaction for another that changed the same rows; \
         try again ({0})"
    )]
    Contended(String),
    /// The connection to the PostgreSQL server is lost or the server is shutting down or
    /// starting: the work waits until it is back.
    #[error("the database server is away ({0}); the work waits until it is back")]
    Away(String),
    /// A column read as a kind of value it does not hold (a family's bug, or a schema
    /// that is not this binary's).
    #[error("database column {index} ({name}) {problem}")]
    Column {
        index: usize,
        name: String,
        problem: String,
    },
    #[error("database read pool: {0}")]
    Pool(#[from] r2d2::Error),
    #[error("the database writer has stopped")]
    WriterGone,
    /// The data dir's host id cannot be read or made (`host`).
    #[error(transparent)]
    Host(#[from] crate::host::HostError),
    /// The `database` setting does not name a PostgreSQL server this binary can read.
    #[error("the database setting is not a PostgreSQL URL mediadex can use: {reason}")]
    BadDatabase { reason: String },
    /// What only SQLite has (its query plans, its pragmas), asked of an index on
    /// PostgreSQL (`Db::lite`).
    #[error("{0} is SQLite's own, and this index is on PostgreSQL")]
    SqliteOnly(&'static str),
}

impl StoreError {
    pub fn is_lease_lost(&self) -> bool {
        matches!(self, StoreError::LeaseLost { .. })
    }

    /// Whether the same operation can succeed later without anyone changing anything: the
    /// write lock another process held past the busy timeout, a read pool that had no
    /// connection free, a full disk (space is freed), a rate limit's window, a migration
    /// waiting for another process's lease. Everything else (a stale lease, a damaged or
    /// newer index, a conflict, a missing row, a SQL error) answers the same again. On
    /// PostgreSQL a lock timeout is `Locked`, and a transaction given up for another
    /// (`Contended`) or a server away (`Away`) passes too.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            StoreError::Locked
                | StoreError::DiskFull
                | StoreError::Pool(_)
                | StoreError::RateLimited { .. }
                | StoreError::MigrationBlocked { .. }
                | StoreError::Contended(_)
                | StoreError::Away(_)
        )
    }

    /// Builds an error to hand to every operation of a batch that could not commit.
    pub(crate) fn from_batch(e: &rusqlite::Error) -> StoreError {
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => StoreError::Locked,
            Some(ErrorCode::DiskFull) => StoreError::DiskFull,
            _ => StoreError::Sqlite(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
                Some(e.to_string()),
            )),
        }
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => StoreError::Locked,
            Some(ErrorCode::DiskFull) => StoreError::DiskFull,
            _ => StoreError::Sqlite(e),
        }
    }
}

/// A PostgreSQL error with its causes: the client's own words are only its kind ("db
/// error", "error serializing parameter 0"), the server's message or the refused
/// value is the cause.
pub(crate) fn pg_words(e: &postgres::Error) -> String {
    let mut words = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        words.push_str(": ");
        words.push_str(&c.to_string());
        cause = c.source();
    }
    words
}

/// What a PostgreSQL error means to the store's caller.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PgKind {
    Locked,
    DiskFull,
    Contended,
    Away,
    Other,
}

/// Sorts a PostgreSQL error by its SQLSTATE, and by whether the connection is gone.
pub(crate) fn pg_kind(code: Option<&SqlState>, connection_lost: bool) -> PgKind {
    let Some(code) = code else {
        return if connection_lost {
            PgKind::Away
        } else {
            PgKind::Other
        };
    };
    match code {
        c if *c == SqlState::LOCK_NOT_AVAILABLE => PgKind::Locked,
        c if *c == SqlState::DISK_FULL => PgKind::DiskFull,
        c if *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED => {
            PgKind::Contended
        }
        // Class 08 is a connection exception; 57P01..03 a server shutting down, crashed, or
        // starting (`admin_shutdown`, `crash_shutdown`, `cannot_connect_now`).
        c if c.code().starts_with("08")
            || *c == SqlState::ADMIN_SHUTDOWN
            || *c == SqlState::CRASH_SHUTDOWN
            || *c == SqlState::CANNOT_CONNECT_NOW =>
        {
            PgKind::Away
        }
        _ if connection_lost => PgKind::Away,
        _ => PgKind::Other,
    }
}

impl From<postgres::Error> for StoreError {
    fn from(e: postgres::Error) -> Self {
        // An I/O error under the client is a socket that broke: the server is away.
        let io = std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>());
        match pg_kind(e.code(), e.is_closed() || io) {
            PgKind::Locked => StoreError::Locked,
            PgKind::DiskFull => StoreError::DiskFull,
            PgKind::Contended => StoreError::Contended(pg_words(&e)),
            PgKind::Away => StoreError::Away(pg_words(&e)),
            PgKind::Other => StoreError::Postgres(e),
        }
    }
}

/// What is wrong with a damaged index, in words a user can repeat to someone who helps.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Damage {
    /// The header is not SQLite's (garbage, or the first page zeroed).
    #[error("it is not an SQLite database: its header is garbage or zeroed")]
    NotADatabase,
    /// SQLite reads it but its pages do not hold together (truncated, a zeroed page).
    #[error("SQLite finds it malformed, {0}")]
    Malformed(String),
    /// It is a database, or a WAL was replayed over it, that is not this index.
    #[error("it holds pages of another database: {0}")]
    Foreign(String),
}
