//! The `files` table: the known files for the scan's diff (by scope, or one directory at a
//! time), a file row's write with the link the scan decided, the marks of a photo to be read
//! again (`files.read_again`, which a read clears) whose sidecar changed or has no row yet,
//! the row a move settled after the scan read it, the unseen files a full scan's end marks
//! missing (except rows a restore brought back during the run) and their count, and an
//! asset's paths. What an ingest batch or a full scan's end does with them is `ingest`'s.

use super::db::{Db, Pair, Row};
use super::rows::file_stamp;
use super::{Store, StoreError, parse_at};
use crate::model::{Asset, FileReason, FileStamp, IngestItem, KnownDir, KnownFile, Millis, Unseen};
use std::collections::HashSet;

/// The columns `known_from_row` reads: the stamp, the link, whether the last read found
/// a picture or video (a file that is none keeps `model::NOT_MEDIA` as its error, whichever
/// version wrote it), and why it must be read again though unchanged (migration 0021).
macro_rules! known_cols {
    () => {
        "id, rel_path, size, mtime_ns, dev, inode, asset_id, last_reason = 'error',
         error IS DISTINCT FROM 'not a photo or video', read_again"
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
       AND (CAST(?5 AS BIGINT) IS NULL OR (size = ?5 AND mtime_ns = ?6 AND dev = ?7 AND inode = ?8))";
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
macro_rules! insert_file {
    () => {
        "
    INSERT INTO files (library_id, rel_path, rel_path_text, size, mtime_ns, dev, inode,
                       asset_id, state, last_reason, error, first_seen_run, last_seen_run)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'present', ?9, ?10, ?11, ?11)"
    };
}
#[cfg(test)]
const INSERT_FILE: &str = insert_file!();
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
                                 AND revived_in_run IS DISTINCT FROM ?3";
const PRESENT_UNDER: &str = "
    SELECT count(*) FROM files WHERE library_id = ?1 AND rel_path >= ?2 AND rel_path < ?3
                                 AND state = 'present' AND revived_in_run IS DISTINCT FROM ?4";
/// A row that came back from `missing` while run ?4 was running (`files_revived`) is not
/// marked by it: the walk may have passed its folder before the restore put the file back.
const MARK_FILE_MISSING: &str = "
    UPDATE files SET state = 'missing', missing_since = ?3
     WHERE id = ?2 AND library_id = ?1 AND state = 'present' AND revived_in_run IS DISTINCT FROM ?4
     RETURNING asset_id";
const MARK_MISSING_UNDER: &str = "
    UPDATE files SET state = 'missing', missing_since = ?4
     WHERE library_id = ?1 AND rel_path >= ?2 AND rel_path < ?3 AND state = 'present'
       AND revived_in_run IS DISTINCT FROM ?5
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

fn known_from_row(r: &Row<'_>) -> Result<KnownFile, StoreError> {
    Ok(KnownFile {
        id: r.get(0)?,
        rel_path: r.get(1)?,
        stamp: file_stamp(r, 2)?,
        asset_id: r.get(6)?,
        has_error: r.get(7)?,
        media: r.get(8)?,
        read_again: match r.get::<Option<String>>(9)? {
            Some(_) => Some(parse_at(r, 9, FileReason::parse)?),
            None => None,
        },
    })
}

/// Lists one directory (see `DIR_ROWS_FROM`): its present files and the names of its
/// sub-directories with file rows, each sub-directory skipped after its first row.
fn list_dir(db: &Db<'_>, library_id: i64, dir: &[u8]) -> Result<KnownDir, StoreError> {
    let (prefix, hi) = if dir.is_empty() {
        (Vec::new(), None)
    } else {
        let (lo, hi) = below(dir);
        (lo, Some(hi))
    };
    let mut listing = KnownDir::default();
    let mut from = prefix.clone();
    loop {
        let mut jump = None;
        let mut visit = |row: &Row<'_>| {
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
                return Ok(false);
            }
            if row.get::<bool>(10)? {
                listing.files.push(known_from_row(row)?);
            }
            Ok(true)
        };
        match &hi {
            None => db.each_while(DIR_ROWS_FROM, args!(library_id, &from[..]), &mut visit)?,
            Some(hi) => db.each_while(
                DIR_ROWS_BETWEEN,
                args!(library_id, &from[..], &hi[..]),
                &mut visit,
            )?,
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

/// A new file row, answering its id (`Db::insert_id`): SQLite keeps `INSERT_FILE` as it is
/// (a `RETURNING` clause builds a temporary table per execution on the first index's hot
/// path) and reads its connection's last rowid; PostgreSQL answers the id from the INSERT.
const INSERTED_FILE: Pair = Pair {
    sqlite: insert_file!(),
    postgres: concat!(insert_file!(), " RETURNING id"),
};

/// Writes the file row of `item` linked to `asset`: an update of row `existing`, or an
/// insert. Answers its id.
pub(super) fn write_row(
    db: &Db<'_>,
    existing: Option<i64>,
    library_id: i64,
    item: &IngestItem,
    asset: Option<i64>,
    run_id: i64,
) -> Result<i64, StoreError> {
    let (size, mtime, dev, inode) = stamp_params(&item.stamp);
    let (text, reason, error) = (
        item.rel_path_text.as_str(),
        item.reason.as_str(),
        &item.error,
    );
    let Some(id) = existing else {
        let row = args!(
            library_id,
            &item.rel_path[..],
            text,
            size,
            mtime,
            dev,
            inode,
            asset,
            reason,
            error.as_deref(),
            run_id
        );
        return db.insert_id(&INSERTED_FILE, row);
    };
    let read = item.checksum.is_some();
    let row = args!(
        id,
        text,
        size,
        mtime,
        dev,
        inode,
        asset,
        reason,
        error.as_deref(),
        run_id,
        read
    );
    db.execute(UPDATE_FILE, row)?;
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
    db: &Db<'_>,
    library_id: i64,
    item: &IngestItem,
    known_present: &HashSet<i64>,
) -> Result<Option<i64>, StoreError> {
    if known_present.is_empty() {
        return Ok(None);
    }
    let (size, mtime, dev, inode) = stamp_params(&item.stamp);
    let read = args!(library_id, &item.rel_path[..], size, mtime, dev, inode);
    let missing: Option<i64> = db.optional(MISSING_ROW, read, |r| r.get(0))?;
    Ok(missing.filter(|id| known_present.contains(id)))
}

/// Marks the present photos at `paths` to be read again for their sidecar.
pub(super) fn mark_read_again(
    db: &Db<'_>,
    library_id: i64,
    paths: &[Vec<u8>],
) -> Result<(), StoreError> {
    for path in paths {
        db.execute(MARK_READ_AGAIN, args!(library_id, &path[..]))?;
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
    db: &Db<'_>,
    library_id: i64,
    read_with: &[(Vec<u8>, Vec<Vec<u8>>)],
) -> Result<(), StoreError> {
    let mut unknown = Vec::new();
    for (photo, from) in read_with {
        for path in from {
            if !db.one(PRESENT_AT, args!(library_id, &path[..]), |r| {
                r.get::<bool>(0)
            })? {
                unknown.push(photo.clone());
                break;
            }
        }
    }
    mark_read_again(db, library_id, &unknown)
}

/// How many of the unseen files and of the files below vanished directories run `run_id`
/// would mark missing (see `MARK_FILE_MISSING`).
pub(super) fn count_unseen(
    db: &Db<'_>,
    library_id: i64,
    run_id: i64,
    unseen: &Unseen,
) -> Result<i64, StoreError> {
    let mut n = 0i64;
    for id in &unseen.files {
        n += db.one(FILE_PRESENT, args!(library_id, *id, run_id), |r| {
            r.get::<i64>(0)
        })?;
    }
    for dir in &unseen.dirs {
        let (lo, hi) = below(dir);
        let range = args!(library_id, lo, hi, run_id);
        n += db.one(PRESENT_UNDER, range, |r| r.get::<i64>(0))?;
    }
    Ok(n)
}

/// Marks the unseen files and everything below the vanished directories missing, except
/// the rows a restore brought back while run `run_id` ran. Answers the asset of each row it
/// marked (`None` for a row without one).
pub(super) fn mark_unseen(
    db: &Db<'_>,
    library_id: i64,
    run_id: i64,
    unseen: &Unseen,
    now: Millis,
) -> Result<Vec<Option<i64>>, StoreError> {
    let mut asset_ids: Vec<Option<i64>> = Vec::new();
    for id in &unseen.files {
        let one = args!(library_id, *id, now, run_id);
        asset_ids.extend(db.all(MARK_FILE_MISSING, one, |r| r.get::<Option<i64>>(0))?);
    }
    for dir in &unseen.dirs {
        let (lo, hi) = below(dir);
        let under = args!(library_id, lo, hi, now, run_id);
        asset_ids.extend(db.all(MARK_MISSING_UNDER, under, |r| r.get::<Option<i64>>(0))?);
    }
    Ok(asset_ids)
}

/// The row at `rel_path` in the library, with the asset it shows.
pub(super) fn previous(
    db: &Db<'_>,
    library_id: i64,
    rel_path: &[u8],
) -> Result<Option<(i64, Option<i64>)>, StoreError> {
    db.optional(PREVIOUS, args!(library_id, rel_path), |r| {
        Ok((r.get(0)?, r.get(1)?))
    })
}

/// The asset present file `file_id` of the library shows; `None` when the row is not
/// present there.
pub(super) fn present_asset(
    db: &Db<'_>,
    library_id: i64,
    file_id: i64,
) -> Result<Option<Option<i64>>, StoreError> {
    db.optional(PRESENT_ASSET, args!(file_id, library_id), |r| r.get(0))
}

/// How many present files the library has.
pub(super) fn present_count(db: &Db<'_>, library_id: i64) -> Result<i64, StoreError> {
    db.one(PRESENT, args!(library_id), |r| r.get(0))
}

/// The asset's paths, present first (as `PATHS` orders them).
pub(super) fn load_paths(db: &Db<'_>, asset: &mut Asset) -> Result<(), StoreError> {
    asset.paths = db.all(PATHS, args!(asset.id), |r| super::rows::path_from_row(r, 0))?;
    Ok(())
}

/// A present file a move takes: its library, path and stamp.
pub(super) type Present = (i64, Vec<u8>, Option<FileStamp>);

/// The asset's present files, in library and path order.
pub(super) fn present_files(db: &Db<'_>, asset_id: i64) -> Result<Vec<Present>, StoreError> {
    db.all(PRESENT_FILES, args!(asset_id), |r| {
        Ok((r.get(0)?, r.get(1)?, super::rows::stamp_at(r, 2)?))
    })
}

/// The paths (as text) of the asset's present files.
pub(super) fn present_paths(db: &Db<'_>, asset_id: i64) -> Result<Vec<String>, StoreError> {
    db.all(PRESENT_PATHS, args!(asset_id), |r| r.get(0))
}

/// Whether the asset shows a present file.
pub(super) fn has_present(db: &Db<'_>, asset_id: i64) -> Result<bool, StoreError> {
    Ok(db
        .optional(PRESENT_PATHS, args!(asset_id), |_| Ok(()))?
        .is_some())
}

/// Whether any file row, present or missing, names the asset.
pub(super) fn has_row(db: &Db<'_>, asset_id: i64) -> Result<bool, StoreError> {
    db.one(HAS_ROW, args!(asset_id), |r| r.get(0))
}

/// The row a move took away (`MOVED_AWAY`: still the asset's and, when `stamp` is known,
/// still the file the move began with) goes missing.
pub(super) fn moved_away(
    db: &Db<'_>,
    (library_id, path, asset_id): (i64, &[u8], i64),
    stamp: Option<FileStamp>,
    now: Millis,
) -> Result<(), StoreError> {
    let [size, mtime, dev, inode] = super::rows::stamp_cols(stamp);
    let row = args!(library_id, path, now, asset_id, size, mtime, dev, inode);
    db.execute(MOVED_AWAY, row)?;
    Ok(())
}

/// The row a move put back is present again, while it is still the asset's.
pub(super) fn moved_back(
    db: &Db<'_>,
    (library_id, path, asset_id): (i64, &[u8], i64),
) -> Result<(), StoreError> {
    db.execute(MOVED_BACK, args!(library_id, path, asset_id))?;
    Ok(())
}

/// The row at a library path as the index holds it now: the asset it shows and its stamp.
pub(super) fn row_stamp(
    db: &Db<'_>,
    library_id: i64,
    path: &[u8],
) -> Result<Option<(Option<i64>, FileStamp)>, StoreError> {
    db.optional(STAMP, args!(library_id, path), |r| {
        let stamp = super::rows::stamp_at(r, 1)?.unwrap_or_default();
        Ok((r.get(0)?, stamp))
    })
}

/// The row of an adopted trash-folder file of asset `asset_id` (see `ADOPTED`).
pub(super) fn insert_adopted(
    db: &Db<'_>,
    (library_id, path): (i64, &[u8]),
    stamp: &FileStamp,
    asset_id: i64,
    now: Millis,
) -> Result<(), StoreError> {
    let text = String::from_utf8_lossy(path).replace('\\', "/");
    let (size, mtime, dev, inode) = stamp_params(stamp);
    let row = args!(
        library_id, path, text, size, mtime, dev, inode, asset_id, now
    );
    db.execute(ADOPTED, row)?;
    Ok(())
}

impl Store {
    /// The libraries holding the asset's files, present or in the trash folder.
    pub fn asset_libraries(&self, asset_id: i64) -> Result<Vec<i64>, StoreError> {
        self.read(move |db| libraries_of(db, asset_id))
    }
    /// The present files of a library under `scope` (library-relative, `/`-separated; `""`
    /// is the whole library), for the scan's diff. Missing files are left out: one that comes
    /// back is new to the diff and its claim restores its asset.
    pub fn known_files(&self, library_id: i64, scope: &str) -> Result<Vec<KnownFile>, StoreError> {
        let scope = scope.trim_matches('/').to_string();
        self.read(move |db| known_files(db, library_id, &scope))
    }

    /// What the store knows directly inside `dir` (library-relative bytes; empty is the
    /// root): its present files and the names of its sub-directories with file rows.
    pub fn known_dir(&self, library_id: i64, dir: &[u8]) -> Result<KnownDir, StoreError> {
        self.read(|db| list_dir(db, library_id, dir))
    }
}

/// See `Store::asset_libraries`.
fn libraries_of(db: &Db<'_>, asset_id: i64) -> Result<Vec<i64>, StoreError> {
    db.all(LIBRARIES, args!(asset_id), |r| r.get(0))
}

/// See `Store::known_files` (`scope` trimmed of its slashes).
fn known_files(db: &Db<'_>, library_id: i64, scope: &str) -> Result<Vec<KnownFile>, StoreError> {
    let (exact, lo, hi) = scope_bounds(scope);
    db.all(
        KNOWN,
        args!(library_id, scope, exact, lo, hi),
        known_from_row,
    )
}

#[cfg(test)]
mod both {
    use super::*;
    use crate::model::{FileState, NOT_MEDIA};
    use crate::store::asset_fixtures::{asset, library, model};
    use crate::store::db::tests::on_both_schemas;

    fn stamp(n: u64) -> FileStamp {
        FileStamp {
            size: n,
            mtime_ns: n as i64 * 10,
            dev: 1,
            inode: n,
        }
    }

    fn item(path: &str, n: u64, read: bool, error: Option<&str>) -> IngestItem {
        IngestItem {
            rel_path: path.as_bytes().to_vec(),
            rel_path_text: path.to_string(),
            stamp: stamp(n),
            reason: FileReason::New,
            checksum: read.then_some([n as u8; 32]),
            content_hash: None,
            facts: None,
            error: error.map(str::to_string),
            namesake: true,
        }
    }

    /// Library 1 with asset 1 at `a/b.jpg`, asset 2 at `a/c/d.jpg` and `top.txt`, no
    /// media; answers the three rows' ids.
    fn three_files(db: &Db<'_>) -> Result<[i64; 3], StoreError> {
        library(db, 1)?;
        asset(db, 1, "image/jpeg", None)?;
        asset(db, 2, "image/jpeg", None)?;
        let b = write_row(db, None, 1, &item("a/b.jpg", 1, true, None), Some(1), 7)?;
        let d = write_row(db, None, 1, &item("a/c/d.jpg", 2, true, None), Some(2), 7)?;
        let top = write_row(
            db,
            None,
            1,
            &item("top.txt", 3, true, Some(NOT_MEDIA)),
            None,
            7,
        )?;
        Ok([b, d, top])
    }

    fn paths(files: &[KnownFile]) -> Vec<&[u8]> {
        files.iter().map(|f| &f.rel_path[..]).collect()
    }

    fn a_row_is_written_found_and_listed(db: &Db<'_>) -> Result<(), StoreError> {
        let [b, d, top] = three_files(db)?;
        assert_eq!(previous(db, 1, b"a/b.jpg")?, Some((b, Some(1))));
        assert_eq!(previous(db, 1, b"a/x.jpg")?, None);
        let all = known_files(db, 1, "")?;
        assert_eq!(all.len(), 3);
        let no_media = all.iter().find(|f| f.id == top).expect("top");
        assert!(!no_media.media && !no_media.has_error && no_media.asset_id.is_none());
        let b_row = all.iter().find(|f| f.id == b).expect("b");
        assert!(b_row.media && b_row.stamp == stamp(1) && b_row.asset_id == Some(1));
        let a_files = known_files(db, 1, "a")?;
        let mut under_a = paths(&a_files);
        under_a.sort();
        assert_eq!(under_a, [&b"a/b.jpg"[..], b"a/c/d.jpg"]);
        assert_eq!(paths(&known_files(db, 1, "a/c/d.jpg")?), [b"a/c/d.jpg"]);
        let root = list_dir(db, 1, b"")?;
        assert_eq!(
            (paths(&root.files), root.subdirs),
            (vec![&b"top.txt"[..]], vec![b"a".to_vec()])
        );
        let a = list_dir(db, 1, b"a")?;
        assert_eq!(
            (paths(&a.files), a.subdirs),
            (vec![&b"a/b.jpg"[..]], vec![b"c".to_vec()])
        );
        assert_eq!(paths(&list_dir(db, 1, b"a/c")?.files), [b"a/c/d.jpg"]);
        // An update keeps the id and moves the link; a read clears what the file lent.
        let again = item("a/c/d.jpg", 4, true, None);
        assert_eq!(write_row(db, Some(d), 1, &again, Some(1), 8)?, d);
        assert_eq!(present_asset(db, 1, d)?, Some(Some(1)));
        assert_eq!(present_asset(db, 2, d)?, None);
        assert_eq!(present_count(db, 1)?, 3);
        Ok(())
    }

    fn a_photo_is_marked_to_be_read_again(db: &Db<'_>) -> Result<(), StoreError> {
        let [b, _, top] = three_files(db)?;
        mark_read_again(db, 1, &[b"a/b.jpg".to_vec()])?;
        // top.txt's facts come from a JSON without a row yet; a/b.jpg's from a known one.
        let with = [
            (b"top.txt".to_vec(), vec![b"top.txt.json".to_vec()]),
            (b"a/c/d.jpg".to_vec(), vec![b"a/b.jpg".to_vec()]),
        ];
        mark_read_with_unknown(db, 1, &with)?;
        let again: Vec<_> = known_files(db, 1, "")?
            .into_iter()
            .filter(|f| f.read_again == Some(FileReason::Sidecar))
            .map(|f| f.id)
            .collect();
        assert_eq!(again.len(), 2);
        assert!(again.contains(&b) && again.contains(&top));
        Ok(())
    }

    fn unseen_rows_go_missing_but_a_revived_one_stays(db: &Db<'_>) -> Result<(), StoreError> {
        let [b, d, top] = three_files(db)?;
        let unseen = Unseen {
            files: vec![top],
            dirs: vec![b"a".to_vec()],
        };
        assert_eq!(count_unseen(db, 1, 9, &unseen)?, 3);
        db.execute(
            "UPDATE files SET revived_in_run = 9 WHERE id = ?1",
            args!(b),
        )?;
        assert_eq!(count_unseen(db, 1, 9, &unseen)?, 2);
        assert_eq!(count_unseen(db, 1, 9, &Unseen::default())?, 0);
        let mut marked = mark_unseen(db, 1, 9, &unseen, 500)?;
        marked.sort();
        assert_eq!(marked, [None, Some(2)]);
        assert_eq!(present_count(db, 1)?, 1);
        // The scan listed d present and read its stamp; it is missing now with that stamp.
        let known: HashSet<i64> = [d].into();
        let read = item("a/c/d.jpg", 2, true, None);
        assert_eq!(moved_since_read(db, 1, &read, &known)?, Some(d));
        let other = item("a/c/d.jpg", 5, true, None);
        assert_eq!(moved_since_read(db, 1, &other, &known)?, None);
        assert_eq!(moved_since_read(db, 1, &read, &HashSet::new())?, None);
        Ok(())
    }

    fn a_move_takes_a_row_away_and_back(db: &Db<'_>) -> Result<(), StoreError> {
        let [_, d, _] = three_files(db)?;
        assert!(has_row(db, 2)? && has_present(db, 2)?);
        assert_eq!(present_paths(db, 2)?, ["a/c/d.jpg"]);
        assert_eq!(
            present_files(db, 2)?,
            [(1, b"a/c/d.jpg".to_vec(), Some(stamp(2)))]
        );
        assert_eq!(libraries_of(db, 2)?, [1]);
        let row = (1, &b"a/c/d.jpg"[..], 2);
        // A stamp other than the move's: the file was read again since; it stays.
        moved_away(db, row, Some(stamp(9)), 600)?;
        assert!(has_present(db, 2)?);
        moved_away(db, (1, &b"a/c/d.jpg"[..], 1), None, 600)?;
        assert!(
            has_present(db, 2)?,
            "another asset's move leaves the row alone"
        );
        moved_away(db, row, Some(stamp(2)), 600)?;
        assert!(!has_present(db, 2)? && has_row(db, 2)?);
        assert!(present_files(db, 2)?.is_empty());
        let mut a = model(2);
        load_paths(db, &mut a)?;
        assert_eq!(a.paths.len(), 1);
        assert_eq!(
            (a.paths[0].file_id, a.paths[0].state),
            (d, FileState::Missing)
        );
        moved_back(db, row)?;
        assert_eq!(present_paths(db, 2)?, ["a/c/d.jpg"]);
        assert_eq!(row_stamp(db, 1, b"a/c/d.jpg")?, Some((Some(2), stamp(2))));
        assert_eq!(row_stamp(db, 1, b"nowhere")?, None);
        asset(db, 3, "image/jpeg", None)?;
        assert!(!has_row(db, 3)?);
        insert_adopted(db, (1, b"t\\x.jpg"), &stamp(6), 3, 700)?;
        assert!(has_row(db, 3)? && !has_present(db, 3)?);
        let mut adopted = model(3);
        load_paths(db, &mut adopted)?;
        assert_eq!(adopted.paths[0].rel_path_text, "t/x.jpg");
        assert_eq!(row_stamp(db, 1, b"t\\x.jpg")?, Some((Some(3), stamp(6))));
        Ok(())
    }

    on_both_schemas!(
        a_row_is_written_found_and_listed,
        a_photo_is_marked_to_be_read_again,
        unseen_rows_go_missing_but_a_revived_one_stays,
        a_move_takes_a_row_away_and_back,
    );
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
