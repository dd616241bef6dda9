//! Live Photos and motion photos in the store (issue 15 item 3): the pairing of a still and
//! its MOV, written in the ingest transaction of whichever of the two is stored second (so
//! it holds whatever the walk's order and batches), a read file's identifier and embedded
//! video brought to the asset it joined, and a still's clip for the asset read APIs.
//!
//! A still (JPEG or HEIF) and a MOV are one Live Photo when both carry the same Apple
//! ContentIdentifier, wherever they are in the index (the identifier names one capture).
//! When only the MOV carries one, they pair by name: one folder, one stem (`IMG_7001.HEIC`,
//! `IMG_7001.MOV`), an Apple still, and capture times within a second. A still with an
//! identifier never pairs by name, so a same-named MOV of another capture stays apart.
//! The clip stays an asset of its own; `queries::LIST` leaves out a clip a live still names.

use super::StoreError;
use super::db::Db;
use crate::model::{Asset, LiveClip, MediaFacts, MediaKind};
use chrono::NaiveDateTime;

/// The live MOV that carries identifier ?1, the oldest first.
const CLIP_BY_IDENTIFIER: &str = "
    SELECT id FROM assets
     WHERE content_identifier = ?1 AND kind = 'video' AND mime = 'video/quicktime'
       AND trashed_at IS NULL
     ORDER BY id LIMIT 1";
/// Still ?1 shows clip ?2, unless it shows a live clip already.
const LINK: &str = "
    UPDATE assets SET live_video_id = ?2
     WHERE id = ?1 AND live_video_id IS DISTINCT FROM ?2
       AND (live_video_id IS NULL
            OR NOT EXISTS (SELECT 1 FROM assets v
                            WHERE v.id = assets.live_video_id AND v.trashed_at IS NULL))";
/// The stills that carry identifier ?1.
const STILLS_BY_IDENTIFIER: &str = "
    SELECT id FROM assets
     WHERE content_identifier = ?1 AND kind = 'image'
       AND (mime = 'image/jpeg' OR mime = 'image/heic' OR mime = 'image/heif')";
/// The present files of library ?1 in one folder whose names start with one stem and a dot
/// (the byte range `dir/stem.` ..< `dir/stem/`, `/` following `.`), with their live assets.
const NAMESAKES: &str = "
    SELECT f.rel_path, a.id, a.kind, a.mime, a.make, a.content_identifier, a.taken_local,
           a.taken_offset_minutes
      FROM files f JOIN assets a ON a.id = f.asset_id
     WHERE f.library_id = ?1 AND f.rel_path >= ?2 AND f.rel_path < ?3
       AND f.state = 'present' AND a.trashed_at IS NULL";
/// A read file's identifier and embedded video, for an asset indexed without them (before
/// migration 14): the same bytes, so the same facts.
const STAMP: &str = "
    UPDATE assets SET content_identifier = ?2, motion_offset = ?3, motion_length = ?4
     WHERE id = ?1 AND (content_identifier IS DISTINCT FROM ?2
                        OR motion_offset IS DISTINCT FROM ?3
                        OR motion_length IS DISTINCT FROM ?4)";
const CLIP: &str = "SELECT mime, duration_ms FROM assets WHERE id = ?1 AND trashed_at IS NULL";

/// Capture times further apart than this are two captures.
const SAME_CAPTURE_MS: i64 = 1000;

/// What pairing needs to know of one side.
struct Side {
    id: i64,
    kind: Option<MediaKind>,
    mime: Option<String>,
    make: Option<String>,
    identifier: Option<String>,
    /// The capture's wall time in milliseconds, and its UTC offset in minutes when known.
    taken: Option<(i64, Option<i32>)>,
}

impl Side {
    fn of(id: i64, f: &MediaFacts) -> Side {
        Side {
            id,
            kind: f.kind,
            mime: f.mime.clone(),
            make: f.make.clone(),
            identifier: f.content_identifier.clone(),
            taken: instant(f.taken_local.as_deref(), f.taken_offset_minutes),
        }
    }

    fn still(&self) -> bool {
        self.kind == Some(MediaKind::Image)
            && matches!(
                self.mime.as_deref(),
                Some("image/jpeg" | "image/heic" | "image/heif")
            )
    }

    fn clip(&self) -> bool {
        self.kind == Some(MediaKind::Video) && self.mime.as_deref() == Some("video/quicktime")
    }
}

fn instant(local: Option<&str>, offset: Option<i32>) -> Option<(i64, Option<i32>)> {
    let parsed = NaiveDateTime::parse_from_str(local?, "%Y-%m-%dT%H:%M:%S%.f").ok()?;
    Some((parsed.and_utc().timestamp_millis(), offset))
}

