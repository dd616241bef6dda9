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

use super::db::{Db, Pair, Row};
use super::rows::{Look, checksum_col, file_stamp, look};
use super::{Store, StoreError, parse_at};
use crate::model::{ContentHash, Millis, WalkFile, WalkKindId, WalkRecord, WalkVisit};
use std::collections::HashMap;

const RECORD: &str = "SELECT kind, scheme, seen, completed_at FROM walks WHERE kind = ?1";
const WALKED_SCHEME: &str = "SELECT scheme FROM walks WHERE kind = ?1";
// The upserts' scalar min and max are CASEs, which both engines read alike (PostgreSQL
// spells them least and greatest), with the table's columns qualified (PostgreSQL calls a
// bare one ambiguous beside `excluded`).
/// At start: create the record, clamp `scheme` down to this binary's, raise `seen` to it.
const START: &str = "
    INSERT INTO walks (kind, scheme, seen, updated_at) VALUES (?1, 0, ?2, ?3)
    ON CONFLICT (kind) DO UPDATE
       SET scheme = CASE WHEN walks.scheme < excluded.seen THEN walks.scheme
                         ELSE excluded.seen END,
           seen = CASE WHEN walks.seen > excluded.seen THEN walks.seen ELSE excluded.seen END,
           updated_at = ?3";
/// During work (a request for a walk): create the record, raise `seen`; `scheme` stays.
const SEEN: &str = "
    INSERT INTO walks (kind, scheme, seen, updated_at) VALUES (?1, 0, ?2, ?3)
    ON CONFLICT (kind) DO UPDATE
       SET seen = CASE WHEN walks.seen > excluded.seen THEN walks.seen ELSE excluded.seen END,
           updated_at = ?3";
/// A completion raises `scheme`, never lowers it (a stale chain of an older scheme).
const COMPLETE: &str = "
    INSERT INTO walks (kind, scheme, seen, completed_at, updated_at) VALUES (?1, ?2, ?2, ?3, ?3)
    ON CONFLICT (kind) DO UPDATE
       SET scheme = CASE WHEN walks.scheme > excluded.scheme THEN walks.scheme
                         ELSE excluded.scheme END,
           seen = CASE WHEN walks.seen > excluded.scheme THEN walks.seen
                       ELSE excluded.scheme END,
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
/// has: both are marked alike, and only the commit reads the mark. The payload's JSON is
/// each engine's (pairs here and below); PostgreSQL 15 has no `json_valid`, so there a
/// payload that is not a JSON object is left alone by its first character (the store writes
/// every payload as an object).
const REVISIT: Pair = Pair {
    sqlite: "
    UPDATE jobs SET payload = json_set(payload, '$.revisit',
                                       min(coalesce(json_extract(payload, '$.revisit'), ?2), ?2))
     WHERE unique_key = ?1 AND state IN ('queued', 'running') AND json_valid(payload)",
    postgres: "
    UPDATE jobs SET payload = CAST(jsonb_set(CAST(payload AS jsonb), '{revisit}',
               to_jsonb(least(coalesce(CAST(CAST(payload AS jsonb) ->> 'revisit' AS BIGINT), ?2),
                              ?2))) AS TEXT)
     WHERE unique_key = ?1 AND state IN ('queued', 'running') AND ltrim(payload) LIKE '{%'",
};
const REVISIT_OF: Pair = Pair {
    sqlite: "
    SELECT CASE WHEN json_valid(payload) THEN json_extract(payload, '$.revisit') END
      FROM jobs WHERE id = ?1",
    postgres: "
    SELECT CASE WHEN ltrim(payload) LIKE '{%'
                THEN CAST(CAST(payload AS jsonb) ->> 'revisit' AS BIGINT) END
      FROM jobs WHERE id = ?1",
};
/// The next row's payload ?1 with its cursor moved back to just before asset ?2, its count
/// of what is left dropped (the next batch counts again) and no revisit of its own.
const BACK_TO: Pair = Pair {
    sqlite: "
    SELECT json_remove(json_set(?1, '$.after', min(coalesce(json_extract(?1, '$.after'), 0),
                                                   ?2 - 1)),
                       '$.left', '$.revisit')",
    postgres: "
    SELECT CAST(jsonb_set(CAST(CAST(?1 AS TEXT) AS jsonb), '{after}',
                to_jsonb(least(coalesce(CAST(CAST(CAST(?1 AS TEXT) AS jsonb) ->> 'after'
                                             AS BIGINT), 0),
                               CAST(?2 AS BIGINT) - 1))) - 'left' - 'revisit' AS TEXT)",
};
/// Keeps what a newer scheme stamped (a newer binary on the same database), except in a
/// rollback (`?4`). A stamp that is already there writes nothing: a walk started again
/// over hashes it made before rewrote every row and index entry (issue 29).
const STAMP_CONTENT: &str = "
    UPDATE assets SET content_hash = ?2, content_hash_scheme = ?3
     WHERE id = ?1 AND (?4 OR content_hash_scheme IS NULL OR content_hash_scheme <= ?3)
       AND (content_hash IS DISTINCT FROM ?2 OR content_hash_scheme IS DISTINCT FROM ?3)";

