//! Faces over HTTP (DESIGN.md section 8): one asset's stored faces (boxes and landmarks in
//! original-image pixels, score, the detector version), re-detection of one live picture
//! through the same operation as `mediadex faces redetect` (`ops::faces::redetect`),
//! and the paged list of assets with faces (the asset list's keyset paging). Holds no SQL.

use super::assets::{DEFAULT_PAGE, MAX_PAGE, PageQuery, get_asset, parse_cursor};
use super::error::ApiError;
use super::{AppState, blocking};
use crate::model::Asset;
use axum::Json;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};

/// One asset's faces, with what a client needs to place the boxes.
#[derive(serde::Serialize)]
pub struct FacesOut {
    asset_id: i64,
    /// The detector version the faces come from; `null` until a detector ran on the asset.
    detector_version: Option<i64>,
    /// The pixels the boxes are in (as stored, before EXIF orientation), and the orientation
    /// still to apply to them (`media::turn`: none for a HEIF), so a client can turn them as
    /// it shows the picture.
    stored_width: Option<u32>,
    stored_height: Option<u32>,
    orientation: Option<u16>,
    trashed: bool,
    /// Each in stored pixels: `x`, `y`, `w`, `h`, `score`, five `landmarks` `[x, y]`.
    faces: Vec<crate::wire::Face>,
}

fn faces_out(a: &Asset) -> FacesOut {
    FacesOut {
        asset_id: a.id,
        detector_version: a.faces_scheme,
        stored_width: a.facts.width,
        stored_height: a.facts.height,
        orientation: crate::media::turn(&a.facts),
        trashed: a.trashed_at.is_some(),
        faces: a.faces.iter().map(crate::wire::Face::from).collect(),
    }
}

/// `GET /api/assets/{id}/faces`: what is stored (a trashed asset's faces are kept until the
/// sweep, and shown with `trashed: true`).
pub async fn of_asset(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<FacesOut>, ApiError> {
    let Path(id) = id?;
    let store = s.ops.store.clone();
    let asset = blocking(move || get_asset(&store, id)).await?;
    Ok(Json(faces_out(&asset)))
}

/// `POST /api/assets/{id}/faces/redetect`: detects the picture's faces now with the current
/// detector (`ops::faces::redetect`) and answers them.
pub async fn redetect(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<FacesOut>, ApiError> {
    let Path(id) = id?;
    let asset = blocking(move || Ok(crate::ops::faces::redetect(&s.ops, id)?)).await?;
    Ok(Json(faces_out(&asset)))
}

#[derive(serde::Serialize)]
pub struct Page {
    items: Vec<FacesOut>,
    next_cursor: Option<String>,
}

/// `GET /api/faces?limit=&cursor=`: live assets with faces, newest taken first, each with
/// its faces; keyset paging as `/api/assets`.
pub async fn list(
    State(s): State<AppState>,
    q: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Json<Page>, ApiError> {
    let Query(q) = q?;
    let limit = super::error::limit(q.limit, DEFAULT_PAGE, MAX_PAGE)?;
    let cursor = q.cursor.as_deref().map(parse_cursor).transpose()?;
    let store = s.ops.store.clone();
    let page = blocking(move || Ok(store.faces_page(cursor.as_ref(), limit)?)).await?;
    Ok(Json(Page {
        next_cursor: page.next.as_ref().map(super::assets::cursor_text),
        items: page.items.iter().map(faces_out).collect(),
    }))
}
