//! `/api/assets` and `/api/duplicates`: the paged asset list with its filters (keyset
//! pagination; the cursor is opaque to clients), one asset with its paths, trash and
//! restore through `crate::trash` (journaled file moves), and byte-identical duplicates. A
//! path is its text, with its exact bytes in base64 beside it where the text is lossy.

use super::error::ApiError;
use super::{AppState, blocking};
use crate::model::{Asset, AssetCursor, AssetFilter, AssetPath, DuplicateGroup, MediaKind, hex};
use crate::store::Store;
use axum::Json;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};

pub const DEFAULT_PAGE: i64 = 100;
pub const MAX_PAGE: i64 = 500;

/// The JSON shape of an asset, the same fields as `mediadex assets --json` plus `library_id`
/// per path and the trash details.
#[derive(serde::Serialize)]
pub struct AssetOut {
    id: i64,
    paths: Vec<PathOut>,
    size: u64,
    checksum: String,
    kind: Option<&'static str>,
    mime: Option<String>,
    width: Option<u32>,
    height: Option<u32>,
    stored_width: Option<u32>,
    stored_height: Option<u32>,
    taken_at: Option<String>,
    make: Option<String>,
    model: Option<String>,
    lat: Option<f64>,
    lon: Option<f64>,
    orientation: Option<u16>,
    duration_ms: Option<i64>,
    video_codec: Option<String>,
    created_at: i64,
    trashed: bool,
    trashed_at: Option<i64>,
    trash_reason: Option<&'static str>,
}

#[derive(serde::Serialize)]
pub struct PathOut {
    library_id: i64,
    path: String,
    /// Only where `path` is lossy (not UTF-8, or a backslash shown as `/`): the exact bytes
    /// in base64, the rule of `mediadex assets --json`'s `paths_bytes`.
    #[serde(skip_serializing_if = "Option::is_none")]
    path_bytes: Option<String>,
    state: &'static str,
}

fn path_out(p: &AssetPath) -> PathOut {
    PathOut {
        library_id: p.library_id,
        path: p.rel_path_text.clone(),
        path_bytes: p.bytes_if_lossy(),
        state: p.state.as_str(),
    }
}

pub fn asset_out(a: Asset) -> AssetOut {
    let paths = a.paths.iter().map(path_out).collect();
    let f = a.facts;
    AssetOut {
        id: a.id,
        paths,
        size: a.size,
        checksum: hex(&a.checksum),
        kind: f.kind.map(MediaKind::as_str),
        width: f.display_width.or(f.width),
        height: f.display_height.or(f.height),
        stored_width: f.width,
        stored_height: f.height,
        taken_at: f.taken_at(),
        mime: f.mime,
        make: f.make,
        model: f.model,
        lat: f.lat,
        lon: f.lon,
        orientation: f.orientation,
        duration_ms: f.duration_ms,
        video_codec: f.video_codec,
        created_at: a.created_at,
        trashed: a.trashed_at.is_some(),
        trashed_at: a.trashed_at,
        trash_reason: a.trash_reason.map(|r| r.as_str()),
    }
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    kind: Option<String>,
    from: Option<String>,
    before: Option<String>,
    make: Option<String>,
    model: Option<String>,
    has_gps: Option<String>,
    has_faces: Option<String>,
    trashed: Option<String>,
    limit: Option<i64>,
    cursor: Option<String>,
}

#[derive(serde::Serialize)]
pub struct Page {
    items: Vec<AssetOut>,
    /// Pass as `cursor` for the next page; `null` on the last one.
    next_cursor: Option<String>,
}

fn flag(name: &str, value: Option<&str>) -> Result<Option<bool>, ApiError> {
    match value {
        None => Ok(None),
        Some("true" | "1") => Ok(Some(true)),
        Some("false" | "0") => Ok(Some(false)),
        Some(other) => Err(ApiError::bad_request(format!(
            "{name} must be true or false, not {other:?}"
        ))),
    }
}

/// A local wall time or a prefix of one: `2024`, `2024-05`, `2024-05-01`,
/// `2024-05-01T10:30:00`.
fn local_time(name: &str, value: Option<String>) -> Result<Option<String>, ApiError> {
    let Some(v) = value else { return Ok(None) };
    let ok = v.len() <= 23
        && v.len() >= 4
        && v.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'T' | b':' | b'.'))
        && v.as_bytes()[..4].iter().all(u8::is_ascii_digit);
    if !ok {
        return Err(ApiError::bad_request(format!(
            "{name} must be a local date or time like 2024-05-01 or 2024-05-01T10:30:00"
        )));
    }
    Ok(Some(v))
}

