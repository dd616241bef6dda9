//! The `files` table: the known files for the scan's diff (by scope, or one directory at a
//! time), a file row's write with the link the scan decided, the marks of a photo to be read
//! again (`files.read_again`, which a read clears) whose sidecar changed or has no row yet,
//! the row a move settled after the scan read it, the unseen files a full scan's end marks
//! missing (except rows a restore brought back during the run) and their count, and an
//! asset's paths. What an ingest batch or a full scan's end does with them is `ingest`'s.

use super::db::on_lite;
use super::rows::file_stamp;
use super::{Store, StoreError, parse_col};
use crate::model::{Asset, FileReason, FileStamp, IngestItem, KnownDir, KnownFile, Millis, Unseen};
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::HashSet;

/// The columns `known_from_row` reads: the stamp, the link, whether the last read found
/// a picture or video (a file that is none keeps `model::NOT_MEDIA` as its error, whichever
/// version wrote it), and why it must be read again though unchanged (migration 0021).
macro_rules! known_cols {
    () => {
        "id, rel_path, size, mtime_ns, dev, inode, asset_id, last_reason = 'error',
         error IS NOT 'not a photo or video', read_again"
    };
}
const PATHS: &str = "
    SELECT id, library_id, rel_path, rel_path_text, state FROM files WHERE asset_id = ?1
     ORDER BY state = 'missing', library_id, rel_path";

/// The files a trash moves, with the stamp each intent records.
const PRESENT_FILES: &str = "
    SELECT library_id, rel_path, size, mtime_ns, dev, inode FROM files
     WHERE asset_id = ?1 AND state = 'present'
     ORDER BY library_id, rel_path";
const PRESENT_PATHS: &str = "
    SELECT rel_path_text FROM files WHERE asset_id = ?1 AND state = 'present' ORDER BY rel_path";
/// The libraries an asset's files are in, present or trashed: a move checks each is there.
const LIBRARIES: &str = "SELECT DISTINCT library_id FROM files WHERE asset_id = ?1";
/// A settled intent's file row follows it only while the row is still the move's asset's:
/// a path re-saved and indexed as another asset meanwhile is that asset's row. A row goes
/// missing only with the stamp the move began with (?5..?8; NULL on an old intent): a file
/// a scan read again since (the same photo written anew) is still in the library.
const MOVED_AWAY: &str = "
    UPDATE files SET state = 'missing', missing_since = ?3
     WHERE library_id = ?1 AND rel_path = ?2 AND state = 'present' AND asset_id = ?4
       AND (?5 IS NULL OR (size = ?5 AND mtime_ns = ?6 AND dev = ?7 AND inode = ?8))";
const MOVED_BACK: &str = "
    UPDATE files SET state = 'present', missing_since = NULL
     WHERE library_id = ?1 AND rel_path = ?2 AND asset_id = ?3";
/// The asset and stamp the index holds now for a file row.
const STAMP: &str = "SELECT asset_id, size, mtime_ns, dev, inode FROM files
                      WHERE library_id = ?1 AND rel_path = ?2";
/// Whether any file row, present or missing, names the asset.
const HAS_ROW: &str = "SELECT EXISTS (SELECT 1 FROM files WHERE asset_id = ?1)";
/// An adopted trash-folder file's row at the library path its trash took it from: missing,
/// as a trash leaves it, with the stamp of the file in the trash folder (a rename keeps it,
/// so the file a restore puts back is seen unchanged). No scan run saw it: run 0.
const ADOPTED: &str = "
    INSERT INTO files (library_id, rel_path, rel_path_text, size, mtime_ns, dev, inode,
                       asset_id, state, last_reason, first_seen_run, last_seen_run,
                       missing_since)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'missing', 'new', 0, 0, ?9)";