/// Whether two capture times are one capture: as instants when both know their offset,
/// else as wall times.
fn same_capture(a: Option<(i64, Option<i32>)>, b: Option<(i64, Option<i32>)>) -> bool {
    let utc = |wall: i64, m: i32| wall - i64::from(m) * 60_000;
    match (a, b) {
        (Some((a, Some(m))), Some((b, Some(n)))) => {
            (utc(a, m) - utc(b, n)).abs() <= SAME_CAPTURE_MS
        }
        (Some((a, _)), Some((b, _))) => (a - b).abs() <= SAME_CAPTURE_MS,
        _ => false,
    }
}

fn apple(make: Option<&str>) -> bool {
    make.is_some_and(|m| m.eq_ignore_ascii_case("apple"))
}

/// The name rule, the same whichever of the two was stored second: an Apple still without
/// an identifier, a MOV with one, capture times within a second (as instants when both
/// know their offset, else as wall times).
fn pair_by_name(still: &Side, clip: &Side) -> bool {
    still.still()
        && clip.clip()
        && apple(still.make.as_deref())
        && still.identifier.is_none()
        && clip.identifier.is_some()
        && same_capture(still.taken, clip.taken)
}

/// The other files of `rel_path`'s folder and stem, each with its asset.
fn namesakes(db: &Db<'_>, library_id: i64, rel_path: &[u8]) -> Result<Vec<Side>, StoreError> {
    let Some((lo, hi)) = super::stems::stem_range(rel_path) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    let range = args!(library_id, lo.as_slice(), hi.as_slice());
    db.each(NAMESAKES, range, |r| {
        let path: Vec<u8> = r.get(0)?;
        // `IMG_1.x.MOV` is in the range of `IMG_1.HEIC` but has another stem.
        let ext = &path[lo.len()..];
        if path == rel_path || ext.contains(&b'.') || ext.contains(&b'/') {
            return Ok(());
        }
        let f = MediaFacts {
            kind: r
                .get::<Option<String>>(2)?
                .as_deref()
                .and_then(MediaKind::parse),
            mime: r.get(3)?,
            make: r.get(4)?,
            content_identifier: r.get(5)?,
            taken_local: r.get(6)?,
            taken_offset_minutes: r.get(7)?,
            ..MediaFacts::default()
        };
        out.push(Side::of(r.get(1)?, &f));
        Ok(())
    })?;
    Ok(out)
}

/// Whether a file read with `facts` can pair at all, asked before its `Side` is built (a
/// date parse and three copies): a still or a clip with an identifier, or an Apple still
/// with a namesake (`namesake`) to pair with by name.
fn may_pair(f: &MediaFacts, namesake: bool) -> bool {
    f.content_identifier.is_some()
        || (namesake && apple(f.make.as_deref()) && f.taken_local.is_some())
}

fn link(db: &Db<'_>, still: i64, clip: i64) -> Result<(), StoreError> {
    db.execute(LINK, args!(still, clip))?;
    Ok(())
}

/// Pairs the file at `rel_path`, just stored as asset `asset_id` with `facts`, with the
/// partner stored before it, if any; part of the file's ingest transaction. Costs nothing
/// for a file that can be no partner (not a JPEG/HEIF still, nor a MOV with an identifier),
/// one indexed lookup for one with an identifier, one folder-and-stem range otherwise.
/// `rel_path` is `None` when the file's folder holds no other name of its stem.
pub(super) fn pair(
    db: &Db<'_>,
    library_id: i64,
    rel_path: Option<&[u8]>,
    asset_id: i64,
    facts: &MediaFacts,
) -> Result<(), StoreError> {
    if !may_pair(facts, rel_path.is_some()) {
        return Ok(());
    }
    let me = Side::of(asset_id, facts);
    if me.still() {
        if let Some(id) = &me.identifier {
            let clip: Option<i64> = db.optional(CLIP_BY_IDENTIFIER, args!(id), |r| r.get(0))?;
            return clip.map_or(Ok(()), |clip| link(db, asset_id, clip));
        }
        let Some(rel_path) = rel_path.filter(|_| me.taken.is_some() && apple(me.make.as_deref()))
        else {
            return Ok(());
        };
        let clip = namesakes(db, library_id, rel_path)?
            .into_iter()
            .filter(|other| pair_by_name(&me, other))
            .min_by_key(|other| other.id);
        return clip.map_or(Ok(()), |clip| link(db, asset_id, clip.id));
    }
    let Some(id) = me.identifier.as_ref().filter(|_| me.clip()) else {
        return Ok(());
    };
    let stills: Vec<i64> = db.all(STILLS_BY_IDENTIFIER, args!(id), |r| r.get(0))?;
    for still in stills {
        link(db, still, asset_id)?;
    }
    for still in rel_path.map_or(Ok(Vec::new()), |p| namesakes(db, library_id, p))? {
        if pair_by_name(&still, &me) {
            link(db, still.id, asset_id)?;
        }
    }
    Ok(())
}

