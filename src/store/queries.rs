//! Read queries of the HTTP API and /metrics: the paged, filtered asset list (keyset
//! pagination on the `assets_timeline` index of migration 0004; a Live Photo's clip left out,
//! as `assets::LIST` does), the cameras it knows, and the metrics snapshot.
//! Reads only, on the pool; must not write.

use super::assets::{ASSET_COLS, NOT_A_SHOWN_CLIP, asset_from_row, load_paths};
use super::{Store, StoreError};
use crate::model::{
    AssetCursor, AssetFilter, AssetPage, Camera, Counter, MediaKind, MetricsSnapshot, Millis,
    QueueStats,
};
use rusqlite::{Connection, OptionalExtension, ToSql};

/// The timeline key; written exactly as in the index so that the planner uses it.
const TAKEN_KEY: &str = "coalesce(taken_local, '')";

/// A person in more photos than this is listed from the timeline, each row checked against
/// their faces; one in fewer from their range of `face_people`, then sorted. Either costs at
/// most a few thousand rows for a page of 100 at 1M assets (benches/people-latency.sh).
const CROWD: i64 = 2_000;
const PERSON_FACES: &str = "SELECT faces FROM people WHERE id = ?1";
/// ...unless they are in so many photos that the timeline finds a page sooner: each of its
/// rows checked against their faces (`page_sql` says where this goes). A scalar subquery,
/// not `EXISTS`: SQLite turns a top-level `EXISTS` into a join, checked after every term of
/// the row (5.9 ms against 2.2 ms a page at 100,000 assets, SQLite 3.54).
const CROWD_PERSON: &str = " (SELECT 1 FROM face_people fp
                             WHERE fp.asset_id = assets.id AND fp.person_id = :person) IS NOT NULL AND";

/// Whether the filter's person (if any) is in more than `CROWD` photos (migration 0028's
/// count, trashed ones included: a bound, not a figure to show).
fn crowd(conn: &Connection, filter: &AssetFilter) -> Result<bool, StoreError> {
    let Some(person) = filter.person else {
        return Ok(false);
    };
    let faces: Option<i64> = conn
        .prepare_cached(PERSON_FACES)?
        .query_row([person], |r| r.get(0))
        .optional()?;
    Ok(faces.unwrap_or(0) > CROWD)
}