/// Present files under a scope: `?2 = ''` is the whole library; otherwise the path itself
/// or anything below `scope/` (the byte range `scope/` ..< `scope0`, `0` following `/`).
const KNOWN: &str = concat!(
    "SELECT ",
    known_cols!(),
    " FROM files WHERE library_id = ?1 AND state = 'present'
       AND (?2 = '' OR rel_path = ?3 OR (rel_path >= ?4 AND rel_path < ?5))"
);
/// The file rows from `?2` on, in path order (the root: no upper bound). `known_dir` reads
/// a directory's direct files from it and jumps over each sub-directory after its first
/// row, so listing a directory costs its own files plus one seek per sub-directory, not
/// its whole subtree.
const DIR_ROWS_FROM: &str = concat!(
    "SELECT ",
    known_cols!(),
    ", state = 'present' FROM files WHERE library_id = ?1 AND rel_path >= ?2 ORDER BY rel_path"
);
const DIR_ROWS_BETWEEN: &str = concat!(
    "SELECT ",
    known_cols!(),
    ", state = 'present' FROM files WHERE library_id = ?1 AND rel_path >= ?2 AND rel_path < ?3
     ORDER BY rel_path"
);
const PREVIOUS: &str = "SELECT id, asset_id FROM files WHERE library_id = ?1 AND rel_path = ?2";
/// A processed file new to the library. Not an upsert: `PREVIOUS` (in the same write
/// transaction) already told whether the row exists, and an `ON CONFLICT DO UPDATE` on a
/// table with foreign keys makes every execution keep a statement journal.
const INSERT_FILE: &str = "
    INSERT INTO files (library_id, rel_path, rel_path_text, size, mtime_ns, dev, inode,
                       asset_id, state, last_reason, error, first_seen_run, last_seen_run)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'present', ?9, ?10, ?11, ?11)";
/// A processed file the library had a row for, with the link `ingest_one` decided. The
/// read is the one `read_again` asked for. A file read lends its asset nothing until
/// `sidecars::read_copy` finds it one of several copies (migration 0022); one that could
/// not be read (?11 false) keeps its link and what it lent.
const UPDATE_FILE: &str = "
    UPDATE files SET rel_path_text = ?2, size = ?3, mtime_ns = ?4, dev = ?5, inode = ?6,
                     asset_id = ?7, state = 'present', last_reason = ?8,
                     error = ?9, last_seen_run = ?10, missing_since = NULL, read_again = NULL,
                     beside = CASE WHEN ?11 THEN NULL ELSE beside END
     WHERE id = ?1";
/// A known photo whose sidecar's new stamp this batch stores: its re-read may come in a
/// later batch or run (migration 0021). A mark already there stays (either reads it).
const MARK_READ_AGAIN: &str = "
    UPDATE files SET read_again = 'sidecar'
     WHERE library_id = ?1 AND rel_path = ?2 AND state = 'present' AND read_again IS NULL";
/// Whether the library has a present row at ?2.
const PRESENT_AT: &str = "SELECT EXISTS (SELECT 1 FROM files WHERE library_id = ?1 AND rel_path = ?2 AND state = 'present')";
/// The row at an item's path, if something marked it missing, when it still has the stamp
/// the scan read (?3..?6; see `moved_since_read`).
const MISSING_ROW: &str = "
    SELECT id FROM files WHERE library_id = ?1 AND rel_path = ?2 AND state = 'missing'
       AND size = ?3 AND mtime_ns = ?4 AND dev = ?5 AND inode = ?6";
/// The asset a present file of the library shows, for restoring it by id.
const PRESENT_ASSET: &str =
    "SELECT asset_id FROM files WHERE id = ?1 AND library_id = ?2 AND state = 'present'";
const PRESENT: &str = "SELECT count(*) FROM files WHERE library_id = ?1 AND state = 'present'";
/// What the completion of run ?3 would mark missing (see `MARK_FILE_MISSING`).
const FILE_PRESENT: &str = "
    SELECT count(*) FROM files WHERE id = ?2 AND library_id = ?1 AND state = 'present'
                                 AND revived_in_run IS NOT ?3";
const PRESENT_UNDER: &str = "
    SELECT count(*) FROM files WHERE library_id = ?1 AND rel_path >= ?2 AND rel_path < ?3
                                 AND state = 'present' AND revived_in_run IS NOT ?4";