fn record(db: &Db<'_>, kind: WalkKindId) -> Result<Option<WalkRecord>, StoreError> {
    db.optional(RECORD, args!(kind.as_str()), |r| {
        Ok(WalkRecord {
            kind: parse_at(r, 0, WalkKindId::parse)?,
            scheme: r.get(1)?,
            seen: r.get(2)?,
            completed_at: r.get(3)?,
        })
    })
}

/// A batch row's asset: id, checksum, whether it is in the trash.
pub(super) type Head = (i64, [u8; 32], bool);

pub(super) fn files_of(
    db: &Db<'_>,
    host: &str,
    asset_id: i64,
) -> Result<Vec<WalkFile>, StoreError> {
    db.all(FILES, args!(asset_id, host), walk_file)
}

/// The files of every asset with `after < id <= last`, by asset, each asset's in
/// `files_of`'s order: one range of `files_asset` for a batch instead of a lookup per asset.
pub(super) fn files_in(
    db: &Db<'_>,
    host: &str,
    after: i64,
    last: i64,
) -> Result<HashMap<i64, Vec<WalkFile>>, StoreError> {
    let mut files: HashMap<i64, Vec<WalkFile>> = HashMap::new();
    db.each(FILES_IN, args!(after, last, host), |r| {
        files.entry(r.get(8)?).or_default().push(walk_file(r)?);
        Ok(())
    })?;
    Ok(files)
}

fn walk_file(r: &Row<'_>) -> Result<WalkFile, StoreError> {
    Ok(WalkFile {
        root: r.get(0)?,
        rel_path: r.get(1)?,
        present: r.get(2)?,
        stamp: file_stamp(r, 3)?,
        trashed_to: r.get(7)?,
    })
}

/// Asset `id` was just made live again (a restore, by the user or by a scan's claim): the
/// live chain of each walk that skips trashed assets, whose cursor may be past it, is marked
/// to go back for it before it says it walked to the end (`REVISIT`). Without a live chain
/// there is nothing to mark: the restore's or the scan's walk request starts one from the
/// beginning.
pub(super) fn made_live(db: &Db<'_>, id: i64) -> Result<(), StoreError> {
    for kind in [
        WalkKindId::Faces,
        WalkKindId::Similar,
        WalkKindId::Embeddings,
    ] {
        revisit(db, kind.job_kind(), id)?;
    }
    Ok(())
}

pub(super) fn raise_record(
    db: &Db<'_>,
    kind: WalkKindId,
    scheme: i64,
    now: Millis,
) -> Result<(), StoreError> {
    db.execute(COMPLETE, args!(kind.as_str(), scheme, now))?;
    Ok(())
}

/// Raises the record's `seen` to `scheme` (creating the record); its `scheme` stays.
pub(super) fn raise_seen(
    db: &Db<'_>,
    kind: WalkKindId,
    scheme: i64,
    now: Millis,
) -> Result<(), StoreError> {
    db.execute(SEEN, args!(kind.as_str(), scheme, now))?;
    Ok(())
}

/// Marks the live chain of job kind `job_kind` to go back for asset `id` (`REVISIT`).
pub(super) fn revisit(db: &Db<'_>, job_kind: &str, id: i64) -> Result<(), StoreError> {
    db.execute(db.pick(&REVISIT), args!(job_kind, id))?;
    Ok(())
}

