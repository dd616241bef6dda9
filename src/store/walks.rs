//! The walk chains' data (DESIGN.md section 7): the walk record per kind (clamped at start
//! only, raised only by a completion and never lowered; a request raises `seen` alone), the
//! batch selector (assets in id order after a cursor, with the files that show them, each
//! with the place its latest trash put it as the trash journal says, read only), the
//! content hashes a batch stamps (keeping what a newer scheme stamped, a newer binary on the
//! same database, unless it walks a rollback), and the marks on a live chain's row: an asset
//! a restore makes live while a chain is live marks the chain (`made_live`, `revisit`), and
//! the chain's next commit takes it back to that asset (`revisit_of`, `back_to`): "walked to
//! the end" is written only once every live asset was visited. The ONE fenced transaction
//! that commits a batch is `chains`'.

use super::db::on_lite;
use super::rows::{Look, checksum_col, file_stamp, look};
use super::{Store, StoreError, parse_col};
use crate::model::{ContentHash, Millis, WalkFile, WalkKindId, WalkRecord, WalkVisit};
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::HashMap;

const RECORD: &str = "SELECT kind, scheme, seen, completed_at FROM walks WHERE kind = ?1";
const WALKED_SCHEME: &str = "SELECT scheme FROM walks WHERE kind = ?1";
/// At start: create the record, clamp `scheme` down to this binary's, raise `seen` to it.
const START: &str = "
    INSERT INTO walks (kind, scheme, seen, updated_at) VALUES (?1, 0, ?2, ?3)
    ON CONFLICT (kind) DO UPDATE SET scheme = min(scheme, excluded.seen),
                                     seen = max(seen, excluded.seen), updated_at = ?3";
/// During work (a request for a walk): create the record, raise `seen`; `scheme` stays.
const SEEN: &str = "
    INSERT INTO walks (kind, scheme, seen, updated_at) VALUES (?1, 0, ?2, ?3)
    ON CONFLICT (kind) DO UPDATE SET seen = max(seen, excluded.seen), updated_at = ?3";
/// A completion raises `scheme`, never lowers it (a stale chain of an older scheme).
const COMPLETE: &str = "
    INSERT INTO walks (kind, scheme, seen, completed_at, updated_at) VALUES (?1, ?2, ?2, ?3, ?3)
    ON CONFLICT (kind) DO UPDATE SET scheme = max(scheme, excluded.scheme),
                                     seen = max(seen, excluded.scheme),
                                     completed_at = ?3, updated_at = ?3";
/// The next batch: every asset (trashed ones too: they still catch duplicates) after the
/// cursor that lacks this scheme's stamp, or every asset when `?3` (a forced restart). One
/// a newer scheme stamped lacks nothing, except in a rollback (`?5`).
const CONTENT_BATCH: &str = "
    SELECT id, checksum, trashed_at IS NOT NULL, content_hash, content_hash_scheme, orientation
      FROM assets
     WHERE id > ?1 AND (?3 OR content_hash_scheme IS NULL OR content_hash_scheme < ?2
                        OR (?5 AND content_hash_scheme > ?2))
     ORDER BY id LIMIT ?4";
/// Faces: live images only.
const FACES_BATCH: &str = "
    SELECT id, checksum, trashed_at IS NOT NULL, content_hash, content_hash_scheme, orientation
      FROM assets
     WHERE id > ?1 AND trashed_at IS NULL AND kind = 'image'
       AND (?3 OR faces_scheme IS NULL OR faces_scheme < ?2 OR (?5 AND faces_scheme > ?2))
     ORDER BY id LIMIT ?4";
/// Perceptual hashes: live images only, like faces.
const SIMILAR_BATCH: &str = "
    SELECT id, checksum, trashed_at IS NOT NULL, content_hash, content_hash_scheme, orientation
      FROM assets
     WHERE id > ?1 AND trashed_at IS NULL AND kind = 'image'
       AND (?3 OR phash_scheme IS NULL OR phash_scheme < ?2 OR (?5 AND phash_scheme > ?2))
     ORDER BY id LIMIT ?4";