/// Brings a read file's identifier and embedded video to the asset it joined, when the
/// asset lacks them (indexed before migration 14). Nothing for a file that has neither.
pub(super) fn stamp(db: &Db<'_>, asset_id: i64, facts: &MediaFacts) -> Result<(), StoreError> {
    if facts.content_identifier.is_none() && facts.embedded_video.is_none() {
        return Ok(());
    }
    let video = facts.embedded_video;
    db.execute(
        STAMP,
        args!(
            asset_id,
            facts.content_identifier.as_deref(),
            video.map(|v| v.offset as i64),
            video.map(|v| v.length as i64)
        ),
    )?;
    Ok(())
}

/// The still's clip with its type and duration; none while the clip is in the trash (the
/// clip is then listed as an asset of its own).
pub(super) fn load_clip(db: &Db<'_>, asset: &mut Asset) -> Result<(), StoreError> {
    let Some(id) = asset.live_clip.as_ref().map(|c| c.asset_id) else {
        return Ok(());
    };
    asset.live_clip = db.optional(CLIP, args!(id), |r| {
        Ok(LiveClip {
            asset_id: id,
            mime: r.get(0)?,
            duration_ms: r.get(1)?,
        })
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stem_range_holds_the_folder_and_stem_only() {
        let (lo, hi) = crate::store::stems::stem_range(b"a/IMG_1.HEIC").unwrap();
        assert_eq!(
            (lo.as_slice(), hi.as_slice()),
            (&b"a/IMG_1."[..], &b"a/IMG_1/"[..])
        );
        let (lo, _) = crate::store::stems::stem_range(b"IMG_1.MP.jpg").unwrap();
        assert_eq!(lo, b"IMG_1.MP.");
        assert_eq!(crate::store::stems::stem_range(b"a/.hidden"), None);
        assert_eq!(crate::store::stems::stem_range(b"a/noext"), None);
    }

    #[test]
    fn capture_times_compare_as_instants_when_both_know_their_offset() {
        let still = instant(Some("2021-08-14T12:00:00.25"), Some(120));
        let clip = instant(Some("2021-08-14T10:00:00"), Some(0));
        assert!(same_capture(still, clip), "the corpus's pair: 0.25 s apart");
        let later = instant(Some("2021-08-14T10:00:01.30"), Some(0));
        assert!(!same_capture(still, later), "1.05 s apart");
        let wall = instant(Some("2021-08-14T12:00:00"), None);
        assert!(same_capture(still, wall), "no offset: wall times");
        assert!(!same_capture(wall, clip), "wall times two hours apart");
        assert_eq!(instant(Some("garbage"), None), None);
    }
}

#[cfg(test)]
mod both {
    use super::*;
    use crate::model::EmbeddedVideo;
    use crate::store::asset_fixtures::{file, library};
    use crate::store::db::tests::on_both_schemas;

    const WHEN: &str = "2021-08-14T12:00:00";

    fn facts(kind: MediaKind, mime: &str, identifier: Option<&str>) -> MediaFacts {
        MediaFacts {
            kind: Some(kind),
            mime: Some(mime.into()),
            make: Some("Apple".into()),
            content_identifier: identifier.map(Into::into),
            taken_local: Some(WHEN.into()),
            ..MediaFacts::default()
        }
    }

    /// Asset `id` as the ingest would store `f`.
    fn stored(db: &Db<'_>, id: i64, f: &MediaFacts) -> Result<(), StoreError> {
        let kind = f.kind.map(|k| {
            if k == MediaKind::Video {
                "video"
            } else {
                "image"
            }
        });
        db.execute(
            "INSERT INTO assets (id, checksum, size, created_at, kind, mime, make,
                                 content_identifier, taken_local, duration_ms)
             VALUES (?1, ?2, 1, 0, ?3, ?4, ?5, ?6, ?7, 1500)",
            args!(
                id,
                [id as u8; 32],
                kind,
                f.mime.as_deref(),
                f.make.as_deref(),
                f.content_identifier.as_deref(),
                f.taken_local.as_deref()
            ),
        )?;
        Ok(())
    }

    fn shows(db: &Db<'_>, still: i64) -> Result<Option<i64>, StoreError> {
        let sql = "SELECT live_video_id FROM assets WHERE id = ?1";
        db.one(sql, args!(still), |r| r.get(0))
    }

    fn a_still_and_its_mov_pair_by_identifier_in_either_order(
        db: &Db<'_>,
    ) -> Result<(), StoreError> {
        let still = facts(MediaKind::Image, "image/heic", Some("ID-1"));
        let clip = facts(MediaKind::Video, "video/quicktime", Some("ID-1"));
        stored(db, 1, &still)?;
        stored(db, 2, &clip)?;
        pair(db, 1, None, 2, &clip)?;
        assert_eq!(shows(db, 1)?, Some(2), "the clip stored second pairs");
        stored(db, 3, &still)?;
        pair(db, 1, None, 3, &still)?;
        assert_eq!(shows(db, 3)?, Some(2), "the still stored second pairs");
        stored(db, 4, &clip)?;
        pair(db, 1, None, 4, &clip)?;
        assert_eq!(shows(db, 1)?, Some(2), "a still keeps its live clip");
        db.execute(
            "UPDATE assets SET trashed_at = 1, trash_reason = 'user' WHERE id = 2",
            args!(),
        )?;
        pair(db, 1, None, 4, &clip)?;
        assert_eq!(shows(db, 1)?, Some(4), "a trashed clip is replaced");
        Ok(())
    }

    fn an_apple_still_pairs_by_name_with_a_mov_of_its_stem(db: &Db<'_>) -> Result<(), StoreError> {
        library(db, 1)?;
        let still = facts(MediaKind::Image, "image/heic", None);
        let clip = facts(MediaKind::Video, "video/quicktime", Some("ID-2"));
        stored(db, 1, &still)?;
        stored(db, 2, &clip)?;
        stored(db, 3, &clip)?;
        file(db, 1, 1, "a/IMG_1.HEIC", 1)?;
        file(db, 3, 1, "a/IMG_1.x.MOV", 3)?;
        pair(db, 1, Some(b"a/IMG_1.x.MOV"), 3, &clip)?;
        assert_eq!(shows(db, 1)?, None, "another stem");
        file(db, 2, 1, "a/IMG_1.MOV", 2)?;
        pair(db, 1, Some(b"a/IMG_1.MOV"), 2, &clip)?;
        assert_eq!(shows(db, 1)?, Some(2));
        db.execute("UPDATE assets SET live_video_id = NULL", args!())?;
        pair(db, 1, Some(b"a/IMG_1.HEIC"), 1, &still)?;
        assert_eq!(shows(db, 1)?, Some(2), "the still stored second pairs too");
        Ok(())
    }

    fn a_stamp_brings_the_facts_and_a_clip_loads(db: &Db<'_>) -> Result<(), StoreError> {
        let mut still = facts(MediaKind::Image, "image/jpeg", None);
        stored(db, 1, &still)?;
        stored(db, 2, &facts(MediaKind::Video, "video/quicktime", None))?;
        still.content_identifier = Some("ID-3".into());
        still.embedded_video = Some(EmbeddedVideo {
            offset: 10,
            length: 20,
        });
        stamp(db, 1, &still)?;
        let sql = "SELECT content_identifier, motion_offset, motion_length FROM assets
                    WHERE id = ?1";
        let read = |r: &crate::store::db::Row<'_>| {
            Ok((
                r.get::<Option<String>>(0)?,
                r.get::<Option<i64>>(1)?,
                r.get::<Option<i64>>(2)?,
            ))
        };
        assert_eq!(
            db.one(sql, args!(1), read)?,
            (Some("ID-3".into()), Some(10), Some(20))
        );
        let mut asset = crate::store::asset_fixtures::model(1);
        asset.live_clip = Some(LiveClip {
            asset_id: 2,
            mime: None,
            duration_ms: None,
        });
        load_clip(db, &mut asset)?;
        let clip = asset.live_clip.clone().expect("a clip");
        assert_eq!(
            (clip.mime.as_deref(), clip.duration_ms),
            (Some("video/quicktime"), Some(1500))
        );
        db.execute(
            "UPDATE assets SET trashed_at = 1, trash_reason = 'user' WHERE id = 2",
            args!(),
        )?;
        load_clip(db, &mut asset)?;
        assert_eq!(asset.live_clip, None, "a trashed clip is none");
        Ok(())
    }

    on_both_schemas!(
        a_still_and_its_mov_pair_by_identifier_in_either_order,
        an_apple_still_pairs_by_name_with_a_mov_of_its_stem,
        a_stamp_brings_the_facts_and_a_clip_loads,
    );
}
