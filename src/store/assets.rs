//! The `assets` table: the statements of an asset's claim for a checksum (`find`, `insert`,
//! the restore by id alone, whether a move is in flight for it; `ingest::claim` decides,
//! DESIGN.md section 6), the content hash a scan stamps, a run's publication, trashing
//! orphans, the guarded sweep (never
//! an asset a present file shows; it names the thumbnails its deletions free), and the
//! reads of its rows (one asset, the content twins' ids; `queries` adds each asset's
//! parts, and leaves a Live Photo's clip out of the lists while its still shows it:
//! `not_a_shown_clip!`).

use super::db::{Db, Pair};
use super::rows::{Pixels, asset_from_row, checksum_col, content_hash_cols};
use super::{Store, StoreError, parse_at};
use crate::model::{
    Asset, Camera, ContentHash, MOVE_JOB_KIND, MediaFacts, MediaKind, Millis, TakenAtSource,
    TrashReason, WalkKindId,
};
use std::collections::HashSet;

/// Every owner is `local` until households get accounts.
pub(super) const LOCAL_OWNER: &str = "local";

/// Through `assets_checksum`, keyed by the checksum's first 8 bytes (migration 0027): the
/// full checksum and the owner are compared on the rows it finds. A pair, as each statement
/// that takes the prefix of a bound checksum: PostgreSQL reads `substr` of a placeholder as
/// text unless told it is bytes, and SQLite must not be told (`AS BYTEA` is NUMERIC there).
const FIND: Pair = Pair {
    sqlite: "
    SELECT id, trashed_at IS NOT NULL FROM assets
     WHERE substr(checksum, 1, 8) = substr(?2, 1, 8) AND checksum = ?2 AND owner = ?1",
    postgres: "
    SELECT id, trashed_at IS NOT NULL FROM assets
     WHERE substr(checksum, 1, 8) = substr(CAST(?2 AS BYTEA), 1, 8) AND checksum = ?2
       AND owner = ?1",
};
macro_rules! insert_asset {
    () => {
        "
    INSERT INTO assets (owner, checksum, size, mime, kind, width, height, display_width,
                        display_height, taken_local, taken_offset_minutes, make, model, lat, lon,
                        orientation, duration_ms, video_codec, created_at, pending_run,
                        content_hash, content_hash_scheme, taken_at_source, content_identifier,
                        motion_offset, motion_length)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,
            ?20, ?21, ?22, ?23, ?24, ?25, ?26)"
    };
}
#[cfg(test)]
pub(super) const INSERT: &str = insert_asset!();
/// The INSERT that answers the new id (`Db::insert_id`): SQLite's as it is, read by its
/// connection's last rowid (see `insert`); PostgreSQL's with RETURNING.
const INSERT_ID: Pair = Pair {
    sqlite: insert_asset!(),
    postgres: concat!(insert_asset!(), " RETURNING id"),
};
/// Restore by id alone: whatever happened to the row since it was read, this either brings
/// back the row that is still trashed or matches nothing.
const RESTORE: &str = "
    UPDATE assets SET trashed_at = NULL, trash_reason = NULL
     WHERE id = ?1 AND trashed_at IS NOT NULL RETURNING id";
/// A file read by a scan brings the content hash of this binary's scheme to an asset that
/// has none or another scheme's (identical bytes, so the hash is the asset's).
const STAMP_CONTENT: &str = "
    UPDATE assets SET content_hash = ?2, content_hash_scheme = ?3
     WHERE id = ?1 AND content_hash_scheme IS DISTINCT FROM ?3";
