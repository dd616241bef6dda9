//! Scan runs over HTTP: request (`ops::scans::request` through admission, the scope checked
//! by `ops::Scope::parse`, with an optional `Idempotency-Key`: the same key and request
//! replays the original run, the same key with another request is 409), cancel (one write
//! for the run's library, so a successor reclaim just made of the run is cancelled with
//! it), force-release, the run history with each run's reasons, and one run's problems,
//! paged.

use super::error::ApiError;
use super::{AppState, blocking};
use crate::model::{Provenance, ScanRun, Trigger};
use crate::ops;
use crate::store::{Admission, Store};
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use std::collections::BTreeMap;

/// The longest idempotency key accepted.
const MAX_KEY: usize = 200;

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ScanBody {
    #[serde(default)]
    scope: String,
    #[serde(default)]
    force: bool,
}

/// A run with its reason counts (`new`, `size`, `unchanged`, ...).
#[derive(serde::Serialize)]
pub struct RunOut {
    #[serde(flatten)]
    run: ScanRun,
    reasons: BTreeMap<&'static str, i64>,
}

#[derive(serde::Serialize)]
pub struct Requested {
    admission: Admission,
    run: RunOut,
}

fn with_reasons(store: &Store, run: ScanRun) -> Result<RunOut, ApiError> {
    let reasons = store
        .run_reasons(run.id)?
        .into_iter()
        .map(|(p, n): (Provenance, i64)| (p.as_str(), n))
        .collect();
    Ok(RunOut { run, reasons })
}

fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let key = value
        .to_str()
        .ok()
        .filter(|k| !k.is_empty() && k.len() <= MAX_KEY && k.bytes().all(|b| b.is_ascii_graphic()))
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "Idempotency-Key must be 1 to {MAX_KEY} visible ASCII characters"
            ))
        })?;
    Ok(Some(key.to_string()))
}

pub async fn request(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<Requested>), ApiError> {
    let Path(library_id) = id?;
    let key = idempotency_key(&headers)?;
    let body: ScanBody = if body.iter().all(u8::is_ascii_whitespace) {
        ScanBody::default()
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| ApiError::bad_request(format!("invalid scan request: {e}")))?
    };
    let ask = ops::scans::Ask {
        scope: ops::Scope::parse(&body.scope).map_err(ops::Error::from)?,
        force: body.force,
        trigger: Trigger::Api,
        key,
    };
    let (run, admission) = blocking(move || {
        let (run, admission) = ops::scans::request(&s.ops, library_id, &ask)?;
        Ok((with_reasons(&s.ops.store, run)?, admission))
    })
    .await?;
    let status = match admission {
        Admission::Replayed => StatusCode::OK,
        Admission::Accepted | Admission::Coalesced => StatusCode::ACCEPTED,
    };
    Ok((status, Json(Requested { admission, run })))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryQuery {
    library: Option<i64>,
    limit: Option<i64>,
}

pub async fn history(
    State(s): State<AppState>,
    q: Result<Query<HistoryQuery>, QueryRejection>,
) -> Result<Json<Vec<RunOut>>, ApiError> {
    let Query(q) = q?;
    let limit = super::error::limit(q.limit, 50, 1000)?;
    let store = s.ops.store.clone();
    let runs = blocking(move || {
        let runs = store.scan_runs(q.library, limit)?;
        runs.into_iter().map(|r| with_reasons(&store, r)).collect()
    })
    .await?;
    Ok(Json(runs))
}

pub async fn one(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<RunOut>, ApiError> {
    let Path(id) = id?;
    let store = s.ops.store.clone();
    let run = blocking(move || {
        let run = store
            .scan_run(id)?
            .ok_or(ops::Error::NotFound(ops::Thing::ScanRun, id))?;
        with_reasons(&store, run)
    })
    .await?;
    Ok(Json(run))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProblemsQuery {
    after: Option<i64>,
    limit: Option<i64>,
}

/// One page of a run's problems; `next_cursor` is the `after` of the next page.
#[derive(serde::Serialize)]
pub struct ProblemsPage {
    items: Vec<crate::wire::Problem>,
    next_cursor: Option<i64>,
    /// How many problems the run kept.
    total: i64,
    /// The run kept as many as it may: it may have met more (its progress counts them).
    truncated: bool,
}

pub async fn problems(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    q: Result<Query<ProblemsQuery>, QueryRejection>,
) -> Result<Json<ProblemsPage>, ApiError> {
    let (Path(id), Query(q)) = (id?, q?);
    let limit = super::error::limit(q.limit, 100, 1000)?;
    let after = q.after.unwrap_or(0);
    if after < 0 {
        return Err(ApiError::bad_request("after must not be negative"));
    }
    let page = blocking(move || Ok(ops::scans::problems(&s.ops, id, after, limit)?)).await?;
    let items: Vec<_> = (page.items.iter())
        .map(|(seq, p)| crate::wire::Problem::of(*seq, p))
        .collect();
    let next_cursor = items.last().map(|p| p.seq).filter(|&seq| seq < page.total);
    Ok(Json(ProblemsPage {
        items,
        next_cursor,
        total: page.total,
        truncated: page.truncated,
    }))
}

/// Cancels the run's library's waiting and running runs in one write (`ops::scans::cancel_run`):
/// answers the run itself, or the successor that carried its work.
pub async fn cancel(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<RunOut>, ApiError> {
    let Path(id) = id?;
    end(s, id, ops::scans::cancel_run).await
}

pub async fn release(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Json<RunOut>, ApiError> {
    let Path(id) = id?;
    end(s, id, ops::scans::release_run).await
}

/// Runs `op` on run `id`; answers the run it ended, with its reasons.
async fn end(
    s: AppState,
    id: i64,
    op: fn(&ops::Services, i64) -> Result<ScanRun, ops::Error>,
) -> Result<Json<RunOut>, ApiError> {
    let run = blocking(move || with_reasons(&s.ops.store, op(&s.ops, id)?)).await?;
    Ok(Json(run))
}
