//! `POST /api/keep`: keep one asset of a group of duplicates or similar pictures and trash the
//! others, through `ops::trash::keep` (one leased move per trashed asset); or, for a
//! byte-identical group (one asset, several files), keep one `file` of the asset and trash
//! its other files, through `ops::trash::keep_file` (one leased move of copies). Answers the
//! kept asset and the others as they are now, in the wire contract's form.

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
    #[serde(default)]
    trash: Vec<i64>,
    file: Option<KeepFile>,
}

/// The file of the kept asset to keep: its library-relative path, and its library when
/// several hold that path.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeepFile {
    path: String,
    library_id: Option<i64>,
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
    if let Some(file) = body.file {
        if !body.trash.is_empty() {
            return Err(ApiError::bad_request("give either trash or file, not both"));
        }
        let kept = blocking(move || {
            let ops = &s.ops;
            Ok(crate::ops::trash::keep_file(
                ops,
                body.keep,
                file.library_id,
                &file.path,
            )?)
        })
        .await?;
        let kept = AssetOut::new(&kept, PathForm::Files);
        return Ok(Json(KeptOut {
            kept,
            trashed: vec![],
        }));
    }
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
