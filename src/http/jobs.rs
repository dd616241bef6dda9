//! `/api/jobs`: the job queue (walk chains, thumbnail batches and trash moves; the walks
//! have their own view in `walks.rs` too), one job, cancel and force-release (`ops::jobs`).

use super::error::ApiError;
use super::{AppState, blocking};
use crate::model::Job;
use crate::ops;
use crate::store::Store;
use axum::Json;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    limit: Option<i64>,
}

pub async fn list(
    State(s): State<AppState>,
    q: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Vec<Job>>, ApiError> {
    let Query(q) = q?;
    let limit = super::error::limit(q.limit, 50, 1000)?;
    let store = s.ops.store.clone();
    Ok(Json(blocking(move || Ok(store.jobs(limit)?)).await?))
}

fn get_job(store: &Store, id: i64) -> Result<Job, ApiError> {
    Ok(store
        .job(id)?
        .ok_or(ops::Error::NotFound(ops::Thing::Job, id))?)
}

pub async fn one(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<Job>, ApiError> {
    let Path(id) = id?;
    let store = s.ops.store.clone();
    Ok(Json(blocking(move || get_job(&store, id)).await?))
}

pub async fn cancel(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<Job>, ApiError> {
    let Path(id) = id?;
    Ok(Json(
        blocking(move || Ok(ops::jobs::cancel(&s.ops, id)?)).await?,
    ))
}

pub async fn release(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<Job>, ApiError> {
    let Path(id) = id?;
    Ok(Json(
        blocking(move || Ok(ops::jobs::release(&s.ops, id)?)).await?,
    ))
}
