//! `/api/libraries`: list, add (`ops::library::add`: an existing folder, canonicalized, its
//! identity recorded for the circuit breaker, the watcher told), remove (the index forgets
//! it; files on disk stay; the watcher lets it go).

use super::error::ApiError;
use super::{AppState, blocking};
use crate::model::Library;
use crate::ops;
use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::StatusCode;

pub async fn list(State(s): State<AppState>) -> Result<Json<Vec<Library>>, ApiError> {
    Ok(Json(blocking(move || Ok(s.ops.store.libraries()?)).await?))
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
) -> Result<(StatusCode, Json<Library>), ApiError> {
    let Json(req) = body?;
    let library = blocking(move || {
        let new = ops::library::NewLibrary::check(std::path::Path::new(&req.path), req.name)?;
        Ok(ops::library::add(&s.ops, &new)?)
    })
    .await?;
    Ok((StatusCode::CREATED, Json(library)))
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
