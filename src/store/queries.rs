//! Read queries of the HTTP API and /metrics, a composition: an asset with its parts, each
//! read from its family (paths, tags, Live Photo clip, stack, faces); the live assets or the
//! trash (`LIST`), the paged, filtered asset list (keyset pagination on the
//! `assets_timeline` index of migration 0004; a Live Photo's clip left out, as `LIST`
//! does), byte-identical copies and content twins, the cameras it knows, and the metrics
//! snapshot. Its own statements span tables: `LIST` (assets, and the `stack_hidden!` RAWs
//! of `stacks`), `DUPLICATES` (assets and files), the page's filters (assets, faces, people,
//! tags), and the snapshot's queues (jobs and scan runs) and last scans (libraries and
//! scan runs). Reads only, on the pool;
//! must not write.

use super::assets::NOT_A_SHOWN_CLIP;
use super::db::{Db, Pair, Row, Value};
use super::rows::{ASSET_COLS, asset_from_row, checksum_col, path_from_row};
use super::{
    Store, StoreError, assets, counters, faces, files, motion, people, plan, sidecars, stacks,
};
use crate::model::{
    Asset, AssetCursor, AssetFilter, AssetPage, ContentTwins, Counter, DuplicateGroup, MediaKind,
    MetricsSnapshot, Millis, QueueStats,
};

const LIST: &str = concat!(
    "SELECT ",
    asset_cols!(),
    " FROM assets WHERE (trashed_at IS NOT NULL) = ?1 AND pending_run IS NULL",
    not_a_shown_clip!(),
    " AND (?1 OR NOT ",
    stack_hidden!(),
    ") ORDER BY id"
);

const DUPLICATES: &str = "
    SELECT a.id, a.checksum, a.size, f.id, f.library_id, f.rel_path, f.rel_path_text, f.state
      FROM assets a JOIN files f ON f.asset_id = a.id AND f.state = 'present'
     WHERE a.pending_run IS NULL AND a.id IN (SELECT asset_id FROM files WHERE state = 'present' AND asset_id IS NOT NULL
                     GROUP BY asset_id HAVING count(*) > 1)
     ORDER BY a.id, f.library_id, f.rel_path";

/// The timeline key; written exactly as in the index so that the planner uses it.
const TAKEN_KEY: &str = "coalesce(taken_local, '')";

/// A person in more photos than this is listed from the timeline, each row checked against
/// their faces; one in fewer from their range of `face_people`, then sorted. Either costs at
/// most a few thousand rows for a page of 100 at 1M assets (benches/people-latency.sh).
const CROWD: i64 = 2_000;
/// ...unless they are in so many photos that the timeline finds a page sooner: each of its
/// rows checked against their faces (`page_sql` says where this goes). A scalar subquery,
/// not `EXISTS`: SQLite turns a top-level `EXISTS` into a join, checked after every term of
/// the row (5.9 ms against 2.2 ms a page at 100,000 assets, SQLite 3.54).
const CROWD_PERSON: &str = " (SELECT 1 FROM face_people fp
                             WHERE fp.asset_id = assets.id AND fp.person_id = :person) IS NOT NULL AND";

/// Whether the filter's person (if any) is in more than `CROWD` photos (migration 0028's
/// count, trashed ones included: a bound, not a figure to show).
fn crowd(db: &Db<'_>, filter: &AssetFilter) -> Result<bool, StoreError> {
    let Some(person) = filter.person else {
        return Ok(false);
    };
    Ok(people::face_count(db, person)?.unwrap_or(0) > CROWD)
}

/// The camera filter's term: a substring, which each engine finds with its own function
/// (SQLite's `instr`, PostgreSQL's `strpos`); `LIKE` would read the user's `%` and `_`.
const CAMERA: Pair = Pair {
    sqlite: " AND instr(lower(coalesce(make, '') || ' ' || coalesce(model, '')), lower(:camera)) > 0",
    postgres: " AND strpos(lower(coalesce(make, '') || ' ' || coalesce(model, '')), lower(:camera)) > 0",
};