/// The scheme the record of `kind` says was walked to the end; 0 without a record.
pub(super) fn walked_scheme(db: &Db<'_>, kind: WalkKindId) -> Result<i64, StoreError> {
    Ok(db
        .optional(WALKED_SCHEME, args!(kind.as_str()), |r| r.get(0))?
        .unwrap_or(0))
}

/// The asset chain row `row_id` was marked to go back for, if any (`REVISIT_OF`).
pub(super) fn revisit_of(db: &Db<'_>, row_id: i64) -> Result<Option<i64>, StoreError> {
    Ok(db
        .optional(db.pick(&REVISIT_OF), args!(row_id), |r| r.get(0))?
        .flatten())
}

/// `payload` with its cursor moved back to just before `asset` (`BACK_TO`).
pub(super) fn back_to(db: &Db<'_>, payload: &str, asset: i64) -> Result<String, StoreError> {
    db.one(db.pick(&BACK_TO), args!(payload, asset), |r| r.get(0))
}

/// Stamps a content-hash walk batch's hashes (`STAMP_CONTENT`).
pub(super) fn stamp_content_hashes(
    db: &Db<'_>,
    hashes: &[(i64, ContentHash)],
    rollback: bool,
) -> Result<(), StoreError> {
    for (id, c) in hashes {
        db.execute(STAMP_CONTENT, args!(*id, &c.hash, c.scheme, rollback))?;
    }
    Ok(())
}

/// The ids, checksums, trashed flags and looks (`rows::Look`) of up to `limit` assets after
/// `after` in id order that a walk of `kind` must visit.
pub(super) fn batch_heads(
    db: &Db<'_>,
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
    db.all(sql, args!(after, scheme, force, limit, rollback), |r| {
        Ok(((r.get(0)?, checksum_col(r, 1)?, r.get(2)?), look(r, 3)?))
    })
}

/// `Store::start_walk_record`'s statement and the record it leaves.
fn start(
    db: &Db<'_>,
    kind: WalkKindId,
    current: i64,
    now: Millis,
) -> Result<WalkRecord, StoreError> {
    db.execute(START, args!(kind.as_str(), current, now))?;
    record(db, kind)?
        .ok_or_else(|| StoreError::NotFound(format!("walk record {kind} vanished while written")))
}

/// How many assets a walk of `kind` still has to visit after `after`.
fn left(db: &Db<'_>, kind: WalkKindId, visit: WalkVisit, after: i64) -> Result<i64, StoreError> {
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
    db.one(sql, args!(after, scheme, force, rollback), |r| r.get(0))
}

impl Store {
    /// The walk record of `kind`, if any walk or start has written one.
    pub fn walk_record(&self, kind: WalkKindId) -> Result<Option<WalkRecord>, StoreError> {
        self.read(|db| record(db, kind))
    }

    /// At start: clamps the record's `scheme` down to `current` (this binary's) and raises
    /// `seen` to it. A `seen` still above `current` afterwards is a rollback.
    pub fn start_walk_record(
        &self,
        kind: WalkKindId,
        current: i64,
    ) -> Result<WalkRecord, StoreError> {
        self.write(move |db, now| start(db, kind, current, now))
    }

    /// During work: raises the record's `seen` to `current` (creating the record), and never
    /// clamps its `scheme`: that is the start's alone.
    pub fn raise_walk_seen(&self, kind: WalkKindId, current: i64) -> Result<(), StoreError> {
        self.write(move |db, now| raise_seen(db, kind, current, now))
    }

    /// How many assets a walk of `kind` still has to visit after `after`.
    pub fn walk_left(
        &self,
        kind: WalkKindId,
        visit: WalkVisit,
        after: i64,
    ) -> Result<i64, StoreError> {
        self.read(|db| left(db, kind, visit, after))
    }
}

/// The family's statements on both engines' schemas.
#[cfg(test)]
mod both {
    use super::*;
    use crate::store::asset_fixtures::{asset, file, library};
    use crate::store::db::tests::on_both_schemas;

    fn visit(scheme: i64, force: bool, rollback: bool) -> WalkVisit {
        WalkVisit {
            scheme,
            force,
            rollback,
        }
    }

