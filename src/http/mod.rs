//! The HTTP API (DESIGN.md section 9): the router and its shared state (the use cases'
//! `ops::Services`, the thumbnail cache, the security rules, the event stream), the health
//! check, /metrics, the embedded web page (`page.rs`) and the API listing at `/api`.
//! Handlers are thin adapters: they parse the request, call one operation of `ops` (or one
//! read of the store) on `spawn_blocking`, and render its answer; what must read the store
//! before it serves (the event stream's baseline) does so off the runtime (`off_runtime`):
//! PostgreSQL's synchronous client refuses to block inside it. One file per resource;
//! `error.rs` is the one error map, `security.rs` the guard in front of every route, `sse.rs`
//! the event stream. Holds no SQL and no use case.
//!
//! Must not import: app, rusqlite, r2d2

mod assets;
mod bulk;
mod check;
mod download;
mod error;
mod faces;
mod jobs;
mod keep;
mod libraries;
mod media;
mod page;
mod people;
mod playable;
mod problems;
pub mod range;
mod scans;
pub mod security;
mod similar;
mod sse;
pub mod walks;

pub use error::{ApiError, Code};
pub use security::Security;

use crate::ops::Services;
use crate::thumbs::Thumbs;
use axum::extract::{DefaultBodyLimit, FromRef, State};
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use std::sync::Arc;
use std::time::Duration;

/// Request bodies are small JSON objects; anything larger is refused with 413.
pub const MAX_BODY: usize = 64 * 1024;

/// The walk kinds a server runs, each with the scheme it walks under.
pub type WalkKinds = Arc<[(crate::model::WalkKindId, i64)]>;

/// What every handler can reach: services, no logic.
#[derive(Clone)]
pub struct AppState {
    /// What the use cases act through (the store, the workers' wake, the watcher, the walks
    /// and the face detector of this process).
    pub ops: Services,
    pub thumbs: Arc<Thumbs>,
    /// The viewer's previews: the thumbnails' cache and decoders at `PREVIEW_SIZE`.
    pub previews: Arc<Thumbs>,
    pub security: Arc<Security>,
    pub events: sse::Events,
}

impl FromRef<AppState> for Arc<Security> {
    fn from_ref(s: &AppState) -> Self {
        s.security.clone()
    }
}

impl FromRef<AppState> for sse::Events {
    fn from_ref(s: &AppState) -> Self {
        s.events.clone()
    }
}

/// How the server is put together, apart from the store.
pub struct HttpConfig {
    pub security: Security,
    pub thumbs: Thumbs,
    /// How often the event poller looks at the run history.
    pub event_poll: Duration,
    /// The use cases' services; their `walks` are what `/api/walks` and `walk` events show.
    pub ops: Services,
}

impl AppState {
    /// The state of one server; starts its event poller on the current runtime, which
    /// stops (and ends every event stream) when `shutdown` turns true.
    pub fn start(
        config: HttpConfig,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> Result<AppState, crate::store::StoreError> {
        let ops = config.ops;
        let events = sse::Events::start(
            ops.store.clone(),
            config.event_poll,
            ops.walks.clone(),
            shutdown,
        )?;
        Ok(AppState {
            ops,
            previews: Arc::new(config.thumbs.previews()),
            thumbs: Arc::new(config.thumbs),
            security: Arc::new(config.security),
            events,
        })
    }
}

/// Runs `f`, which calls the store, from code on the runtime that must have its answer
/// before it goes on (the start): on a thread of its own, outside the runtime, where a
/// blocking database client may block (PostgreSQL's refuses to run inside a runtime).
pub(crate) fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| match s.spawn(f).join() {
        Ok(answer) => answer,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

/// Runs `f` on the blocking pool (every store call blocks).
pub(crate) async fn blocking<T, F>(f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ApiError> + Send + 'static,
{
    tokio::task::spawn_blocking(f).await?
}

/// The whole API behind the security guard and the body limit.
pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .route("/api/events", get(sse::stream))
        .route("/api/libraries", get(libraries::list).post(libraries::add))
        .route(
            "/api/libraries/{id}",
            axum::routing::delete(libraries::remove),
        )
        .route("/api/libraries/{id}/scans", post(scans::request))
        .route("/api/scans", get(scans::history))
        .route("/api/scans/{id}", get(scans::one))
        .route("/api/scans/{id}/problems", get(scans::problems))
        .route("/api/problems", get(problems::open))
        .route("/api/scans/{id}/cancel", post(scans::cancel))
        .route("/api/scans/{id}/release", post(scans::release))
        .route("/api/jobs", get(jobs::list))
        .route("/api/jobs/{id}", get(jobs::one))
        .route("/api/jobs/{id}/cancel", post(jobs::cancel))
        .route("/api/jobs/{id}/release", post(jobs::release))
        .merge(asset_routes())
        .route("/api/assets/trash", post(bulk::trash))
        .route("/api/assets/restore", post(bulk::restore))
        .route("/api/download", get(download::download))
        .route("/api/faces", get(faces::list))
        .route("/api/similar", get(similar::list))
        .route("/api/people", get(people::list))
        .route("/api/people/recluster", post(people::recluster))
        .route("/api/people/{id}", get(people::one))
        .route("/api/people/{id}/name", post(people::name))
        .route("/api/people/{id}/hide", post(people::hide))
        .route("/api/people/{id}/merge", post(people::merge))
        .route("/api/faces/{id}/person", post(people::move_face))
        .route("/api/faces/{id}/not", post(people::not_person))
        .route("/api/faces/{id}/crop", get(media::face_crop))
        .route("/api/walks", get(walks::list))
        .route("/api/walks/{kind}", get(walks::one))
        .route("/api/walks/{kind}/start", post(walks::start))
        .route("/api/walks/{kind}/release", post(walks::release))
        .route("/api/duplicates", get(assets::duplicates))
        .route("/api/keep", post(keep::keep))
        .route("/api/cameras", get(assets::cameras))
        .route("/api/check", get(check::check))
        .route("/api/check/repair", post(check::repair))
        .route("/api/watch", get(watch_status))
        .route("/api/server", get(server))
        .route("/api/thumbnails", get(media::lacking))
        .route("/api", get(api_listing));
    let api = page_routes(api)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed);
    api.layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(
            state.security.clone(),
            security::guard,
        ))
        .with_state(state)
}