/// A row that came back from `missing` while run ?4 was running (`files_revived`) is not
/// marked by it: the walk may have passed its folder before the restore put the file back.
const MARK_FILE_MISSING: &str = "
    UPDATE files SET state = 'missing', missing_since = ?3
     WHERE id = ?2 AND library_id = ?1 AND state = 'present' AND revived_in_run IS NOT ?4
     RETURNING asset_id";
const MARK_MISSING_UNDER: &str = "
    UPDATE files SET state = 'missing', missing_since = ?4
     WHERE library_id = ?1 AND rel_path >= ?2 AND rel_path < ?3 AND state = 'present'
       AND revived_in_run IS NOT ?5
     RETURNING asset_id";

/// The byte range of paths below a non-empty scope.
fn scope_bounds(scope: &str) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let exact = scope.as_bytes().to_vec();
    let mut lo = exact.clone();
    lo.push(b'/');
    let mut hi = exact.clone();
    hi.push(b'/' + 1);
    (exact, lo, hi)
}

/// The byte range of the paths below directory `dir` (`dir/` ..< `dir0`).
fn below(dir: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut lo = dir.to_vec();
    lo.push(b'/');
    let mut hi = dir.to_vec();
    hi.push(b'/' + 1);
    (lo, hi)
}

fn known_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<KnownFile> {
    Ok(KnownFile {
        id: r.get(0)?,
        rel_path: r.get(1)?,
        stamp: on_lite(r, |r| file_stamp(r, 2))?,
        asset_id: r.get(6)?,
        has_error: r.get(7)?,
        media: r.get(8)?,
        read_again: match r.get::<_, Option<String>>(9)? {
            Some(_) => Some(parse_col(r, 9, FileReason::parse)?),
            None => None,
        },
    })
}

/// Lists one directory (see `DIR_ROWS_FROM`): its present files and the names of its
/// sub-directories with file rows, each sub-directory skipped after its first row.
fn list_dir(conn: &Connection, library_id: i64, dir: &[u8]) -> Result<KnownDir, StoreError> {
    let (prefix, hi) = if dir.is_empty() {
        (Vec::new(), None)
    } else {
        let (lo, hi) = below(dir);
        (lo, Some(hi))
    };
    let mut listing = KnownDir::default();
    let mut from = prefix.clone();
    loop {
        let mut stmt;
        let mut rows = match &hi {
            None => {
                stmt = conn.prepare_cached(DIR_ROWS_FROM)?;
                stmt.query(params![library_id, from])?
            }
            Some(hi) => {
                stmt = conn.prepare_cached(DIR_ROWS_BETWEEN)?;
                stmt.query(params![library_id, from, hi])?
            }
        };
        let mut jump = None;
        while let Some(row) = rows.next()? {
            let path: Vec<u8> = row.get(1)?;
            let rest = path.get(prefix.len()..).unwrap_or_default();
            if let Some(slash) = rest.iter().position(|&b| b == b'/') {
                let name = rest[..slash].to_vec();
                // Next: the first path after everything below `prefix/name/`.
                let mut next = prefix.clone();
                next.extend_from_slice(&name);
                next.push(b'/' + 1);
                listing.subdirs.push(name);
                jump = Some(next);
                break;
            }
            if row.get::<_, bool>(10)? {
                listing.files.push(known_from_row(row)?);
            }
        }
        match jump {
            Some(next) => from = next,
            None => return Ok(listing),
        }
    }
}

/// Stamps are stored as SQLite integers: u64 values are kept bit for bit.
fn stamp_params(s: &FileStamp) -> (i64, i64, i64, i64) {
    (s.size as i64, s.mtime_ns, s.dev as i64, s.inode as i64)
}

