//! `/api/libraries`: list, add (an existing folder, canonicalized, its identity recorded for
//! the circuit breaker, and handed to the watcher), remove (the index forgets it; files on
//! disk stay; the watcher lets it go).

use super::error::ApiError;
use super::{AppState, blocking};
use crate::model::Library;
use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::StatusCode;

pub async fn list(State(s): State<AppState>) -> Result<Json<Vec<Library>>, ApiError> {
    let store = s.store.clone();
    Ok(Json(blocking(move || Ok(store.libraries()?)).await?))
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
    let store = s.store.clone();
    let watch = s.watch.clone();
    let library = blocking(move || {
        let path = std::path::PathBuf::from(&req.path);
        let (root, name) = crate::config::library_root(&path, req.name)
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        Ok(crate::app::add_library(&store, &name, &root)?)
    })
    .await?;
    if let Some(watch) = &watch {
        watch.add(library.clone());
    }
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
    let store = s.store.clone();
    let removed_assets = blocking(move || Ok(store.remove_library(id)?)).await?;
    if let Some(watch) = &s.watch {
        watch.remove(id);
    }
    Ok(Json(Removed { id, removed_assets }))
}