    fn the_record_is_clamped_at_start_and_raised_by_a_completion(
        db: &Db<'_>,
    ) -> Result<(), StoreError> {
        let k = WalkKindId::Faces;
        assert_eq!(record(db, k)?, None);
        assert_eq!(walked_scheme(db, k)?, 0);
        let r = start(db, k, 3, 10)?;
        assert_eq!((r.kind, r.scheme, r.seen, r.completed_at), (k, 0, 3, None));
        raise_record(db, k, 3, 20)?;
        raise_record(db, k, 2, 21)?;
        let r = record(db, k)?.expect("a record");
        assert_eq!(
            (r.scheme, r.seen, r.completed_at),
            (3, 3, Some(21)),
            "never lowered"
        );
        raise_seen(db, k, 5, 30)?;
        raise_seen(db, k, 4, 31)?;
        let r = record(db, k)?.expect("a record");
        assert_eq!((r.scheme, r.seen), (3, 5), "seen alone is raised");
        let r = start(db, k, 2, 40)?;
        assert_eq!((r.scheme, r.seen), (2, 5), "a rollback clamps the scheme");
        assert_eq!(walked_scheme(db, k)?, 2);
        raise_seen(db, WalkKindId::Similar, 1, 50)?;
        assert_eq!(walked_scheme(db, WalkKindId::Similar)?, 0);
        Ok(())
    }

    fn a_batch_holds_what_lacks_the_stamp_and_a_stamp_keeps_a_newer_one(
        db: &Db<'_>,
    ) -> Result<(), StoreError> {
        for id in 1..=3 {
            asset(db, id, "image/jpeg", None)?;
        }
        db.execute(
            "UPDATE assets SET trashed_at = 1, trash_reason = 'user' WHERE id = 3",
            args!(),
        )?;
        let kind = WalkKindId::ContentHash;
        let ids = |v: WalkVisit, after: i64| -> Result<Vec<(i64, bool)>, StoreError> {
            Ok(batch_heads(db, kind, v, after, 10)?
                .iter()
                .map(|(h, _)| (h.0, h.2))
                .collect())
        };
        assert_eq!(
            ids(visit(2, false, false), 0)?,
            vec![(1, false), (2, false), (3, true)]
        );
        assert_eq!(
            batch_heads(db, kind, visit(2, false, false), 0, 1)?.len(),
            1
        );
        let hash = |b: u8, scheme: i64| ContentHash {
            hash: [b; 32],
            scheme,
        };
        stamp_content_hashes(db, &[(1, hash(1, 2)), (2, hash(2, 3))], false)?;
        assert_eq!(ids(visit(2, false, false), 0)?, vec![(3, true)]);
        assert_eq!(left(db, kind, visit(2, false, false), 0)?, 1);
        assert_eq!(
            ids(visit(2, false, true), 1)?,
            vec![(2, false), (3, true)],
            "a rollback"
        );
        assert_eq!(left(db, kind, visit(2, true, false), 1)?, 2, "forced");
        stamp_content_hashes(db, &[(2, hash(9, 2))], false)?;
        let look = batch_heads(db, kind, visit(4, false, false), 1, 1)?[0]
            .1
            .clone();
        assert_eq!(
            look,
            Some(([2; 32].to_vec(), 3, None)),
            "the newer stamp stays"
        );
        stamp_content_hashes(db, &[(2, hash(9, 2))], true)?;
        let look = batch_heads(db, kind, visit(4, false, false), 1, 1)?[0]
            .1
            .clone();
        assert_eq!(look.map(|l| l.1), Some(2), "a rollback stamps over it");
        Ok(())
    }

    fn the_picture_walks_visit_live_images_and_embeddings_the_detected(
        db: &Db<'_>,
    ) -> Result<(), StoreError> {
        for id in 1..=3 {
            asset(db, id, "image/jpeg", None)?;
        }
        db.execute(
            "UPDATE assets SET trashed_at = 1, trash_reason = 'user' WHERE id = 3",
            args!(),
        )?;
        for kind in [WalkKindId::Faces, WalkKindId::Similar] {
            assert_eq!(left(db, kind, visit(1, false, false), 0)?, 2, "live images");
        }
        db.execute("UPDATE assets SET faces_scheme = 1 WHERE id = 1", args!())?;
        let embed = WalkKindId::Embeddings;
        assert_eq!(left(db, embed, visit(1, false, false), 0)?, 1);
        assert_eq!(
            batch_heads(db, embed, visit(1, false, false), 0, 5)?.len(),
            1
        );
        Ok(())
    }