/// Writes the file row of `item` linked to `asset`: an update of row `existing`, or an
/// insert. Answers its id.
pub(super) fn write_row(
    conn: &Connection,
    existing: Option<i64>,
    library_id: i64,
    item: &IngestItem,
    asset: Option<i64>,
    run_id: i64,
) -> Result<i64, StoreError> {
    let (size, mtime, dev, inode) = stamp_params(&item.stamp);
    let (text, reason, error) = (&item.rel_path_text, item.reason.as_str(), &item.error);
    let Some(id) = existing else {
        conn.prepare_cached(INSERT_FILE)?.execute(params![
            library_id,
            item.rel_path,
            text,
            size,
            mtime,
            dev,
            inode,
            asset,
            reason,
            error,
            run_id
        ])?;
        return Ok(conn.last_insert_rowid());
    };
    let read = item.checksum.is_some();
    conn.prepare_cached(UPDATE_FILE)?.execute(params![
        id, text, size, mtime, dev, inode, asset, reason, error, run_id, read
    ])?;
    Ok(id)
}

/// The row of `item` when a move settled it after the scan read the file (issue 25 defect
/// 10): the store listed it present when the scan met it (`known_present`), and it is
/// missing now. Only a move (the user's trash, in this transaction's past) marks a row
/// missing while its library's run runs: writing the read back would undo the trash, or
/// make a phantom asset of a file that is in the trash folder. The next scan sees the path
/// as it is then. A move marks a row missing with the stamp it began with (a rename keeps
/// it): a read of another stamp read other bytes than the move's (a photo re-saved since
/// the index last read it, which the move found changed and left where it is, finding
/// 17), and is written like any read.
pub(super) fn moved_since_read(
    conn: &Connection,
    library_id: i64,
    item: &IngestItem,
    known_present: &HashSet<i64>,
) -> Result<Option<i64>, StoreError> {
    if known_present.is_empty() {
        return Ok(None);
    }
    let (size, mtime, dev, inode) = stamp_params(&item.stamp);
    let read = params![library_id, item.rel_path, size, mtime, dev, inode];
    let missing: Option<i64> = conn
        .prepare_cached(MISSING_ROW)?
        .query_row(read, |r| r.get(0))
        .optional()?;
    Ok(missing.filter(|id| known_present.contains(id)))
}

/// Marks the present photos at `paths` to be read again for their sidecar.
pub(super) fn mark_read_again(
    conn: &Connection,
    library_id: i64,
    paths: &[Vec<u8>],
) -> Result<(), StoreError> {
    let mut stmt = conn.prepare_cached(MARK_READ_AGAIN)?;
    for path in paths {
        stmt.execute(params![library_id, path])?;
    }
    Ok(())
}

/// Marks the photos of `read_with` to be read again whose facts come from a sidecar or
/// JSON that has no present row after the batch's items (issue 25 finding 15): its row
/// comes in a later batch, and a run cut before that commits would leave the photo with
/// facts that nothing takes away when the file goes (a gone file is known by its row).
/// A later batch of the same run that stores it reads the photo again and clears the
/// mark; a photo read in the file's own batch is not marked.
pub(super) fn mark_read_with_unknown(
    conn: &Connection,
    library_id: i64,
    read_with: &[(Vec<u8>, Vec<Vec<u8>>)],
) -> Result<(), StoreError> {
    let mut present = conn.prepare_cached(PRESENT_AT)?;
    let mut unknown = Vec::new();
    for (photo, from) in read_with {
        for path in from {
            if !present.query_row(params![library_id, path], |r| r.get::<_, bool>(0))? {
                unknown.push(photo.clone());
                break;
            }
        }
    }
    mark_read_again(conn, library_id, &unknown)
}

/// How many of the unseen files and of the files below vanished directories run `run_id`
/// would mark missing (see `MARK_FILE_MISSING`).
pub(super) fn count_unseen(
    conn: &Connection,
    library_id: i64,
    run_id: i64,
    unseen: &Unseen,
) -> Result<i64, StoreError> {
    let mut n = 0i64;
    if unseen.files.is_empty() && unseen.dirs.is_empty() {
        return Ok(n);
    }
    let mut one = conn.prepare_cached(FILE_PRESENT)?;
    for id in &unseen.files {
        n += one.query_row(params![library_id, id, run_id], |r| r.get::<_, i64>(0))?;
    }
    let mut under = conn.prepare_cached(PRESENT_UNDER)?;
    for dir in &unseen.dirs {
        let (lo, hi) = below(dir);
        n += under.query_row(params![library_id, lo, hi, run_id], |r| r.get::<_, i64>(0))?;
    }
    Ok(n)
}

