//! `POST /api/keep`: keep one asset of a group of duplicates or similar pictures and trash the
//! others, through `ops::trash::keep` (one leased move per trashed asset). Answers the kept
//! asset and the others as they are now, in the wire contract's form.

use super::error::ApiError;
use super::{AppState, blocking};
use crate::wire::{Asset as AssetOut, PathForm};
use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeepBody {
    keep: i64,
    trash: Vec<i64>,
}

#[derive(serde::Serialize)]
pub struct KeptOut {
    kept: AssetOut,
    trashed: Vec<AssetOut>,
}

/// At most this many assets are trashed by one request: a group is a handful of pictures.
const MAX_OTHERS: usize = 500;

pub async fn keep(
    State(s): State<AppState>,
    body: Result<Json<KeepBody>, JsonRejection>,
) -> Result<Json<KeptOut>, ApiError> {
    let Json(body) = body?;
    if body.trash.is_empty() || body.trash.len() > MAX_OTHERS {
        return Err(ApiError::bad_request(format!(
            "trash must name 1 to {MAX_OTHERS} assets besides the one kept"
        )));
    }
    let kept =
        blocking(move || Ok(crate::ops::trash::keep(&s.ops, body.keep, &body.trash)?)).await?;
    Ok(Json(KeptOut {
        kept: AssetOut::new(&kept.kept, PathForm::Files),
        trashed: (kept.trashed.iter())
            .map(|a| AssetOut::new(a, PathForm::Files))
            .collect(),
    }))
}
