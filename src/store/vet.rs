//! Vetting the index at every start, before anything may write to it, and moving a damaged
//! one aside (issue 13, part 4). A file that SQLite cannot read (a garbage or zeroed header),
//! that it finds malformed (truncated, a zeroed page) or that holds another database's pages
//! (its own, or a foreign WAL's replayed over it) is refused as `Damaged`; a file from a newer
//! binary is refused as `NewerSchema`. Both refusals leave every byte of the file and its WAL
//! as they were: the vetting connection is read-only, and SQLite checkpoints a WAL into the
//! file (and deletes it) only when the last read-write connection closes.
//!
//! What a start reads, and why. Measured with the debug binary (SQLite is built optimised in
//! it too) on 2 shared cores, warm cache, indexes of this schema made by SQL inserts (one
//! asset and one file per row), `mediadex library list`, median of 7:
//!
//! | index                  | file   | cheap start | with `quick_check` | ratio |
//! |------------------------|--------|-------------|--------------------|-------|
//! | 100,000 assets + files | 43 MB  | 18 ms       | 107 ms             | 6x    |
//! | 1,000,000              | 440 MB | 21 ms       | 1,070 ms           | 50x   |
//!
//! The cheap reads (SQLite's own checks of page 1: a header that is not SQLite's, a page
//! count beyond the end of the file; a length that is not a whole number of pages; the
//! identity of `schema/0009_index_identity.sql`) cost under a millisecond and find every
//! damage but one: a zeroed page in the middle, which only `quick_check` (every page, about
//! 2.4 ms per MB) finds. So the service and the desktop app, which start once and run for
//! hours, always pay it (`StartCheck::Full`), and a command pays it while it costs a few
//! hundredths of a second, up to `COMMAND_CHECK_BYTES` (16 MiB, about 35,000 assets); a
//! larger index's command would take a tenth of a second or more each time, and its damage
//! is found by the next start of the service or the app. (It was 64 MiB, about 150,000
//! assets: an unchanged `scan --wait` of 100,000 small files then spent 0.3 of its 0.75 s
//! wall in the check on the loaded build machine, where `find` walks the same files in
//! 0.5 s; issue 16 asks the rescan to keep up with `find`.) (`integrity_check`, which also compares every index with its
//! table, costs 1.5-3x `quick_check`.) A cheap start that finds the length wrong runs the
//! full check too, so a length alone never condemns a file (another process's checkpoint
//! may be extending it at that moment).

use super::{Damage, StoreError};
use rusqlite::{Connection, ErrorCode, OpenFlags};
use std::path::{Path, PathBuf};

/// The first schema version whose files carry the identity.
pub(super) const IDENTITY_VERSION: i64 = 9;

/// The largest file a command reads whole at its start (see the module header).
pub const COMMAND_CHECK_BYTES: u64 = 16 << 20;

/// How much of the file a start reads before it trusts it. See the module header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartCheck {
    /// Page 1, the length, the identity, and `PRAGMA quick_check`: every page.
    Full,
    /// `Full` for a file of up to this many bytes, only the O(1) reads above it.
    FullUpTo(u64),
}

const USER_TABLES: &str =
    "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'";
const IDENTITY: &str = "SELECT nonce FROM index_identity WHERE id = 1";
const APPLICATION_ID: &str = "PRAGMA application_id";

/// Refuses a damaged or newer file; a missing or empty one is a new index.
pub(super) fn vet(path: &Path, latest: i64, check: StartCheck) -> Result<(), StoreError> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    if meta.len() == 0 {
        return Ok(());
    }
    refuse_newer_header(path, latest)?;
    let damaged = |damage| StoreError::Damaged {
        path: path.display().to_string(),
        damage,
    };
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| classify(e, &damaged))?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    let page: i64 = conn
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .map_err(|e| classify(e, &damaged))?;
    let ragged = meta.len() % u64::try_from(page.max(512)).unwrap_or(512) != 0;
    let full = ragged
        || match check {
            StartCheck::Full => true,
            StartCheck::FullUpTo(limit) => meta.len() <= limit,
        };
    read_header(&conn, latest, full).map_err(|e| match e {
        Vetted::Store(e) => classify(e, &damaged),
        Vetted::Damage(d) => damaged(d),
        Vetted::Newer(e) => e,
    })
}