/// Marks the unseen files and everything below the vanished directories missing, except
/// the rows a restore brought back while run `run_id` ran. Answers the asset of each row it
/// marked (`None` for a row without one).
pub(super) fn mark_unseen(
    conn: &Connection,
    library_id: i64,
    run_id: i64,
    unseen: &Unseen,
    now: Millis,
) -> Result<Vec<Option<i64>>, StoreError> {
    let mut asset_ids: Vec<Option<i64>> = Vec::new();
    let mut one = conn.prepare_cached(MARK_FILE_MISSING)?;
    for id in &unseen.files {
        let rows = one.query_map(params![library_id, id, now, run_id], |r| r.get(0))?;
        for asset in rows {
            asset_ids.push(asset?);
        }
    }
    let mut under = conn.prepare_cached(MARK_MISSING_UNDER)?;
    for dir in &unseen.dirs {
        let (lo, hi) = below(dir);
        let rows = under.query_map(params![library_id, lo, hi, now, run_id], |r| r.get(0))?;
        for asset in rows {
            asset_ids.push(asset?);
        }
    }
    Ok(asset_ids)
}

/// The row at `rel_path` in the library, with the asset it shows.
pub(super) fn previous(
    conn: &Connection,
    library_id: i64,
    rel_path: &[u8],
) -> Result<Option<(i64, Option<i64>)>, StoreError> {
    Ok(conn
        .prepare_cached(PREVIOUS)?
        .query_row(params![library_id, rel_path], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?)
}

/// The asset present file `file_id` of the library shows; `None` when the row is not
/// present there.
pub(super) fn present_asset(
    conn: &Connection,
    library_id: i64,
    file_id: i64,
) -> Result<Option<Option<i64>>, StoreError> {
    Ok(conn
        .prepare_cached(PRESENT_ASSET)?
        .query_row(params![file_id, library_id], |r| r.get(0))
        .optional()?)
}

/// How many present files the library has.
pub(super) fn present_count(conn: &Connection, library_id: i64) -> Result<i64, StoreError> {
    Ok(conn
        .prepare_cached(PRESENT)?
        .query_row([library_id], |r| r.get(0))?)
}

/// The asset's paths, present first (as `PATHS` orders them).
pub(super) fn load_paths(conn: &Connection, asset: &mut Asset) -> Result<(), StoreError> {
    asset.paths = conn
        .prepare_cached(PATHS)?
        .query_map([asset.id], |r| {
            on_lite(r, |r| super::rows::path_from_row(r, 0))
        })?
        .collect::<Result<_, _>>()?;
    Ok(())
}

/// A present file a move takes: its library, path and stamp.
pub(super) type Present = (i64, Vec<u8>, Option<FileStamp>);

/// The asset's present files, in library and path order.
pub(super) fn present_files(conn: &Connection, asset_id: i64) -> Result<Vec<Present>, StoreError> {
    Ok(conn
        .prepare_cached(PRESENT_FILES)?
        .query_map([asset_id], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                on_lite(r, |r| super::rows::stamp_at(r, 2))?,
            ))
        })?
        .collect::<Result<_, _>>()?)
}

/// The paths (as text) of the asset's present files.
pub(super) fn present_paths(conn: &Connection, asset_id: i64) -> Result<Vec<String>, StoreError> {
    Ok(conn
        .prepare_cached(PRESENT_PATHS)?
        .query_map([asset_id], |r| r.get(0))?
        .collect::<Result<_, _>>()?)
}

/// Whether the asset shows a present file.
pub(super) fn has_present(conn: &Connection, asset_id: i64) -> Result<bool, StoreError> {
    super::answers(conn, PRESENT_PATHS, [asset_id])
}

/// Whether any file row, present or missing, names the asset.
pub(super) fn has_row(conn: &Connection, asset_id: i64) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached(HAS_ROW)?
        .query_row([asset_id], |r| r.get(0))?)
}