    fn a_walks_files_are_the_hosts_with_their_trash_place(db: &Db<'_>) -> Result<(), StoreError> {
        library(db, 1)?;
        db.execute(
            "INSERT INTO library_roots (library_id, host, root) VALUES (1, 'h', '/r')",
            args!(),
        )?;
        asset(db, 1, "image/jpeg", None)?;
        asset(db, 2, "image/jpeg", None)?;
        file(db, 1, 1, "b.jpg", 1)?;
        file(db, 2, 1, "a.jpg", 1)?;
        file(db, 3, 1, "c.jpg", 2)?;
        db.execute(
            "UPDATE files SET state = 'missing', missing_since = 1 WHERE id = 1",
            args!(),
        )?;
        let intent = "INSERT INTO trash_intents (asset_id, library_id, action, from_path,
                          to_path, state, created_at, move_id)
                      VALUES (1, 1, 'trash', ?1, ?2, 'done', 0, ?3)";
        db.execute(
            intent,
            args!(b"b.jpg".as_slice(), b".trash/b1".as_slice(), 1),
        )?;
        db.execute(
            intent,
            args!(b"b.jpg".as_slice(), b".trash/b2".as_slice(), 2),
        )?;
        let files = files_of(db, "h", 1)?;
        type Seen<'a> = (&'a [u8], bool, Option<&'a [u8]>);
        let got: Vec<Seen<'_>> = files
            .iter()
            .map(|f| (f.rel_path.as_slice(), f.present, f.trashed_to.as_deref()))
            .collect();
        let moved: &[u8] = b".trash/b2";
        assert_eq!(
            got,
            vec![
                (&b"a.jpg"[..], true, None),
                (&b"b.jpg"[..], false, Some(moved))
            ]
        );
        assert_eq!((files[0].root.as_str(), files[0].stamp.inode), ("/r", 2));
        assert_eq!(files_of(db, "other", 1)?, vec![]);
        let all = files_in(db, "h", 0, 2)?;
        assert_eq!((&all[&1], all[&2].len()), (&files, 1));
        assert_eq!(files_in(db, "h", 1, 1)?.len(), 0);
        Ok(())
    }

    fn a_live_chain_is_marked_to_go_back_and_its_next_payload_goes_there(
        db: &Db<'_>,
    ) -> Result<(), StoreError> {
        let job = "INSERT INTO jobs (id, kind, unique_key, payload, state, run_at, created_at,
                                     updated_at) VALUES (?1, ?2, ?2, ?3, ?4, 0, 0, 0)";
        let faces = WalkKindId::Faces.job_kind();
        db.execute(job, args!(1, faces, r#"{"after": 50}"#, "queued"))?;
        db.execute(
            job,
            args!(2, WalkKindId::Similar.job_kind(), "not json", "queued"),
        )?;
        db.execute(job, args!(3, "walk:content-hash", "{}", "queued"))?;
        assert_eq!(revisit_of(db, 1)?, None);
        made_live(db, 9)?;
        made_live(db, 12)?;
        assert_eq!(
            (revisit_of(db, 1)?, revisit_of(db, 2)?, revisit_of(db, 3)?),
            (Some(9), None, None)
        );
        revisit(db, faces, 4)?;
        assert_eq!(revisit_of(db, 1)?, Some(4), "the lowest is kept");
        let back = back_to(db, r#"{"after": 50, "left": 7, "revisit": 4, "x": 1}"#, 4)?;
        let back: serde_json::Value = serde_json::from_str(&back).expect("json");
        assert_eq!(back, serde_json::json!({"after": 3, "x": 1}));
        let early: serde_json::Value =
            serde_json::from_str(&back_to(db, r#"{"after": 2}"#, 9)?).expect("json");
        assert_eq!(
            early,
            serde_json::json!({"after": 2}),
            "a cursor before it stays"
        );
        Ok(())
    }

    on_both_schemas!(
        the_record_is_clamped_at_start_and_raised_by_a_completion,
        a_batch_holds_what_lacks_the_stamp_and_a_stamp_keeps_a_newer_one,
        the_picture_walks_visit_live_images_and_embeddings_the_detected,
        a_walks_files_are_the_hosts_with_their_trash_place,
        a_live_chain_is_marked_to_go_back_and_its_next_payload_goes_there,
    );
}
