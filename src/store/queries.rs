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
use super::db::{Db, on_lite};
use super::rows::{ASSET_COLS, asset_from_row, checksum_col, path_from_row};
use super::{
    Store, StoreError, assets, counters, faces, files, motion, people, plan, sidecars, stacks,
};
use crate::model::{
    Asset, AssetCursor, AssetFilter, AssetPage, ContentTwins, Counter, DuplicateGroup, MediaKind,
    MetricsSnapshot, Millis, QueueStats,
};
use rusqlite::{Connection, ToSql};

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
fn crowd(conn: &Connection, filter: &AssetFilter) -> Result<bool, StoreError> {
    let Some(person) = filter.person else {
        return Ok(false);
    };
    Ok(people::face_count(conn, person)?.unwrap_or(0) > CROWD)
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
        .query_map(params.as_slice(), |r| on_lite(r, asset_from_row))?
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
const LAST_SCAN: &str = "
    SELECT l.id, l.name, (SELECT max(finished_at) FROM scan_runs r
                           WHERE r.library_id = l.id AND r.state = 'completed')
      FROM libraries l ORDER BY l.id";
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

fn snapshot(conn: &Connection, now: Millis) -> Result<MetricsSnapshot, StoreError> {
    let mut counters = Counter::ALL
        .iter()
        .map(|c| {
            Ok((
                c.name().to_string(),
                counters::value(&super::db::Db::sqlite(conn), c.name())?,
            ))
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    counters.push((
        SCHEME_RESTARTS.to_string(),
        counters::value(&super::db::Db::sqlite(conn), SCHEME_RESTARTS)?,
    ));
    let last_scan = conn
        .prepare_cached(LAST_SCAN)?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    let assets_by_kind = assets::live_by_kind(&Db::sqlite(conn))?;
    Ok(MetricsSnapshot {
        queues: queues(conn, now)?,
        counters,
        last_scan,
        assets_by_kind,
    })
}

/// An asset's parts, each from its family: its paths, tags, Live Photo clip, stack and
/// faces.
fn fill(conn: &Connection, asset: &mut Asset) -> Result<(), StoreError> {
    files::load_paths(conn, asset)?;
    sidecars::load_tags(conn, asset)?;
    motion::load_clip(&Db::sqlite(conn), asset)?;
    asset.stack = stacks::of_asset(&Db::sqlite(conn), asset.id)?;
    if let Some(version) = asset.faces_scheme {
        asset.faces = faces::of_asset(&Db::sqlite(conn), asset.id, version)?;
    }
    Ok(())
}

fn with_paths(conn: &Connection, mut asset: Asset) -> Result<Asset, StoreError> {
    fill(conn, &mut asset)?;
    Ok(asset)
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
        self.read_lite(|conn| {
            let mut page = page(conn, filter, after, limit.max(1))?;
            for asset in &mut page.items {
                fill(conn, asset)?;
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
        self.read_lite(|conn| {
            let mut page = page(conn, &filter, after, limit.max(1))?;
            for asset in &mut page.items {
                motion::load_clip(&Db::sqlite(conn), asset)?;
                if let Some(version) = asset.faces_scheme {
                    asset.faces = faces::of_asset(&Db::sqlite(conn), asset.id, version)?;
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
        self.read_lite(|conn| plan(conn, &page_sql(filter, after, crowd(conn, filter)?)))
    }

    /// The plan SQLite picks for the stack of one asset, which every listed asset reads.
    pub fn asset_stack_plan(&self) -> Result<Vec<String>, StoreError> {
        self.read_lite(|conn| plan(conn, stacks::OF_ASSET.sqlite))
    }

    /// Live assets (`trashed = false`) or the trash (`true`), by id, each with its paths and
    /// stack; a RAW shown by its stack's primary is left out of the live ones.
    pub fn assets(&self, trashed: bool) -> Result<Vec<Asset>, StoreError> {
        self.read_lite(|conn| {
            let list: Vec<Asset> = conn
                .prepare_cached(LIST)?
                .query_map([trashed], |r| on_lite(r, asset_from_row))?
                .collect::<Result<_, _>>()?;
            list.into_iter().map(|a| with_paths(conn, a)).collect()
        })
    }

    /// One asset with its paths, live or trashed.
    pub fn asset(&self, id: i64) -> Result<Option<Asset>, StoreError> {
        self.read_lite(|conn| {
            let asset = assets::get(&Db::sqlite(conn), id)?;
            asset.map(|a| with_paths(conn, a)).transpose()
        })
    }

    /// Byte-identical copies: every asset shown by two or more present files, with them.
    pub fn duplicates(&self) -> Result<Vec<DuplicateGroup>, StoreError> {
        self.read_lite(|conn| {
            let mut stmt = conn.prepare_cached(DUPLICATES)?;
            let mut rows = stmt.query([])?;
            let mut groups: Vec<DuplicateGroup> = Vec::new();
            while let Some(r) = rows.next()? {
                let asset_id: i64 = r.get(0)?;
                let file = on_lite(r, |r| path_from_row(r, 3))?;
                match groups.last_mut() {
                    Some(g) if g.asset_id == asset_id => g.files.push(file),
                    _ => groups.push(DuplicateGroup {
                        asset_id,
                        checksum: on_lite(r, |r| checksum_col(r, 1))?,
                        size: r.get::<_, i64>(2)? as u64,
                        files: vec![file],
                    }),
                }
            }
            Ok(groups)
        })
    }

    /// The same pictures with different metadata: groups of two or more assets sharing a
    /// content hash, each asset with its paths.
    pub fn content_twins(&self) -> Result<Vec<ContentTwins>, StoreError> {
        self.read_lite(|conn| {
            let rows = assets::content_twin_ids(&Db::sqlite(conn))?;
            let mut groups: Vec<ContentTwins> = Vec::new();
            for (id, hash) in rows {
                let Some(hash) = hash else { continue };
                let Some(asset) = assets::get(&Db::sqlite(conn), id)? else {
                    continue;
                };
                let asset = with_paths(conn, asset)?;
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
        self.read_lite(|conn| {
            let tx = conn.unchecked_transaction()?;
            let snapshot = snapshot(&tx, now)?;
            tx.commit()?;
            Ok(snapshot)
        })
    }
}
