//! `/api/libraries`: list (each with whether its folder can be scanned now), add
//! (`ops::library::add`: an existing, readable folder, canonicalized, its identity recorded
//! for the circuit breaker, the watcher told), remove (the index forgets it; files on disk
//! stay; the watcher lets it go).

use super::error::ApiError;
use super::{AppState, blocking};
use crate::{ops, wire};
use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::StatusCode;

pub async fn list(State(s): State<AppState>) -> Result<Json<Vec<wire::Library>>, ApiError> {
    let listed = blocking(move || Ok(ops::library::list(&s.ops.store)?)).await?;
    let out = listed
        .into_iter()
        .map(|(l, why)| wire::Library::of(&l, why));
    Ok(Json(out.collect()))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewLibrary {
    path: String,
    name: Option<String>,
}

pub async fn add(
    State(s): State<AppState>,
    body: Result<Json<NewLibrary>, JsonRejection>,
) -> Result<(StatusCode, Json<wire::Library>), ApiError> {
    let Json(req) = body?;
    let library = blocking(move || {
        let new = ops::library::NewLibrary::check(std::path::Path::new(&req.path), req.name)?;
        Ok(ops::library::add(&s.ops, &new)?.0)
    })
    .await?;
    Ok((StatusCode::CREATED, Json(wire::Library::of(&library, None))))
}

#[derive(serde::Serialize)]
pub struct Removed {
    id: i64,
    /// Assets no other library shows, forgotten with it.
    removed_assets: u64,
}

pub async fn remove(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<Removed>, ApiError> {
    let Path(id) = id?;
    let removed_assets = blocking(move || Ok(ops::library::remove(&s.ops, id)?)).await?;
    Ok(Json(Removed { id, removed_assets }))
}
