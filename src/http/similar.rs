//! Similar photos over HTTP (DESIGN.md section 8): the groups of similar pictures, paged by
//! the first asset id of a group (groups ascend by it), and the pictures similar to one asset,
//! nearest first. Both read the distance the settings give (`similar_distance`) through
//! `ops::similar`. Holds no SQL and no grouping rule.

use super::assets::{DEFAULT_PAGE, MAX_PAGE, PageQuery, bad_cursor};
use super::error::ApiError;
use super::{AppState, blocking};
use crate::wire::{PathForm, Similar, SimilarGroup};
use axum::Json;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};

#[derive(serde::Serialize)]
pub struct Page {
    /// The distance the groups were made with, in bits of 64.
    distance: u32,
    items: Vec<SimilarGroup>,
    /// Pass as `cursor` for the next page; `null` on the last one.
    next_cursor: Option<String>,
}

/// `GET /api/similar?limit=&cursor=`: groups of live similar pictures.
pub async fn list(
    State(s): State<AppState>,
    q: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Json<Page>, ApiError> {
    let Query(q) = q?;
    let limit = super::error::limit(q.limit, DEFAULT_PAGE, MAX_PAGE)?;
    let after = (q.cursor.as_deref())
        .map(|text| text.parse::<i64>().map_err(|_| bad_cursor()))
        .transpose()?;
    let distance = s.ops.similar_distance;
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let page = blocking(move || Ok(crate::ops::similar::page(&s.ops, after, limit)?)).await?;
    Ok(Json(Page {
        distance,
        items: (page.groups.iter())
            .map(|g| SimilarGroup::new(g, PathForm::Files))
            .collect(),
        next_cursor: page.next.map(|id| id.to_string()),
    }))
}

#[derive(serde::Serialize)]
pub struct OfAsset {
    asset_id: i64,
    distance: u32,
    /// Nearest first; empty while the asset has no perceptual hash (a video, a picture not
    /// walked yet, one that cannot be decoded).
    items: Vec<Similar>,
}

/// `GET /api/assets/{id}/similar`: the live pictures similar to one asset.
pub async fn of_asset(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<OfAsset>, ApiError> {
    let Path(id) = id?;
    let distance = s.ops.similar_distance;
    let near = blocking(move || Ok(crate::ops::similar::of_asset(&s.ops, id)?)).await?;
    Ok(Json(OfAsset {
        asset_id: id,
        distance,
        items: near
            .iter()
            .map(|n| Similar::new(n, PathForm::Files))
            .collect(),
    }))
}
