//! `/api/walks`: the walk chains of this server (DESIGN.md section 7) — each kind's record,
//! rollback flag, live chain and progress; start (`ops::walks::start`: one chain per kind
//! through the unique index) and force-release (`ops::walks::release`: the queue's fenced
//! `release_unowned`, as `/api/jobs/{id}/release`). Also the JSON shape of a walk that the
//! `walk` server-sent events carry. Holds no SQL.

use super::error::ApiError;
use super::{AppState, blocking};
use crate::model::{JobState, Millis, WalkKindId};
use crate::ops;
use crate::store::{Store, StoreError};
use crate::walks::{WalkPeer, WalkState};
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;

/// One walk kind as the API and the `walk` events show it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct WalkOut {
    pub kind: &'static str,
    /// The scheme this server walks under.
    pub current_scheme: i64,
    pub record: RecordOut,
    /// A newer mediadex walked this database under a higher scheme and none is live now (a
    /// rollback).
    pub rollback: bool,
    /// Another mediadex walking this kind under another scheme, live on this database (two
    /// versions share it): its scheme, lease owner and pid.
    pub other: Option<WalkPeer>,
    /// `none` (no chain, not walked to the end under the current scheme), `queued`,
    /// `running` or `done` (no chain, walked to the end).
    pub state: &'static str,
    pub job_id: Option<i64>,
    /// The chain re-visits stamped assets too (`restart`).
    pub restart: Option<bool>,
    /// The last asset id the chain committed.
    pub cursor: Option<i64>,
    /// Assets visited, and visited plus still to visit.
    pub done: Option<u64>,
    pub total: Option<u64>,
    pub lease_owner: Option<String>,
    /// Milliseconds since the holder's last heartbeat (while running).
    pub heartbeat_age_ms: Option<Millis>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RecordOut {
    /// The last scheme a walk covered to the end (0: never).
    pub scheme: i64,
    /// The highest scheme any mediadex has run on this database.
    pub seen: i64,
    pub completed_at: Option<Millis>,
}

/// The API shape of a walk's state at `now`.
pub fn walk_out(w: &WalkState, now: Millis) -> WalkOut {
    let chain = w.chain.as_ref();
    let running = chain.is_some_and(|c| c.state == JobState::Running);
    let state = match chain {
        Some(c) if c.state == JobState::Running => "running",
        Some(_) => "queued",
        None if w.scheme >= w.current && w.completed_at.is_some() => "done",
        None => "none",
    };
    WalkOut {
        kind: w.kind.as_str(),
        current_scheme: w.current,
        record: RecordOut {
            scheme: w.scheme,
            seen: w.seen,
            completed_at: w.completed_at,
        },
        rollback: w.rollback(),
        other: w.other.clone(),
        state,
        job_id: chain.map(|c| c.job_id),
        restart: chain.map(|c| c.restart),
        cursor: chain.map(|c| c.cursor),
        done: chain.map(|c| c.done),
        total: chain.map(|c| c.done + u64::try_from(c.left).unwrap_or(0)),
        lease_owner: chain
            .filter(|_| running)
            .and_then(|c| c.lease_owner.clone()),
        heartbeat_age_ms: chain
            .filter(|_| running)
            .and_then(|c| c.heartbeat_at)
            .map(|at| (now - at).max(0)),
    }
}

/// The state of one kind this server runs.
pub fn one_state(store: &Store, kind: WalkKindId, scheme: i64) -> Result<WalkOut, StoreError> {
    let state = crate::walks::state(store, kind, scheme)?;
    Ok(walk_out(&state, store.now()))
}

pub async fn list(State(s): State<AppState>) -> Result<Json<Vec<WalkOut>>, ApiError> {
    let out = blocking(move || {
        let now = s.ops.store.now();
        let states = ops::walks::states(&s.ops)?;
        Ok(states.iter().map(|w| walk_out(w, now)).collect())
    })
    .await?;
    Ok(Json(out))
}

pub async fn one(
    State(s): State<AppState>,
    name: Result<Path<String>, PathRejection>,
) -> Result<Json<WalkOut>, ApiError> {
    let Path(name) = name?;
    let (kind, scheme) = ops::walks::kind(&s.ops, &name)?;
    let store = s.ops.store.clone();
    Ok(Json(
        blocking(move || Ok(one_state(&store, kind, scheme)?)).await?,
    ))
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct StartQuery {
    restart: Option<bool>,
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct StartBody {
    #[serde(default)]
    restart: bool,
}

/// `POST /api/walks/{kind}/start`: the live chain (200), or a new one from the beginning
/// (202). `restart` (body or query) replaces a live chain with one that re-visits every
/// asset, stamped or not.
pub async fn start(
    State(s): State<AppState>,
    name: Result<Path<String>, PathRejection>,
    q: Result<Query<StartQuery>, QueryRejection>,
    body: Bytes,
) -> Result<(StatusCode, Json<WalkOut>), ApiError> {
    let Path(name) = name?;
    let Query(q) = q?;
    let (kind, scheme) = ops::walks::kind(&s.ops, &name)?;
    let body: StartBody = if body.iter().all(u8::is_ascii_whitespace) {
        StartBody::default()
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| ApiError::bad_request(format!("invalid walk request: {e}")))?
    };
    let restart = body.restart || q.restart.unwrap_or(false);
    let (created, out) = blocking(move || {
        let (created, state) = ops::walks::start(&s.ops, kind, scheme, restart)?;
        Ok((created, walk_out(&state, s.ops.store.now())))
    })
    .await?;
    let status = if created {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(out)))
}

/// `POST /api/walks/{kind}/release`: puts the running chain row back under a new
/// generation; its holder's later writes land nothing, and a worker claims it again.
pub async fn release(
    State(s): State<AppState>,
    name: Result<Path<String>, PathRejection>,
) -> Result<Json<WalkOut>, ApiError> {
    let Path(name) = name?;
    let (kind, scheme) = ops::walks::kind(&s.ops, &name)?;
    let out = blocking(move || {
        let state = ops::walks::release(&s.ops, kind, scheme)?;
        Ok(walk_out(&state, s.ops.store.now()))
    })
    .await?;
    Ok(Json(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::walks::WalkPeer;

    #[test]
    fn a_live_mediadex_of_another_scheme_shows_and_is_no_rollback() {
        let mut w = WalkState {
            kind: WalkKindId::Faces,
            current: 1,
            scheme: 1,
            seen: 2,
            completed_at: None,
            chain: None,
            other: Some(WalkPeer::from((2, "nas:77:0a1b2c3d".to_string()))),
        };
        let out = walk_out(&w, 0);
        assert!(!out.rollback);
        let json = serde_json::to_value(&out).expect("json");
        assert_eq!(
            (
                json["other"]["scheme"].as_i64(),
                json["other"]["pid"].as_str()
            ),
            (Some(2), Some("77"))
        );
        w.other = None;
        assert!(walk_out(&w, 0).rollback, "no live newer binary: a rollback");
    }
}