/// The row a move took away (`MOVED_AWAY`: still the asset's and, when `stamp` is known,
/// still the file the move began with) goes missing.
pub(super) fn moved_away(
    conn: &Connection,
    (library_id, path, asset_id): (i64, &[u8], i64),
    stamp: Option<FileStamp>,
    now: Millis,
) -> Result<(), StoreError> {
    let [size, mtime, dev, inode] = super::rows::stamp_cols(stamp);
    conn.prepare_cached(MOVED_AWAY)?.execute(params![
        library_id, path, now, asset_id, size, mtime, dev, inode
    ])?;
    Ok(())
}

/// The row a move put back is present again, while it is still the asset's.
pub(super) fn moved_back(
    conn: &Connection,
    (library_id, path, asset_id): (i64, &[u8], i64),
) -> Result<(), StoreError> {
    conn.prepare_cached(MOVED_BACK)?
        .execute(params![library_id, path, asset_id])?;
    Ok(())
}

/// The row at a library path as the index holds it now: the asset it shows and its stamp.
pub(super) fn row_stamp(
    conn: &Connection,
    library_id: i64,
    path: &[u8],
) -> Result<Option<(Option<i64>, FileStamp)>, StoreError> {
    Ok(conn
        .prepare_cached(STAMP)?
        .query_row(params![library_id, path], |r| {
            let stamp = on_lite(r, |r| super::rows::stamp_at(r, 1))?.unwrap_or_default();
            Ok((r.get(0)?, stamp))
        })
        .optional()?)
}

/// The row of an adopted trash-folder file of asset `asset_id` (see `ADOPTED`).
pub(super) fn insert_adopted(
    conn: &Connection,
    (library_id, path): (i64, &[u8]),
    stamp: &FileStamp,
    asset_id: i64,
    now: Millis,
) -> Result<(), StoreError> {
    let text = String::from_utf8_lossy(path).replace('\\', "/");
    let (size, mtime, dev, inode) = stamp_params(stamp);
    conn.prepare_cached(ADOPTED)?.execute(params![
        library_id, path, text, size, mtime, dev, inode, asset_id, now
    ])?;
    Ok(())
}