const EXISTS: &str = "SELECT trashed_at IS NOT NULL FROM assets WHERE id = ?1";
/// Whether a move that is not ended names asset ?1 (a pending intent of its, or any intent
/// of a move whose job ?2 is still queued or running: a restore between two renames has
/// settled some of its intents, and may yet roll them back). Read through the index
/// `trash_intents_asset_move` (migration 0005). A pair: each engine reads the payload's
/// JSON with its own functions.
macro_rules! moving {
    ($move:literal) => {
        concat!(
            "
    SELECT EXISTS (SELECT 1 FROM trash_intents t
                    WHERE t.asset_id = ?1
                      AND (t.state = 'pending'
                           OR EXISTS (SELECT 1 FROM jobs j
                                       WHERE j.kind = ?2 AND j.state IN ('queued', 'running')
                                         AND ",
            $move,
            ")))"
        )
    };
}
const MOVING: Pair = Pair {
    sqlite: moving!("json_extract(j.payload, '$.move') = t.move_id"),
    postgres: moving!("CAST(j.payload AS jsonb) -> 'move' = to_jsonb(t.move_id)"),
};
/// Trashes a live asset that no present file shows any more.
const TRASH_IF_ORPHAN: &str = "
    UPDATE assets SET trashed_at = ?2, trash_reason = ?3
     WHERE id = ?1 AND trashed_at IS NULL
       AND NOT EXISTS (SELECT 1 FROM files WHERE asset_id = ?1 AND state = 'present')";
const TRASH: &str = "
    UPDATE assets SET trashed_at = ?2, trash_reason = ?3 WHERE id = ?1 AND trashed_at IS NULL";
/// An asset a repair adopted from a trash folder is published and in the trash, as the
/// user's trash left it.
const TRASH_ADOPTED: &str = "
    UPDATE assets SET pending_run = NULL, trashed_at = ?2, trash_reason = 'user' WHERE id = ?1";
const LIVE_PUBLISHED: &str =
    "SELECT id FROM assets WHERE trashed_at IS NULL AND pending_run IS NULL ORDER BY id";
/// Assets trashed long enough, not being moved by a pending journal intent, and shown by no
/// present file (an asset with a present file is the index's mistake, healed by the next
/// scan: deleting it would unlink the photo from the index).
const SWEEPABLE: &str = "
    SELECT id FROM assets a
     WHERE trashed_at IS NOT NULL AND trashed_at <= ?1
       AND NOT EXISTS (SELECT 1 FROM trash_intents t
                        WHERE t.asset_id = a.id AND t.state = 'pending')
       AND NOT EXISTS (SELECT 1 FROM files f WHERE f.asset_id = a.id AND f.state = 'present')
     ORDER BY id LIMIT ?2";
/// The sweep's guard is repeated in each statement: a restore or a file linked in between
/// makes them match nothing.
const SWEEP_FILES: &str = "
    DELETE FROM files WHERE asset_id = ?1 AND state = 'missing'
       AND EXISTS (SELECT 1 FROM assets WHERE id = ?1 AND trashed_at IS NOT NULL
                                             AND trashed_at <= ?2)
       AND NOT EXISTS (SELECT 1 FROM files WHERE asset_id = ?1 AND state = 'present')";
/// Its faces go with it (ON DELETE CASCADE).
const SWEEP_ONE: &str = "
    DELETE FROM assets
     WHERE id = ?1 AND trashed_at IS NOT NULL AND trashed_at <= ?2
       AND NOT EXISTS (SELECT 1 FROM trash_intents t
                        WHERE t.asset_id = ?1 AND t.state = 'pending')
       AND NOT EXISTS (SELECT 1 FROM files WHERE asset_id = ?1 AND state = 'present')
    RETURNING checksum";
/// Another owner's asset of the same bytes shares their cached thumbnail.
/// The trash, for the diff to tell a present file whose asset is trashed. Read once per scan
/// through the partial index, instead of a lookup of every known file's asset (a random
/// probe per file, a third slower listing of an unchanged library).
const TRASHED: &str = "SELECT id FROM assets WHERE trashed_at IS NOT NULL";

/// Visible pictures and videos with `after < id <= last`. Assets of another run still
/// pending in that range are left to that run's own job.
const THUMB_BATCH: &str = "
    SELECT id, checksum, trashed_at IS NOT NULL, kind, mime, orientation, width, height
      FROM assets
     WHERE id > ?1 AND id <= ?2 AND pending_run IS NULL AND kind IN ('image', 'video')
     ORDER BY id LIMIT ?3";
/// The cameras of the live, published assets, the most used first.
const CAMERAS: &str = "
    SELECT make, model, count(*) FROM assets
     WHERE pending_run IS NULL AND trashed_at IS NULL AND (make IS NOT NULL OR model IS NOT NULL)
     GROUP BY make, model ORDER BY count(*) DESC, make NULLS FIRST, model NULLS FIRST
     LIMIT 500";
/// Kept by migration 0017's triggers (a count of a million rows at each scrape was 418 ms):
/// an asset is counted when it is published, trashed, restored or deleted (it is inserted
/// pending, and migration 0018 dropped the insert trigger that never counted one).
const BY_KIND: &str = "SELECT kind, n FROM live_kinds WHERE n > 0 ORDER BY kind";
const CHECKSUM_USED: Pair = Pair {
    sqlite: "SELECT EXISTS (SELECT 1 FROM assets
     WHERE substr(checksum, 1, 8) = substr(?1, 1, 8) AND checksum = ?1)",
    postgres: "SELECT EXISTS (SELECT 1 FROM assets
     WHERE substr(checksum, 1, 8) = substr(CAST(?1 AS BYTEA), 1, 8) AND checksum = ?1)",
};

/// A live Live Photo clip is shown by its live still (`store::motion`), not listed itself; a
/// clip in the trash is listed there, whatever its still.
macro_rules! not_a_shown_clip {
    () => {
        " AND NOT EXISTS (SELECT 1 FROM assets s WHERE s.live_video_id = assets.id \
           AND assets.trashed_at IS NULL AND s.trashed_at IS NULL AND s.pending_run IS NULL)"
    };
}
/// `not_a_shown_clip!` for the asset list queries built elsewhere in the store.
pub(super) const NOT_A_SHOWN_CLIP: &str = not_a_shown_clip!();

/// `$col` of another live picture of the same pixels (?1 content hash under scheme ?2,
/// orientation ?3) than ?4 that a walk stamped with scheme ?5 in `$stamp`. Seeks the 8-byte
/// prefix index of migration 0027, then compares the whole hash. A pair for the bound
/// hash's prefix (`FIND`).
macro_rules! pixel_twin {
    ($col:literal, $stamp:literal, $hash:literal) => {
        concat!(
            "SELECT ",
            $col,
            " FROM assets
              WHERE substr(content_hash, 1, 8) = substr(",
            $hash,
            ", 1, 8) AND content_hash = ?1
                AND content_hash_scheme = ?2 AND orientation IS NOT DISTINCT FROM ?3
                AND id <> ?4 AND trashed_at IS NULL AND kind = 'image' AND ",
            $stamp,
            " = ?5
              LIMIT 1"
        )
    };
}
/// The faces walk's twin: its id.
const FACES_TWIN: Pair = Pair {
    sqlite: pixel_twin!("id", "faces_scheme", "?1"),
    postgres: pixel_twin!("id", "faces_scheme", "CAST(?1 AS BYTEA)"),
};
/// The similar walk's: the perceptual hash it stamped (NULL: the picture cannot be hashed).
const SIMILAR_TWIN: Pair = Pair {
    sqlite: pixel_twin!("phash", "phash_scheme", "?1"),
    postgres: pixel_twin!("phash", "phash_scheme", "CAST(?1 AS BYTEA)"),
};
/// Assets sharing a content hash under one scheme with another asset (at least one of the
/// group live), grouped by hash.
const CONTENT_TWINS: &str = "
    SELECT id, content_hash, content_hash_scheme FROM assets
     WHERE pending_run IS NULL AND content_hash IS NOT NULL
       AND (content_hash, content_hash_scheme) IN (
           SELECT content_hash, content_hash_scheme FROM assets
            WHERE pending_run IS NULL AND content_hash IS NOT NULL
            GROUP BY content_hash, content_hash_scheme
           HAVING count(*) > 1 AND sum(CASE WHEN trashed_at IS NULL THEN 1 ELSE 0 END) > 0)
     ORDER BY content_hash, content_hash_scheme, id";

const GET: &str = concat!("SELECT ", asset_cols!(), " FROM assets WHERE id = ?1");

/// A new asset waits for its run's completion before anyone sees it.
/// A run's completion publishes what every run of its library created and left pending
/// (a retried run's successor finds those files unchanged; its completion publishes them).
/// One chunk of ids at a time (`?2` ..< `?3`): see `PUBLISH_CHUNK`.
const PUBLISH: &str = "
    UPDATE assets SET pending_run = NULL
     WHERE id >= ?2 AND id < ?3
       AND pending_run IN (SELECT id FROM scan_runs
                            WHERE library_id = (SELECT library_id FROM scan_runs WHERE id = ?1))";

/// The id range of what a completion of run ?1 is about to publish, then that of the
/// pictures and videos among it (what the thumbnail job will visit); NULLs when none.
const TO_PUBLISH: &str = "
    SELECT min(id), max(id), min(CASE WHEN kind IN ('image', 'video') THEN id END),
           max(CASE WHEN kind IN ('image', 'video') THEN id END) FROM assets
     WHERE pending_run IN (SELECT id FROM scan_runs
                            WHERE library_id = (SELECT library_id FROM scan_runs WHERE id = ?1))";

/// Ids published per statement. An UPDATE of `assets` (it has triggers) first collects the
/// rowid of every row it will change, outside the page cache and its cap: publishing a first
/// index of 1,000,000 assets in one statement raised the scan's resident memory from 68 to
/// 86 MiB at its very end (sampled /proc status), where 65,536 ids bound it to about 1.5 MiB.
const PUBLISH_CHUNK: i64 = 65_536;

/// Publishes what the library's runs left pending. Returns the lowest and highest id of the
/// pictures and videos among them, when there were any.
pub(super) fn publish(db: &Db<'_>, run_id: i64) -> Result<Option<(i64, i64)>, StoreError> {
    publish_in_chunks(db, run_id, PUBLISH_CHUNK)
}

fn publish_in_chunks(
    db: &Db<'_>,
    run_id: i64,
    chunk: i64,
) -> Result<Option<(i64, i64)>, StoreError> {
    type Ids = Option<i64>;
    let (lo, hi, media_lo, media_hi): (Ids, Ids, Ids, Ids) =
        db.one(TO_PUBLISH, args!(run_id), |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
    if let (Some(mut from), Some(hi)) = (lo, hi) {
        while from <= hi {
            let to = from.saturating_add(chunk.max(1));
            db.execute(PUBLISH, args!(run_id, from, to))?;
            from = to;
        }
    }
    Ok(media_lo.zip(media_hi))
}

pub(super) fn find(db: &Db<'_>, checksum: &[u8; 32]) -> Result<Option<(i64, bool)>, StoreError> {
    db.optional(db.pick(&FIND), args!(LOCAL_OWNER, checksum), |r| {
        Ok((r.get(0)?, r.get(1)?))
    })
}

/// Inserts a new asset; the caller has looked its checksum up in the same transaction
/// (`claim`): no index refuses a second row of one checksum any more (migration 0027).
pub(super) fn insert(
    db: &Db<'_>,
    checksum: &[u8; 32],
    size: u64,
    facts: &MediaFacts,
    content: Option<&ContentHash>,
    pending_run: i64,
    now: Millis,
) -> Result<i64, StoreError> {
    let f = facts;
    let row = args!(
        LOCAL_OWNER,
        checksum,
        size as i64,
        f.mime.as_deref(),
        f.kind.map(MediaKind::as_str),
        f.width,
        f.height,
        f.display_width,
        f.display_height,
        f.taken_local.as_deref(),
        f.taken_offset_minutes,
        f.make.as_deref(),
        f.model.as_deref(),
        f.lat,
        f.lon,
        f.orientation,
        f.duration_ms,
        f.video_codec.as_deref(),
        now,
        pending_run,
        content.map(|c| &c.hash),
        content.map(|c| c.scheme),
        f.taken_at_source.map(TakenAtSource::as_str),
        f.content_identifier.as_deref(),
        f.embedded_video.map(|v| v.offset as i64),
        f.embedded_video.map(|v| v.length as i64)
    );
    // No RETURNING on SQLite: it buffers RETURNING rows in an ephemeral table opened and
    // closed on every execution, which was a quarter of a first index's writer time.
    db.insert_id(&INSERT_ID, row)
}

/// Stamps the content hash a scan computed on an asset claimed for it, unless the asset has
/// this scheme's already.
pub(super) fn stamp_content(db: &Db<'_>, id: i64, content: &ContentHash) -> Result<(), StoreError> {
    db.execute(STAMP_CONTENT, args!(id, &content.hash, content.scheme))?;
    Ok(())
}

/// Whether a move of asset `id` is in flight: a scan leaves such an asset as it is, in
/// both directions (DESIGN.md section 6; finding 20).
pub(super) fn in_flight(db: &Db<'_>, id: i64) -> Result<bool, StoreError> {
    db.one(db.pick(&MOVING), args!(id, MOVE_JOB_KIND), |r| r.get(0))
}

/// Restores a trashed asset by id alone. `false`: the row is no longer trashed (or gone).
/// What else a restore brings is the composition's (`revive`).
pub(super) fn restore(db: &Db<'_>, id: i64) -> Result<bool, StoreError> {
    Ok(db
        .optional(RESTORE, args!(id), |r| r.get::<i64>(0))?
        .is_some())
}

/// Whether the asset exists, and if so whether it is trashed.
pub(super) fn state(db: &Db<'_>, id: i64) -> Result<Option<bool>, StoreError> {
    db.optional(EXISTS, args!(id), |r| r.get(0))
}

/// Trashes `id` if no present file shows it any more. Returns whether it did.
pub(super) fn trash_if_orphan(
    db: &Db<'_>,
    id: i64,
    reason: TrashReason,
    now: Millis,
) -> Result<bool, StoreError> {
    run_trash(db, TRASH_IF_ORPHAN, id, reason, now)
}

/// Trashes a live asset whatever its files. Returns whether it did.
pub(super) fn trash(
    db: &Db<'_>,
    id: i64,
    reason: TrashReason,
    now: Millis,
) -> Result<bool, StoreError> {
    run_trash(db, TRASH, id, reason, now)
}

/// Publishes the adopted asset `id` into the trash (`TRASH_ADOPTED`).
pub(super) fn trash_adopted(db: &Db<'_>, id: i64, now: Millis) -> Result<(), StoreError> {
    db.execute(TRASH_ADOPTED, args!(id, now))?;
    Ok(())
}

fn run_trash(
    db: &Db<'_>,
    sql: &str,
    id: i64,
    reason: TrashReason,
    now: Millis,
) -> Result<bool, StoreError> {
    Ok(db.execute(sql, args!(id, now, reason.as_str()))? == 1)
}

/// What one sweep deleted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Swept {
    /// Assets deleted, with their missing file rows and their faces.
    pub assets: u64,
    /// The checksums of the deleted assets that no asset has any more: the thumbnails
    /// cached under them can go, now that the deletion committed.
    pub thumbnails: Vec<[u8; 32]>,
}

/// Deletes one asset (and its missing file rows) if it is still trashed since `cutoff` or
/// earlier, no journal intent is moving it and no present file shows it. Returns its
/// checksum if it did.
pub(super) fn sweep_one(
    db: &Db<'_>,
    id: i64,
    cutoff: Millis,
) -> Result<Option<[u8; 32]>, StoreError> {
    db.execute(SWEEP_FILES, args!(id, cutoff))?;
    db.optional(SWEEP_ONE, args!(id, cutoff), |r| r.get(0))
}

/// Sweeps one bounded batch: how many candidates it saw, and what it deleted.
fn sweep_batch(db: &Db<'_>, cutoff: Millis, batch: i64) -> Result<(i64, Swept), StoreError> {
    let ids: Vec<i64> = db.all(SWEEPABLE, args!(cutoff, batch), |r| r.get(0))?;
    let mut swept = Swept::default();
    for id in &ids {
        let Some(sum) = sweep_one(db, *id, cutoff)? else {
            continue;
        };
        swept.assets += 1;
        let used: bool = db.one(db.pick(&CHECKSUM_USED), args!(sum), |r| r.get(0))?;
        if !used {
            swept.thumbnails.push(sum);
        }
    }
    Ok((ids.len() as i64, swept))
}

/// One asset row, without its paths or other parts.
pub(super) fn get(db: &Db<'_>, id: i64) -> Result<Option<Asset>, StoreError> {
    db.optional(GET, args!(id), asset_from_row)
}

/// Another live picture of the same pixels as asset `id` (`look`: the same content hash
/// under the same scheme, the same orientation) that a picture walk of `kind` stamped with
/// `scheme`: for faces `Some(id)`, for similar its perceptual hash (`None`: the picture
/// cannot be hashed). None when there is none, and for the other walks.
pub(super) fn pixel_twin(
    db: &Db<'_>,
    kind: WalkKindId,
    scheme: i64,
    id: i64,
    (hash, hash_scheme, orientation): &Pixels,
) -> Result<Option<Option<i64>>, StoreError> {
    let sql = match kind {
        WalkKindId::Faces => &FACES_TWIN,
        WalkKindId::Similar => &SIMILAR_TWIN,
        WalkKindId::ContentHash | WalkKindId::Embeddings => return Ok(None),
    };
    let args = args!(hash, *hash_scheme, *orientation, id, scheme);
    db.optional(db.pick(sql), args, |r| r.get::<Option<i64>>(0))
}

/// The assets of `CONTENT_TWINS`, each with its content hash, grouped by hash.
pub(super) fn content_twin_ids(db: &Db<'_>) -> Result<Vec<(i64, Option<ContentHash>)>, StoreError> {
    db.all(CONTENT_TWINS, args!(), |r| {
        Ok((r.get(0)?, content_hash_cols(r, 1)?))
    })
}

/// An asset for the thumbnail job: id, checksum, trashed, kind, mime, orientation, width,
/// height.
pub(super) type ThumbHead = (
    i64,
    [u8; 32],
    bool,
    MediaKind,
    Option<String>,
    Option<u16>,
    Option<u32>,
    Option<u32>,
);

/// Up to `limit` visible pictures and videos with `after < id <= last` (`THUMB_BATCH`).
pub(super) fn thumb_heads(
    db: &Db<'_>,
    after: i64,
    last: i64,
    limit: usize,
) -> Result<Vec<ThumbHead>, StoreError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    db.all(THUMB_BATCH, args!(after, last, limit), |r| {
        Ok((
            r.get(0)?,
            checksum_col(r, 1)?,
            r.get(2)?,
            parse_at(r, 3, MediaKind::parse)?,
            r.get(4)?,
            r.get(5)?,
            r.get(6)?,
            r.get(7)?,
        ))
    })
}

/// The live assets per kind (kept by migration 0017's triggers), kinds with none left out.
pub(super) fn live_by_kind(db: &Db<'_>) -> Result<Vec<(String, i64)>, StoreError> {
    db.all(BY_KIND, args!(), |r| Ok((r.get(0)?, r.get(1)?)))
}

/// Every camera of the live assets with its count (at most 500, the most used first).
fn cameras(db: &Db<'_>) -> Result<Vec<Camera>, StoreError> {
    db.all(CAMERAS, args!(), |r| {
        Ok(Camera {
            make: r.get(0)?,
            model: r.get(1)?,
            count: r.get::<i64>(2)?.max(0) as u64,
        })
    })
}

impl Store {
    /// The ids of the live, published assets.
    pub fn check_live_assets(&self) -> Result<Vec<i64>, StoreError> {
        self.read(|db| db.all(LIVE_PUBLISHED, args!(), |r| r.get(0)))
    }

    /// Every camera of the live assets with its count (at most 500, the most used first).
    pub fn cameras(&self) -> Result<Vec<Camera>, StoreError> {
        self.read(cameras)
    }

    /// The ids of the trashed assets (as many as the trash holds).
    pub fn trashed_asset_ids(&self) -> Result<HashSet<i64>, StoreError> {
        self.read(|db| {
            let mut ids = HashSet::new();
            db.each(TRASHED, args!(), |r| {
                ids.insert(r.get(0)?);
                Ok(())
            })?;
            Ok(ids)
        })
    }

    /// Deletes the assets trashed for longer than `retention` that no present file shows,
    /// each in its own guarded `DELETE … WHERE` (still trashed, long enough, no pending
    /// journal intent, no present file), so that a racing restore ends with the row restored
    /// or gone, never both and never an error. Works in bounded batches. Says which cached
    /// thumbnails the caller may now delete (the store keeps no files).
    pub fn sweep(&self, retention: Millis) -> Result<Swept, StoreError> {
        const BATCH: i64 = 500;
        let mut all = Swept::default();
        loop {
            let (seen, swept) =
                self.write(move |db, now| sweep_batch(db, now - retention, BATCH))?;
            all.assets += swept.assets;
            all.thumbnails.extend(swept.thumbnails);
            if seen < BATCH {
                return Ok(all);
            }
        }
    }

    /// `sweep`, counting the assets only: for callers that keep no thumbnail cache.
    pub fn sweep_trash(&self, retention: Millis) -> Result<u64, StoreError> {
        Ok(self.sweep(retention)?.assets)
    }
}

/// Races between a claim and a restore or a sweep, staged deterministically: one raw
/// connection holds its write transaction open while the other's `BEGIN IMMEDIATE` is
/// provably waiting on it (its busy handler has run), then commits.
#[cfg(test)]
mod race_tests {
    use super::sweep_one;
    use crate::clock::FakeClock;
    use crate::model::{Claim, FileReason, FileStamp, IngestItem, Lease, MediaFacts};
    use crate::store::db::Db;
    use crate::store::ingest::ingest_one;
    use crate::store::{Store, StoreOptions};
    use rusqlite::Connection;
    use std::sync::atomic::{AtomicBool, Ordering};

    const T0: i64 = 1_800_000_000_000;
    static WAITING: [AtomicBool; 4] = [const { AtomicBool::new(false) }; 4];

    /// Records that a connection found the database locked, then lets it keep waiting.
    fn busy<const I: usize>(_attempt: i32) -> bool {
        WAITING[I].store(true, Ordering::SeqCst);
        std::thread::yield_now();
        true
    }

    fn item(path: &str, content: u8) -> IngestItem {
        IngestItem {
            rel_path: path.as_bytes().to_vec(),
            rel_path_text: path.to_string(),
            stamp: FileStamp {
                size: 10,
                mtime_ns: 1,
                dev: 1,
                inode: u64::from(content),
            },
            reason: FileReason::New,
            checksum: Some([content; 32]),
            content_hash: None,
            facts: Some(MediaFacts::default()),
            error: None,
            namesake: true,
        }
    }

    /// A library whose asset for content 1 is in the trash (its file went missing) next to
    /// a live asset for content 2 with a higher id; the lease of a running full scan.
    struct Setup {
        _dir: tempfile::TempDir,
        store: Store,
        lib: i64,
        lease: Lease,
        trashed: i64,
    }

    fn setup() -> Setup {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(
            &dir.path().join("m.db"),
            FakeClock::new(T0),
            StoreOptions::default(),
        )
        .expect("open");
        let lib = store.add_library("photos", "/photos").expect("library").id;
        let scan = |store: &Store| {
            let req = crate::model::ScanRequest {
                library_id: lib,
                scope: String::new(),
                trigger: crate::model::Trigger::Manual,
                watch_event: None,
            };
            store.request_scan(req).expect("request");
            store
                .claim_scan_run(60_000)
                .expect("claim")
                .expect("a run")
                .0
        };
        let lease = scan(&store);
        let report = store
            .ingest_batch(&lease, lib, vec![item("a.jpg", 1), item("b.jpg", 2)], "")
            .expect("ingest");
        store
            .finish_full_scan(&lease, lib, crate::model::ScanEnd::breaker(1.0, true))
            .expect("finish");
        let lease = scan(&store);
        let gone = crate::model::Unseen {
            files: vec![report.items[0].file_id],
            dirs: Vec::new(),
        };
        store
            .finish_full_scan(
                &lease,
                lib,
                crate::model::ScanEnd::breaker(1.0, true).unseen(gone),
            )
            .expect("finish");
        let trashed = report.items[0].asset_id.expect("asset");
        assert!(store.asset(trashed).unwrap().unwrap().trashed_at.is_some());
        let lease = scan(&store);
        Setup {
            _dir: dir,
            store,
            lib,
            lease,
            trashed,
        }
    }

    fn raw(store: &Store) -> Connection {
        let conn = Connection::open(store.path()).expect("raw connection");
        conn.execute_batch("PRAGMA foreign_keys = ON;")
            .expect("pragma");
        conn
    }

    /// Runs `holder` in a write transaction on one connection and, while it is still open,
    /// starts `waiter`'s transaction on another; commits the holder only once the waiter is
    /// blocked on it, and returns what the waiter did once it could run.
    fn race<const I: usize, T: Send + 'static>(
        store: &Store,
        holder: impl FnOnce(&Connection),
        waiter: impl FnOnce(&Connection) -> T + Send + 'static,
    ) -> T {
        let held = raw(store);
        held.execute_batch("BEGIN IMMEDIATE").expect("begin holder");
        holder(&held);
        let waiting = raw(store);
        waiting.busy_handler(Some(busy::<I>)).expect("handler");
        WAITING[I].store(false, Ordering::SeqCst);
        let thread = std::thread::spawn(move || {
            waiting
                .execute_batch("BEGIN IMMEDIATE")
                .expect("begin waiter");
            let out = waiter(&waiting);
            waiting.execute_batch("COMMIT").expect("commit waiter");
            out
        });
        while !WAITING[I].load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        held.execute_batch("COMMIT").expect("commit holder");
        thread.join().expect("waiter")
    }

    #[test]
    fn a_claim_that_loses_to_a_held_restore_answers_duplicate_not_a_unique_key_error() {
        let s = setup();
        let (lib, run, id) = (s.lib, s.lease.id, s.trashed);
        let out = race::<0, _>(
            &s.store,
            |c| assert!(super::restore(&Db::sqlite(c), id).expect("restore")),
            move |c| {
                ingest_one(
                    &crate::store::db::Db::sqlite(c),
                    run,
                    lib,
                    &item("copy/a.jpg", 1),
                    T0 + 1,
                )
            },
        )
        .expect("the claim never errors");
        assert_eq!((out.claim, out.asset_id), (Claim::Duplicate, Some(id)));
        assert_eq!(s.store.assets(false).unwrap().len(), 2);
    }

    #[test]
    fn a_claim_that_loses_to_a_held_sweep_stores_the_file_afresh() {
        let s = setup();
        let (lib, run, id) = (s.lib, s.lease.id, s.trashed);
        let out = race::<1, _>(
            &s.store,
            |c| {
                assert!(
                    sweep_one(&Db::sqlite(c), id, T0 + 10)
                        .expect("sweep")
                        .is_some()
                )
            },
            move |c| {
                ingest_one(
                    &crate::store::db::Db::sqlite(c),
                    run,
                    lib,
                    &item("a.jpg", 1),
                    T0 + 1,
                )
            },
        )
        .expect("the claim never errors");
        assert_eq!(out.claim, Claim::Created);
        assert!(
            out.asset_id.expect("asset") > id,
            "a new row, not the swept one"
        );
        assert!(s.store.asset(id).unwrap().is_none());
        // The new row exists, held by the run until its completion publishes it.
        let fresh = out.asset_id.expect("asset");
        assert!(s.store.asset(fresh).unwrap().is_some());
        assert_eq!(s.store.assets(false).unwrap().len(), 1, "not visible yet");
    }

    #[test]
    fn a_sweep_that_loses_to_a_held_restoring_claim_deletes_nothing() {
        let s = setup();
        let (lib, run, id) = (s.lib, s.lease.id, s.trashed);
        let swept = race::<2, _>(
            &s.store,
            |c| {
                let out = ingest_one(
                    &crate::store::db::Db::sqlite(c),
                    run,
                    lib,
                    &item("a.jpg", 1),
                    T0 + 1,
                )
                .expect("claim");
                assert_eq!(out.claim, Claim::Restored);
            },
            move |c| sweep_one(&Db::sqlite(c), id, T0 + 10).expect("the sweep never errors"),
        );
        assert_eq!(swept, None);
        let asset = s.store.asset(id).unwrap().expect("restored, not gone");
        assert_eq!(asset.trashed_at, None);
    }

    #[test]
    fn a_sweep_that_loses_to_a_held_link_of_a_present_file_deletes_nothing() {
        let s = setup();
        let id = s.trashed;
        // What a half-done trash move of older versions left: the asset trashed, one of
        // its files still present.
        let swept = race::<3, _>(
            &s.store,
            |c| {
                let linked = c
                    .execute(
                        "UPDATE files SET asset_id = ?1 WHERE rel_path = CAST('b.jpg' AS BLOB)",
                        [id],
                    )
                    .expect("link");
                assert_eq!(linked, 1);
            },
            move |c| sweep_one(&Db::sqlite(c), id, T0 + 10).expect("the sweep never errors"),
        );
        assert_eq!(swept, None);
        assert!(s.store.asset(id).unwrap().is_some(), "not deleted");
        let missing: i64 = raw(&s.store)
            .query_row(
                "SELECT count(*) FROM files WHERE asset_id = ?1 AND state = 'missing'",
                [id],
                |r| r.get(0),
            )
            .expect("count");
        assert_eq!(missing, 1, "its missing file row stays too");
    }
}