/// `sql` with each `:name` numbered `?N` in the order of its first use (a name used twice
/// is one parameter), and the values in that order: the page's text is written with names,
/// and `Db` binds numbers (every number from 1 up is used, as PostgreSQL wants).
fn numbered<'v>(sql: &str, mut named: Vec<(&str, Value<'v>)>) -> (String, Vec<Value<'v>>) {
    let mut out = String::with_capacity(sql.len());
    let mut order: Vec<&str> = Vec::new();
    let mut values = Vec::new();
    let mut rest = sql;
    while let Some(at) = rest.find(':') {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        let len = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let name = &tail[..len];
        let n = match order.iter().position(|o| *o == name) {
            Some(i) => i + 1,
            None => {
                order.push(name);
                let value = named.iter().position(|(k, _)| *k == name);
                values.push(value.map_or(Value::Null, |i| named.swap_remove(i).1));
                order.len()
            }
        };
        out.push_str(&format!("?{n}"));
        rest = &tail[len..];
    }
    out.push_str(rest);
    (out, values)
}

/// The list's SQL for this filter: fixed fragments only, every value bound as a parameter.
/// `crowd`: the person filter's person is in many photos (`crowd`).
fn page_sql(filter: &AssetFilter, after: bool, crowd: bool, camera: &'static str) -> String {
    let mut sql = format!("SELECT {ASSET_COLS} FROM assets WHERE");
    // First: SQLite evaluates the terms in this order and reads a row from the table only
    // when a term needs a column the timeline index lacks. Checked first, the person's
    // probe (the index's id alone) skips the row of each of the ~15 timeline rows in 16 that
    // are not theirs; checked last, every one was read (p50 37.7 ms at 1M, not 50 ms at p99).
    if filter.person.is_some() && crowd {
        sql.push_str(CROWD_PERSON);
    }
    sql.push_str(" pending_run IS NULL");
    sql.push_str(NOT_A_SHOWN_CLIP);
    sql.push_str(if filter.trashed {
        " AND trashed_at IS NOT NULL"
    } else {
        concat!(" AND trashed_at IS NULL AND NOT ", stack_hidden!())
    });
    for (on, fragment) in filter_terms(filter, crowd, camera) {
        if on {
            sql.push_str(fragment);
        }
    }
    if after {
        sql.push_str(" AND (coalesce(taken_local, '') < :ctaken OR (coalesce(taken_local, '') = :ctaken AND id < :cid))");
    }
    sql.push_str(&format!(" ORDER BY {TAKEN_KEY} DESC, id DESC LIMIT :limit"));
    sql
}

