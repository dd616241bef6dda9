//! `/api/jobs`: the job queue (walk chains, thumbnail batches and trash moves; the walks
//! have their own view in `walks.rs` too), one job, cancel and force-release.

use super::error::ApiError;
use super::{AppState, blocking};
use crate::model::{Job, Target};
use crate::store::{Store, StoreError};
use axum::Json;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;

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
    let store = s.store.clone();
    Ok(Json(blocking(move || Ok(store.jobs(limit)?)).await?))
}

fn get_job(store: &Store, id: i64) -> Result<Job, ApiError> {
    store
        .job(id)?
        .ok_or_else(|| ApiError::not_found(format!("no job {id}")))
}

pub async fn one(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<Job>, ApiError> {
    let Path(id) = id?;
    let store = s.store.clone();
    Ok(Json(blocking(move || get_job(&store, id)).await?))
}

async fn end(
    s: AppState,
    id: i64,
    act: fn(&Store, i64) -> Result<bool, StoreError>,
    what: &'static str,
) -> Result<Json<Job>, ApiError> {
    let store = s.store.clone();
    let job = blocking(move || {
        get_job(&store, id)?;
        if !act(&store, id)? {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "finished",
                format!("job {id} is not waiting or running; nothing to {what}"),
            ));
        }
        get_job(&store, id)
    })
    .await?;
    (s.wake)();
    Ok(Json(job))
}

pub async fn cancel(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<Job>, ApiError> {
    let Path(id) = id?;
    end(s, id, |st, id| st.cancel(Target::Job, id), "cancel").await
}

pub async fn release(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<Job>, ApiError> {
    let Path(id) = id?;
    end(
        s,
        id,
        |st, id| st.release_unowned(Target::Job, id),
        "release",
    )
    .await
}