/// `user_version` is a big-endian u32 at this offset of the file header.
const USER_VERSION_AT: usize = 60;

/// A newer file without a WAL is refused from its header bytes alone: SQLite's read would
/// create an empty WAL and shared memory beside it. With a WAL, SQLite reads it (the WAL's
/// page 1 is the truth) and creates nothing.
fn refuse_newer_header(path: &Path, latest: i64) -> Result<(), StoreError> {
    let [wal, _, _] = family(path, "");
    if wal.exists() {
        return Ok(());
    }
    let mut header = [0u8; 100];
    let read = std::fs::File::open(path).and_then(|mut f| {
        use std::io::Read;
        f.read_exact(&mut header)
    });
    if read.is_err() || &header[..16] != b"SQLite format 3\0" {
        return Ok(());
    }
    let mut version = [0u8; 4];
    version.copy_from_slice(&header[USER_VERSION_AT..USER_VERSION_AT + 4]);
    let found = i64::from(u32::from_be_bytes(version));
    if found > latest {
        return Err(StoreError::NewerSchema {
            found,
            supported: latest,
        });
    }
    Ok(())
}

/// Why `read_header` refused.
enum Vetted {
    Store(rusqlite::Error),
    Damage(Damage),
    Newer(StoreError),
}

impl From<rusqlite::Error> for Vetted {
    fn from(e: rusqlite::Error) -> Self {
        Vetted::Store(e)
    }
}

/// Version, identity and (when `full`) every page, in one read transaction: another process
/// migrating meanwhile is seen before or after, never half-way.
fn read_header(conn: &Connection, latest: i64, full: bool) -> Result<(), Vetted> {
    conn.execute_batch("BEGIN")?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > latest {
        return Err(Vetted::Newer(StoreError::NewerSchema {
            found: version,
            supported: latest,
        }));
    }
    let tables: i64 = conn.query_row(USER_TABLES, [], |r| r.get(0))?;
    if version == 0 && tables > 0 {
        return Err(Vetted::Damage(Damage::Foreign(
            "its tables are not a mediadex schema".into(),
        )));
    }
    if version >= IDENTITY_VERSION {
        check_identity(conn)?;
    }
    if full {
        let first: String = conn.query_row("PRAGMA quick_check(1)", [], |r| r.get(0))?;
        if first != "ok" {
            let detail = first.replace("*** in database main ***", "");
            return Err(Vetted::Damage(Damage::Malformed(format!(
                "quick_check says: {}",
                detail.trim().replace('\n', "; ")
            ))));
        }
    }
    conn.execute_batch("COMMIT")?;
    Ok(())
}

/// The identity twice: the header's `application_id`, and the identity row's number (none
/// when the row or its table is missing).
fn identity(conn: &Connection) -> rusqlite::Result<(i64, Option<i64>)> {
    let header: i64 = conn.query_row(APPLICATION_ID, [], |r| r.get(0))?;
    let row = match conn.query_row(IDENTITY, [], |r| r.get(0)) {
        Ok(nonce) => Some(nonce),
        Err(rusqlite::Error::QueryReturnedNoRows) => None,
        Err(e) if e.sqlite_error_code() == Some(ErrorCode::Unknown) => None,
        Err(e) => return Err(e),
    };
    Ok((header, row))
}

fn check_identity(conn: &Connection) -> Result<(), Vetted> {
    let (header, row) = identity(conn)?;
    if row != Some(header) {
        return Err(Vetted::Damage(Damage::Foreign(
            "its header and its identity row name different indexes: another index's WAL \
             was replayed over it"
                .into(),
        )));
    }
    Ok(())
}