impl Store {
    /// The libraries holding the asset's files, present or in the trash folder.
    pub fn asset_libraries(&self, asset_id: i64) -> Result<Vec<i64>, StoreError> {
        self.read_lite(move |conn| {
            Ok(conn
                .prepare_cached(LIBRARIES)?
                .query_map([asset_id], |r| r.get(0))?
                .collect::<Result<_, _>>()?)
        })
    }
    /// The present files of a library under `scope` (library-relative, `/`-separated; `""`
    /// is the whole library), for the scan's diff. Missing files are left out: one that comes
    /// back is new to the diff and its claim restores its asset.
    pub fn known_files(&self, library_id: i64, scope: &str) -> Result<Vec<KnownFile>, StoreError> {
        let scope = scope.trim_matches('/').to_string();
        self.read_lite(move |conn| {
            let (exact, lo, hi) = scope_bounds(&scope);
            let mut stmt = conn.prepare_cached(KNOWN)?;
            let rows = stmt.query_map(params![library_id, scope, exact, lo, hi], known_from_row)?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }

    /// What the store knows directly inside `dir` (library-relative bytes; empty is the
    /// root): its present files and the names of its sub-directories with file rows.
    pub fn known_dir(&self, library_id: i64, dir: &[u8]) -> Result<KnownDir, StoreError> {
        self.read_lite(|conn| list_dir(conn, library_id, dir))
    }
}

#[cfg(test)]
mod plan_tests {
    use super::{INSERT_FILE, PREVIOUS, UPDATE_FILE};
    use crate::clock::FakeClock;
    use crate::store::assets::INSERT;
    use crate::store::{Store, StoreOptions, stacks};
    use rusqlite::params;

    /// A new database with every migration applied (by the writer, whose connection the
    /// tests explain their statements on).
    fn fresh_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = FakeClock::new(1_800_000_000_000);
        let store =
            Store::open(&dir.path().join("m.db"), clock, StoreOptions::default()).expect("open");
        (dir, store)
    }

    /// The addresses of `opcode` in the program of `sql`.
    fn opcodes(conn: &rusqlite::Connection, sql: &str, opcode: &str) -> Vec<i64> {
        let mut stmt = conn.prepare(&format!("EXPLAIN {sql}")).expect("explain");
        // Unbound parameters are NULL: EXPLAIN only compiles the statement.
        let mut rows = stmt.raw_query();
        let mut at = Vec::new();
        while let Some(r) = rows.next().expect("row") {
            if r.get::<_, String>(1).expect("opcode") == opcode {
                at.push(r.get::<_, i64>(0).expect("address"));
            }
        }
        at
    }

    fn ephemeral_tables(conn: &rusqlite::Connection, sql: &str) -> Vec<i64> {
        opcodes(conn, sql, "OpenEphemeral")
    }

    #[test]
    fn the_known_files_tell_a_file_that_is_no_media_by_the_error_the_scan_keeps() {
        let quoted = format!("'{}'", crate::model::NOT_MEDIA);
        for sql in [super::KNOWN, super::DIR_ROWS_FROM, super::DIR_ROWS_BETWEEN] {
            assert!(sql.contains(&quoted), "{sql}");
        }
    }

    /// The statements a first index runs for every file must not build a temporary table per
    /// execution: SQLite does that for a `RETURNING` clause and for a CHECK with an `IN` list
    /// of more than two constants, and it cost a third of the writer's time.
    #[test]
    fn the_per_file_statements_open_no_ephemeral_table_on_the_writer() {
        let (_dir, store) = fresh_store();
        // On the writer's own connection: the one that ran the migrations.
        let found = store
            .write_lite(|conn, _| {
                Ok([
                    ("insert asset", INSERT),
                    ("previous", PREVIOUS),
                    ("insert file", INSERT_FILE),
                    ("update file", UPDATE_FILE),
                    ("stack partners", stacks::PARTNERS),
                    ("stack insert", stacks::INSERT),
                    ("stack unpair", stacks::UNPAIR),
                ]
                .map(|(name, sql)| (name, ephemeral_tables(conn, sql))))
            })
            .expect("explain on the writer");
        for (name, at) in found {
            assert!(at.is_empty(), "{name}: OpenEphemeral at {at:?}");
        }
    }

    /// The completion's look for live assets without a file reads the library's missing
    /// rows through their partial index, never the library's every file.
    #[test]
    fn a_full_completion_finds_live_assets_without_a_file_from_the_missing_rows_alone() {
        let (_dir, store) = fresh_store();
        let plan = store
            .write_lite(|conn, _| {
                let mut stmt = conn.prepare(&format!(
                    "EXPLAIN QUERY PLAN {}",
                    crate::store::ingest::LIVE_OF_MISSING
                ))?;
                let rows = stmt.query_map(params![1, "move"], |r| r.get::<_, String>(3))?;
                Ok(rows.collect::<Result<Vec<_>, _>>()?)
            })
            .expect("plan");
        assert!(
            plan.iter()
                .any(|step| step.contains("INDEX files_missing (library_id=?")),
            "{plan:?}"
        );
    }

    /// A trigger on a table makes every insert into it a multi-row write, which SQLite runs
    /// in a statement journal inside the batch's transaction: each page the insert is the
    /// first to change (the row's leaf and one per index, 16 KiB each) is copied there, and
    /// past 64 KiB into a temp file. For the asset insert of a first index (live_kinds'
    /// insert trigger, migration 0017) that was 9 page writes per asset and 5x its CPU.
    #[test]
    fn the_first_index_inserts_run_no_trigger_on_the_writer() {
        let (_dir, store) = fresh_store();
        let found = store
            .write_lite(|conn, _| {
                Ok([("insert asset", INSERT), ("insert file", INSERT_FILE)]
                    .map(|(name, sql)| (name, opcodes(conn, sql, "Program"))))
            })
            .expect("explain on the writer");
        for (name, at) in found {
            assert!(at.is_empty(), "{name}: a trigger program at {at:?}");
        }
    }
}