#[cfg(test)]
mod publish_tests {
    use super::publish_in_chunks;
    use crate::clock::FakeClock;
    use crate::model::{FileReason, FileStamp, IngestItem, MediaFacts, MediaKind, ScanRequest};
    use crate::store::db::Db;
    use crate::store::{Store, StoreOptions};

    fn item(n: u8) -> IngestItem {
        let path = format!("{n}.jpg");
        IngestItem {
            rel_path: path.as_bytes().to_vec(),
            rel_path_text: path,
            stamp: FileStamp {
                size: 10,
                mtime_ns: 1,
                dev: 1,
                inode: u64::from(n),
            },
            reason: FileReason::New,
            checksum: Some([n; 32]),
            content_hash: None,
            facts: Some(MediaFacts {
                kind: Some(MediaKind::Image),
                ..MediaFacts::default()
            }),
            error: None,
            namesake: true,
        }
    }

    #[test]
    fn a_completion_publishes_every_pending_asset_however_many_chunks_they_span() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("p.db");
        let store = Store::open(&db, FakeClock::new(1_000), StoreOptions::default()).expect("open");
        let lib = store.add_library("photos", "/photos").expect("library").id;
        store
            .request_scan(ScanRequest {
                library_id: lib,
                scope: String::new(),
                trigger: crate::model::Trigger::Manual,
                watch_event: None,
            })
            .expect("request");
        let (lease, _) = store.claim_scan_run(60_000).expect("claim").expect("run");
        let items = (1..=7).map(item).collect();
        store.ingest_batch(&lease, lib, items, "").expect("ingest");
        let conn = rusqlite::Connection::open(&db).expect("conn");
        let pending = || -> i64 {
            conn.query_row(
                "SELECT count(*) FROM assets WHERE pending_run IS NOT NULL",
                [],
                |r| r.get(0),
            )
            .expect("count")
        };
        assert_eq!(pending(), 7);
        let range = publish_in_chunks(&Db::sqlite(&conn), lease.id, 3).expect("publish");
        assert_eq!(pending(), 0, "every chunk was published");
        let (lo, hi): (i64, i64) = conn
            .query_row("SELECT min(id), max(id) FROM assets", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .expect("ids");
        assert_eq!(range, Some((lo, hi)));
    }
}

