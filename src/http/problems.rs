//! `GET /api/problems`: the problems still open (`ops::scans::open_problems`), of every
//! library or of one: what a person has to fix, which the run list alone does not tell (a
//! run lists only what it met, and an unchanged broken file is not read again).

use super::error::ApiError;
use super::{AppState, blocking};
use crate::ops;
use crate::wire::OpenProblem;
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenQuery {
    library: Option<i64>,
    limit: Option<i64>,
}

/// The first `limit` open problems, in library and path order, and how many there are.
#[derive(serde::Serialize)]
pub struct OpenPage {
    items: Vec<OpenProblem>,
    total: i64,
}

pub async fn open(
    State(s): State<AppState>,
    q: Result<Query<OpenQuery>, QueryRejection>,
) -> Result<Json<OpenPage>, ApiError> {
    let Query(q) = q?;
    let limit = super::error::limit(q.limit, 200, 1000)?;
    let (items, total) =
        blocking(move || Ok(ops::scans::open_problems(&s.ops, q.library, limit)?)).await?;
    Ok(Json(OpenPage {
        items: items.iter().map(OpenProblem::of).collect(),
        total,
    }))
}
