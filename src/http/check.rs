//! `mediadex check` over HTTP: what disagrees between the index and the disk, and the
//! repair (a state-changing request: the security guard in front of every route asks it
//! for the token or the page's own header). Thin over `ops::check`; the shapes are
//! `wire::Check` and `wire::Repaired`.

use super::error::ApiError;
use super::{AppState, blocking};
use crate::wire;
use axum::Json;
use axum::extract::State;

/// `GET /api/check`: every disagreement, in words.
pub async fn check(State(s): State<AppState>) -> Result<Json<wire::Check>, ApiError> {
    let found = blocking(move || Ok(crate::ops::check::check(&s.ops)?)).await?;
    Ok(Json(wire::Check::new(&found)))
}

/// `POST /api/check/repair`: fixes what can be fixed without losing anything; answers
/// what was found and what was done.
pub async fn repair(State(s): State<AppState>) -> Result<Json<wire::Repaired>, ApiError> {
    let repaired = blocking(move || Ok(crate::ops::check::repair(&s.ops)?)).await?;
    Ok(Json(wire::Repaired::new(&repaired)))
}