/// The family's statements on both engines' schemas.
#[cfg(test)]
mod both {
    use super::*;
    use crate::store::asset_fixtures::{file, library};
    use crate::store::db::tests::on_both_schemas;

    fn facts(kind: MediaKind, make: Option<&str>) -> MediaFacts {
        MediaFacts {
            kind: Some(kind),
            mime: Some("image/jpeg".into()),
            width: Some(40),
            height: Some(30),
            make: make.map(Into::into),
            lat: Some(1.5),
            orientation: Some(6),
            taken_local: Some("2024-01-01T00:00:00".into()),
            taken_at_source: Some(TakenAtSource::Exif),
            ..MediaFacts::default()
        }
    }

    fn content(byte: u8, scheme: i64) -> ContentHash {
        ContentHash {
            hash: [byte; 32],
            scheme,
        }
    }

    fn a_run(db: &Db<'_>, id: i64, library: i64) -> Result<(), StoreError> {
        db.execute(
            "INSERT INTO scan_runs (id, library_id, trigger, state, run_at, requested_at,
                                    accepted_at, updated_at)
             VALUES (?1, ?2, 'manual', 'completed', 0, 0, 0, 0)",
            args!(id, library),
        )?;
        Ok(())
    }

    fn an_insert_is_found_read_stamped_and_twinned(db: &Db<'_>) -> Result<(), StoreError> {
        let f = facts(MediaKind::Image, Some("Canon"));
        let id = insert(db, &[1; 32], 10, &f, Some(&content(9, 1)), 0, 5)?;
        assert_eq!(find(db, &[1; 32])?, Some((id, false)));
        assert_eq!(find(db, &[2; 32])?, None);
        let got = get(db, id)?.expect("the row");
        assert_eq!(
            (got.size, got.created_at, got.facts.lat),
            (10, 5, Some(1.5))
        );
        assert_eq!(got.content_hash, Some(content(9, 1)));
        assert_eq!(get(db, id + 100)?, None);
        stamp_content(db, id, &content(7, 1))?;
        assert_eq!(
            get(db, id)?.expect("row").content_hash,
            Some(content(9, 1)),
            "same scheme"
        );
        stamp_content(db, id, &content(7, 2))?;
        assert_eq!(get(db, id)?.expect("row").content_hash, Some(content(7, 2)));
        let twin = insert(db, &[2; 32], 11, &f, Some(&content(7, 2)), 0, 5)?;
        assert_ne!(twin, id);
        insert(db, &[3; 32], 12, &f, Some(&content(8, 2)), 0, 5)?;
        db.execute("UPDATE assets SET pending_run = NULL", args!())?;
        let twins: Vec<i64> = content_twin_ids(db)?.iter().map(|t| t.0).collect();
        assert_eq!(twins, vec![id, twin]);
        Ok(())
    }

    fn trash_restore_and_sweep_keep_their_guards(db: &Db<'_>) -> Result<(), StoreError> {
        library(db, 1)?;
        let f = facts(MediaKind::Image, None);
        let shown = insert(db, &[1; 32], 1, &f, None, 0, 0)?;
        let orphan = insert(db, &[2; 32], 1, &f, None, 0, 0)?;
        let copy = insert(db, &[2; 32], 1, &f, None, 0, 0)?;
        file(db, 1, 1, "a.jpg", shown)?;
        assert!(
            !trash_if_orphan(db, shown, TrashReason::Missing, 10)?,
            "a file shows it"
        );
        assert!(trash_if_orphan(db, orphan, TrashReason::Missing, 10)?);
        assert!(
            !trash(db, orphan, TrashReason::User, 11)?,
            "trashed already"
        );
        assert_eq!(
            (state(db, orphan)?, state(db, shown)?),
            (Some(true), Some(false))
        );
        assert!(restore(db, orphan)?);
        assert!(!restore(db, orphan)?, "restored already");
        assert!(trash(db, orphan, TrashReason::User, 20)?);
        assert!(trash(db, copy, TrashReason::User, 30)?);
        assert_eq!(sweep_one(db, orphan, 19)?, None, "not trashed long enough");
        let (seen, swept) = sweep_batch(db, 25, 10)?;
        assert_eq!((seen, swept.assets), (1, 1));
        assert_eq!(
            swept.thumbnails,
            Vec::<[u8; 32]>::new(),
            "the copy keeps it"
        );
        assert_eq!(state(db, orphan)?, None);
        let (_, swept) = sweep_batch(db, 30, 10)?;
        assert_eq!(swept.thumbnails, vec![[2; 32]]);
        trash_adopted(db, shown, 40)?;
        assert_eq!(state(db, shown)?, Some(true));
        assert_eq!(sweep_one(db, shown, 50)?, None, "a present file shows it");
        Ok(())
    }

    fn a_completion_publishes_its_librarys_pending_assets(db: &Db<'_>) -> Result<(), StoreError> {
        library(db, 1)?;
        library(db, 2)?;
        a_run(db, 1, 1)?;
        a_run(db, 2, 1)?;
        a_run(db, 3, 2)?;
        let other = facts(MediaKind::Other, Some("Nikon"));
        let a = insert(
            db,
            &[1; 32],
            1,
            &facts(MediaKind::Image, Some("Canon")),
            None,
            1,
            0,
        )?;
        let b = insert(db, &[2; 32], 1, &other, None, 2, 0)?;
        let c = insert(db, &[3; 32], 1, &facts(MediaKind::Image, None), None, 3, 0)?;
        assert_eq!(
            thumb_heads(db, 0, i64::MAX, 10)?.len(),
            0,
            "nothing published"
        );
        assert_eq!(publish_in_chunks(db, 2, 1)?, Some((a, a)));
        let heads = thumb_heads(db, 0, i64::MAX, 10)?;
        let got: Vec<(i64, bool, MediaKind, Option<u16>)> =
            heads.iter().map(|h| (h.0, h.2, h.3, h.5)).collect();
        assert_eq!(got, vec![(a, false, MediaKind::Image, Some(6))]);
        assert_eq!(heads[0].1, [1; 32]);
        assert_eq!(state(db, c)?, Some(false));
        let cams: Vec<(Option<String>, u64)> = cameras(db)?
            .into_iter()
            .map(|c| (c.make, c.count))
            .collect();
        assert_eq!(
            cams,
            vec![(Some("Canon".into()), 1), (Some("Nikon".into()), 1)]
        );
        assert_eq!(
            live_by_kind(db)?,
            vec![("image".into(), 1), ("other".into(), 1)]
        );
        assert_eq!(publish(db, 3)?, Some((c, c)));
        assert_eq!(publish(db, 3)?, None, "nothing left");
        assert_ne!(b, c);
        Ok(())
    }

    fn a_move_in_flight_holds_its_asset(db: &Db<'_>) -> Result<(), StoreError> {
        library(db, 1)?;
        let f = facts(MediaKind::Image, None);
        let id = insert(db, &[1; 32], 1, &f, None, 0, 0)?;
        assert!(!in_flight(db, id)?);
        let intent = "INSERT INTO trash_intents (asset_id, library_id, action, from_path,
                          to_path, state, created_at, move_id)
                      VALUES (?1, 1, 'trash', ?2, ?2, ?3, 0, 7)";
        db.execute(intent, args!(id, b"a".as_slice(), "done"))?;
        assert!(!in_flight(db, id)?, "a settled intent of an ended move");
        let job = "INSERT INTO jobs (kind, payload, state, run_at, created_at, updated_at)
                   VALUES (?1, ?2, ?3, 0, 0, 0)";
        db.execute(job, args!(MOVE_JOB_KIND, r#"{"move": 8}"#, "queued"))?;
        assert!(!in_flight(db, id)?, "another move's job");
        db.execute(job, args!(MOVE_JOB_KIND, r#"{"move": 7}"#, "queued"))?;
        assert!(in_flight(db, id)?, "its move's job is queued");
        db.execute("UPDATE jobs SET state = 'done'", args!())?;
        assert!(!in_flight(db, id)?);
        db.execute(intent, args!(id, b"b".as_slice(), "pending"))?;
        assert!(in_flight(db, id)?, "a pending intent");
        Ok(())
    }

    fn a_pixel_twin_is_another_live_picture_of_the_same_pixels(
        db: &Db<'_>,
    ) -> Result<(), StoreError> {
        let mut f = facts(MediaKind::Image, None);
        f.orientation = None;
        let hash = content(5, 1);
        let me = insert(db, &[1; 32], 1, &f, Some(&hash), 0, 0)?;
        let twin = insert(db, &[2; 32], 1, &f, Some(&hash), 0, 0)?;
        let look: Pixels = (hash.hash.to_vec(), 1, None);
        assert_eq!(
            pixel_twin(db, WalkKindId::Faces, 3, me, &look)?,
            None,
            "unstamped"
        );
        db.execute(
            "UPDATE assets SET faces_scheme = 3, phash_scheme = 2, phash = 77 WHERE id = ?1",
            args!(twin),
        )?;
        assert_eq!(
            pixel_twin(db, WalkKindId::Faces, 3, me, &look)?,
            Some(Some(twin))
        );
        assert_eq!(
            pixel_twin(db, WalkKindId::Similar, 2, me, &look)?,
            Some(Some(77))
        );
        assert_eq!(
            pixel_twin(db, WalkKindId::Faces, 3, twin, &look)?,
            None,
            "not itself"
        );
        let turned: Pixels = (hash.hash.to_vec(), 1, Some(6));
        assert_eq!(pixel_twin(db, WalkKindId::Faces, 3, me, &turned)?, None);
        assert_eq!(pixel_twin(db, WalkKindId::ContentHash, 3, me, &look)?, None);
        Ok(())
    }

    on_both_schemas!(
        an_insert_is_found_read_stamped_and_twinned,
        trash_restore_and_sweep_keep_their_guards,
        a_completion_publishes_its_librarys_pending_assets,
        a_move_in_flight_holds_its_asset,
        a_pixel_twin_is_another_live_picture_of_the_same_pixels,
    );
}