/// Each term of the filter's WHERE, with whether the filter asks for it.
fn filter_terms(
    filter: &AssetFilter,
    crowd: bool,
    camera: &'static str,
) -> [(bool, &'static str); 14] {
    [
        (filter.kind.is_some(), " AND kind = :kind"),
        // The term of assets_not_image_timeline's WHERE, so that a video or other page seeks.
        (
            filter.kind.is_some_and(|k| k != MediaKind::Image),
            " AND kind <> 'image'",
        ),
        (
            filter.taken_from.is_some(),
            " AND coalesce(taken_local, '') >= :from",
        ),
        (
            filter.taken_before.is_some(),
            " AND coalesce(taken_local, '') < :before",
        ),
        (filter.make.is_some(), " AND make = :make"),
        (filter.model.is_some(), " AND model = :model"),
        (filter.camera.is_some(), camera),
        // 0,0 is where a camera without a fix writes zeros: no place.
        (
            filter.has_gps == Some(true),
            " AND lat IS NOT NULL AND lon IS NOT NULL AND NOT (lat = 0 AND lon = 0)",
        ),
        (
            filter.has_gps == Some(false),
            " AND (lat IS NULL OR lon IS NULL OR (lat = 0 AND lon = 0))",
        ),
        // Kept by migration 0017's triggers: a face of the version the asset was last run with.
        (filter.has_faces == Some(true), " AND has_faces = 1"),
        (filter.has_faces == Some(false), " AND has_faces = 0"),
        (filter.rating_min.is_some(), " AND rating >= :rating"),
        // Driven from the tag's rows (asset_tags_by_tag), which are few, then sorted.
        (
            filter.tag.is_some(),
            " AND id IN (SELECT asset_id FROM asset_tags WHERE tag = :tag)",
        ),
        // Driven from the person's range of face_people_person, as the tag filter is
        // (`CROWD_PERSON` for one in many photos).
        (
            filter.person.is_some() && !crowd,
            " AND id IN (SELECT asset_id FROM face_people WHERE person_id = :person)",
        ),
    ]
}

fn page(
    db: &Db<'_>,
    filter: &AssetFilter,
    after: Option<&AssetCursor>,
    limit: i64,
) -> Result<AssetPage, StoreError> {
    let sql = page_sql(
        filter,
        after.is_some(),
        crowd(db, filter)?,
        db.pick(&CAMERA),
    );
    // One more than asked tells whether a next page exists.
    let named: Vec<(&str, Value<'_>)> = vec![
        ("limit", Value::from(limit + 1)),
        ("kind", Value::from(filter.kind.map(MediaKind::as_str))),
        ("from", Value::from(filter.taken_from.as_deref())),
        ("before", Value::from(filter.taken_before.as_deref())),
        ("make", Value::from(filter.make.as_deref())),
        ("model", Value::from(filter.model.as_deref())),
        ("camera", Value::from(filter.camera.as_deref())),
        ("rating", Value::from(filter.rating_min)),
        ("tag", Value::from(filter.tag.as_deref())),
        ("person", Value::from(filter.person)),
        ("ctaken", Value::from(after.map(|c| c.taken.as_str()))),
        ("cid", Value::from(after.map(|c| c.id))),
    ];
    let (sql, values) = numbered(&sql, named);
    let mut items: Vec<_> = db.all(&sql, &values, asset_from_row)?;
    let next = if items.len() as i64 > limit {
        items.truncate(limit as usize);
        items.last().map(|a| AssetCursor {
            taken: a.facts.taken_local.clone().unwrap_or_default(),
            id: a.id,
        })
    } else {
        None
    };
    Ok(AssetPage { items, next })
}

/// Waiting and running figures per kind: job kinds, and `scan` for scan runs.
const QUEUES: &str = "
    SELECT kind,
           sum(CASE WHEN state = 'queued' THEN 1 ELSE 0 END),
           coalesce(?1 - min(CASE WHEN state = 'queued' THEN created_at END), 0),
           sum(CASE WHEN state = 'running' THEN 1 ELSE 0 END),
           coalesce(?1 - min(CASE WHEN state = 'running' THEN heartbeat_at END), 0),
           coalesce(?1 - min(CASE WHEN state = 'running' THEN updated_at END), 0)
      FROM jobs WHERE state IN ('queued', 'running') GROUP BY kind
    UNION ALL
    SELECT 'scan',
           coalesce(sum(CASE WHEN state = 'accepted' THEN 1 ELSE 0 END), 0),
           coalesce(?1 - min(CASE WHEN state = 'accepted' THEN requested_at END), 0),
           coalesce(sum(CASE WHEN state = 'running' THEN 1 ELSE 0 END), 0),
           coalesce(?1 - min(CASE WHEN state = 'running' THEN heartbeat_at END), 0),
           coalesce(?1 - min(CASE WHEN state = 'running' THEN started_at END), 0)
      FROM scan_runs WHERE state IN ('accepted', 'running')
    ORDER BY 1";
const LAST_SCAN: &str = "
    SELECT l.id, l.name, (SELECT max(finished_at) FROM scan_runs r
                           WHERE r.library_id = l.id AND r.state = 'completed')
      FROM libraries l ORDER BY l.id";
/// Counted by the walks (branch `walks`); 0 until they land.
const SCHEME_RESTARTS: &str = "scheme_restarts";

fn queues(db: &Db<'_>, now: Millis) -> Result<Vec<QueueStats>, StoreError> {
    db.all(QUEUES, args!(now), |r| {
        Ok(QueueStats {
            kind: r.get(0)?,
            waiting: r.get(1)?,
            oldest_waiting_ms: r.get::<i64>(2)?.max(0),
            running: r.get(3)?,
            max_heartbeat_age_ms: r.get::<i64>(4)?.max(0),
            max_lease_age_ms: r.get::<i64>(5)?.max(0),
        })
    })
}

fn snapshot(db: &Db<'_>, now: Millis) -> Result<MetricsSnapshot, StoreError> {
    let mut counters = Counter::ALL
        .iter()
        .map(|c| Ok((c.name().to_string(), counters::value(db, c.name())?)))
        .collect::<Result<Vec<_>, StoreError>>()?;
    counters.push((
        SCHEME_RESTARTS.to_string(),
        counters::value(db, SCHEME_RESTARTS)?,
    ));
    let last_scan = db.all(LAST_SCAN, args!(), |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })?;
    let assets_by_kind = assets::live_by_kind(db)?;
    Ok(MetricsSnapshot {
        queues: queues(db, now)?,
        counters,
        last_scan,
        assets_by_kind,
    })
}

/// An asset's parts, each from its family: its paths, tags, Live Photo clip, stack and
/// faces.
fn fill(db: &Db<'_>, asset: &mut Asset) -> Result<(), StoreError> {
    files::load_paths(db, asset)?;
    sidecars::load_tags(db, asset)?;
    motion::load_clip(db, asset)?;
    asset.stack = stacks::of_asset(db, asset.id)?;
    if let Some(version) = asset.faces_scheme {
        asset.faces = faces::of_asset(db, asset.id, version)?;
    }
    Ok(())
}

