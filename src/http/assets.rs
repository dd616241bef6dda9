//! `/api/assets` and `/api/duplicates`: the paged asset list with its filters (keyset
//! pagination; the cursor is opaque to clients), one asset with its paths and its
//! `preview` (a picture, or why a placeholder: `media::unmade`), trash and
//! restore through `ops::trash` (journaled file moves), the cameras (`/api/cameras`), and both
//! kinds of duplicates. The
//! JSON is the wire contract's (`crate::wire`, what the CLI's `--json` gives too) with one
//! object per file: its text, its exact bytes in base64 beside it where the text is lossy.
//! The page sizes, the `limit`/`cursor` query and the bad-cursor error are the other paged
//! lists' too (`/api/faces`, `/api/similar`).

use super::error::ApiError;
use super::{AppState, blocking};
use crate::model::{Asset, AssetCursor, AssetFilter, Camera, MediaKind};
use crate::store::Store;
use crate::wire::{Asset as AssetOut, AssetDetail, DuplicateGroup, PathForm, Preview};
use axum::Json;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};

pub const DEFAULT_PAGE: i64 = 100;
pub const MAX_PAGE: i64 = 500;

/// The query of a list paged by `limit` and `cursor` alone (`/api/faces`, `/api/similar`).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    pub limit: Option<i64>,
    pub cursor: Option<String>,
}

/// A cursor that no page of this server handed out.
pub(super) fn bad_cursor() -> ApiError {
    ApiError::bad_request("cursor is not one this server handed out")
}

/// The API's asset: the wire contract's, with one object per file.
pub fn asset_out(a: Asset) -> AssetOut {
    AssetOut::new(&a, PathForm::Files)
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    kind: Option<String>,
    from: Option<String>,
    before: Option<String>,
    make: Option<String>,
    model: Option<String>,
    camera: Option<String>,
    has_gps: Option<String>,
    has_faces: Option<String>,
    rating_min: Option<String>,
    tag: Option<String>,
    person: Option<i64>,
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

/// `rating_min`: an XMP rating, -1 (rejected) to 5.
fn rating_min(value: Option<&str>) -> Result<Option<i8>, ApiError> {
    let Some(v) = value else { return Ok(None) };
    match v.parse::<i8>() {
        Ok(r) if (-1..=5).contains(&r) => Ok(Some(r)),
        _ => Err(ApiError::bad_request(format!(
            "rating_min must be a rating from -1 to 5, not {v:?}"
        ))),
    }
}

/// `tag`: one tag, matched whole and without ASCII case.
fn tag(value: Option<String>) -> Result<Option<String>, ApiError> {
    match value {
        Some(t) if t.trim().is_empty() => Err(ApiError::bad_request("tag must not be empty")),
        other => Ok(other),
    }
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
        camera: q.camera.filter(|c| !c.trim().is_empty()),
        has_gps: flag("has_gps", q.has_gps.as_deref())?,
        has_faces: flag("has_faces", q.has_faces.as_deref())?,
        rating_min: rating_min(q.rating_min.as_deref())?,
        tag: tag(q.tag)?,
        person: q.person,
    };
    Ok((filter, cursor, limit))
}

/// The cursor as sent: `<id>_<taken>`.
pub(super) fn cursor_text(c: &AssetCursor) -> String {
    format!("{}_{}", c.id, c.taken)
}

pub(super) fn parse_cursor(text: &str) -> Result<AssetCursor, ApiError> {
    let (id, taken) = text.split_once('_').ok_or_else(bad_cursor)?;
    Ok(AssetCursor {
        taken: taken.to_string(),
        id: id.parse().map_err(|_| bad_cursor())?,
    })
}

pub async fn list(
    State(s): State<AppState>,
    q: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Page>, ApiError> {
    let Query(q) = q?;
    let (filter, cursor, limit) = filter(q)?;
    let store = s.ops.store.clone();
    let page = blocking(move || Ok(store.asset_page(&filter, cursor.as_ref(), limit)?)).await?;
    Ok(Json(Page {
        next_cursor: page.next.as_ref().map(cursor_text),
        items: page.items.into_iter().map(asset_out).collect(),
    }))
}

pub(super) fn get_asset(store: &Store, id: i64) -> Result<Asset, ApiError> {
    Ok(store
        .asset(id)?
        .ok_or(crate::ops::Error::NotFound(crate::ops::Thing::Asset, id))?)
}

pub async fn one(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<AssetDetail>, ApiError> {
    let Path(id) = id?;
    let (store, thumbs) = (s.ops.store.clone(), s.thumbs.clone());
    let (asset, why) = blocking(move || {
        let asset = get_asset(&store, id)?;
        let why = super::media::unmade(&store, &thumbs, &asset)?;
        Ok((asset, why))
    })
    .await?;
    let preview = Preview::of(why.map(|w| (w.code(), w.reason())));
    Ok(Json(AssetDetail {
        asset: asset_out(asset),
        preview,
    }))
}

pub async fn trash(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<AssetOut>, ApiError> {
    let Path(id) = id?;
    let asset = blocking(move || Ok(crate::ops::trash::trash(&s.ops, id)?)).await?;
    Ok(Json(asset_out(asset)))
}

/// Restores the asset (`ops::trash::restore`, which queues its faces).
pub async fn restore(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<AssetOut>, ApiError> {
    let Path(id) = id?;
    let asset = blocking(move || Ok(crate::ops::trash::restore(&s.ops, id)?)).await?;
    Ok(Json(asset_out(asset)))
}

/// The cameras of the live assets, for the camera filter's suggestions.
pub async fn cameras(State(s): State<AppState>) -> Result<Json<Vec<Camera>>, ApiError> {
    let store = s.ops.store.clone();
    Ok(Json(blocking(move || Ok(store.cameras()?)).await?))
}

/// Both kinds of twin, as `mediadex duplicates --json` gives them.
pub async fn duplicates(State(s): State<AppState>) -> Result<Json<Vec<DuplicateGroup>>, ApiError> {
    let store = s.ops.store.clone();
    let (groups, twins) =
        blocking(move || Ok((store.duplicates()?, store.content_twins()?))).await?;
    Ok(Json(DuplicateGroup::all(&groups, &twins, PathForm::Files)))
}