/// SQLite's own verdicts on a file become `Damaged`; anything else (busy, permissions) stays
/// what it was.
fn classify(e: rusqlite::Error, damaged: &impl Fn(Damage) -> StoreError) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => damaged(Damage::NotADatabase),
        Some(ErrorCode::DatabaseCorrupt) => damaged(Damage::Malformed("at its first read".into())),
        _ => e.into(),
    }
}

/// After the migrations of a file that reached `IDENTITY_VERSION` in this transaction: the
/// header gets the identity row's number. Runs inside the migration transaction.
pub(super) fn stamp_identity(tx: &Connection) -> Result<(), StoreError> {
    let (header, row) = identity(tx)?;
    if let Some(nonce) = row
        && header == 0
    {
        tx.pragma_update(None, "application_id", nonce)?;
    }
    Ok(())
}

/// The files of the index at `path` (the database, its WAL, its shared memory), each with
/// `suffix` added to its name.
fn family(path: &Path, suffix: &str) -> [PathBuf; 3] {
    ["-wal", "-shm", ""].map(|tail| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        name.push(tail);
        PathBuf::from(name)
    })
}

/// Renames the index and its WAL and shared memory to `<name>.damaged-<UTC time>` (with
/// `-2`, `-3`, ... when that name is taken), never over another file, never deleting one.
/// The WAL goes first: a WAL left beside a fresh index would be replayed into it.
pub fn move_aside(path: &Path, at: chrono::DateTime<chrono::Utc>) -> Result<PathBuf, StoreError> {
    let stamp = format!(".damaged-{}", at.format("%Y%m%dT%H%M%S"));
    let mut suffix = stamp.clone();
    for n in 2.. {
        if family(path, &suffix).iter().all(|p| !p.exists()) {
            break;
        }
        suffix = format!("{stamp}-{n}");
    }
    let to = family(path, &suffix);
    for (from, to) in family(path, "").iter().zip(&to) {
        match std::fs::rename(from, to) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(StoreError::MoveAside {
                    path: from.display().to_string(),
                    source,
                });
            }
        }
    }
    let [_, _, db] = to;
    Ok(db)
}

/// This host's roots (?1); an index from before hosts (migration 0029) has only
/// `libraries.root`.
const LIBRARIES: &str = "SELECT l.name, r.root FROM libraries l JOIN library_roots r
                          ON r.library_id = l.id AND r.host IN (?1, '') ORDER BY l.id";
const LIBRARIES_BEFORE_HOSTS: &str = "SELECT name, root FROM libraries ORDER BY id";

/// The (name, root) of each library a damaged index still shows on `host`, read from the file alone
/// (`immutable`: no WAL, no lock, nothing written), as far as its pages allow; none when it
/// cannot be read at all. `writable_schema` makes SQLite read a file shorter than its header
/// says (a truncated one) instead of refusing it; nothing is written through it.
pub fn salvage_libraries(path: &Path, host: &str) -> Vec<(String, String)> {
    let Some(text) = path.to_str() else {
        return vec![];
    };
    let uri = format!(
        "file:{}?immutable=1",
        text.replace('%', "%25")
            .replace('?', "%3f")
            .replace('#', "%23")
    );
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
    let Ok(conn) = Connection::open_with_flags(uri, flags) else {
        return vec![];
    };
    if conn.execute_batch("PRAGMA writable_schema = ON").is_err() {
        return vec![];
    }
    let hosted = conn.prepare(LIBRARIES).and_then(|mut stmt| {
        let rows = stmt.query_map([host], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.map_while(Result::ok).collect())
    });
    hosted
        .or_else(|_| {
            let mut stmt = conn.prepare(LIBRARIES_BEFORE_HOSTS)?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok::<_, rusqlite::Error>(rows.map_while(Result::ok).collect())
        })
        .unwrap_or_default()
}