/// Face descriptors: live pictures whose faces were detected, lacking this embedder's stamp
/// (a re-detection clears it: `faces::stamp`).
const EMBED_BATCH: &str = "
    SELECT id, checksum, trashed_at IS NOT NULL, content_hash, content_hash_scheme, orientation
      FROM assets
     WHERE id > ?1 AND trashed_at IS NULL AND faces_scheme IS NOT NULL
       AND (?3 OR embed_scheme IS NULL OR embed_scheme < ?2 OR (?5 AND embed_scheme > ?2))
     ORDER BY id LIMIT ?4";
const CONTENT_LEFT: &str = "
    SELECT count(*) FROM assets
     WHERE id > ?1 AND (?3 OR content_hash_scheme IS NULL OR content_hash_scheme < ?2
                        OR (?4 AND content_hash_scheme > ?2))";
const FACES_LEFT: &str = "
    SELECT count(*) FROM assets
     WHERE id > ?1 AND trashed_at IS NULL AND kind = 'image'
       AND (?3 OR faces_scheme IS NULL OR faces_scheme < ?2 OR (?4 AND faces_scheme > ?2))";
const SIMILAR_LEFT: &str = "
    SELECT count(*) FROM assets
     WHERE id > ?1 AND trashed_at IS NULL AND kind = 'image'
       AND (?3 OR phash_scheme IS NULL OR phash_scheme < ?2 OR (?4 AND phash_scheme > ?2))";
const EMBED_LEFT: &str = "
    SELECT count(*) FROM assets
     WHERE id > ?1 AND trashed_at IS NULL AND faces_scheme IS NOT NULL
       AND (?3 OR embed_scheme IS NULL OR embed_scheme < ?2 OR (?4 AND embed_scheme > ?2))";
/// Files in the libraries the host (`$host`, a parameter) sees, through its roots, with
/// what `walk_file` reads (the columns 0-7) and their asset's id (8), each not present one
/// with the place its asset's latest done trash of it put it (by move id: the newest move
/// wins); a present file needs no journal lookup.
macro_rules! files_with {
    ($host:literal, $where_order:literal) => {
        concat!(
            "SELECT l.root, f.rel_path, f.state = 'present', f.size, f.mtime_ns, f.dev, f.inode,
                    CASE WHEN f.state <> 'present' THEN
                    (SELECT t.to_path FROM trash_intents t
                      WHERE t.asset_id = f.asset_id AND t.action = 'trash' AND t.state = 'done'
                        AND t.library_id = f.library_id AND t.from_path = f.rel_path
                      ORDER BY t.move_id DESC, t.id DESC LIMIT 1) END,
                    f.asset_id
               FROM files f
               JOIN library_roots l ON l.library_id = f.library_id AND l.host = ",
            $host,
            " ",
            $where_order
        )
    };
}
/// An asset's files this host (?2) sees, present first.
const FILES: &str = files_with!(
    "?2",
    "WHERE f.asset_id = ?1 ORDER BY f.state = 'missing', f.id"
);
/// `FILES` of every asset with ?1 < id <= ?2, by asset.
const FILES_IN: &str = files_with!(
    "?3",
    "WHERE f.asset_id > ?1 AND f.asset_id <= ?2
     ORDER BY f.asset_id, f.state = 'missing', f.id"
);
/// An asset made live (?2) while the chain ?1 (its unique key) is live, perhaps behind its
/// cursor: the live row keeps the lowest such id in its payload's `revisit` until its commit
/// takes the chain back there. A queued row has not read its payload yet and a running one
/// has: both are marked alike, and only the commit reads the mark.
const REVISIT: &str = "
    UPDATE jobs SET payload = json_set(payload, '$.revisit',
                                       min(coalesce(json_extract(payload, '$.revisit'), ?2), ?2))
     WHERE unique_key = ?1 AND state IN ('queued', 'running') AND json_valid(payload)";
const REVISIT_OF: &str = "
    SELECT CASE WHEN json_valid(payload) THEN json_extract(payload, '$.revisit') END
      FROM jobs WHERE id = ?1";
/// The next row's payload ?1 with its cursor moved back to just before asset ?2, its count
/// of what is left dropped (the next batch counts again) and no revisit of its own.
const BACK_TO: &str = "
    SELECT json_remove(json_set(?1, '$.after', min(coalesce(json_extract(?1, '$.after'), 0),
                                                   ?2 - 1)),
                       '$.left', '$.revisit')";
