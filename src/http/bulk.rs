//! `POST /api/assets/trash` and `POST /api/assets/restore` with `{"ids": [...]}`: the page's
//! selection moved at once, each asset by the same leased move as its own
//! `/api/assets/{id}/trash` (`ops::trash::each`), never around it. Answers each asset moved
//! as it is now and each one that was not with the error its own request would have met, so
//! the page can say "12 moved, 1 could not be" and undo exactly the 12.

use super::error::ApiError;
use super::{AppState, blocking};
use crate::ops;
use crate::wire::{Asset as AssetOut, PathForm};
use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;

/// At most this many assets in one request (as `POST /api/keep`).
pub const MAX_IDS: usize = 500;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BulkBody {
    ids: Vec<i64>,
}

/// An asset that was not moved, and why (the `error` body its own request would answer).
#[derive(serde::Serialize)]
pub struct NotMoved {
    id: i64,
    code: &'static str,
    message: String,
}

#[derive(serde::Serialize)]
pub struct BulkOut {
    moved: Vec<AssetOut>,
    failed: Vec<NotMoved>,
}

pub async fn trash(
    State(s): State<AppState>,
    body: Result<Json<BulkBody>, JsonRejection>,
) -> Result<Json<BulkOut>, ApiError> {
    each(s, body, ops::trash::trash).await
}

pub async fn restore(
    State(s): State<AppState>,
    body: Result<Json<BulkBody>, JsonRejection>,
) -> Result<Json<BulkOut>, ApiError> {
    each(s, body, ops::trash::restore).await
}

async fn each(
    s: AppState,
    body: Result<Json<BulkBody>, JsonRejection>,
    op: ops::trash::Move,
) -> Result<Json<BulkOut>, ApiError> {
    let Json(body) = body?;
    if body.ids.is_empty() || body.ids.len() > MAX_IDS {
        return Err(ApiError::bad_request(format!(
            "ids must name 1 to {MAX_IDS} assets"
        )));
    }
    let outcomes = blocking(move || Ok(ops::trash::each(&s.ops, &body.ids, op))).await?;
    let mut out = BulkOut {
        moved: Vec::new(),
        failed: Vec::new(),
    };
    for (id, outcome) in outcomes {
        match outcome {
            Ok(asset) => out.moved.push(AssetOut::new(&asset, PathForm::Files)),
            Err(e) => {
                let e = ApiError::from(e);
                out.failed.push(NotMoved {
                    id,
                    code: e.code.as_str(),
                    message: e.message,
                });
            }
        }
    }
    Ok(Json(out))
}