fn with_paths(db: &Db<'_>, mut asset: Asset) -> Result<Asset, StoreError> {
    fill(db, &mut asset)?;
    Ok(asset)
}

/// Byte-identical copies: every asset shown by two or more present files, with them.
fn duplicates(db: &Db<'_>) -> Result<Vec<DuplicateGroup>, StoreError> {
    let mut groups: Vec<DuplicateGroup> = Vec::new();
    db.each(DUPLICATES, args!(), |r: &Row<'_>| {
        let asset_id: i64 = r.get(0)?;
        let file = path_from_row(r, 3)?;
        match groups.last_mut() {
            Some(g) if g.asset_id == asset_id => g.files.push(file),
            _ => groups.push(DuplicateGroup {
                asset_id,
                checksum: checksum_col(r, 1)?,
                size: r.get::<i64>(2)? as u64,
                files: vec![file],
            }),
        }
        Ok(())
    })?;
    Ok(groups)
}

impl Store {
    /// One page of the asset list: the filter's assets, newest taken first (undated last),
    /// starting strictly after `after`. At most `limit` items, each with its paths (the
    /// page names each tile by its file) and its faces (an asset is the same on every
    /// surface, `crate::wire`).
    pub fn asset_page(
        &self,
        filter: &AssetFilter,
        after: Option<&AssetCursor>,
        limit: i64,
    ) -> Result<AssetPage, StoreError> {
        self.read(|db| {
            let mut page = page(db, filter, after, limit.max(1))?;
            for asset in &mut page.items {
                fill(db, asset)?;
            }
            Ok(page)
        })
    }

    /// One page of the live assets with at least one face under their detector version,
    /// newest taken first, each with its faces: the asset list's `has_faces` page, then the
    /// faces of each of its (at most `limit`) items on the same connection.
    pub fn faces_page(
        &self,
        after: Option<&AssetCursor>,
        limit: i64,
    ) -> Result<AssetPage, StoreError> {
        let filter = AssetFilter {
            has_faces: Some(true),
            ..AssetFilter::default()
        };
        self.read(|db| {
            let mut page = page(db, &filter, after, limit.max(1))?;
            for asset in &mut page.items {
                motion::load_clip(db, asset)?;
                if let Some(version) = asset.faces_scheme {
                    asset.faces = faces::of_asset(db, asset.id, version)?;
                }
            }
            Ok(page)
        })
    }

    /// The plan SQLite picks for a page query (for the index check in tests).
    pub fn asset_page_plan(
        &self,
        filter: &AssetFilter,
        after: bool,
    ) -> Result<Vec<String>, StoreError> {
        self.read(|db| {
            let sql = page_sql(filter, after, crowd(db, filter)?, CAMERA.sqlite);
            plan(db.lite()?, &numbered(&sql, Vec::new()).0)
        })
    }

    /// The plan SQLite picks for the stack of one asset, which every listed asset reads.
    pub fn asset_stack_plan(&self) -> Result<Vec<String>, StoreError> {
        self.read(|db| plan(db.lite()?, stacks::OF_ASSET.sqlite))
    }

    /// Live assets (`trashed = false`) or the trash (`true`), by id, each with its paths and
    /// stack; a RAW shown by its stack's primary is left out of the live ones.
    pub fn assets(&self, trashed: bool) -> Result<Vec<Asset>, StoreError> {
        self.read(|db| {
            let list: Vec<Asset> = db.all(LIST, args!(trashed), asset_from_row)?;
            list.into_iter().map(|a| with_paths(db, a)).collect()
        })
    }

    /// One asset with its paths, live or trashed.
    pub fn asset(&self, id: i64) -> Result<Option<Asset>, StoreError> {
        self.read(|db| {
            let asset = assets::get(db, id)?;
            asset.map(|a| with_paths(db, a)).transpose()
        })
    }

    /// Byte-identical copies: every asset shown by two or more present files, with them.
    pub fn duplicates(&self) -> Result<Vec<DuplicateGroup>, StoreError> {
        self.read(duplicates)
    }