/// Keeps what a newer scheme stamped (a newer binary on the same database), except in a
/// rollback (`?4`). A stamp that is already there writes nothing: a walk started again
/// over hashes it made before rewrote every row and index entry (issue 29).
const STAMP_CONTENT: &str = "
    UPDATE assets SET content_hash = ?2, content_hash_scheme = ?3
     WHERE id = ?1 AND (?4 OR content_hash_scheme IS NULL OR content_hash_scheme <= ?3)
       AND (content_hash IS NOT ?2 OR content_hash_scheme IS NOT ?3)";

fn record(conn: &Connection, kind: WalkKindId) -> Result<Option<WalkRecord>, StoreError> {
    Ok(conn
        .prepare_cached(RECORD)?
        .query_row([kind.as_str()], |r| {
            Ok(WalkRecord {
                kind: parse_col(r, 0, WalkKindId::parse)?,
                scheme: r.get(1)?,
                seen: r.get(2)?,
                completed_at: r.get(3)?,
            })
        })
        .optional()?)
}

/// A batch row's asset: id, checksum, whether it is in the trash.
pub(super) type Head = (i64, [u8; 32], bool);

pub(super) fn files_of(
    conn: &Connection,
    host: &str,
    asset_id: i64,
) -> Result<Vec<WalkFile>, StoreError> {
    let mut stmt = conn.prepare_cached(FILES)?;
    let rows = stmt.query_map(params![asset_id, host], walk_file)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The files of every asset with `after < id <= last`, by asset, each asset's in
/// `files_of`'s order: one range of `files_asset` for a batch instead of a lookup per asset.
pub(super) fn files_in(
    conn: &Connection,
    host: &str,
    after: i64,
    last: i64,
) -> Result<HashMap<i64, Vec<WalkFile>>, StoreError> {
    let mut stmt = conn.prepare_cached(FILES_IN)?;
    let mut rows = stmt.query(params![after, last, host])?;
    let mut files: HashMap<i64, Vec<WalkFile>> = HashMap::new();
    while let Some(r) = rows.next()? {
        files.entry(r.get(8)?).or_default().push(walk_file(r)?);
    }
    Ok(files)
}

fn walk_file(r: &rusqlite::Row<'_>) -> rusqlite::Result<WalkFile> {
    Ok(WalkFile {
        root: r.get(0)?,
        rel_path: r.get(1)?,
        present: r.get(2)?,
        stamp: on_lite(r, |r| file_stamp(r, 3))?,
        trashed_to: r.get(7)?,
    })
}

/// Asset `id` was just made live again (a restore, by the user or by a scan's claim): the
/// live chain of each walk that skips trashed assets, whose cursor may be past it, is marked
/// to go back for it before it says it walked to the end (`REVISIT`). Without a live chain
/// there is nothing to mark: the restore's or the scan's walk request starts one from the
/// beginning.
pub(super) fn made_live(conn: &Connection, id: i64) -> Result<(), StoreError> {
    let mut mark = conn.prepare_cached(REVISIT)?;
    for kind in [
        WalkKindId::Faces,
        WalkKindId::Similar,
        WalkKindId::Embeddings,
    ] {
        mark.execute(params![kind.job_kind(), id])?;
    }
    Ok(())
}

pub(super) fn raise_record(
    conn: &Connection,
    kind: WalkKindId,
    scheme: i64,
    now: Millis,
) -> Result<(), StoreError> {
    conn.prepare_cached(COMPLETE)?
        .execute(params![kind.as_str(), scheme, now])?;
    Ok(())
}

/// Raises the record's `seen` to `scheme` (creating the record); its `scheme` stays.
pub(super) fn raise_seen(
    conn: &Connection,
    kind: WalkKindId,
    scheme: i64,
    now: Millis,
) -> Result<(), StoreError> {
    conn.prepare_cached(SEEN)?
        .execute(params![kind.as_str(), scheme, now])?;
    Ok(())
}

/// Marks the live chain of job kind `job_kind` to go back for asset `id` (`REVISIT`).
pub(super) fn revisit(conn: &Connection, job_kind: &str, id: i64) -> Result<(), StoreError> {
    conn.prepare_cached(REVISIT)?
        .execute(params![job_kind, id])?;
    Ok(())
}

/// The scheme the record of `kind` says was walked to the end; 0 without a record.
pub(super) fn walked_scheme(conn: &Connection, kind: WalkKindId) -> Result<i64, StoreError> {
    Ok(conn
        .prepare_cached(WALKED_SCHEME)?
        .query_row([kind.as_str()], |r| r.get(0))
        .optional()?
        .unwrap_or(0))
}

/// The asset chain row `row_id` was marked to go back for, if any (`REVISIT_OF`).
pub(super) fn revisit_of(conn: &Connection, row_id: i64) -> Result<Option<i64>, StoreError> {
    Ok(conn
        .prepare_cached(REVISIT_OF)?
        .query_row([row_id], |r| r.get(0))
        .optional()?
        .flatten())
}

/// `payload` with its cursor moved back to just before `asset` (`BACK_TO`).
pub(super) fn back_to(conn: &Connection, payload: &str, asset: i64) -> Result<String, StoreError> {
    Ok(conn
        .prepare_cached(BACK_TO)?
        .query_row(params![payload, asset], |r| r.get(0))?)
}

/// Stamps a content-hash walk batch's hashes (`STAMP_CONTENT`).
pub(super) fn stamp_content_hashes(
    conn: &Connection,
    hashes: &[(i64, ContentHash)],
    rollback: bool,
) -> Result<(), StoreError> {
    let mut stmt = conn.prepare_cached(STAMP_CONTENT)?;
    for (id, c) in hashes {
        stmt.execute(params![id, &c.hash[..], c.scheme, rollback])?;
    }
    Ok(())
}

/// The ids, checksums, trashed flags and looks (`rows::Look`) of up to `limit` assets after
/// `after` in id order that a walk of `kind` must visit.
pub(super) fn batch_heads(
    conn: &Connection,
    kind: WalkKindId,
    visit: WalkVisit,
    after: i64,
    limit: usize,
) -> Result<Vec<(Head, Look)>, StoreError> {
    let WalkVisit {
        scheme,
        force,
        rollback,
    } = visit;
    let sql = match kind {
        WalkKindId::ContentHash => CONTENT_BATCH,
        WalkKindId::Faces => FACES_BATCH,
        WalkKindId::Similar => SIMILAR_BATCH,
        WalkKindId::Embeddings => EMBED_BATCH,
    };
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut stmt = conn.prepare_cached(sql)?;
    let heads = stmt.query_map(params![after, scheme, force, limit, rollback], |r| {
        Ok((
            (r.get(0)?, on_lite(r, |r| checksum_col(r, 1))?, r.get(2)?),
            on_lite(r, |r| look(r, 3))?,
        ))
    })?;
    Ok(heads.collect::<Result<_, _>>()?)
}

impl Store {
    /// The walk record of `kind`, if any walk or start has written one.
    pub fn walk_record(&self, kind: WalkKindId) -> Result<Option<WalkRecord>, StoreError> {
        self.read_lite(|conn| record(conn, kind))
    }

    /// At start: clamps the record's `scheme` down to `current` (this binary's) and raises
    /// `seen` to it. A `seen` still above `current` afterwards is a rollback.
    pub fn start_walk_record(
        &self,
        kind: WalkKindId,
        current: i64,
    ) -> Result<WalkRecord, StoreError> {
        self.write_lite(move |conn, now| {
            conn.prepare_cached(START)?
                .execute(params![kind.as_str(), current, now])?;
            record(conn, kind)?.ok_or_else(|| {
                StoreError::NotFound(format!("walk record {kind} vanished while written"))
            })
        })
    }

    /// During work: raises the record's `seen` to `current` (creating the record), and never
    /// clamps its `scheme`: that is the start's alone.
    pub fn raise_walk_seen(&self, kind: WalkKindId, current: i64) -> Result<(), StoreError> {
        self.write_lite(move |conn, now| raise_seen(conn, kind, current, now))
    }

    /// How many assets a walk of `kind` still has to visit after `after`.
    pub fn walk_left(
        &self,
        kind: WalkKindId,
        visit: WalkVisit,
        after: i64,
    ) -> Result<i64, StoreError> {
        let WalkVisit {
            scheme,
            force,
            rollback,
        } = visit;
        let sql = match kind {
            WalkKindId::ContentHash => CONTENT_LEFT,
            WalkKindId::Faces => FACES_LEFT,
            WalkKindId::Similar => SIMILAR_LEFT,
            WalkKindId::Embeddings => EMBED_LEFT,
        };
        self.read_lite(|conn| {
            Ok(conn
                .prepare_cached(sql)?
                .query_row(params![after, scheme, force, rollback], |r| r.get(0))?)
        })
    }
}