/// The list's SQL for this filter: fixed fragments only, every value bound as a parameter.
/// `crowd`: the person filter's person is in many photos (`crowd`).
fn page_sql(filter: &AssetFilter, after: bool, crowd: bool) -> String {
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
    for (on, fragment) in filter_terms(filter, crowd) {
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
fn filter_terms(filter: &AssetFilter, crowd: bool) -> [(bool, &'static str); 14] {
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
        (
            filter.camera.is_some(),
            " AND instr(lower(coalesce(make, '') || ' ' || coalesce(model, '')), lower(:camera)) > 0",
        ),
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

/// The lines of `EXPLAIN QUERY PLAN` for `sql`, every parameter NULL.
pub(super) fn plan(conn: &Connection, sql: &str) -> Result<Vec<String>, StoreError> {
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
    let nulls = vec![rusqlite::types::Null; stmt.parameter_count()];
    let rows = stmt.query_map(rusqlite::params_from_iter(nulls), |r| r.get(3))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

fn page(
    conn: &Connection,
    filter: &AssetFilter,
    after: Option<&AssetCursor>,
    limit: i64,
) -> Result<AssetPage, StoreError> {
    let sql = page_sql(filter, after.is_some(), crowd(conn, filter)?);
    let kind = filter.kind.map(MediaKind::as_str);
    // One more than asked tells whether a next page exists.
    let fetch = limit + 1;
    let optional: [(&str, Option<&dyn ToSql>); 11] = [
        (":kind", kind.as_ref().map(|k| k as &dyn ToSql)),
        (":from", filter.taken_from.as_ref().map(|v| v as &dyn ToSql)),
        (
            ":before",
            filter.taken_before.as_ref().map(|v| v as &dyn ToSql),
        ),
        (":make", filter.make.as_ref().map(|v| v as &dyn ToSql)),
        (":model", filter.model.as_ref().map(|v| v as &dyn ToSql)),
        (":camera", filter.camera.as_ref().map(|v| v as &dyn ToSql)),
        (
            ":rating",
            filter.rating_min.as_ref().map(|v| v as &dyn ToSql),
        ),
        (":tag", filter.tag.as_ref().map(|v| v as &dyn ToSql)),
        (":person", filter.person.as_ref().map(|v| v as &dyn ToSql)),
        (":ctaken", after.map(|c| &c.taken as &dyn ToSql)),
        (":cid", after.map(|c| &c.id as &dyn ToSql)),
    ];
    let mut params: Vec<(&str, &dyn ToSql)> = vec![(":limit", &fetch)];
    params.extend(optional.into_iter().filter_map(|(n, v)| v.map(|v| (n, v))));
    let mut items: Vec<_> = conn
        .prepare_cached(&sql)?
        .query_map(params.as_slice(), asset_from_row)?
        .collect::<Result<_, _>>()?;
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
           sum(state = 'queued'), coalesce(?1 - min(CASE WHEN state = 'queued' THEN created_at END), 0),
           sum(state = 'running'), coalesce(?1 - min(CASE WHEN state = 'running' THEN heartbeat_at END), 0),
           coalesce(?1 - min(CASE WHEN state = 'running' THEN updated_at END), 0)
      FROM jobs WHERE state IN ('queued', 'running') GROUP BY kind
    UNION ALL
    SELECT 'scan',
           coalesce(sum(state = 'accepted'), 0), coalesce(?1 - min(CASE WHEN state = 'accepted' THEN requested_at END), 0),
           coalesce(sum(state = 'running'), 0), coalesce(?1 - min(CASE WHEN state = 'running' THEN heartbeat_at END), 0),
           coalesce(?1 - min(CASE WHEN state = 'running' THEN started_at END), 0)
      FROM scan_runs WHERE state IN ('accepted', 'running')
    ORDER BY 1";
/// The cameras of the live, published assets, the most used first.
const CAMERAS: &str = "
    SELECT make, model, count(*) FROM assets
     WHERE pending_run IS NULL AND trashed_at IS NULL AND (make IS NOT NULL OR model IS NOT NULL)
     GROUP BY make, model ORDER BY count(*) DESC, make, model LIMIT 500";
const COUNTER: &str = "SELECT value FROM counters WHERE name = ?1";
const LAST_SCAN: &str = "
    SELECT l.id, l.name, (SELECT max(finished_at) FROM scan_runs r
                           WHERE r.library_id = l.id AND r.state = 'completed')
      FROM libraries l ORDER BY l.id";
/// Kept by migration 0017's triggers (a count of a million rows at each scrape was 418 ms):
/// an asset is counted when it is published, trashed, restored or deleted (it is inserted
/// pending, and migration 0018 dropped the insert trigger that never counted one).
const BY_KIND: &str = "SELECT kind, n FROM live_kinds WHERE n > 0 ORDER BY kind";
/// Counted by the walks (branch `walks`); 0 until they land.
const SCHEME_RESTARTS: &str = "scheme_restarts";

fn queues(conn: &Connection, now: Millis) -> Result<Vec<QueueStats>, StoreError> {
    Ok(conn
        .prepare_cached(QUEUES)?
        .query_map([now], |r| {
            Ok(QueueStats {
                kind: r.get(0)?,
                waiting: r.get(1)?,
                oldest_waiting_ms: r.get::<_, i64>(2)?.max(0),
                running: r.get(3)?,
                max_heartbeat_age_ms: r.get::<_, i64>(4)?.max(0),
                max_lease_age_ms: r.get::<_, i64>(5)?.max(0),
            })
        })?
        .collect::<Result<_, _>>()?)
}

fn counter(conn: &Connection, name: &str) -> Result<i64, StoreError> {
    let mut stmt = conn.prepare_cached(COUNTER)?;
    let mut rows = stmt.query([name])?;
    Ok(match rows.next()? {
        Some(r) => r.get(0)?,
        None => 0,
    })
}

fn snapshot(conn: &Connection, now: Millis) -> Result<MetricsSnapshot, StoreError> {
    let mut counters = Counter::ALL
        .iter()
        .map(|c| Ok((c.name().to_string(), counter(conn, c.name())?)))
        .collect::<Result<Vec<_>, StoreError>>()?;
    counters.push((SCHEME_RESTARTS.to_string(), counter(conn, SCHEME_RESTARTS)?));
    let last_scan = conn
        .prepare_cached(LAST_SCAN)?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    let assets_by_kind = conn
        .prepare_cached(BY_KIND)?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    Ok(MetricsSnapshot {
        queues: queues(conn, now)?,
        counters,
        last_scan,
        assets_by_kind,
    })
}

impl Store {
    /// Every camera of the live assets with its count (at most 500, the most used first).
    pub fn cameras(&self) -> Result<Vec<Camera>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(CAMERAS)?;
            let rows = stmt.query_map([], |r| {
                Ok(Camera {
                    make: r.get(0)?,
                    model: r.get(1)?,
                    count: r.get::<_, i64>(2)?.max(0) as u64,
                })
            })?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }

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
        self.read(|conn| {
            let mut page = page(conn, filter, after, limit.max(1))?;
            for asset in &mut page.items {
                load_paths(conn, asset)?;
                super::sidecars::load_tags(conn, asset)?;
                super::motion::load_clip(conn, asset)?;
                asset.stack = super::stacks::of_asset(conn, asset.id)?;
                if let Some(version) = asset.faces_scheme {
                    asset.faces = super::faces::of_asset(conn, asset.id, version)?;
                }
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
        self.read(|conn| {
            let mut page = page(conn, &filter, after, limit.max(1))?;
            for asset in &mut page.items {
                super::motion::load_clip(conn, asset)?;
                if let Some(version) = asset.faces_scheme {
                    asset.faces = super::faces::of_asset(conn, asset.id, version)?;
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
        self.read(|conn| plan(conn, &page_sql(filter, after, crowd(conn, filter)?)))
    }

    /// The plan SQLite picks for the stack of one asset, which every listed asset reads.
    pub fn asset_stack_plan(&self) -> Result<Vec<String>, StoreError> {
        self.read(|conn| plan(conn, super::stacks::OF_ASSET))
    }

    /// What /metrics reports from the database, read in one go.
    pub fn metrics_snapshot(&self) -> Result<MetricsSnapshot, StoreError> {
        let now = self.now();
        self.read(|conn| {
            let tx = conn.unchecked_transaction()?;
            let snapshot = snapshot(&tx, now)?;
            tx.commit()?;
            Ok(snapshot)
        })
    }
}