/// One asset's routes: its facts, its bytes (thumbnail, preview, original, clips), its moves
/// and its faces and similar pictures.
fn asset_routes() -> Router<AppState> {
    Router::new()
        .route("/api/assets", get(assets::list))
        .route("/api/assets/{id}", get(assets::one))
        .route("/api/assets/{id}/thumbnail", get(media::thumbnail))
        .route("/api/assets/{id}/preview", get(media::preview))
        .route("/api/assets/{id}/original", get(media::original))
        .route("/api/assets/{id}/motion", get(media::motion))
        .route("/api/assets/{id}/playable", get(playable::video))
        .route("/api/assets/{id}/motion/playable", get(playable::motion))
        .route("/api/assets/{id}/trash", post(assets::trash))
        .route("/api/assets/{id}/restore", post(assets::restore))
        .route("/api/assets/{id}/faces", get(faces::of_asset))
        .route("/api/assets/{id}/faces/redetect", post(faces::redetect))
        .route("/api/assets/{id}/similar", get(similar::of_asset))
        .route("/api/assets/{id}/people", get(people::of_asset))
}

/// The web page's own files (`page.rs`).
fn page_routes(router: Router<AppState>) -> Router<AppState> {
    router
        .route("/", get(page::file))
        .route("/index.html", get(page::file))
        .route("/js/{module}", get(page::file))
        .route("/app.css", get(page::file))
        .route("/viewer.css", get(page::file))
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets open requests finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}

/// The response header of `/healthz` naming the answering instance's lease owner.
pub const OWNER_HEADER: axum::http::HeaderName =
    axum::http::HeaderName::from_static("x-mediadex-owner");

/// For the service manager: the database answers a read.
async fn healthz(State(state): State<AppState>) -> Result<Response, ApiError> {
    let store = state.ops.store.clone();
    let owner = store.owner().to_string();
    blocking(move || Ok(store.libraries()?)).await?;
    // The owner lets a second desktop launch tell this instance from another program that
    // took over the port (`instance::is_live`).
    let headers = [
        (header::CACHE_CONTROL, "no-store".to_string()),
        (OWNER_HEADER, owner),
    ];
    Ok((headers, "ok\n").into_response())
}

async fn metrics(State(state): State<AppState>) -> Result<Response, ApiError> {
    let store = state.ops.store.clone();
    let snapshot = blocking(move || Ok(store.metrics_snapshot()?)).await?;
    let mut text = crate::metrics::render(&snapshot);
    if let Some(watch) = &state.ops.watch {
        text.push_str(&crate::metrics::render_watch(&watch.statuses()));
    }
    Ok(([(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)], text).into_response())
}

async fn not_found() -> ApiError {
    ApiError::not_found("no such endpoint; GET /api lists the API")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        Code::MethodNotAllowed,
        "this endpoint does not take that method; GET /api lists the API",
    )
}

/// A short HTML listing of the API, for people exploring it with a browser or curl.
async fn api_listing() -> Html<&'static str> {
    Html(include_str!("api.html"))
}

/// What `GET /api/server` answers: this server's version and how it is reached, so the page
/// can keep a banner up while anyone who reaches it may use it.
#[derive(serde::Serialize)]
struct ServerOut {
    version: &'static str,
    /// `loopback` (this machine only), `token` (another machine, with the access token) or
    /// `open` (another machine, without it: `--insecure-no-auth`).
    access: &'static str,
}

async fn server(State(state): State<AppState>) -> Json<ServerOut> {
    let s = &state.security;
    let access = match (s.loopback, s.token_required) {
        (true, _) => "loopback",
        (false, true) => "token",
        (false, false) => "open",
    };
    Json(ServerOut {
        version: env!("CARGO_PKG_VERSION"),
        access,
    })
}

/// How this process watches each library (empty when it does not watch).
async fn watch_status(State(state): State<AppState>) -> Json<Vec<crate::watch::WatchStatus>> {
    Json(
        state
            .ops
            .watch
            .as_ref()
            .map(|w| w.statuses())
            .unwrap_or_default(),
    )
}