    /// The same pictures with different metadata: groups of two or more assets sharing a
    /// content hash, each asset with its paths.
    pub fn content_twins(&self) -> Result<Vec<ContentTwins>, StoreError> {
        self.read(|db| {
            let rows = assets::content_twin_ids(db)?;
            let mut groups: Vec<ContentTwins> = Vec::new();
            for (id, hash) in rows {
                let Some(hash) = hash else { continue };
                let Some(asset) = assets::get(db, id)? else {
                    continue;
                };
                let asset = with_paths(db, asset)?;
                match groups.last_mut() {
                    Some(g) if g.content_hash == hash => g.assets.push(asset),
                    _ => groups.push(ContentTwins {
                        content_hash: hash,
                        assets: vec![asset],
                    }),
                }
            }
            Ok(groups)
        })
    }

    /// What /metrics reports from the database, read in one go.
    pub fn metrics_snapshot(&self) -> Result<MetricsSnapshot, StoreError> {
        let now = self.now();
        self.read_snapshot(|db| snapshot(db, now))
    }
}

/// The composition's own statements on both engines' schemas (`fill`'s parts, paths, tags,
/// clip, stack and faces, are their families' and checked there: not run here).
#[cfg(test)]
mod both {
    use super::*;
    use crate::store::asset_fixtures::{asset, file, library};
    use crate::store::db::tests::on_both_schemas;

    fn a_page_holds_the_filters_assets_newest_first_and_goes_on(
        db: &Db<'_>,
    ) -> Result<(), StoreError> {
        for (id, taken, make) in [
            (1, "2024-01-01", "Canon"),
            (2, "2024-02-01", "Nikon"),
            (3, "2024-03-01", "Canon"),
        ] {
            asset(db, id, "image/jpeg", Some(taken))?;
            db.execute(
                "UPDATE assets SET make = ?2, pending_run = NULL WHERE id = ?1",
                args!(id, make),
            )?;
        }
        asset(db, 4, "image/jpeg", None)?;
        db.execute("UPDATE assets SET kind = 'video' WHERE id = 4", args!())?;
        let ids = |p: &AssetPage| p.items.iter().map(|a| a.id).collect::<Vec<_>>();
        let all = page(db, &AssetFilter::default(), None, 2)?;
        assert_eq!(ids(&all), vec![3, 2]);
        let next = page(db, &AssetFilter::default(), all.next.as_ref(), 2)?;
        assert_eq!((ids(&next), next.next), (vec![1, 4], None));
        let canon = AssetFilter {
            camera: Some("canon".into()),
            taken_before: Some("2024-02-15".into()),
            ..AssetFilter::default()
        };
        assert_eq!(ids(&page(db, &canon, None, 10)?), vec![1]);
        let video = AssetFilter {
            kind: Some(MediaKind::Video),
            ..AssetFilter::default()
        };
        assert_eq!(ids(&page(db, &video, None, 10)?), vec![4]);
        let trash = AssetFilter {
            trashed: true,
            ..AssetFilter::default()
        };
        assert_eq!(ids(&page(db, &trash, None, 10)?), Vec::<i64>::new());
        Ok(())
    }

    fn duplicates_and_the_snapshot_read_on_either_engine(db: &Db<'_>) -> Result<(), StoreError> {
        library(db, 1)?;
        asset(db, 1, "image/jpeg", None)?;
        asset(db, 2, "image/jpeg", None)?;
        db.execute("UPDATE assets SET pending_run = NULL", args!())?;
        file(db, 1, 1, "b.jpg", 1)?;
        file(db, 2, 1, "a.jpg", 1)?;
        file(db, 3, 1, "c.jpg", 2)?;
        let groups = duplicates(db)?;
        let paths: Vec<&str> = groups[0]
            .files
            .iter()
            .map(|f| f.rel_path_text.as_str())
            .collect();
        assert_eq!(
            (groups.len(), groups[0].asset_id, paths),
            (1, 1, vec!["a.jpg", "b.jpg"])
        );
        db.execute(
            "INSERT INTO jobs (kind, state, run_at, created_at, updated_at) VALUES ('thumbs', 'queued', 0, 40, 0)",
            args!(),
        )?;
        let s = snapshot(db, 100)?;
        let q: Vec<(&str, i64, i64, i64)> = s
            .queues
            .iter()
            .map(|q| (q.kind.as_str(), q.waiting, q.oldest_waiting_ms, q.running))
            .collect();
        assert_eq!(q, vec![("scan", 0, 0, 0), ("thumbs", 1, 60, 0)]);
        assert_eq!(s.last_scan, vec![(1, "l1".to_string(), None)]);
        assert!(s.counters.iter().all(|(_, v)| *v == 0));
        Ok(())
    }

    on_both_schemas!(
        a_page_holds_the_filters_assets_newest_first_and_goes_on,
        duplicates_and_the_snapshot_read_on_either_engine,
    );
}