fn filter(q: ListQuery) -> Result<(AssetFilter, Option<AssetCursor>, i64), ApiError> {
    let kind = match q.kind.as_deref() {
        None => None,
        Some(k) => Some(
            MediaKind::parse(k)
                .ok_or_else(|| ApiError::bad_request("kind must be image, video or other"))?,
        ),
    };
    let limit = super::error::limit(q.limit, DEFAULT_PAGE, MAX_PAGE)?;
    let cursor = q.cursor.as_deref().map(parse_cursor).transpose()?;
    let filter = AssetFilter {
        trashed: flag("trashed", q.trashed.as_deref())?.unwrap_or(false),
        kind,
        taken_from: local_time("from", q.from)?,
        taken_before: local_time("before", q.before)?,
        make: q.make,
        model: q.model,
        has_gps: flag("has_gps", q.has_gps.as_deref())?,
        has_faces: flag("has_faces", q.has_faces.as_deref())?,
    };
    Ok((filter, cursor, limit))
}

/// The cursor as sent: `<id>_<taken>`.
pub(super) fn cursor_text(c: &AssetCursor) -> String {
    format!("{}_{}", c.id, c.taken)
}

pub(super) fn parse_cursor(text: &str) -> Result<AssetCursor, ApiError> {
    let bad = || ApiError::bad_request("cursor is not one this server handed out");
    let (id, taken) = text.split_once('_').ok_or_else(bad)?;
    Ok(AssetCursor {
        taken: taken.to_string(),
        id: id.parse().map_err(|_| bad())?,
    })
}

pub async fn list(
    State(s): State<AppState>,
    q: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Page>, ApiError> {
    let Query(q) = q?;
    let (filter, cursor, limit) = filter(q)?;
    let store = s.store.clone();
    let page = blocking(move || Ok(store.asset_page(&filter, cursor.as_ref(), limit)?)).await?;
    Ok(Json(Page {
        next_cursor: page.next.as_ref().map(cursor_text),
        items: page.items.into_iter().map(asset_out).collect(),
    }))
}

pub(super) fn get_asset(store: &Store, id: i64) -> Result<Asset, ApiError> {
    store
        .asset(id)?
        .ok_or_else(|| ApiError::not_found(format!("no asset {id}")))
}

pub async fn one(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<AssetOut>, ApiError> {
    let Path(id) = id?;
    let store = s.store.clone();
    let asset = blocking(move || get_asset(&store, id)).await?;
    Ok(Json(asset_out(asset)))
}

pub async fn trash(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<AssetOut>, ApiError> {
    let Path(id) = id?;
    move_asset(s, id, crate::trash::trash).await
}

pub async fn restore(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<AssetOut>, ApiError> {
    let Path(id) = id?;
    let moves = crate::trash::MoveConfig {
        faces: s.restore_faces.clone(),
        ..crate::trash::MoveConfig::default()
    };
    let store = s.store.clone();
    let asset = blocking(move || {
        crate::trash::restore_with(&store, id, &moves, &crate::trash::NoMoveHooks)?;
        get_asset(&store, id)
    })
    .await?;
    Ok(Json(asset_out(asset)))
}

type Mover = fn(&Store, i64) -> Result<crate::model::MoveOutcome, crate::trash::TrashError>;

async fn move_asset(s: AppState, id: i64, mover: Mover) -> Result<Json<AssetOut>, ApiError> {
    let store = s.store.clone();
    let asset = blocking(move || {
        mover(&store, id)?;
        get_asset(&store, id)
    })
    .await?;
    Ok(Json(asset_out(asset)))
}

#[derive(serde::Serialize)]
pub struct DuplicateOut {
    asset_id: i64,
    checksum: String,
    size: u64,
    paths: Vec<PathOut>,
}

pub async fn duplicates(State(s): State<AppState>) -> Result<Json<Vec<DuplicateOut>>, ApiError> {
    let store = s.store.clone();
    let groups = blocking(move || Ok(store.duplicates()?)).await?;
    let out = groups
        .into_iter()
        .map(|g: DuplicateGroup| DuplicateOut {
            asset_id: g.asset_id,
            checksum: hex(&g.checksum),
            size: g.size,
            paths: g.files.iter().map(path_out).collect(),
        })
        .collect();
    Ok(Json(out))
}
