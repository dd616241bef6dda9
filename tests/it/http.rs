//! The HTTP API driven in-process (`tower::ServiceExt::oneshot` on the router): every
//! endpoint's happy path and its errors, Idempotency-Key replay and conflict, the Host check
//! against DNS rebinding, the token off loopback, CSRF, traversal attempts that must never
//! read outside a library, thumbnails and their caching headers, originals and their byte
//! ranges, walks (state, start, force-release against a stale walker), faces, events
//! (scans and walks) and metrics.

use crate::support;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, Request, StatusCode};
use mediadex::http::{HttpConfig, Security};
use mediadex::model::{NewJob, Target, WalkKindId};
use mediadex::queue::{Handlers, PoolConfig, WorkerPool};
use mediadex::scan::job::{ScanConfig, ScanJob};
use mediadex::thumbs::Thumbs;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::{Env, TTL, env, synthetic};
use tower::ServiceExt;

const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// Dropped in this order: the router, then the server's stop (which waits for its poller),
/// then the `Env` (`support::Stop`).
struct Api {
    router: Router,
    wakes: Arc<AtomicUsize>,
    _stop: support::Stop,
    env: Env,
}

fn loopback() -> Security {
    Security::for_bind("127.0.0.1:7468".parse().unwrap(), Some(TOKEN.into()), false)
}

fn api() -> Api {
    api_with(loopback(), None)
}

fn api_with(security: Security, hourly_limit: Option<u32>) -> Api {
    api_full(security, hourly_limit, None)
}

fn api_full(security: Security, hourly_limit: Option<u32>, ffmpeg: Option<PathBuf>) -> Api {
    api_tweaked(security, hourly_limit, ffmpeg, |_| {})
}

/// A server whose config `tweak` changed (e.g. no face detector).
fn api_tweaked(
    security: Security,
    hourly_limit: Option<u32>,
    ffmpeg: Option<PathBuf>,
    tweak: impl FnOnce(&mut HttpConfig),
) -> Api {
    let env = env();
    let wakes = Arc::new(AtomicUsize::new(0));
    let counter = wakes.clone();
    let (stop, stop_rx) = support::Stop::channel();
    let mut config = HttpConfig {
        security,
        thumbs: Thumbs::with_ffmpeg(env.dir.path(), ffmpeg),
        event_poll: Duration::from_millis(10),
        ops: mediadex::ops::Services {
            hourly_limit,
            wake: Arc::new(move || {
                counter.fetch_add(1, Ordering::SeqCst);
            }),
            walks: Arc::new([(WalkKindId::ContentHash, 1), (WalkKindId::Faces, 1)]),
            faces: Some(real_detector(&env)),
            restore_faces: Some(mediadex::walks::follow_up(&env.store, WalkKindId::Faces, 1)),
            without_workers: false,
            ..mediadex::ops::Services::new(env.store.clone())
        },
    };
    tweak(&mut config);
    let state = support::app_state(config, stop_rx);
    Api {
        router: mediadex::http::router(state),
        env,
        wakes,
        _stop: stop,
    }
}

/// The face walk as the server runs it: the real detector (the model loads once).
fn real_detector(env: &Env) -> Arc<mediadex::walks::faces::FacesWalk> {
    let config =
        mediadex::config::Config::resolve(Some(env.dir.path().to_path_buf())).expect("config");
    Arc::new(mediadex::app::faces_walk(&config).expect("detector"))
}

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }

    fn code(&self) -> String {
        self.json()["error"]["code"]
            .as_str()
            .unwrap_or("")
            .to_string()
    }

    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

/// A request as the page on 127.0.0.1 sends it: Host set, and the custom header on writes.
fn req(method: Method, uri: &str) -> axum::http::request::Builder {
    let b = Request::builder()
        .method(method.clone())
        .uri(uri)
        .header("host", "127.0.0.1:7468");
    if method == Method::GET {
        b
    } else {
        b.header("x-mediadex", "1")
    }
}

impl Api {
    async fn send(&self, request: Request<Body>) -> Reply {
        let (parts, body) = support::respond(&self.router, request, 64 << 20).await;
        Reply {
            status: parts.status,
            headers: parts.headers,
            body,
        }
    }

    async fn get(&self, uri: &str) -> Reply {
        self.send(req(Method::GET, uri).body(Body::empty()).unwrap())
            .await
    }

    async fn post(&self, uri: &str, json: Value) -> Reply {
        let body = Body::from(json.to_string());
        let r = req(Method::POST, uri).header("content-type", "application/json");
        self.send(r.body(body).unwrap()).await
    }

    async fn post_empty(&self, uri: &str) -> Reply {
        self.send(req(Method::POST, uri).body(Body::empty()).unwrap())
            .await
    }

    async fn delete(&self, uri: &str) -> Reply {
        self.send(req(Method::DELETE, uri).body(Body::empty()).unwrap())
            .await
    }

    /// A folder with three small PNGs (one a copy of another), added as a library.
    fn photos(&self, name: &str) -> (i64, PathBuf) {
        let root = self.env.dir.path().join(name);
        png(&root.join("2024/a.png"), 10, 40, 20);
        png(&root.join("b.png"), 200, 20, 40);
        std::fs::copy(root.join("2024/a.png"), root.join("copy-of-a.png")).expect("copy");
        let root = std::fs::canonicalize(&root).expect("canonical");
        let lib = mediadex::app::add_library(&self.env.store, name, &root.to_string_lossy())
            .expect("add library");
        (lib.id, root)
    }

    /// Runs a real scan of the library through a worker pool until it ends.
    fn scan(&self, library_id: i64) {
        let store = &self.env.store;
        let (run, _) = store
            .request_scan(self.env.scan_request(library_id, ""))
            .expect("request");
        let job = ScanJob {
            store: store.clone(),
            config: ScanConfig::default(),
            extract: mediadex::media::extract_from,
        };
        let pool = WorkerPool::start(
            store,
            Handlers::default().scan(job),
            PoolConfig::with_ttl(1, TTL),
        );
        let start = Instant::now();
        while !store.scan_run(run.id).unwrap().unwrap().state.is_terminal() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the scan did not end"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        pool.shutdown();
    }

    /// The asset shown at `rel` (a path in the library).
    fn asset_at(&self, rel: &str) -> i64 {
        let assets = self.env.store.assets(false).expect("assets");
        assets
            .iter()
            .find(|a| a.paths.iter().any(|p| p.rel_path_text == rel))
            .unwrap_or_else(|| panic!("no asset at {rel}"))
            .id
    }
}

fn png(path: &Path, r: u8, w: u32, h: u32) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    image::RgbImage::from_pixel(w, h, image::Rgb([r, 90, 30]))
        .save(path)
        .expect("png");
}

// ---------------------------------------------------------------------------------------
// The server shell: health, page, unknown routes, methods, body limit.

#[test]
fn health_page_unknown_routes_and_methods() {
    support::block_on(async {
        let api = api();
        let r = api.get("/healthz").await;
        assert_eq!((r.status, &r.body[..]), (StatusCode::OK, &b"ok\n"[..]));
        let page = api.get("/").await;
        assert_eq!(page.status, StatusCode::OK);
        let html = String::from_utf8_lossy(&page.body);
        assert!(
            html.contains("<script type=\"module\" src=\"/js/main.js\">")
                && html.contains("mediadex"),
            "{html}"
        );
        // Every module the page imports is served, without the token, as JavaScript.
        let mut pending = vec!["main.js".to_string()];
        let mut served = std::collections::BTreeSet::new();
        while let Some(module) = pending.pop() {
            if !served.insert(module.clone()) {
                continue;
            }
            let r = api.get(&format!("/js/{module}")).await;
            assert_eq!(r.status, StatusCode::OK, "{module}");
            assert!(r.header("content-type").starts_with("text/javascript"));
            let text = String::from_utf8_lossy(&r.body).to_string();
            for import in text.split("from \"./").skip(1) {
                pending.extend(import.split('"').next().map(str::to_string));
            }
        }
        assert!(served.len() >= 10, "{served:?}");
        let r = api.get("/api/nope").await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::NOT_FOUND, "not_found".into())
        );
        let r = api.delete("/api/assets").await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed".into())
        );
    })
}

// ---------------------------------------------------------------------------------------
// Libraries.

#[test]
fn libraries_add_list_remove_and_their_errors() {
    support::block_on(async {
        let api = api();
        assert_eq!(
            api.get("/api/libraries").await.json(),
            serde_json::json!([])
        );
        let dir = api.env.dir.path().join("pics");
        std::fs::create_dir_all(&dir).unwrap();
        let r = api
            .post("/api/libraries", serde_json::json!({"path": dir}))
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
        let lib = r.json();
        assert_eq!(lib["name"], "pics");
        assert!(dir.join(".mediadex-library").exists(), "identity recorded");
        let list = api.get("/api/libraries").await.json();
        assert_eq!(list.as_array().unwrap().len(), 1);

        let again = api
            .post("/api/libraries", serde_json::json!({"path": dir}))
            .await;
        assert_eq!(
            (again.status, again.code()),
            (StatusCode::CONFLICT, "conflict".into())
        );
        let missing = api
            .post(
                "/api/libraries",
                serde_json::json!({"path": dir.join("nope")}),
            )
            .await;
        assert_eq!(
            (missing.status, missing.code()),
            (StatusCode::BAD_REQUEST, "bad_request".into())
        );
        assert!(
            missing.json()["error"]["message"]
                .as_str()
                .unwrap()
                .contains("does not exist")
        );
        let unknown_field = api
            .post(
                "/api/libraries",
                serde_json::json!({"path": dir, "colour": 1}),
            )
            .await;
        assert_eq!(unknown_field.status, StatusCode::UNPROCESSABLE_ENTITY);
        let not_json = api
            .send(
                req(Method::POST, "/api/libraries")
                    .header("content-type", "application/json")
                    .body(Body::from("{"))
                    .unwrap(),
            )
            .await;
        assert_eq!(
            (not_json.status, not_json.code()),
            (StatusCode::BAD_REQUEST, "bad_request".into())
        );
        let huge = format!("{{\"path\": \"{}\"}}", "x".repeat(200_000));
        let too_big = api
            .send(
                req(Method::POST, "/api/libraries")
                    .header("content-type", "application/json")
                    .body(Body::from(huge))
                    .unwrap(),
            )
            .await;
        assert_eq!(
            (too_big.status, too_big.code()),
            (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large".into())
        );

        let id = lib["id"].as_i64().unwrap();
        let r = api.delete(&format!("/api/libraries/{id}")).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.json()["removed_assets"], 0);
        assert_eq!(
            api.get("/api/libraries").await.json(),
            serde_json::json!([])
        );
        let r = api.delete(&format!("/api/libraries/{id}")).await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::NOT_FOUND, "not_found".into())
        );
        let r = api.delete("/api/libraries/abc").await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::BAD_REQUEST, "bad_request".into())
        );
    })
}

#[test]
fn removing_a_library_forgets_its_assets_but_not_those_another_library_shows() {
    support::block_on(async {
        let api = api();
        let a = api.env.library("a");
        let b = api.env.library("b");
        synthetic::ingest(
            &api.env.store,
            a,
            "x",
            vec![
                synthetic::item("x/only-a.jpg", 1, synthetic::facts(1)),
                synthetic::item("x/shared.jpg", 2, synthetic::facts(2)),
            ],
        )
        .unwrap();
        synthetic::ingest(
            &api.env.store,
            b,
            "y",
            vec![synthetic::item("y/shared.jpg", 2, synthetic::facts(2))],
        )
        .unwrap();
        // A scan of the library is running while it goes: its next write is fenced off.
        api.env
            .store
            .request_scan(api.env.scan_request(a, ""))
            .unwrap();
        let (lease, _) = api.env.store.claim_scan_run(TTL).unwrap().unwrap();
        let r = api.delete(&format!("/api/libraries/{a}")).await;
        let late = api.env.store.ingest_batch(
            &lease,
            a,
            vec![synthetic::item("x/late.jpg", 3, synthetic::facts(3))],
            "{}",
        );
        assert!(late.unwrap_err().is_lease_lost());
        assert_eq!(r.json()["removed_assets"], 1);
        let left = api.env.store.assets(false).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].paths.len(), 1);
        assert_eq!(left[0].paths[0].rel_path_text, "y/shared.jpg");
    })
}

// ---------------------------------------------------------------------------------------
// Scans.

#[test]
fn a_scan_request_is_admitted_and_wakes_the_workers() {
    support::block_on(async {
        let api = api();
        let lib = api.env.library("pics");
        let r = api
            .post(
                &format!("/api/libraries/{lib}/scans"),
                serde_json::json!({"scope": "2024/"}),
            )
            .await;
        assert_eq!(r.status, StatusCode::ACCEPTED);
        let body = r.json();
        assert_eq!(body["admission"], "accepted");
        assert_eq!(body["run"]["scope"], "2024");
        assert_eq!(body["run"]["trigger"], "api");
        assert_eq!(body["run"]["state"], "accepted");
        assert_eq!(api.wakes.load(Ordering::SeqCst), 1);
        // An empty body is a whole-library request; it widens the waiting run.
        let r = api.post_empty(&format!("/api/libraries/{lib}/scans")).await;
        assert_eq!(r.status, StatusCode::ACCEPTED);
        assert_eq!(r.json()["admission"], "coalesced");
        assert_eq!(r.json()["run"]["scope"], "");
    })
}

#[test]
fn idempotency_key_replays_the_same_request_and_refuses_another() {
    support::block_on(async {
        let api = api();
        let lib = api.env.library("pics");
        let keyed = |body: Value| {
            req(Method::POST, &format!("/api/libraries/{lib}/scans"))
                .header("idempotency-key", "k-1")
                .header("content-type", "application/json")
                .body(Body::from(body.to_string()))
                .unwrap()
        };
        let first = api.send(keyed(serde_json::json!({"scope": "a"}))).await;
        assert_eq!(first.status, StatusCode::ACCEPTED);
        let run_id = first.json()["run"]["id"].clone();
        let again = api.send(keyed(serde_json::json!({"scope": "a"}))).await;
        assert_eq!(again.status, StatusCode::OK);
        assert_eq!(again.json()["admission"], "replayed");
        assert_eq!(again.json()["run"]["id"], run_id);
        assert_eq!(
            api.env.store.scan_runs(Some(lib), 10).unwrap().len(),
            1,
            "no second run"
        );
        let other = api.send(keyed(serde_json::json!({"scope": "b"}))).await;
        assert_eq!(
            (other.status, other.code()),
            (StatusCode::CONFLICT, "conflict".into())
        );
        assert!(
            other.json()["error"]["message"]
                .as_str()
                .unwrap()
                .contains("k-1")
        );

        let bad_key = api
            .send(
                req(Method::POST, &format!("/api/libraries/{lib}/scans"))
                    .header("idempotency-key", "has space")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(
            (bad_key.status, bad_key.code()),
            (StatusCode::BAD_REQUEST, "bad_request".into())
        );
    })
}

#[test]
fn scan_request_errors_unknown_library_bad_scope_bad_body_rate_limit() {
    support::block_on(async {
        let api = api_with(loopback(), Some(1));
        let lib = api.env.library("pics");
        let r = api.post_empty("/api/libraries/999/scans").await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::NOT_FOUND, "not_found".into())
        );
        for scope in ["../etc", "a/../../b", "a\\b", "a//b"] {
            let r = api
                .post(
                    &format!("/api/libraries/{lib}/scans"),
                    serde_json::json!({"scope": scope}),
                )
                .await;
            assert_eq!(
                (r.status, r.code()),
                (StatusCode::BAD_REQUEST, "bad_request".into()),
                "{scope}"
            );
        }
        let r = api
            .post(
                &format!("/api/libraries/{lib}/scans"),
                serde_json::json!({"force": "yes"}),
            )
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
        assert!(
            api.env.store.scan_runs(None, 10).unwrap().is_empty(),
            "nothing admitted"
        );

        let first = api.post_empty(&format!("/api/libraries/{lib}/scans")).await;
        let id = first.json()["run"]["id"].as_i64().unwrap();
        api.post_empty(&format!("/api/scans/{id}/cancel")).await;
        let limited = api.post_empty(&format!("/api/libraries/{lib}/scans")).await;
        assert_eq!(
            (limited.status, limited.code()),
            (StatusCode::TOO_MANY_REQUESTS, "rate_limited".into())
        );
        assert_eq!(limited.header("retry-after"), "3600");
    })
}

#[test]
fn cancelling_a_run_that_reclaim_just_retired_cancels_its_successor() {
    support::block_on(async {
        let api = api();
        let lib = api.env.library("pics");
        let store = &api.env.store;
        let (run, _) = store.request_scan(api.env.scan_request(lib, "")).unwrap();
        store.claim_scan_run(TTL).unwrap().unwrap();
        // The page showed the run live; its lease expired and reclaim retired it before the
        // user's click reached the server.
        api.env.clock.advance(TTL + 1);
        assert_eq!(store.reclaim_stale().unwrap().run_successors, 1);
        let r = api
            .post_empty(&format!("/api/scans/{}/cancel", run.id))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        assert_eq!(
            (
                r.json()["state"].clone(),
                r.json()["predecessor_id"].clone()
            ),
            ("cancelled".into(), run.id.into()),
            "the answer is the cancelled successor"
        );
        api.env.clock.advance(60_000);
        assert!(
            store.claim_scan_run(TTL).unwrap().is_none(),
            "no successor runs"
        );
    })
}

#[test]
fn scan_history_one_cancel_and_force_release() {
    support::block_on(async {
        let api = api();
        let lib = api.env.library("pics");
        let store = &api.env.store;
        store.request_scan(api.env.scan_request(lib, "")).unwrap();
        let (lease, _) = store.claim_scan_run(TTL).unwrap().unwrap();
        let r = api
            .post_empty(&format!("/api/scans/{}/release", lease.id))
            .await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.json()["state"], "accepted");
        assert!(r.json()["generation"].as_i64().unwrap() > lease.generation);
        // The old holder's writes are now fenced off.
        assert!(
            store
                .checkpoint_scan(&lease, "{}")
                .unwrap_err()
                .is_lease_lost()
        );

        let r = api
            .post_empty(&format!("/api/scans/{}/cancel", lease.id))
            .await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(
            (r.json()["state"].clone(), r.json()["reason"].clone()),
            ("cancelled".into(), "cancelled".into())
        );
        let again = api
            .post_empty(&format!("/api/scans/{}/cancel", lease.id))
            .await;
        assert_eq!(
            (again.status, again.code()),
            (StatusCode::CONFLICT, "finished".into())
        );
        let r = api
            .post_empty(&format!("/api/scans/{}/release", lease.id))
            .await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::CONFLICT, "finished".into())
        );
        for uri in [
            "/api/scans/77",
            "/api/scans/77/cancel",
            "/api/scans/77/release",
        ] {
            let r = if uri.ends_with("77") {
                api.get(uri).await
            } else {
                api.post_empty(uri).await
            };
            assert_eq!(
                (r.status, r.code()),
                (StatusCode::NOT_FOUND, "not_found".into()),
                "{uri}"
            );
        }

        let (lib2, _) = api.photos("photos");
        api.scan(lib2);
        let history = api.get(&format!("/api/scans?library={lib2}")).await.json();
        let runs = history.as_array().unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0]["state"], "completed");
        assert_eq!(runs[0]["reasons"]["new"], 3);
        assert_eq!(runs[0]["reasons"]["duplicate"], 1);
        let one = api
            .get(&format!("/api/scans/{}", runs[0]["id"]))
            .await
            .json();
        assert_eq!(one["reasons"]["new"], 3);
        assert_eq!(
            api.get("/api/scans").await.json().as_array().unwrap().len(),
            2
        );
        let r = api.get("/api/scans?limit=0").await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
        let r = api.get("/api/scans?bogus=1").await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
    })
}

// ---------------------------------------------------------------------------------------
// Jobs.

#[test]
fn jobs_list_one_release_cancel() {
    support::block_on(async {
        let api = api();
        let store = &api.env.store;
        let job = store
            .enqueue(NewJob::new("content_hash_walk", "{}"))
            .unwrap()
            .id;
        let list = api.get("/api/jobs").await.json();
        assert_eq!(list[0]["kind"], "content_hash_walk");
        assert_eq!(list[0]["state"], "queued");
        let (lease, _) = store
            .claim_job(&["content_hash_walk"], TTL)
            .unwrap()
            .unwrap();
        let r = api.post_empty(&format!("/api/jobs/{job}/release")).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.json()["state"], "queued");
        assert!(
            store
                .checkpoint_job(&lease, "{}")
                .unwrap_err()
                .is_lease_lost()
        );
        let r = api.post_empty(&format!("/api/jobs/{job}/cancel")).await;
        assert_eq!(r.json()["state"], "cancelled");
        let r = api.post_empty(&format!("/api/jobs/{job}/cancel")).await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::CONFLICT, "finished".into())
        );
        assert_eq!(
            api.get(&format!("/api/jobs/{job}")).await.json()["state"],
            "cancelled"
        );
        let r = api.get("/api/jobs/12345").await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::NOT_FOUND, "not_found".into())
        );
        let r = api.post_empty("/api/jobs/12345/release").await;
        assert_eq!(r.status, StatusCode::NOT_FOUND);
        assert_eq!(
            api.get("/api/jobs?limit=5000").await.status,
            StatusCode::BAD_REQUEST
        );
    })
}

// ---------------------------------------------------------------------------------------
// Assets: list, filters, pagination, one asset, duplicates, trash and restore.

#[test]
fn the_asset_list_pages_through_everything_newest_taken_first() {
    support::block_on(async {
        let api = api();
        let lib = api.env.library("pics");
        synthetic::fill(&api.env.store, lib, "s", 0, 250).unwrap();
        let mut seen = vec![];
        let mut uri = "/api/assets?limit=60".to_string();
        loop {
            let page = api.get(&uri).await.json();
            let items = page["items"].as_array().unwrap();
            assert!(items.len() <= 60);
            seen.extend(items.iter().map(|a| {
                (
                    a["taken_at"].as_str().unwrap_or("").to_string(),
                    a["id"].as_i64().unwrap(),
                )
            }));
            match page["next_cursor"].as_str() {
                Some(c) => uri = format!("/api/assets?limit=60&cursor={c}"),
                None => break,
            }
        }
        assert_eq!(seen.len(), 250);
        let mut ids: Vec<i64> = seen.iter().map(|s| s.1).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 250, "no asset twice");
        let mut expected = seen.clone();
        expected.sort_by(|a, b| b.cmp(a));
        assert_eq!(
            seen, expected,
            "taken desc, then id desc; undated (\"\") last"
        );
        assert_eq!(seen.last().unwrap().0, "", "undated at the end");
    })
}

#[test]
fn asset_filters_by_type_date_camera_gps_and_trash() {
    support::block_on(async {
        let api = api();
        let lib = api.env.library("pics");
        synthetic::fill(&api.env.store, lib, "s", 1, 140).unwrap();
        let all: Vec<mediadex::model::MediaFacts> = (1..141).map(synthetic::facts).collect();
        let count = |uri: &'static str| {
            let api = &api;
            async move {
                let page = api.get(&format!("{uri}&limit=500")).await;
                assert_eq!(page.status, StatusCode::OK, "{uri}: {:?}", page.body);
                page.json()["items"].as_array().unwrap().clone()
            }
        };
        let videos = count("/api/assets?kind=video").await;
        assert_eq!(
            videos.len(),
            all.iter()
                .filter(|f| f.mime.as_deref() == Some("video/mp4"))
                .count()
        );
        assert!(videos.iter().all(|v| v["kind"] == "video"));
        let gps = count("/api/assets?has_gps=true").await;
        assert_eq!(gps.len(), all.iter().filter(|f| f.lat.is_some()).count());
        let no_gps = count("/api/assets?has_gps=false").await;
        assert_eq!(gps.len() + no_gps.len(), 140);
        let canon = count("/api/assets?make=Canon&model=EOS%20R6").await;
        assert_eq!(
            canon.len(),
            all.iter()
                .filter(|f| f.make.as_deref() == Some("Canon"))
                .count()
        );
        let in_2019 = count("/api/assets?from=2019&before=2020").await;
        let expected = all
            .iter()
            .filter(|f| {
                f.taken_local
                    .as_deref()
                    .is_some_and(|t| t.starts_with("2019"))
            })
            .count();
        assert!(expected > 0);
        assert_eq!(in_2019.len(), expected);
        assert!(
            in_2019
                .iter()
                .all(|a| a["taken_at"].as_str().unwrap().starts_with("2019"))
        );
        assert!(count("/api/assets?trashed=true").await.is_empty());
        let id = in_2019[0]["id"].as_i64().unwrap();
        // Trashing moves the file, so this one gets a file on disk.
        let rel = api.get(&format!("/api/assets/{id}")).await.json()["paths"][0]["path"]
            .as_str()
            .unwrap()
            .to_string();
        let file = api.env.dir.path().join("pics").join(&rel);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, b"jpeg").unwrap();
        let r = api.post_empty(&format!("/api/assets/{id}/trash")).await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        let trashed = count("/api/assets?trashed=true").await;
        assert_eq!(trashed.len(), 1);
        assert_eq!(trashed[0]["trashed"], true);
        assert_eq!(
            count("/api/assets?kind=image").await.len() + videos.len(),
            139
        );

        for bad in [
            "/api/assets?kind=sound",
            "/api/assets?has_gps=maybe",
            "/api/assets?limit=0",
            "/api/assets?limit=501",
            "/api/assets?cursor=garbage",
            "/api/assets?from=yesterday",
            "/api/assets?colour=red",
        ] {
            let r = api.get(bad).await;
            assert_eq!(
                (r.status, r.code()),
                (StatusCode::BAD_REQUEST, "bad_request".into()),
                "{bad}"
            );
        }
        let r = api.get("/api/assets?has_faces=maybe").await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::BAD_REQUEST, "bad_request".into())
        );
    })
}

#[test]
fn the_has_faces_filter_selects_by_the_current_face_results() {
    support::block_on(async {
        let api = api();
        let store = &api.env.store;
        let lib = api.env.library("pics");
        let items: Vec<_> = (0..3)
            .map(|i| synthetic::item(&format!("x/p{i}.jpg"), i, synthetic::facts(i)))
            .collect();
        synthetic::ingest(store, lib, "x", items).expect("ingest");
        let mut ids: Vec<i64> = store
            .assets(false)
            .expect("assets")
            .iter()
            .map(|a| a.id)
            .collect();
        ids.sort_unstable();
        let face = mediadex::model::DetectedFace {
            x: 1.0,
            y: 2.0,
            w: 3.0,
            h: 4.0,
            score: 0.99,
            landmarks: [(0.0, 0.0); 5],
        };
        store.store_faces(ids[0], 1, vec![face]).expect("faces");
        store.store_faces(ids[1], 1, vec![]).expect("no faces");
        let mut got = Vec::new();
        for q in ["/api/assets?has_faces=true", "/api/assets?has_faces=false"] {
            let r = api.get(q).await;
            let v: serde_json::Value = serde_json::from_slice(&r.body).expect("json");
            let mut listed: Vec<i64> = v["items"]
                .as_array()
                .expect("items")
                .iter()
                .filter_map(|a| a["id"].as_i64())
                .collect();
            listed.sort_unstable();
            got.push(listed);
        }
        assert_eq!(got, vec![vec![ids[0]], vec![ids[1], ids[2]]]);
        // The column behind the filter follows every write of faces and of the stamp: a newer
        // detector that finds nothing, then finds a face, then an asset's faces replaced.
        let listed = |has: bool| {
            let filter = mediadex::model::AssetFilter {
                has_faces: Some(has),
                ..Default::default()
            };
            let page = store.asset_page(&filter, None, 100).expect("page");
            let mut ids: Vec<i64> = page.items.iter().map(|a| a.id).collect();
            ids.sort_unstable();
            ids
        };
        store.store_faces(ids[0], 2, vec![]).expect("newer, none");
        assert_eq!(listed(true), Vec::<i64>::new());
        store
            .store_faces(ids[1], 2, vec![face])
            .expect("newer, one");
        store
            .store_faces(ids[0], 2, vec![face])
            .expect("newer, one");
        assert_eq!(listed(true), vec![ids[0], ids[1]]);
        store
            .store_faces(ids[1], 2, vec![])
            .expect("replaced by none");
        assert_eq!(listed(true), vec![ids[0]]);
        assert_eq!(listed(false), vec![ids[1], ids[2]]);
    })
}

#[test]
fn the_rating_and_tag_filters_select_by_what_the_sidecars_said() {
    support::block_on(async {
        let api = api();
        let store = &api.env.store;
        let lib = api.env.library("pics");
        let notes = [
            (Some(5), vec!["Paris", "sea"]),
            (Some(2), vec!["paris"]),
            (None, vec![]),
        ];
        let items: Vec<_> = (notes.iter().enumerate())
            .map(|(i, (rating, tags))| {
                let mut facts = synthetic::facts(i as u64);
                facts.notes.rating = *rating;
                facts.notes.tags = tags.iter().map(|t| t.to_string()).collect();
                synthetic::item(&format!("x/p{i}.jpg"), i as u64, facts)
            })
            .collect();
        synthetic::ingest(store, lib, "x", items).expect("ingest");
        let id_of = |rel: &str| api.asset_at(rel);
        let ids: Vec<i64> = (0..3).map(|i| id_of(&format!("x/p{i}.jpg"))).collect();
        let mut got = Vec::new();
        for q in [
            "rating_min=3",
            "rating_min=2",
            "rating_min=-1",
            "tag=PARIS",
            "tag=sea&rating_min=3",
        ] {
            let r = api.get(&format!("/api/assets?{q}")).await;
            assert_eq!(r.status, StatusCode::OK, "{q}");
            let mut listed: Vec<i64> = (r.json()["items"].as_array().expect("items").iter())
                .filter_map(|a| a["id"].as_i64())
                .collect();
            listed.sort_unstable();
            got.push(listed);
        }
        let (a, b) = (ids[0], ids[1]);
        assert_eq!(
            got,
            vec![vec![a], vec![a, b], vec![a, b], vec![a, b], vec![a]]
        );
        let one = api.get(&format!("/api/assets/{a}")).await.json();
        assert_eq!(one["tags"], serde_json::json!(["Paris", "sea"]));
        assert_eq!(one["rating"], 5);
        for bad in ["rating_min=6", "rating_min=x", "tag="] {
            let r = api.get(&format!("/api/assets?{bad}")).await;
            assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad}");
        }
    })
}

#[test]
fn the_asset_list_uses_the_timeline_index_without_sorting() {
    support::sqlite_only("http::the_asset_list_uses_the_timeline_index_without_sorting");
    support::block_on(async {
        let api = api();
        let store = &api.env.store;
        let default = mediadex::model::AssetFilter::default();
        for (filter, after) in [(default.clone(), false), (default.clone(), true)] {
            let plan = store.asset_page_plan(&filter, after).unwrap().join(" | ");
            assert!(plan.contains("assets_timeline"), "{plan}");
            assert!(!plan.contains("TEMP B-TREE"), "no sort step: {plan}");
        }
        let dated = mediadex::model::AssetFilter {
            taken_from: Some("2020".into()),
            ..default
        };
        let plan = store.asset_page_plan(&dated, true).unwrap().join(" | ");
        assert!(
            plan.contains("assets_timeline") && !plan.contains("TEMP B-TREE"),
            "{plan}"
        );
    })
}

/// Every listed asset reads its stack: that read must seek, never read all of `files`
/// (534 ms per asset at 1M files before the members led the join).
#[test]
fn the_stack_of_an_asset_reads_no_whole_table() {
    support::sqlite_only("http::the_stack_of_an_asset_reads_no_whole_table");
    support::block_on(async {
        let api = api();
        let plan = api.env.store.asset_stack_plan().unwrap();
        let scans: Vec<_> = (plan.iter())
            .filter(|l| l.starts_with("SCAN f") || l.starts_with("SCAN a"))
            .collect();
        assert!(scans.is_empty(), "{plan:?}");
    })
}

/// A filter that matches few of a million assets must seek them, not read the whole
/// timeline for them (0.3-18 s each before migration 0017): each filter's page reads its own
/// index in timeline order, on every page. A tag is driven from its few rows, then sorted.
#[test]
fn every_selective_filter_seeks_its_own_index_in_timeline_order() {
    support::sqlite_only("http::every_selective_filter_seeks_its_own_index_in_timeline_order");
    support::block_on(async {
        use mediadex::model::{AssetFilter, MediaKind};
        let api = api();
        let store = &api.env.store;
        let f = AssetFilter::default;
        let cases = [
            (
                AssetFilter {
                    kind: Some(MediaKind::Video),
                    ..f()
                },
                "assets_not_image_timeline",
            ),
            (
                AssetFilter {
                    kind: Some(MediaKind::Other),
                    ..f()
                },
                "assets_not_image_timeline",
            ),
            (
                AssetFilter {
                    has_gps: Some(true),
                    ..f()
                },
                "assets_gps_timeline",
            ),
            (
                AssetFilter {
                    has_faces: Some(true),
                    ..f()
                },
                "assets_faces_timeline",
            ),
            (
                AssetFilter {
                    make: Some("Canon".into()),
                    ..f()
                },
                "assets_make_timeline",
            ),
            (
                AssetFilter {
                    model: Some("X-T5".into()),
                    ..f()
                },
                "assets_model_timeline",
            ),
            (
                AssetFilter {
                    rating_min: Some(3),
                    ..f()
                },
                "assets_rated_timeline",
            ),
            (
                AssetFilter {
                    trashed: true,
                    ..f()
                },
                "assets_trash_timeline",
            ),
        ];
        for (filter, index) in cases {
            for after in [false, true] {
                let plan = store.asset_page_plan(&filter, after).unwrap().join(" | ");
                assert!(plan.contains(index), "{filter:?} after={after}: {plan}");
                assert!(!plan.contains("TEMP B-TREE"), "no sort step: {plan}");
            }
        }
        let tagged = AssetFilter {
            tag: Some("paris".into()),
            ..f()
        };
        let plan = store.asset_page_plan(&tagged, false).unwrap().join(" | ");
        assert!(plan.contains("asset_tags_by_tag"), "{plan}");
        assert!(
            !plan.contains("assets_timeline"),
            "not the whole timeline: {plan}"
        );
        // A person of few photos: driven from their range of face_people, then sorted. One in
        // many photos (someone in every other photo of a million): the timeline, each row
        // checked, which stops at the page's end (before: 62,500 photos sorted, p50 771 ms).
        (api.env.sql())
        .execute(
            "INSERT INTO people (id, created_at, updated_at, faces) VALUES (7, 0, 0, 3), (8, 0, 0, 50000)",
            &[],
        )
        .unwrap();
        for (person, index) in [(7, "face_people_person"), (8, "assets_timeline")] {
            let filter = AssetFilter {
                person: Some(person),
                ..f()
            };
            for after in [false, true] {
                let plan = store.asset_page_plan(&filter, after).unwrap().join(" | ");
                assert!(
                    plan.contains(index),
                    "person {person} after={after}: {plan}"
                );
            }
        }
        // The crowd's probe comes before every check that reads the row (the clip's, the
        // stack's): a timeline row not theirs costs one index probe, not a read of the row.
        let crowd = AssetFilter {
            person: Some(8),
            ..f()
        };
        let plan = store.asset_page_plan(&crowd, true).unwrap().join(" | ");
        let probe = plan.find("face_people_person").unwrap();
        for check in ["assets_live_video", "files_asset"] {
            let at = plan
                .find(check)
                .unwrap_or_else(|| panic!("{check}: {plan}"));
            assert!(probe < at, "the person is checked after {check}: {plan}");
        }
    })
}

#[test]
fn one_asset_duplicates_and_their_errors() {
    support::block_on(async {
        let api = api();
        let (lib, _) = api.photos("photos");
        api.scan(lib);
        let a = api.asset_at("2024/a.png");
        let one = api.get(&format!("/api/assets/{a}")).await;
        assert_eq!(one.status, StatusCode::OK);
        let one = one.json();
        assert_eq!(one["kind"], "image");
        assert_eq!(one["mime"], "image/png");
        assert_eq!(
            (one["width"].clone(), one["height"].clone()),
            (40.into(), 20.into())
        );
        let paths: Vec<&str> = one["paths"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["path"].as_str().unwrap())
            .collect();
        assert_eq!(paths, ["2024/a.png", "copy-of-a.png"]);
        let r = api.get("/api/assets/999999").await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::NOT_FOUND, "not_found".into())
        );
        let r = api.get("/api/assets/x1").await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::BAD_REQUEST, "bad_request".into())
        );
        let dups = api.get("/api/duplicates").await.json();
        assert_eq!(dups.as_array().unwrap().len(), 1);
        assert_eq!(dups[0]["asset_id"], a);
        assert_eq!(dups[0]["paths"].as_array().unwrap().len(), 2);
    })
}

/// The API's restore is the CLI's (`ops::trash::restore`): it queues the face walk, which
/// finds the asset if it missed it while trashed, and wakes the workers for it.
#[test]
fn a_restore_queues_the_face_walk_and_wakes_the_workers() {
    support::block_on(async {
        let api = api();
        let (lib, _root) = api.photos("photos");
        api.scan(lib);
        let b = api.asset_at("b.png");
        api.post_empty(&format!("/api/assets/{b}/trash")).await;
        let faces = api.get("/api/walks/faces").await.json();
        assert_eq!(faces["state"], "none", "{faces}");
        let woken = api.wakes.load(Ordering::SeqCst);
        let r = api.post_empty(&format!("/api/assets/{b}/restore")).await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        let faces = api.get("/api/walks/faces").await.json();
        assert_eq!(faces["state"], "queued", "{faces}");
        assert!(api.wakes.load(Ordering::SeqCst) > woken);
    })
}

#[test]
fn trash_and_restore_move_the_files_and_refuse_the_wrong_state() {
    support::block_on(async {
        let api = api();
        let (lib, root) = api.photos("photos");
        api.scan(lib);
        let b = api.asset_at("b.png");
        let original = std::fs::read(root.join("b.png")).unwrap();
        let r = api.post_empty(&format!("/api/assets/{b}/trash")).await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        assert_eq!(r.json()["trashed"], true);
        assert!(!root.join("b.png").exists());
        assert!(support::trashed_to(&api.env.store, &root, b, "b.png").exists());
        // Still viewable from the trash.
        let o = api.get(&format!("/api/assets/{b}/original")).await;
        assert_eq!((o.status, &o.body[..]), (StatusCode::OK, &original[..]));
        let again = api.post_empty(&format!("/api/assets/{b}/trash")).await;
        assert_eq!(
            (again.status, again.code()),
            (StatusCode::CONFLICT, "conflict".into())
        );
        let r = api.post_empty(&format!("/api/assets/{b}/restore")).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.json()["trashed"], false);
        assert_eq!(std::fs::read(root.join("b.png")).unwrap(), original);
        let again = api.post_empty(&format!("/api/assets/{b}/restore")).await;
        assert_eq!(
            (again.status, again.code()),
            (StatusCode::CONFLICT, "conflict".into())
        );
        let r = api.post_empty("/api/assets/424242/trash").await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::NOT_FOUND, "not_found".into())
        );
        // A move that cannot happen (the destination is taken) loses nothing and says why.
        // (The clock moves on: the trash journal tells one move from the last by its time.)
        api.env.clock.advance(1);
        // The next move's place: move 3, after the trash and the restore.
        std::fs::create_dir_all(root.join(format!(".mediadex-trash/{b}-3"))).unwrap();
        std::fs::write(
            root.join(format!(".mediadex-trash/{b}-3/b.png")),
            b"squatter",
        )
        .unwrap();
        let r = api.post_empty(&format!("/api/assets/{b}/trash")).await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::CONFLICT, "move_failed".into())
        );
        assert_eq!(std::fs::read(root.join("b.png")).unwrap(), original);
        assert_eq!(
            api.get(&format!("/api/assets/{b}")).await.json()["trashed"],
            false
        );
    })
}

// ---------------------------------------------------------------------------------------
// Thumbnails and originals.

#[test]
fn a_thumbnail_is_made_once_cached_by_checksum_and_served_immutable() {
    support::block_on(async {
        let api = api();
        let (lib, root) = api.photos("photos");
        api.scan(lib);
        let a = api.asset_at("2024/a.png");
        let r = api.get(&format!("/api/assets/{a}/thumbnail")).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.header("content-type"), "image/jpeg");
        assert!(r.header("cache-control").contains("immutable"));
        let etag = r.header("etag").to_string();
        assert!(etag.starts_with('"') && etag.len() > 60, "{etag}");
        let img = image::load_from_memory(&r.body).expect("a real JPEG");
        assert_eq!((img.width(), img.height()), (40, 20));
        let sum = api.get(&format!("/api/assets/{a}")).await.json()["checksum"]
            .as_str()
            .unwrap()
            .to_string();
        let cached = api.env.dir.path().join("thumbs").join(&sum[..2]);
        assert_eq!(
            std::fs::read_dir(&cached).unwrap().count(),
            1,
            "cached under the data dir"
        );
        // Served from the cache once made: the original file is no longer needed.
        std::fs::remove_file(root.join("2024/a.png")).unwrap();
        std::fs::remove_file(root.join("copy-of-a.png")).unwrap();
        let again = api.get(&format!("/api/assets/{a}/thumbnail")).await;
        assert_eq!((again.status, &again.body), (StatusCode::OK, &r.body));
        let not_modified = api
            .send(
                req(Method::GET, &format!("/api/assets/{a}/thumbnail"))
                    .header("if-none-match", &etag)
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(not_modified.status, StatusCode::NOT_MODIFIED);
        assert!(not_modified.body.is_empty());
        let r = api.get("/api/assets/31337/thumbnail").await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::NOT_FOUND, "not_found".into())
        );
        // Its file gone and no thumbnail made: 404 file_missing.
        let b = api.asset_at("b.png");
        std::fs::remove_file(root.join("b.png")).unwrap();
        let r = api.get(&format!("/api/assets/{b}/original")).await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::NOT_FOUND, "file_missing".into())
        );
    })
}

/// The viewer's large picture: made on first request at 2048 px on the long side (never
/// enlarged), cached beside the thumbnails under the checksum, immutable with its own tag;
/// a video has none (404 `not_found`), and a picture this server cannot decode gets the
/// uncached placeholder, as its thumbnail does.
#[test]
fn a_preview_is_made_once_at_2048_px_cached_and_none_for_a_video() {
    support::block_on(async {
        let api = api();
        let (lib, root) = api.photos("photos");
        png(&root.join("big.png"), 120, 3000, 1500);
        std::fs::copy(fixture("astronaut.mp4"), root.join("clip.mp4")).unwrap();
        std::fs::copy(fixture("astronaut_half.heic"), root.join("astro.heic")).unwrap();
        api.scan(lib);
        let big = api.asset_at("big.png");
        let r = api.get(&format!("/api/assets/{big}/preview")).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.header("content-type"), "image/jpeg");
        assert!(r.header("cache-control").contains("immutable"));
        let img = image::load_from_memory(&r.body).expect("a real JPEG");
        assert_eq!((img.width(), img.height()), (2048, 1024));
        let thumb = api.get(&format!("/api/assets/{big}/thumbnail")).await;
        assert_ne!(thumb.header("etag"), r.header("etag"), "a tag of its own");
        let small = image::load_from_memory(&thumb.body).expect("thumbnail");
        assert_eq!((small.width(), small.height()), (320, 160));
        let etag = r.header("etag").to_string();
        let not_modified = api
            .send(
                req(Method::GET, &format!("/api/assets/{big}/preview"))
                    .header("if-none-match", &etag)
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(not_modified.status, StatusCode::NOT_MODIFIED);
        // Served from the cache once made: the original file is no longer needed.
        std::fs::remove_file(root.join("big.png")).unwrap();
        let again = api.get(&format!("/api/assets/{big}/preview")).await;
        assert_eq!((again.status, &again.body), (StatusCode::OK, &r.body));

        let a = api.asset_at("2024/a.png");
        let r = api.get(&format!("/api/assets/{a}/preview")).await;
        let img = image::load_from_memory(&r.body).expect("a real JPEG");
        assert_eq!((img.width(), img.height()), (40, 20), "never enlarged");

        let clip = api.asset_at("clip.mp4");
        let r = api.get(&format!("/api/assets/{clip}/preview")).await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::NOT_FOUND, "not_found".into())
        );
        // No heif-dec in this server: the placeholder, not cached.
        let heic = api.asset_at("astro.heic");
        let r = api.get(&format!("/api/assets/{heic}/preview")).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.header("content-type"), "image/svg+xml");
        assert_eq!(r.header("cache-control"), "no-cache");
        let r = api.get("/api/assets/31337/preview").await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::NOT_FOUND, "not_found".into())
        );
    })
}

/// A file rewritten in place since its scan no longer holds the asset's bytes: a thumbnail
/// made from it now would be of other bytes, and cached under the asset's checksum it would
/// show the wrong picture for good. It gets the uncached placeholder until a rescan.
#[test]
fn a_file_changed_since_its_scan_gets_no_thumbnail_cached_under_the_old_checksum() {
    support::block_on(async {
        let api = api();
        let (lib, root) = api.photos("photos");
        api.scan(lib);
        let b = api.asset_at("b.png");
        png(&root.join("b.png"), 7, 33, 33);
        let r = api.get(&format!("/api/assets/{b}/thumbnail")).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.header("content-type"), "image/svg+xml");
        assert_eq!(r.header("cache-control"), "no-cache");
        assert!(
            !api.env.dir.path().join("thumbs").exists(),
            "nothing cached"
        );
        // After a rescan the file is an asset of its own, and its thumbnail is its own.
        api.scan(lib);
        let now = api.asset_at("b.png");
        assert_ne!(now, b);
        let r = api.get(&format!("/api/assets/{now}/thumbnail")).await;
        assert_eq!(r.header("content-type"), "image/jpeg");
        let img = image::load_from_memory(&r.body).expect("a real JPEG");
        assert_eq!((img.width(), img.height()), (33, 33));
    })
}

#[test]
fn heic_and_videos_without_ffmpeg_get_an_uncached_placeholder() {
    support::block_on(async {
        let api = api();
        let lib = api.env.library("pics");
        let root = api.env.dir.path().join("pics");
        std::fs::write(root.join("clip.mp4"), b"not really a video").unwrap();
        std::fs::write(root.join("photo.heic"), b"not really heic").unwrap();
        let video = synthetic::facts(7);
        let mut heic = synthetic::facts(1);
        heic.mime = Some("image/heic".into());
        synthetic::ingest(
            &api.env.store,
            lib,
            "",
            vec![
                synthetic::item("clip.mp4", 7, video),
                synthetic::item("photo.heic", 1, heic),
            ],
        )
        .unwrap();
        for rel in ["clip.mp4", "photo.heic"] {
            let id = api.asset_at(rel);
            let r = api.get(&format!("/api/assets/{id}/thumbnail")).await;
            assert_eq!(r.status, StatusCode::OK, "{rel}");
            assert_eq!(r.header("content-type"), "image/svg+xml", "{rel}");
            assert_eq!(r.header("cache-control"), "no-cache", "{rel}");
            assert!(r.header("etag").is_empty());
        }
        assert!(
            !api.env.dir.path().join("thumbs").exists(),
            "placeholders are not cached"
        );
    })
}

/// Run by `scripts/corpus-tier.sh`, which installs ffmpeg (the placeholder path is tested
/// above without it).
#[test]
#[ignore = "needs ffmpeg"]
fn a_video_gets_a_poster_frame_when_ffmpeg_is_on_path() {
    support::block_on(async {
        let ffmpeg = mediadex::thumbs::find_on_path("ffmpeg")
            .expect("ffmpeg is on PATH (apt-get install ffmpeg; scripts/corpus-tier.sh does)");
        let api = api_full(loopback(), None, Some(ffmpeg.clone()));
        let lib = api.env.library("pics");
        let clip = api.env.dir.path().join("pics/clip.mp4");
        let made = std::process::Command::new(&ffmpeg)
            .args([
                "-nostdin",
                "-v",
                "error",
                "-f",
                "lavfi",
                "-i",
                "testsrc=size=96x64:rate=10",
            ])
            .args(["-t", "2", "-pix_fmt", "yuv420p", "-y"])
            .arg(&clip)
            .status()
            .expect("run ffmpeg");
        assert!(made.success(), "ffmpeg made the test clip");
        // Indexed with its real stamp: a thumbnail is made only from a file the scan saw as is.
        let mut item = synthetic::item("clip.mp4", 7, synthetic::facts(7));
        item.stamp = mediadex::model::FileStamp::of(&std::fs::metadata(&clip).unwrap());
        synthetic::ingest(&api.env.store, lib, "", vec![item]).unwrap();
        let id = api.asset_at("clip.mp4");
        let r = api.get(&format!("/api/assets/{id}/thumbnail")).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.header("content-type"), "image/jpeg");
        assert!(r.header("cache-control").contains("immutable"));
        let img = image::load_from_memory(&r.body).expect("a real JPEG poster");
        assert_eq!((img.width(), img.height()), (96, 64));
    })
}

#[test]
fn an_original_is_streamed_by_asset_id_with_its_type() {
    support::block_on(async {
        let api = api();
        let (lib, root) = api.photos("photos");
        api.scan(lib);
        let b = api.asset_at("b.png");
        let r = api.get(&format!("/api/assets/{b}/original")).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.header("content-type"), "image/png");
        assert_eq!(r.header("x-content-type-options"), "nosniff");
        assert!(r.header("content-security-policy").contains("sandbox"));
        assert_eq!(&r.body[..], &std::fs::read(root.join("b.png")).unwrap()[..]);
        assert_eq!(r.header("content-length"), r.body.len().to_string());
    })
}

// ---------------------------------------------------------------------------------------
// Nothing outside a library is ever read.

/// A file outside every library whose bytes must never come back.
fn secret(api: &Api) -> (PathBuf, &'static [u8]) {
    let path = api.env.dir.path().join("secret.txt");
    std::fs::write(&path, b"TOP-SECRET-BYTES").unwrap();
    (path, b"TOP-SECRET-BYTES")
}

fn leaks(r: &Reply, secret: &[u8]) -> bool {
    r.body.windows(secret.len()).any(|w| w == secret)
}

#[test]
fn traversal_in_the_url_never_reaches_a_file() {
    support::block_on(async {
        let api = api();
        let (lib, _) = api.photos("photos");
        api.scan(lib);
        let (secret_path, secret) = secret(&api);
        let abs = secret_path.to_string_lossy().replace('/', "%2F");
        for uri in [
            "/api/assets/..%2F..%2Fsecret.txt/original".to_string(),
            "/api/assets/%2e%2e/original".to_string(),
            format!("/api/assets/{abs}/original"),
            format!("/api/assets/{abs}/thumbnail"),
            "/api/assets/1/original/../../../secret.txt".to_string(),
            "/api/assets/1/..%2F..%2Fsecret.txt".to_string(),
            "/../secret.txt".to_string(),
            "/api/assets/1%2F..%2F..%2Fsecret.txt/original".to_string(),
        ] {
            let r = api.get(&uri).await;
            assert!(
                matches!(r.status, StatusCode::BAD_REQUEST | StatusCode::NOT_FOUND),
                "{uri}: {}",
                r.status
            );
            assert!(!leaks(&r, secret), "{uri} leaked the secret");
        }
    })
}

#[test]
fn stored_paths_that_escape_the_root_are_refused() {
    support::block_on(async {
        let api = api();
        let lib = api.env.library("pics");
        let (secret_path, secret) = secret(&api);
        let outside = synthetic::item("../secret.txt", 1, synthetic::facts(1));
        let absolute = synthetic::item(&secret_path.to_string_lossy(), 2, synthetic::facts(2));
        synthetic::ingest(&api.env.store, lib, "", vec![outside, absolute]).unwrap();
        for rel in ["../secret.txt", &*secret_path.to_string_lossy()] {
            let id = api.asset_at(rel);
            for what in ["original", "thumbnail"] {
                let r = api.get(&format!("/api/assets/{id}/{what}")).await;
                assert_eq!(
                    (r.status, r.code()),
                    (StatusCode::FORBIDDEN, "outside_library".into()),
                    "{rel} {what}"
                );
                assert!(!leaks(&r, secret));
            }
        }
    })
}

#[cfg(unix)]
#[test]
fn a_symlink_out_of_the_root_is_refused() {
    support::block_on(async {
        let api = api();
        let (lib, root) = api.photos("photos");
        api.scan(lib);
        let (secret_path, secret) = secret(&api);
        let b = api.asset_at("b.png");
        // After the scan the file is swapped for a symlink pointing outside the library.
        std::fs::remove_file(root.join("b.png")).unwrap();
        std::os::unix::fs::symlink(&secret_path, root.join("b.png")).unwrap();
        // And a directory symlink: the copy's folder now leads outside too.
        let a = api.asset_at("2024/a.png");
        std::fs::rename(root.join("2024"), api.env.dir.path().join("moved-2024")).unwrap();
        std::fs::remove_file(root.join("copy-of-a.png")).unwrap();
        std::fs::create_dir_all(api.env.dir.path().join("elsewhere")).unwrap();
        std::fs::write(api.env.dir.path().join("elsewhere/a.png"), secret).unwrap();
        std::os::unix::fs::symlink(api.env.dir.path().join("elsewhere"), root.join("2024"))
            .unwrap();
        for id in [a, b] {
            for what in ["original", "thumbnail"] {
                let r = api.get(&format!("/api/assets/{id}/{what}")).await;
                assert_eq!(
                    (r.status, r.code()),
                    (StatusCode::FORBIDDEN, "outside_library".into()),
                    "{id} {what}"
                );
                assert!(!leaks(&r, secret));
            }
        }
    })
}

// ---------------------------------------------------------------------------------------
// Security: Host (DNS rebinding), token, CSRF.

#[test]
fn a_foreign_host_header_is_refused_on_loopback() {
    support::block_on(async {
        let api = api();
        for host in [
            "evil.example:7468",
            "evil.example",
            "192.168.1.20:7468",
            "localhost.evil.example",
        ] {
            let r = api
                .send(
                    Request::get("/api/libraries")
                        .header("host", host)
                        .body(Body::empty())
                        .unwrap(),
                )
                .await;
            assert_eq!(
                (r.status, r.code()),
                (StatusCode::FORBIDDEN, "bad_host".into()),
                "{host}"
            );
        }
        let r = api
            .send(Request::get("/api/libraries").body(Body::empty()).unwrap())
            .await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "no Host at all");
        for host in ["localhost:7468", "127.0.0.1", "[::1]:7468"] {
            let r = api
                .send(
                    Request::get("/api/libraries")
                        .header("host", host)
                        .body(Body::empty())
                        .unwrap(),
                )
                .await;
            assert_eq!(r.status, StatusCode::OK, "{host}");
        }
    })
}

#[test]
fn state_changes_need_the_token_or_the_same_origin_header() {
    support::block_on(async {
        let api = api();
        let lib = api.env.library("pics");
        let uri = format!("/api/libraries/{lib}/scans");
        let post = || Request::post(&uri).header("host", "127.0.0.1:7468");
        let refused = [
            post(),
            post().header("x-mediadex", "0"),
            post()
                .header("x-mediadex", "1")
                .header("origin", "http://evil.example"),
            post()
                .header("x-mediadex", "1")
                .header("sec-fetch-site", "cross-site"),
            post().header("authorization", "Bearer wrong"),
        ];
        for r in refused {
            let r = api.send(r.body(Body::empty()).unwrap()).await;
            assert_eq!((r.status, r.code()), (StatusCode::FORBIDDEN, "csrf".into()));
        }
        assert!(
            api.env.store.scan_runs(None, 5).unwrap().is_empty(),
            "nothing admitted"
        );
        let allowed = [
            post().header("authorization", format!("Bearer {TOKEN}")),
            post().header("x-mediadex", "1"),
            post()
                .header("x-mediadex", "1")
                .header("origin", "http://127.0.0.1:7468"),
        ];
        for r in allowed {
            let r = api.send(r.body(Body::empty()).unwrap()).await;
            assert!(r.status.is_success(), "{:?}", r.body);
        }
    })
}

/// A page on another port of the same host is same-site: SameSite=Strict sends it the
/// cookie. The cookie lets the page load images and the event stream; it never authorizes a
/// state change.
#[test]
fn a_state_change_carrying_only_the_token_cookie_is_refused() {
    support::block_on(async {
        let cookie = format!("mediadex_token={TOKEN}");
        let off_loopback =
            Security::for_bind("0.0.0.0:7468".parse().unwrap(), Some(TOKEN.into()), false);
        for (security, host) in [
            (loopback(), "127.0.0.1:7468"),
            (off_loopback, "nas.lan:7468"),
        ] {
            let api = api_with(security, None);
            let lib = api.env.library("pics");
            let with_cookie = |method: Method, uri: &str| {
                Request::builder()
                    .method(method)
                    .uri(uri)
                    .header("host", host)
                    .header("cookie", &cookie)
            };
            for method in [Method::GET, Method::HEAD] {
                let r = api
                    .send(
                        with_cookie(method.clone(), "/api/libraries")
                            .body(Body::empty())
                            .unwrap(),
                    )
                    .await;
                assert_eq!(r.status, StatusCode::OK, "{method} {host}");
            }
            let scans = format!("/api/libraries/{lib}/scans");
            let library = format!("/api/libraries/{lib}");
            for (method, uri) in [
                (Method::POST, scans.as_str()),
                (Method::PUT, scans.as_str()),
                (Method::PATCH, scans.as_str()),
                (Method::DELETE, library.as_str()),
            ] {
                let r = api
                    .send(
                        with_cookie(method.clone(), uri)
                            .body(Body::empty())
                            .unwrap(),
                    )
                    .await;
                assert_eq!(
                    (r.status, r.code()),
                    (StatusCode::FORBIDDEN, "csrf".into()),
                    "{method} {uri} on {host}"
                );
            }
            if host.starts_with("nas.lan") {
                // Off loopback the custom header needs the token beside it; the cookie is not it.
                let r = api
                    .send(
                        with_cookie(Method::POST, &scans)
                            .header("x-mediadex", "1")
                            .body(Body::empty())
                            .unwrap(),
                    )
                    .await;
                assert_eq!((r.status, r.code()), (StatusCode::FORBIDDEN, "csrf".into()));
            }
            assert!(
                api.env.store.scan_runs(None, 5).unwrap().is_empty(),
                "nothing admitted on {host}"
            );
            assert_eq!(
                api.env.store.libraries().unwrap().len(),
                1,
                "nothing removed"
            );
            let r = api
                .send(
                    with_cookie(Method::POST, &scans)
                        .header("authorization", format!("Bearer {TOKEN}"))
                        .body(Body::empty())
                        .unwrap(),
                )
                .await;
            assert!(
                r.status.is_success(),
                "the Bearer token still does: {:?}",
                r.body
            );
        }
    })
}

#[test]
fn off_loopback_every_api_request_needs_the_token() {
    support::block_on(async {
        let security =
            Security::for_bind("0.0.0.0:7468".parse().unwrap(), Some(TOKEN.into()), false);
        let api = api_with(security, None);
        let get = |uri: &str| Request::get(uri).header("host", "nas.lan:7468");
        for uri in ["/api/libraries", "/api/assets", "/metrics", "/api/events"] {
            let r = api.send(get(uri).body(Body::empty()).unwrap()).await;
            assert_eq!(
                (r.status, r.code()),
                (StatusCode::UNAUTHORIZED, "unauthorized".into()),
                "{uri}"
            );
            let r = api
                .send(
                    get(uri)
                        .header("authorization", "Bearer nope")
                        .body(Body::empty())
                        .unwrap(),
                )
                .await;
            assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{uri}");
        }
        let r = api
            .send(
                get("/api/libraries")
                    .header("authorization", format!("Bearer {TOKEN}"))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK);
        // The custom header alone is not enough off loopback.
        let r = api
            .send(
                Request::post("/api/libraries/1/scans")
                    .header("host", "nas.lan:7468")
                    .header("x-mediadex", "1")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED);
        let r = api.send(get("/healthz").body(Body::empty()).unwrap()).await;
        assert_eq!(
            r.status,
            StatusCode::OK,
            "the service manager needs no token"
        );

        let open = Security::for_bind("0.0.0.0:7468".parse().unwrap(), None, true);
        let api = api_with(open, None);
        let r = api
            .send(get("/api/libraries").body(Body::empty()).unwrap())
            .await;
        assert_eq!(r.status, StatusCode::OK, "--insecure-no-auth");
    })
}

/// The page learns how this server is reached, to keep a banner up while it is open to
/// anyone (`--insecure-no-auth`, as Syncthing warns of a GUI without a password).
#[test]
fn the_server_says_how_it_is_reached_for_the_page_banner() {
    support::block_on(async {
        let cases = [
            (loopback(), "loopback"),
            (
                Security::for_bind("0.0.0.0:7468".parse().unwrap(), Some(TOKEN.into()), false),
                "token",
            ),
            (
                Security::for_bind("0.0.0.0:7468".parse().unwrap(), None, true),
                "open",
            ),
        ];
        for (security, access) in cases {
            let request =
                req(Method::GET, "/api/server").header("authorization", format!("Bearer {TOKEN}"));
            let r = api_with(security, None)
                .send(request.body(Body::empty()).unwrap())
                .await;
            assert_eq!(r.status, StatusCode::OK, "{access}");
            let out = r.json();
            assert_eq!(out["access"], access, "{out}");
            assert_eq!(out["version"], env!("CARGO_PKG_VERSION"));
        }
        let api = api();
        let page = String::from_utf8_lossy(&api.get("/js/access.js").await.body).into_owned();
        assert!(
            page.contains("/api/server") && page.contains("--insecure-no-auth"),
            "{page}"
        );
    })
}

// ---------------------------------------------------------------------------------------
// Events and metrics.

/// A server-sent event stream being read.
struct Sse {
    /// The body's chunks as the runtime's task reading it passes them on.
    chunks: std::sync::mpsc::Receiver<Result<Bytes, String>>,
    text: String,
}

impl Sse {
    async fn open(api: &Api) -> Sse {
        use futures_util::StreamExt;
        let router = api.router.clone();
        let request = req(Method::GET, "/api/events").body(Body::empty()).unwrap();
        let response = support::rt()
            .spawn(async move { router.oneshot(request).await })
            .await
            .expect("the request's task")
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        // The stream is read on the runtime (its poller's timers are there); a chunk that
        // nobody takes any more ends the task.
        let mut stream = response.into_body().into_data_stream();
        let (tx, chunks) = std::sync::mpsc::channel();
        support::rt().spawn(async move {
            while let Some(chunk) = stream.next().await {
                if tx.send(chunk.map_err(|e| e.to_string())).is_err() {
                    break;
                }
            }
        });
        Sse {
            chunks,
            text: String::new(),
        }
    }

    /// The next named event; `None` when the stream ended. The timeout only bounds a
    /// failing test: the event is waited for, not raced.
    async fn next(&mut self) -> Option<(String, Value)> {
        loop {
            if let Some(end) = self.text.find("\n\n") {
                let block: String = self.text.drain(..end + 2).collect();
                let field = |p: &str| {
                    block
                        .lines()
                        .find_map(|l| l.strip_prefix(p))
                        .map(str::to_string)
                };
                if let (Some(name), Some(data)) = (field("event: "), field("data: ")) {
                    return Some((name, serde_json::from_str(&data).expect("json data")));
                }
                continue;
            }
            let chunk = match self.chunks.recv_timeout(Duration::from_secs(20)) {
                Ok(chunk) => chunk.expect("chunk"),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return None,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("an event within 20 s"),
            };
            self.text.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}

#[test]
fn events_announce_a_scan_queued_started_progressing_and_finished() {
    support::block_on(async {
        let api = api();
        let lib = api.env.library("pics");
        let store = api.env.store.clone();
        let mut sse = Sse::open(&api).await;
        // Each step waits for its event before the next: no change can hide another.
        let (run, _) = store.request_scan(api.env.scan_request(lib, "")).unwrap();
        let (name, data) = sse.next().await.unwrap();
        assert_eq!(
            (name.as_str(), data["id"].as_i64()),
            ("scan_queued", Some(run.id))
        );
        let (lease, _) = store.claim_scan_run(TTL).unwrap().unwrap();
        let (name, data) = sse.next().await.unwrap();
        assert_eq!(
            (name.as_str(), data["state"].as_str()),
            ("scan_started", Some("running"))
        );
        store.checkpoint_scan(&lease, r#"{"files":7}"#).unwrap();
        let (name, data) = sse.next().await.unwrap();
        assert_eq!(
            (name.as_str(), data["progress"].as_str()),
            ("scan_progress", Some(r#"{"files":7}"#))
        );
        store
            .complete_scan(&lease, mediadex::model::RunOutcome::Completed, None)
            .unwrap();
        let (name, data) = sse.next().await.unwrap();
        assert_eq!(
            (name.as_str(), data["state"].as_str()),
            ("scan_finished", Some("completed"))
        );
        // Shutdown ends the stream (a graceful stop does not wait on open event streams).
        api._stop.0.send(true).unwrap();
        assert!(sse.next().await.is_none());
    })
}

#[test]
fn metrics_report_queues_counters_scans_and_assets() {
    support::block_on(async {
        let api = api();
        let (lib, _) = api.photos("photos");
        api.scan(lib);
        let other = api.env.library("waiting");
        api.env.clock.advance(1_000);
        api.env
            .store
            .request_scan(api.env.scan_request(other, ""))
            .unwrap();
        api.env.clock.advance(4_000);
        api.env
            .store
            .enqueue(NewJob::new("face_walk", "{}"))
            .unwrap();
        // A stale ack is counted.
        api.env
            .store
            .request_scan(api.env.scan_request(lib, ""))
            .unwrap();
        let (lease, _) = api.env.store.claim_scan_run(TTL).unwrap().unwrap();
        api.env
            .store
            .release_unowned(Target::ScanRun, lease.id)
            .unwrap();
        assert!(api.env.store.checkpoint_scan(&lease, "{}").is_err());

        let r = api.get("/metrics").await;
        assert_eq!(r.status, StatusCode::OK);
        assert!(
            r.header("content-type")
                .starts_with("text/plain; version=0.0.4")
        );
        let text = String::from_utf8_lossy(&r.body).to_string();
        let value = |series: &str| -> f64 {
            text.lines()
                .find_map(|l| l.strip_prefix(series).and_then(|v| v.strip_prefix(' ')))
                .unwrap_or_else(|| panic!("no {series} in\n{text}"))
                .parse()
                .unwrap()
        };
        let size: u64 = ["2024/a.png", "b.png"]
            .iter()
            .map(|p| {
                std::fs::metadata(api.env.dir.path().join("photos").join(p))
                    .unwrap()
                    .len()
            })
            .sum();
        assert_eq!(value("mediadex_files_hashed_total"), 3.0);
        assert_eq!(
            value("mediadex_bytes_hashed_total"),
            (size
                + std::fs::metadata(api.env.dir.path().join("photos/2024/a.png"))
                    .unwrap()
                    .len()) as f64
        );
        assert_eq!(value("mediadex_fence_rejections_total"), 1.0);
        assert_eq!(value("mediadex_scheme_restarts_total"), 0.0);
        assert_eq!(value("mediadex_assets{kind=\"image\"}"), 2.0);
        assert_eq!(value("mediadex_queue_depth{kind=\"scan\"}"), 2.0);
        assert_eq!(
            value("mediadex_queue_oldest_age_seconds{kind=\"scan\"}"),
            4.0
        );
        assert_eq!(value("mediadex_queue_depth{kind=\"face_walk\"}"), 1.0);
        assert_eq!(
            value("mediadex_reclaims_total{outcome=\"run_retired\"}"),
            0.0
        );
        let finished = api
            .env
            .store
            .scan_runs(Some(lib), 5)
            .unwrap()
            .into_iter()
            .find(|r| r.state == mediadex::model::RunState::Completed)
            .unwrap()
            .finished_at
            .unwrap();
        assert_eq!(
            value(&format!(
                "mediadex_last_successful_scan_timestamp_seconds{{library_id=\"{lib}\",library=\"photos\"}}"
            )),
            finished as f64 / 1000.0
        );
        assert_eq!(
            value(&format!(
                "mediadex_last_successful_scan_timestamp_seconds{{library_id=\"{other}\",library=\"waiting\"}}"
            )),
            0.0
        );
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            assert!(line.starts_with("mediadex_"), "{line}");
        }
    })
}

// ---------------------------------------------------------------------------------------
// Originals: byte ranges.

async fn get_with(api: &Api, uri: &str, headers: &[(&str, &str)]) -> Reply {
    let mut r = req(Method::GET, uri);
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    api.send(r.body(Body::empty()).unwrap()).await
}

#[test]
fn an_original_answers_each_range_form_and_refuses_an_unsatisfiable_one() {
    support::block_on(async {
        let api = api();
        let (lib, root) = api.photos("photos");
        api.scan(lib);
        let b = api.asset_at("b.png");
        let bytes = std::fs::read(root.join("b.png")).unwrap();
        let len = bytes.len();
        let uri = format!("/api/assets/{b}/original");
        let full = api.get(&uri).await;
        assert_eq!(full.status, StatusCode::OK);
        assert_eq!(full.header("accept-ranges"), "bytes");
        let etag = full.header("etag").to_string();
        assert!(etag.starts_with('"'), "{etag}");

        let cases = [
            ("bytes=0-9", 0, 9),
            ("bytes=10-", 10, len - 1),
            ("bytes=-7", len - 7, len - 1),
            ("bytes=5-99999999", 5, len - 1),
        ];
        for (range, start, end) in cases {
            let r = get_with(&api, &uri, &[("range", range)]).await;
            assert_eq!(r.status, StatusCode::PARTIAL_CONTENT, "{range}");
            assert_eq!(
                r.header("content-range"),
                format!("bytes {start}-{end}/{len}"),
                "{range}"
            );
            assert_eq!(&r.body[..], &bytes[start..=end], "{range}");
            assert_eq!(r.header("content-length"), (end - start + 1).to_string());
            assert_eq!(r.header("content-type"), "image/png");
        }

        for range in [format!("bytes={len}-"), "bytes=-0".to_string()] {
            let r = get_with(&api, &uri, &[("range", &range)]).await;
            assert_eq!(
                (r.status, r.code()),
                (
                    StatusCode::RANGE_NOT_SATISFIABLE,
                    "range_not_satisfiable".into()
                ),
                "{range}"
            );
            assert_eq!(r.header("content-range"), format!("bytes */{len}"));
        }

        // Several ranges, or a malformed one: the whole body.
        for range in ["bytes=0-1,4-5", "bytes=9-2", "pages=1-2"] {
            let r = get_with(&api, &uri, &[("range", range)]).await;
            assert_eq!(r.status, StatusCode::OK, "{range}");
            assert_eq!(&r.body[..], &bytes[..], "{range}");
        }

        // If-Range: the range holds only while the file is the one the client saw.
        let r = get_with(&api, &uri, &[("range", "bytes=0-3"), ("if-range", &etag)]).await;
        assert_eq!(r.status, StatusCode::PARTIAL_CONTENT);
        assert_eq!(&r.body[..], &bytes[..4]);
        let r = get_with(
            &api,
            &uri,
            &[("range", "bytes=0-3"), ("if-range", "\"another\"")],
        )
        .await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(&r.body[..], &bytes[..]);
    })
}

#[test]
fn a_range_of_a_video_sized_file_is_exactly_those_bytes() {
    support::block_on(async {
        let api = api();
        let root = api.env.dir.path().join("big");
        std::fs::create_dir_all(&root).unwrap();
        // Noise does not compress: a PNG of a few MiB.
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let img = image::RgbImage::from_fn(1200, 1000, |_, _| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            image::Rgb([seed as u8, (seed >> 8) as u8, (seed >> 16) as u8])
        });
        img.save(root.join("noise.png")).unwrap();
        let bytes = std::fs::read(root.join("noise.png")).unwrap();
        assert!(bytes.len() > 3 << 20, "{} bytes", bytes.len());
        let root = std::fs::canonicalize(&root).unwrap();
        let lib =
            mediadex::app::add_library(&api.env.store, "big", &root.to_string_lossy()).unwrap();
        api.scan(lib.id);
        let id = api.asset_at("noise.png");
        let (start, end) = (1_000_003, 3_000_000);
        let r = get_with(
            &api,
            &format!("/api/assets/{id}/original"),
            &[("range", &format!("bytes={start}-{end}"))],
        )
        .await;
        assert_eq!(r.status, StatusCode::PARTIAL_CONTENT);
        assert_eq!(r.body.len(), end - start + 1);
        assert!(r.body[..] == bytes[start..=end], "exactly those bytes");
        let tail = get_with(
            &api,
            &format!("/api/assets/{id}/original"),
            &[("range", "bytes=-65537")],
        )
        .await;
        assert!(tail.body[..] == bytes[bytes.len() - 65537..]);
    })
}

// ---------------------------------------------------------------------------------------
// Walks.

/// Live (queued or running) rows of the chain of `kind`.
fn live_chain_rows(api: &Api, kind: WalkKindId) -> Vec<mediadex::model::Job> {
    api.env
        .store
        .jobs(1000)
        .unwrap()
        .into_iter()
        .filter(|j| j.kind == kind.job_kind() && !j.state.is_terminal())
        .collect()
}

#[test]
fn walks_show_their_state_start_once_restart_and_refuse_unknown_kinds() {
    support::block_on(async {
        let api = api();
        let (lib, _) = api.photos("photos");
        api.scan(lib);
        let list = api.get("/api/walks").await;
        assert_eq!(list.status, StatusCode::OK);
        let list = list.json();
        let kinds: Vec<&str> = list
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["content-hash", "faces"]);
        let ch = &list[0];
        assert_eq!(ch["current_scheme"], 1);
        assert_eq!(ch["record"]["scheme"], 0);
        assert_eq!(
            (ch["state"].as_str(), ch["rollback"].as_bool()),
            (Some("none"), Some(false))
        );
        assert!(ch["job_id"].is_null() && ch["done"].is_null());

        let wakes = api.wakes.load(Ordering::SeqCst);
        let r = api.post_empty("/api/walks/content-hash/start").await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{:?}", r.body);
        let first = r.json();
        assert_eq!(first["state"], "queued");
        assert_eq!(
            (first["done"].as_u64(), first["restart"].as_bool()),
            (Some(0), Some(false))
        );
        // The scan stamped every asset already: nothing left to visit but the end.
        assert_eq!(first["total"], 0);
        assert_eq!(first["record"]["seen"], 1, "start raises seen");
        assert!(api.wakes.load(Ordering::SeqCst) > wakes, "workers woken");
        let job = first["job_id"].as_i64().unwrap();

        // A second start joins the chain under way: no second chain.
        let again = api.post_empty("/api/walks/content-hash/start").await;
        assert_eq!(again.status, StatusCode::OK);
        assert_eq!(again.json()["job_id"], job);
        assert_eq!(live_chain_rows(&api, WalkKindId::ContentHash).len(), 1);
        assert_eq!(
            api.get("/api/walks/content-hash").await.json(),
            again.json()
        );

        // restart (body or query) replaces it with one that re-visits every asset.
        let r = api
            .post(
                "/api/walks/content-hash/start",
                serde_json::json!({"restart": true}),
            )
            .await;
        assert_eq!(r.status, StatusCode::ACCEPTED);
        let restarted = r.json();
        assert_ne!(restarted["job_id"], job);
        assert_eq!(
            (restarted["restart"].as_bool(), restarted["total"].as_u64()),
            (Some(true), Some(2))
        );
        let r = api
            .post_empty("/api/walks/content-hash/start?restart=true")
            .await;
        assert_eq!(r.status, StatusCode::ACCEPTED);
        assert_ne!(r.json()["job_id"], restarted["job_id"]);
        let live = live_chain_rows(&api, WalkKindId::ContentHash);
        assert_eq!(live.len(), 1, "{live:?}");
        assert_eq!(
            api.get(&format!("/api/jobs/{job}")).await.json()["state"],
            "cancelled"
        );

        for (uri, post) in [
            ("/api/walks/thumbnails", false),
            ("/api/walks/nope/start", true),
            ("/api/walks/nope/release", true),
        ] {
            let r = if post {
                api.post_empty(uri).await
            } else {
                api.get(uri).await
            };
            assert_eq!(
                (r.status, r.code()),
                (StatusCode::NOT_FOUND, "unknown_walk".into()),
                "{uri}"
            );
        }
        let r = api
            .post("/api/walks/faces/start", serde_json::json!({"bogus": 1}))
            .await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::BAD_REQUEST, "bad_request".into())
        );
        let r = api.post_empty("/api/walks/faces/start?restart=maybe").await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
        // Starting is a state change: cross-site requests are refused and start nothing.
        let r = api
            .send(
                Request::post("/api/walks/faces/start")
                    .header("host", "127.0.0.1:7468")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!((r.status, r.code()), (StatusCode::FORBIDDEN, "csrf".into()));
        assert!(live_chain_rows(&api, WalkKindId::Faces).is_empty());

        // A newer mediadex walked here before: the rollback is flagged.
        mediadex::walks::start(&api.env.store, WalkKindId::Faces, 3).unwrap();
        let faces = api.get("/api/walks/faces").await.json();
        assert_eq!(
            (
                faces["rollback"].as_bool(),
                faces["record"]["seen"].as_i64()
            ),
            (Some(true), Some(3))
        );
        // A server without a face detector has no faces walk.
        let api = api_tweaked(loopback(), None, None, |c| {
            c.ops.walks = Arc::new([(WalkKindId::ContentHash, 1)]);
            c.ops.faces = None;
        });
        let r = api.post_empty("/api/walks/faces/start").await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::NOT_FOUND, "unknown_walk".into())
        );
    })
}

#[test]
fn a_running_walk_shows_its_holder_and_is_force_released() {
    support::block_on(async {
        let api = api();
        let (lib, _) = api.photos("photos");
        api.scan(lib);
        let store = &api.env.store;
        let r = api.post_empty("/api/walks/content-hash/release").await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::CONFLICT, "no_chain".into())
        );
        api.post_empty("/api/walks/content-hash/start?restart=true")
            .await;
        let r = api.post_empty("/api/walks/content-hash/release").await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::CONFLICT, "not_running".into())
        );

        let (lease, _) = store
            .claim_job(&[WalkKindId::ContentHash.job_kind()], TTL)
            .unwrap()
            .unwrap();
        api.env.clock.advance(1_500);
        let w = api.get("/api/walks/content-hash").await.json();
        assert_eq!(w["state"], "running");
        assert_eq!(w["lease_owner"], store.owner());
        assert_eq!(w["heartbeat_age_ms"], 1_500);
        store.renew(&lease, TTL).unwrap();
        let w = api.get("/api/walks/content-hash").await.json();
        assert_eq!(w["heartbeat_age_ms"], 0, "a heartbeat resets the age");

        let r = api.post_empty("/api/walks/content-hash/release").await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        let w = r.json();
        assert_eq!(
            (w["state"].as_str(), w["job_id"].as_i64()),
            (Some("queued"), Some(lease.id))
        );
        assert!(w["lease_owner"].is_null() && w["heartbeat_age_ms"].is_null());
        let job = store.job(lease.id).unwrap().unwrap();
        assert!(job.generation > lease.generation);
        assert!(store.renew(&lease, TTL).unwrap_err().is_lease_lost());
        // Claimable again, by anyone.
        let (again, _) = api
            .env
            .other_process("other:2:0002")
            .claim_job(&[WalkKindId::ContentHash.job_kind()], TTL)
            .unwrap()
            .expect("re-claimable");
        assert_eq!(again.id, lease.id);
    })
}

/// A content-hash walk whose batch stamps a marker hash (so that a stale landing shows) and
/// that pauses between processing and commit until the test lets it go.
struct PausedWalk {
    inner: mediadex::walks::content_hash::ContentHashWalk,
    processed: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    go: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

const MARKER: [u8; 32] = [0xAB; 32];

impl mediadex::walks::WalkKind for PausedWalk {
    fn id(&self) -> WalkKindId {
        WalkKindId::ContentHash
    }
    fn scheme(&self) -> i64 {
        self.inner.scheme
    }
    fn batch_size(&self) -> usize {
        self.inner.batch
    }
    fn process(&self, batch: &[mediadex::model::WalkAsset]) -> mediadex::model::WalkResults {
        let hashes = batch
            .iter()
            .map(|a| {
                let marker = mediadex::model::ContentHash {
                    scheme: self.inner.scheme,
                    hash: MARKER,
                };
                (a.id, marker)
            })
            .collect();
        if let Some(tx) = self.processed.lock().unwrap().take() {
            let _ = tx.send(());
        }
        self.go.lock().unwrap().recv().expect("go");
        mediadex::model::WalkResults::ContentHashes(hashes)
    }
}

/// Claims the next row of `kind` and runs `handler` on it under a real lease guard (the
/// heartbeat thread is set far out: the test decides when anything happens).
fn run_one_batch(
    store: &mediadex::store::Store,
    kind: WalkKindId,
    handler: &dyn mediadex::queue::JobHandler,
) -> Option<Result<mediadex::queue::JobDone, mediadex::queue::WorkError>> {
    let (lease, job) = store.claim_job(&[kind.job_kind()], TTL).unwrap()?;
    let registry = Arc::new(mediadex::queue::Registry::default());
    let guard = mediadex::queue::LeaseGuard::register(store, lease, TTL, &registry);
    guard
        .begin(Duration::from_secs(3600), &mediadex::queue::NoHooks)
        .expect("first heartbeat");
    Some(handler.run(&guard, &job))
}

#[test]
fn a_walker_force_released_over_http_lands_nothing_when_it_commits_later() {
    support::block_on(async {
        let api = api();
        let (lib, _) = api.photos("photos");
        api.scan(lib);
        let store = api.env.store.clone();
        let assets: Vec<i64> = store.assets(false).unwrap().iter().map(|a| a.id).collect();
        let hashes = |store: &mediadex::store::Store| -> Vec<Option<[u8; 32]>> {
            assets
                .iter()
                .map(|&id| {
                    store
                        .asset(id)
                        .unwrap()
                        .unwrap()
                        .content_hash
                        .map(|c| c.hash)
                })
                .collect()
        };
        let before = hashes(&store);
        let r = api
            .post_empty("/api/walks/content-hash/start?restart=true")
            .await;
        assert_eq!(r.status, StatusCode::ACCEPTED);
        let job = r.json()["job_id"].as_i64().unwrap();

        let (processed_tx, processed_rx) = tokio::sync::oneshot::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel();
        let walk = PausedWalk {
            inner: mediadex::walks::content_hash::ContentHashWalk {
                scheme: 1,
                batch: 10,
            },
            processed: std::sync::Mutex::new(Some(processed_tx)),
            go: std::sync::Mutex::new(go_rx),
        };
        let handler = mediadex::walks::WalkJob::new(&store, Arc::new(walk));
        let worker_store = store.clone();
        let worker = support::rt().spawn_blocking(move || {
            run_one_batch(&worker_store, WalkKindId::ContentHash, &handler)
        });
        // The walker has processed its batch and holds it, uncommitted.
        processed_rx.await.expect("the walker processed its batch");
        let r = api.post_empty("/api/walks/content-hash/release").await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        // Another process claims the chain again: the row runs under a newer generation.
        let other = api.env.other_process("other:2:0002");
        let (lease, _) = other
            .claim_job(&[WalkKindId::ContentHash.job_kind()], TTL)
            .unwrap()
            .expect("re-claimable");
        assert_eq!(lease.id, job);
        go_tx.send(()).unwrap();
        let result = worker.await.unwrap();
        assert!(
            matches!(result, Some(Err(mediadex::queue::WorkError::Guard(_)))),
            "the stale commit is refused: {result:?}"
        );
        assert_eq!(
            hashes(&store),
            before,
            "no stamp of the stale walker landed"
        );
        assert!(!hashes(&store).contains(&Some(MARKER)));
        let rows: Vec<_> = store
            .jobs(100)
            .unwrap()
            .into_iter()
            .filter(|j| j.kind == WalkKindId::ContentHash.job_kind() && j.id >= job)
            .collect();
        assert_eq!(rows.len(), 1, "no next row: {rows:?}");
        assert_eq!(
            (rows[0].state, rows[0].lease_owner.as_deref()),
            (mediadex::model::JobState::Running, Some("other:2:0002"))
        );
        let record = store.walk_record(WalkKindId::ContentHash).unwrap().unwrap();
        assert_eq!(record.scheme, 0, "the record was not raised");
        assert!(api.env.counter(mediadex::model::Counter::FenceRejections) >= 1);
    })
}

#[test]
fn walk_events_follow_each_committed_batch_to_the_end() {
    support::block_on(async {
        let api = api();
        let (lib, _) = api.photos("photos");
        api.scan(lib);
        let store = api.env.store.clone();
        let mut sse = Sse::open(&api).await;
        api.post_empty("/api/walks/content-hash/start?restart=true")
            .await;
        let mut walk_event = async || loop {
            let (name, data) = sse.next().await.expect("the stream goes on");
            if name == "walk" {
                assert_eq!(data["kind"], "content-hash");
                return data;
            }
        };
        // The start clamps the record, then queues the chain: a poll in between reports the
        // raised record with no chain yet ("none"), which is true at that moment.
        let e = loop {
            let e = walk_event().await;
            if e["state"] != "none" {
                break e;
            }
            assert_eq!(e["record"]["seen"], 1, "{e}");
        };
        assert_eq!(
            (e["state"].as_str(), e["done"].as_u64(), e["total"].as_u64()),
            (Some("queued"), Some(0), Some(2))
        );
        // Batches of one asset: two full batches, then the short one that ends the chain.
        let handler = mediadex::walks::WalkJob::new(
            &store,
            Arc::new(mediadex::walks::content_hash::ContentHashWalk {
                scheme: 1,
                batch: 1,
            }),
        );
        let handler = Arc::new(handler);
        for done in [1, 2] {
            let (s, h) = (store.clone(), handler.clone());
            support::blocking(move || {
                run_one_batch(&s, WalkKindId::ContentHash, h.as_ref()).expect("a row")
            })
            .await
            .expect("committed");
            // Each event reports what was committed (a claim in between may show as running).
            let e = loop {
                let e = walk_event().await;
                if e["done"] == done {
                    break e;
                }
                assert!(e["done"].as_u64() < Some(done), "{e}");
            };
            assert_eq!(
                (e["state"].as_str(), e["total"].as_u64()),
                (Some("queued"), Some(2))
            );
        }
        let (s, h) = (store.clone(), handler.clone());
        support::blocking(move || {
            run_one_batch(&s, WalkKindId::ContentHash, h.as_ref()).expect("a row")
        })
        .await
        .expect("committed");
        let end = loop {
            let e = walk_event().await;
            if e["state"] != "running" {
                break e;
            }
        };
        assert_eq!(end["state"], "done", "{end}");
        assert_eq!(end["record"]["scheme"], 1);
        assert!(end["job_id"].is_null());
    })
}

// ---------------------------------------------------------------------------------------
// Faces.

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The page learns which formats get only a placeholder here from the server, as `status`
/// does: the HEIF types without heif-dec, videos without ffmpeg; and the page shows it.
#[test]
fn the_formats_without_thumbnails_are_answered_for_the_page() {
    support::block_on(async {
        let without = api_full(loopback(), None, None);
        let r = without.get("/api/thumbnails").await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(
            r.json()["no_thumbnails"],
            serde_json::json!(["image/heic", "image/heif", "image/avif", "video"])
        );
        let with = api_tweaked(loopback(), None, Some(PathBuf::from("/bin/ffmpeg")), |c| {
            let heif = mediadex::media::heif_dec::HeifDec::at(PathBuf::from("/bin/heif-dec"));
            let thumbs =
                std::mem::replace(&mut c.thumbs, Thumbs::with_ffmpeg(Path::new("/"), None));
            c.thumbs = thumbs.with_heif(Some(heif));
        });
        assert_eq!(
            with.get("/api/thumbnails").await.json()["no_thumbnails"],
            serde_json::json!([])
        );
        let page = String::from_utf8_lossy(&without.get("/js/lacking.js").await.body).into_owned();
        assert!(page.contains("/api/thumbnails"), "{page}");
        let index = String::from_utf8_lossy(&without.get("/").await.body).into_owned();
        assert!(index.contains(r#"id="lacking""#));
    })
}

/// A HEIF's boxes are in the frame libheif hands out, already turned by `irot`; its EXIF
/// Orientation (iPhones write one) is informational and must not be applied again, or a
/// client turns the boxes off the faces. JPEG's orientation is answered as before.
#[test]
fn a_heif_answers_no_orientation_for_its_faces_whatever_its_exif_says() {
    support::block_on(async {
        let api = api();
        let (lib, root) = api.photos("photos");
        std::fs::copy(fixture("astronaut_exif6.heic"), root.join("astro.heic")).unwrap();
        api.scan(lib);
        let astro = api.asset_at("astro.heic");
        let asset = api.get(&format!("/api/assets/{astro}")).await.json();
        assert_eq!(
            (asset["width"].as_u64(), asset["height"].as_u64()),
            (Some(405), Some(540)),
            "shown as decoded, not turned again: {asset}"
        );
        assert_eq!(
            asset["orientation"], 6,
            "the file's own EXIF, as exiftool reads it"
        );
        let f = api.get(&format!("/api/assets/{astro}/faces")).await.json();
        assert!(f["orientation"].is_null(), "{f}");
        assert_eq!(
            (f["stored_width"].as_u64(), f["stored_height"].as_u64()),
            (Some(405), Some(540))
        );
    })
}

#[test]
fn faces_of_an_asset_are_redetected_listed_and_refused_where_they_cannot_be() {
    support::block_on(async {
        let api = api();
        let (lib, root) = api.photos("photos");
        std::fs::copy(fixture("astronaut.png"), root.join("astronaut.png")).unwrap();
        api.scan(lib);
        let astro = api.asset_at("astronaut.png");
        let b = api.asset_at("b.png");

        let r = api.get(&format!("/api/assets/{astro}/faces")).await;
        assert_eq!(r.status, StatusCode::OK);
        let f = r.json();
        assert!(f["detector_version"].is_null(), "not detected yet: {f}");
        assert_eq!(f["faces"], serde_json::json!([]));
        assert_eq!(
            (f["stored_width"].as_u64(), f["stored_height"].as_u64()),
            (Some(512), Some(512))
        );

        let r = api
            .post_empty(&format!("/api/assets/{astro}/faces/redetect"))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        let f = r.json();
        assert_eq!(f["detector_version"], mediadex::faces::SCHEME);
        let faces = f["faces"].as_array().unwrap();
        assert_eq!(faces.len(), 1, "{f}");
        let face = &faces[0];
        let (x, y, w, h) = (
            face["x"].as_f64().unwrap(),
            face["y"].as_f64().unwrap(),
            face["w"].as_f64().unwrap(),
            face["h"].as_f64().unwrap(),
        );
        // Her face, in the 512x512 picture's own pixels (tests/it/faces.rs has the reference).
        assert!(
            (200.0..250.0).contains(&(x + w / 2.0)) && (90.0..140.0).contains(&(y + h / 2.0)),
            "{face}"
        );
        assert!(face["score"].as_f64().unwrap() > 0.9);
        assert_eq!(face["landmarks"].as_array().unwrap().len(), 5);
        assert_eq!(
            api.get(&format!("/api/assets/{astro}/faces")).await.json(),
            f
        );
        // A picture without people: detected, none found.
        let r = api
            .post_empty(&format!("/api/assets/{b}/faces/redetect"))
            .await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(
            (
                r.json()["detector_version"].as_i64(),
                r.json()["faces"].as_array().map(Vec::len)
            ),
            (Some(mediadex::faces::SCHEME), Some(0))
        );

        // The list holds the assets with faces only.
        let list = api.get("/api/faces").await.json();
        let ids: Vec<i64> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["asset_id"].as_i64().unwrap())
            .collect();
        assert_eq!(ids, [astro]);
        assert_eq!(list["items"][0]["faces"], f["faces"]);
        assert!(list["next_cursor"].is_null());

        // Errors: unknown, trashed, not a picture, no detector, bad paging.
        for r in [
            api.get("/api/assets/999/faces").await,
            api.post_empty("/api/assets/999/faces/redetect").await,
        ] {
            assert_eq!(
                (r.status, r.code()),
                (StatusCode::NOT_FOUND, "not_found".into())
            );
        }
        let r = api.post_empty(&format!("/api/assets/{astro}/trash")).await;
        assert_eq!(r.status, StatusCode::OK);
        let r = api
            .post_empty(&format!("/api/assets/{astro}/faces/redetect"))
            .await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::CONFLICT, "trashed".into())
        );
        let r = api.get(&format!("/api/assets/{astro}/faces")).await;
        assert_eq!(
            (r.status, r.json()["trashed"].as_bool()),
            (StatusCode::OK, Some(true))
        );
        assert!(
            api.get("/api/faces").await.json()["items"]
                .as_array()
                .unwrap()
                .is_empty(),
            "trash is not listed"
        );
        let videos = api.env.library("videos");
        synthetic::fill(&api.env.store, videos, "v", 0, 1).unwrap();
        let video = api.asset_at("v/0000000.jpg");
        let r = api
            .post_empty(&format!("/api/assets/{video}/faces/redetect"))
            .await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::CONFLICT, "not_an_image".into())
        );
        for q in ["limit=0", "limit=501", "cursor=nonsense", "bogus=1"] {
            let r = api.get(&format!("/api/faces?{q}")).await;
            assert_eq!(
                (r.status, r.code()),
                (StatusCode::BAD_REQUEST, "bad_request".into()),
                "{q}"
            );
        }
        let r = api
            .send(
                Request::post(format!("/api/assets/{b}/faces/redetect"))
                    .header("host", "127.0.0.1:7468")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!((r.status, r.code()), (StatusCode::FORBIDDEN, "csrf".into()));
        let api = api_tweaked(loopback(), None, None, |c| c.ops.faces = None);
        let (lib, _) = api.photos("photos");
        api.scan(lib);
        let b = api.asset_at("b.png");
        let r = api
            .post_empty(&format!("/api/assets/{b}/faces/redetect"))
            .await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::SERVICE_UNAVAILABLE, "no_detector".into())
        );
    })
}

#[test]
fn the_faces_list_pages_through_every_asset_with_faces() {
    support::block_on(async {
        let api = api();
        let lib = api.env.library("pics");
        synthetic::fill(&api.env.store, lib, "s", 1, 30).unwrap();
        let store = &api.env.store;
        let face = mediadex::model::DetectedFace {
            x: 1.0,
            y: 2.0,
            w: 3.0,
            h: 4.0,
            score: 0.95,
            landmarks: [(1.0, 1.0); 5],
        };
        let mut with_faces: Vec<i64> = store
            .assets(false)
            .unwrap()
            .iter()
            .map(|a| a.id)
            .filter(|id| id % 3 == 0)
            .collect();
        for &id in &with_faces {
            assert!(store.store_faces(id, 1, vec![face]).unwrap());
        }
        // Detected with no face found: not listed.
        store.store_faces(1, 1, vec![]).unwrap();
        let mut seen = vec![];
        let mut uri = "/api/faces?limit=4".to_string();
        loop {
            let page = api.get(&uri).await.json();
            for item in page["items"].as_array().unwrap() {
                assert_eq!(item["faces"][0]["w"], 3.0);
                seen.push(item["asset_id"].as_i64().unwrap());
            }
            match page["next_cursor"].as_str() {
                Some(c) => uri = format!("/api/faces?limit=4&cursor={c}"),
                None => break,
            }
        }
        seen.sort_unstable();
        with_faces.sort_unstable();
        assert_eq!(seen, with_faces);
    })
}

/// Issue 13 item 6: after a real scan of hostile names, one asset and the duplicates give
/// back, for every file, a path a script can open: `path`, or the base64 `path_bytes` where
/// the text is lossy.
#[cfg(unix)]
#[test]
fn every_hostile_path_comes_back_exactly_from_the_api() {
    support::block_on(async {
        let api = api();
        let root = api.env.dir.path().join("p");
        let made = support::hostile_library(&root);
        std::fs::copy(
            support::join_bytes(&root, &made[0]),
            support::join_bytes(&root, b"tab\tcopy\xe9.png"),
        )
        .expect("copy");
        let root = std::fs::canonicalize(&root).expect("canonical");
        let lib = mediadex::app::add_library(&api.env.store, "p", &root.to_string_lossy())
            .expect("add library");
        api.scan(lib.id);
        let list = api.get("/api/assets?limit=500").await.json();
        let items = list["items"].as_array().expect("items");
        assert_eq!(items.len(), made.len(), "{list}");
        let mut seen = Vec::new();
        for item in items {
            let one = api.get(&format!("/api/assets/{}", item["id"])).await.json();
            for p in one["paths"].as_array().expect("paths") {
                let rel = support::json_path_bytes(&p["path"], &p["path_bytes"]);
                let bytes = std::fs::read(support::join_bytes(&root, &rel))
                    .unwrap_or_else(|e| panic!("{p} does not open: {e}"));
                let sum = blake3::hash(&bytes).to_hex();
                assert_eq!(one["checksum"].as_str(), Some(sum.as_str()), "{p}");
                seen.push(rel);
            }
        }
        let mut made = [made, vec![b"tab\tcopy\xe9.png".to_vec()]].concat();
        made.sort();
        seen.sort();
        assert_eq!(seen, made, "every file, each once");
        let dups = api.get("/api/duplicates").await.json();
        let dup: Vec<Vec<u8>> = dups[0]["paths"]
            .as_array()
            .expect("paths")
            .iter()
            .map(|p| support::json_path_bytes(&p["path"], &p["path_bytes"]))
            .collect();
        assert_eq!(
            dup,
            [b"caf\xe9.png".to_vec(), b"tab\tcopy\xe9.png".to_vec()]
        );
    })
}

#[test]
fn a_runs_problems_are_paged_with_their_errors_and_exact_path_bytes() {
    support::block_on(async {
        use mediadex::model::{IngestBatch, RunProblem};
        let api = api();
        let lib = api.env.library("pics");
        let lease = api.env.claimed_scan(lib, "");
        let problem = |bytes: &[u8], error: &str| RunProblem {
            rel_path: bytes.to_vec(),
            rel_path_text: String::from_utf8_lossy(bytes).into_owned(),
            error: error.into(),
        };
        let batch = IngestBatch {
            problems: vec![
                problem(b"a.jpg", "truncated"),
                problem(b"caf\xe9.jpg", "unreadable"),
                problem(b"loop", "symlink loop"),
            ],
            ..IngestBatch::default()
        };
        api.env
            .store
            .ingest_batch_counting(&lease, lib, batch, "{}")
            .unwrap();
        let base = format!("/api/scans/{}/problems", lease.id);
        let page = api.get(&format!("{base}?limit=2")).await;
        assert_eq!(page.status, StatusCode::OK);
        let page = page.json();
        assert_eq!(
            (page["total"].clone(), page["truncated"].clone()),
            (3.into(), false.into())
        );
        let items = page["items"].as_array().unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(
            (
                items[0]["seq"].clone(),
                items[0]["path"].clone(),
                items[0]["error"].clone()
            ),
            (1.into(), "a.jpg".into(), "truncated".into())
        );
        assert!(items[0].get("path_bytes").is_none(), "{page}");
        assert_eq!(
            support::json_path_bytes(&items[1]["path"], &items[1]["path_bytes"]),
            b"caf\xe9.jpg"
        );
        let rest = api
            .get(&format!("{base}?after={}", page["next_cursor"]))
            .await
            .json();
        assert_eq!(rest["items"][0]["path"], "loop");
        assert_eq!(rest["items"].as_array().unwrap().len(), 1);
        assert!(rest["next_cursor"].is_null(), "{rest}");

        let r = api.get("/api/scans/77/problems").await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::NOT_FOUND, "not_found".into())
        );
        for bad in ["?limit=0", "?after=-1", "?bogus=1"] {
            let r = api.get(&format!("{base}{bad}")).await;
            assert_eq!(
                (r.status, r.code()),
                (StatusCode::BAD_REQUEST, "bad_request".into()),
                "{bad}"
            );
        }
    })
}

// ---------------------------------------------------------------------------------------
// One way to locate a file (issue 14 item 3): the API reads an asset's file by the rules the
// walks and the thumbnail job read it by.

/// The original of an asset is the bytes its checksum (and so its `ETag`, which `If-Range`
/// resumes a download by) names: a file rewritten since its scan holds other bytes, and
/// serving them under that tag would splice another file's bytes into a resumed download.
#[test]
fn an_original_rewritten_since_its_scan_is_not_served_as_the_asset() {
    support::block_on(async {
        let api = api();
        let (lib, root) = api.photos("photos");
        api.scan(lib);
        let b = api.asset_at("b.png");
        png(&root.join("b.png"), 7, 33, 33);
        let r = api.get(&format!("/api/assets/{b}/original")).await;
        assert_eq!(
            r.status,
            StatusCode::NOT_FOUND,
            "served {} bytes of the rewritten file",
            r.body.len()
        );
        assert_eq!(r.code(), "file_missing");
    })
}

/// A trashed asset's file that the user moved back by hand (no scan since) still holds the
/// asset's bytes where the index last saw it: the walks read it there, and so does the API.
#[test]
fn a_trashed_file_moved_back_by_hand_is_still_found_where_it_was() {
    support::block_on(async {
        let api = api();
        let (lib, root) = api.photos("photos");
        api.scan(lib);
        let b = api.asset_at("b.png");
        let original = std::fs::read(root.join("b.png")).unwrap();
        let r = api.post_empty(&format!("/api/assets/{b}/trash")).await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        std::fs::rename(
            support::trashed_to(&api.env.store, &root, b, "b.png"),
            root.join("b.png"),
        )
        .unwrap();
        let r = api.get(&format!("/api/assets/{b}/original")).await;
        assert_eq!(
            r.status,
            StatusCode::OK,
            "{}",
            String::from_utf8_lossy(&r.body)
        );
        assert_eq!(&r.body[..], &original[..]);
    })
}

// ---------------------------------------------------------------------------------------
// One wire contract (issue 14 item 4): the API and `mediadex ... --json` give the same
// projection, built by `mediadex::wire`; only the path fields take each surface's form
// (docs/json.md, "Paths that are not text").

/// `mediadex --data <this server's data dir> ARGS --json` (the CLI on the same database).
fn cli_json(api: &Api, args: &[&str]) -> Value {
    api.env.cli_json(args)
}

/// The value without its path fields (`paths`, `paths_bytes`), at every depth.
fn without_paths(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "paths" | "paths_bytes"))
                .map(|(k, v)| (k.clone(), without_paths(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_paths).collect()),
        other => other.clone(),
    }
}

/// A scanned fixture library: the CLI's `assets --json` and the API's asset (one, and in the
/// list) carry the same fields with the same values — the API has `content_hash` and
/// `faces`, the CLI `video_codec` and the trash details.
#[test]
fn the_api_and_the_cli_give_an_asset_the_same_fields_and_values() {
    support::block_on(async {
        let api = api();
        let (lib, _) = api.photos("photos");
        api.scan(lib);
        let b = api.asset_at("b.png");
        let mut one = api.get(&format!("/api/assets/{b}")).await.json();
        // The one asset's own field: what its viewer shows (a PNG: a picture).
        let preview = one
            .as_object_mut()
            .and_then(|o| o.remove("preview"))
            .expect("one asset has its preview");
        assert_eq!(
            preview,
            serde_json::json!({"state": "picture", "cause": null, "reason": null})
        );
        let page = api.get("/api/assets").await.json();
        let listed = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["id"] == b)
            .cloned()
            .expect("listed");
        let cli = cli_json(&api, &["assets", "--json"]);
        let cli = cli
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["id"] == b)
            .cloned()
            .expect("in the CLI's list");
        assert_eq!(
            without_paths(&one),
            without_paths(&cli),
            "API {one}\nCLI {cli}"
        );
        assert_eq!(without_paths(&listed), without_paths(&one));
        assert!(one["content_hash"].is_string(), "{one}");
        assert!(one["faces"].is_array(), "{one}");
        assert_eq!(cli["paths"], serde_json::json!(["b.png"]));
        assert_eq!(one["paths"][0]["path"], "b.png");
    })
}

/// `/api/duplicates` lists the same picture with other metadata too, as `duplicates --json`
/// does, in the same order and with the same fields.
#[test]
fn duplicates_lists_both_kinds_of_twin_as_the_cli_does() {
    support::block_on(async {
        use mediadex::model::ContentHash;
        let api = api();
        let lib = api.env.library("pics");
        let hash = ContentHash {
            scheme: 1,
            hash: [7; 32],
        };
        let mut a = synthetic::item("a.jpg", 1, synthetic::facts(1));
        let mut edited = synthetic::item("edited.jpg", 2, synthetic::facts(2));
        a.content_hash = Some(hash);
        edited.content_hash = Some(hash);
        let mut copy = synthetic::item("copy/a.jpg", 1, synthetic::facts(1));
        copy.stamp.inode = 99;
        copy.content_hash = Some(hash);
        synthetic::ingest(&api.env.store, lib, "", vec![a, edited, copy]).unwrap();
        let dups = api.get("/api/duplicates").await.json();
        let kinds: Vec<&str> = dups
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["kind"].as_str().unwrap_or("none"))
            .collect();
        assert_eq!(kinds, ["identical", "same_content"], "{dups}");
        let twins = &dups[1];
        assert_eq!(twins["content_hash"], "07".repeat(32));
        assert_eq!(twins["assets"].as_array().unwrap().len(), 2, "{twins}");
        assert_eq!(twins["paths"][0]["library_id"], lib, "{twins}");
        let cli = cli_json(&api, &["duplicates", "--json"]);
        assert_eq!(
            without_paths(&dups),
            without_paths(&cli),
            "API {dups}\nCLI {cli}"
        );
    })
}

/// A RAW+JPEG pair (issue 15 item 2) in the API and the CLI: the list shows the JPEG once
/// with both files in its `stack`; the RAW is left out of both lists and still answers by id,
/// naming its stack.
#[test]
fn a_raw_jpeg_stack_is_listed_once_and_its_raw_still_answers() {
    support::block_on(async {
        let api = api();
        let root = api.env.dir.path().join("pair");
        crate::stacks::write_pair(&root);
        let root = std::fs::canonicalize(&root).unwrap();
        let lib =
            mediadex::app::add_library(&api.env.store, "pair", &root.to_string_lossy()).unwrap();
        api.scan(lib.id);
        let page = api.get("/api/assets").await.json();
        let items = page["items"].as_array().unwrap();
        assert_eq!(items.len(), 1, "{page}");
        let stack = items[0]["stack"].as_array().unwrap().clone();
        let paths: Vec<&str> = stack.iter().map(|m| m["path"].as_str().unwrap()).collect();
        assert_eq!(
            paths,
            ["RawPair/DSC_0001.JPG", "RawPair/DSC_0001.DNG"],
            "{page}"
        );
        assert_eq!(stack[0]["primary"], true);
        assert_eq!(stack[1]["mime"], "image/x-adobe-dng");
        let raw_id = stack[1]["asset_id"].as_i64().unwrap();
        let raw = api.get(&format!("/api/assets/{raw_id}")).await;
        assert_eq!(raw.status, StatusCode::OK);
        let raw = raw.json();
        assert_eq!(raw["stack"], Value::Array(stack.clone()), "{raw}");
        assert_ne!(raw["checksum"], items[0]["checksum"]);
        let cli = cli_json(&api, &["assets", "--json"]);
        let cli = cli.as_array().unwrap();
        assert_eq!(cli.len(), 1, "{cli:?}");
        assert_eq!(cli[0]["stack"], Value::Array(stack));
    })
}

/// /metrics' live assets by kind is kept by triggers (migration 0017), not counted at each
/// scrape: it follows a publication (a run's pending assets count once it completes), a
/// trash and a restore, as the count did.
#[test]
fn the_live_assets_by_kind_follow_publication_trash_and_restore() {
    support::block_on(async {
        let api = api();
        let store = &api.env.store;
        let by_kind = || store.metrics_snapshot().expect("metrics").assets_by_kind;
        let images = |n: i64| vec![("image".to_string(), n)];
        let (lib, _root) = api.photos("photos");
        api.scan(lib);
        let photos = images(2);
        assert_eq!(by_kind(), photos);
        let b = api.asset_at("b.png");
        api.post_empty(&format!("/api/assets/{b}/trash")).await;
        assert_eq!(by_kind(), images(1));
        api.post_empty(&format!("/api/assets/{b}/restore")).await;
        assert_eq!(by_kind(), photos);

        let other = api.env.library("pics");
        store
            .request_scan(mediadex::model::ScanRequest {
                library_id: other,
                scope: "x".into(),
                trigger: mediadex::model::Trigger::Manual,
                watch_event: None,
            })
            .expect("request");
        let (lease, _) = store
            .claim_scan_run(600_000)
            .expect("claim")
            .expect("a run");
        let items = (0..14)
            .map(|i| synthetic::item(&format!("x/p{i}.jpg"), i, synthetic::facts(i)))
            .collect();
        store
            .ingest_batch(&lease, other, items, "{}")
            .expect("batch");
        assert_eq!(by_kind(), photos, "pending assets are not counted");
        store
            .complete_scan(&lease, mediadex::model::RunOutcome::Completed, None)
            .expect("complete");
        assert_eq!(
            by_kind(),
            vec![("image".to_string(), 14), ("video".to_string(), 2)]
        );
    })
}

/// Issue 27 finding 8: the camera filter finds a make or a model by any part of it, in any
/// case; `/api/cameras` lists the index's cameras for the page's suggestions; 0,0 is no place.
#[test]
fn the_camera_filter_matches_part_of_a_make_or_model_and_zero_zero_is_no_place() {
    support::block_on(async {
        let api = api();
        let lib = api.env.library("pics");
        let items = (1..=6u64)
            .map(|i| {
                let mut f = synthetic::facts(i);
                if i == 6 {
                    (f.lat, f.lon) = (Some(0.0), Some(0.0));
                }
                synthetic::item(&format!("{i}.jpg"), i, f)
            })
            .collect();
        synthetic::ingest(&api.env.store, lib, "", items).unwrap();
        let ids = |uri: String| {
            let api = &api;
            async move {
                let page = api.get(&uri).await;
                assert_eq!(page.status, StatusCode::OK, "{uri}: {:?}", page.body);
                let mut ids: Vec<i64> = (page.json()["items"].as_array().unwrap().iter())
                    .map(|a| a["id"].as_i64().unwrap())
                    .collect();
                ids.sort();
                ids
            }
        };
        let at = |rel: &str| api.asset_at(rel);
        // 1, 4: Apple iPhone 15; 2, 5: FUJIFILM X-T5; 3, 6: Canon EOS R6.
        for (camera, expected) in [
            ("canon", vec!["3.jpg", "6.jpg"]),
            ("iPhone", vec!["1.jpg", "4.jpg"]),
            ("x-t", vec!["2.jpg", "5.jpg"]),
            ("apple%20iphone", vec!["1.jpg", "4.jpg"]),
            ("nikon", vec![]),
        ] {
            let mut want: Vec<i64> = expected.iter().map(|r| at(r)).collect();
            want.sort();
            assert_eq!(
                ids(format!("/api/assets?camera={camera}")).await,
                want,
                "{camera}"
            );
        }
        assert_eq!(
            ids("/api/assets?has_gps=true".into()).await,
            vec![at("3.jpg")]
        );
        assert_eq!(ids("/api/assets?has_gps=false".into()).await.len(), 5);
        let cameras = api.get("/api/cameras").await;
        assert_eq!(cameras.status, StatusCode::OK);
        let cameras = cameras.json();
        let names: Vec<String> = (cameras.as_array().unwrap().iter())
            .map(|c| format!("{} {} {}", c["make"], c["model"], c["count"]))
            .collect();
        assert_eq!(names.len(), 3, "{cameras}");
        assert!(
            names.contains(&"\"Canon\" \"EOS R6\" 2".to_string()),
            "{cameras}"
        );
    })
}

/// Issue 27 deliverable 3: keeping one of a group trashes the others through the leased
/// trash, and never the kept one; a group whose kept copy is trashed is refused.
#[test]
fn keep_one_trashes_the_others_and_refuses_to_leave_no_live_copy() {
    support::block_on(async {
        let api = api();
        let (lib, root) = api.photos("photos");
        png(&root.join("c.png"), 120, 40, 20);
        api.scan(lib);
        let (a, b, c) = (
            api.asset_at("2024/a.png"),
            api.asset_at("b.png"),
            api.asset_at("c.png"),
        );
        let r = api
            .post("/api/keep", serde_json::json!({"keep": a, "trash": [a, b]}))
            .await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::CONFLICT, "conflict".into())
        );
        let r = api
            .post(
                "/api/keep",
                serde_json::json!({"keep": a, "trash": [b, 424242]}),
            )
            .await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::NOT_FOUND, "not_found".into())
        );
        assert!(
            root.join("b.png").exists(),
            "nothing moved before every id was known"
        );
        let r = api
            .post("/api/keep", serde_json::json!({"keep": a, "trash": []}))
            .await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::BAD_REQUEST, "bad_request".into())
        );
        let r = api
            .post("/api/keep", serde_json::json!({"keep": a, "trash": [b, c]}))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        let out = r.json();
        assert_eq!(
            (out["kept"]["id"].as_i64(), &out["kept"]["trashed"]),
            (Some(a), &false.into())
        );
        let trashed: Vec<(i64, bool)> = (out["trashed"].as_array().unwrap().iter())
            .map(|t| (t["id"].as_i64().unwrap(), t["trashed"].as_bool().unwrap()))
            .collect();
        assert_eq!(trashed, [(b, true), (c, true)]);
        assert!(!root.join("b.png").exists() && !root.join("c.png").exists());
        assert!(support::trashed_to(&api.env.store, &root, b, "b.png").exists());
        assert!(root.join("2024/a.png").exists() && root.join("copy-of-a.png").exists());
        // Repeated (a retry after a failure): the trashed ones stay as they are.
        let r = api
            .post("/api/keep", serde_json::json!({"keep": a, "trash": [b, c]}))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        // The kept one must be live.
        let r = api
            .post("/api/keep", serde_json::json!({"keep": b, "trash": [a]}))
            .await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::CONFLICT, "conflict".into())
        );
        assert!(root.join("2024/a.png").exists());
    })
}

/// A byte-identical group is one asset: `POST /api/keep` with `file` keeps that file and
/// moves the asset's other files to the trash folder; the asset stays live. A path that is no
/// present file of the asset is 400, `file` beside `trash` is 400, and nothing moves.
#[test]
fn keep_one_file_of_an_identical_group_trashes_its_copies() {
    support::block_on(async {
        let api = api();
        let (lib, root) = api.photos("photos");
        api.scan(lib);
        let a = api.asset_at("2024/a.png");
        for body in [
            serde_json::json!({"keep": a, "file": {"path": "nope.png"}}),
            serde_json::json!({"keep": a, "trash": [a], "file": {"path": "copy-of-a.png"}}),
        ] {
            let r = api.post("/api/keep", body).await;
            assert_eq!(
                (r.status, r.code()),
                (StatusCode::BAD_REQUEST, "bad_request".into())
            );
        }
        assert!(root.join("2024/a.png").exists(), "nothing moved");
        let keep =
            serde_json::json!({"keep": a, "file": {"path": "copy-of-a.png", "library_id": lib}});
        let r = api.post("/api/keep", keep).await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        let out = r.json();
        assert_eq!(
            (out["kept"]["id"].as_i64(), &out["kept"]["trashed"]),
            (Some(a), &false.into())
        );
        assert_eq!(out["trashed"], serde_json::json!([]));
        assert!(root.join("copy-of-a.png").exists() && !root.join("2024/a.png").exists());
        assert!(support::trashed_to(&api.env.store, &root, a, "2024/a.png").exists());
        let dups = api.get("/api/duplicates").await.json();
        assert_eq!(dups, serde_json::json!([]), "the group is resolved");
    })
}

/// The suggested one to keep: the most pixels, then the biggest file, then the most metadata.
#[test]
fn a_same_content_group_suggests_the_biggest_picture_to_keep() {
    support::block_on(async {
        use mediadex::model::ContentHash;
        let api = api();
        let lib = api.env.library("pics");
        let hash = ContentHash {
            scheme: 1,
            hash: [7; 32],
        };
        let mut small = synthetic::facts(1);
        (small.width, small.height) = (Some(2000), Some(1500));
        let bare = mediadex::model::MediaFacts {
            width: Some(4000),
            height: Some(3000),
            ..mediadex::model::MediaFacts::default()
        };
        // Seeds set the file sizes (1000 + seed): "fuller" is smaller than "bare" but says more.
        let mut items = vec![
            synthetic::item("small.jpg", 9, small),
            synthetic::item("bare.jpg", 3, bare),
            synthetic::item("fuller.jpg", 2, synthetic::facts(2)),
        ];
        for i in &mut items {
            i.content_hash = Some(hash);
        }
        synthetic::ingest(&api.env.store, lib, "", items).unwrap();
        let dups = api.get("/api/duplicates").await.json();
        assert_eq!(dups[0]["suggested"], api.asset_at("bare.jpg"), "{dups}");
        let r = api
            .post(
                "/api/keep",
                serde_json::json!({"keep": api.asset_at("bare.jpg"), "trash": []}),
            )
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
    })
}

/// Writes an executable stand-in for heif-dec at `script`.
#[cfg(unix)]
fn heif_dec_script(script: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(script, format!("#!/bin/sh\n{body}\n")).expect("script");
    std::fs::set_permissions(script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// Issue 26 deliverable 8: one asset's `preview` says why its thumbnail is a placeholder
/// (a video without ffmpeg here, a picture over the pixel cap, no file holding its bytes,
/// a timed-out decode), and a HEIF whose heif-dec ran to its deadline on a request is
/// remembered in the index: later requests answer the placeholder at once, even once the
/// decoder would succeed (the stand-in is swapped for one that decodes: it is not run).
#[cfg(unix)]
#[test]
fn a_placeholders_preview_says_why_and_a_timed_out_decode_is_not_run_again() {
    support::block_on(async {
        let programs = tempfile::tempdir().expect("tempdir");
        let script = programs.path().join("heif-dec");
        heif_dec_script(&script, "exec sleep 600");
        let dec = mediadex::media::heif_dec::HeifDec::at(script.clone())
            .with_limits(Duration::from_millis(100), 1024 * 1024)
            .with_slope(Duration::ZERO);
        let api = api_tweaked(loopback(), None, None, |c| {
            let thumbs =
                std::mem::replace(&mut c.thumbs, Thumbs::with_ffmpeg(Path::new("/"), None));
            c.thumbs = thumbs.with_heif(Some(dec));
        });
        let (lib, root) = api.photos("photos");
        std::fs::copy(fixture("astronaut_half.heic"), root.join("a.heic")).unwrap();
        std::fs::copy(fixture("astronaut.mp4"), root.join("v.mp4")).unwrap();
        std::fs::copy(fixture("bomb_17000.jpg"), root.join("bomb.jpg")).unwrap();
        api.scan(lib);
        let preview = async |rel: &str| {
            let id = api.asset_at(rel);
            api.get(&format!("/api/assets/{id}")).await.json()["preview"].clone()
        };
        let placeholder = |cause: &str, reason: &str| serde_json::json!({"state": "placeholder", "cause": cause, "reason": reason});
        assert_eq!(
            preview("v.mp4").await,
            placeholder(
                "unsupported",
                "unsupported format: a video needs ffmpeg, not installed here"
            )
        );
        assert_eq!(
            preview("bomb.jpg").await,
            placeholder(
                "too_large",
                "too large to decode: 289 megapixels, over the cap of 120"
            )
        );
        std::fs::remove_file(root.join("b.png")).unwrap();
        assert_eq!(
            preview("b.png").await,
            placeholder(
                "unreadable",
                "unreadable: no file still holds the bytes it was indexed with"
            )
        );
        let heic = api.asset_at("a.heic");
        assert_eq!(preview("a.heic").await["state"], "picture", "not tried yet");

        let timed_out = "decoding timed out after 0 s";
        let first = api.get(&format!("/api/assets/{heic}/thumbnail")).await;
        assert!(String::from_utf8_lossy(&first.body).contains(timed_out));
        assert_eq!(preview("a.heic").await, placeholder("timed_out", timed_out));
        let png = fixture("astronaut.png");
        heif_dec_script(&script, &format!("cp '{}' \"$4\"", png.display()));
        for route in ["thumbnail", "preview"] {
            let r = api.get(&format!("/api/assets/{heic}/{route}")).await;
            assert_eq!(r.status, StatusCode::OK);
            let body = String::from_utf8_lossy(&r.body);
            assert!(body.contains(timed_out), "{route}: heif-dec ran again");
        }
    })
}

// ---------------------------------------------------------------------------------------
// Issue 27: the page's selection (bulk trash, restore, download) and the open problems.

#[test]
fn a_selection_is_trashed_and_restored_each_by_its_leased_move() {
    support::block_on(async {
        let api = api();
        let (lib, root) = api.photos("photos");
        api.scan(lib);
        let (a, b) = (api.asset_at("2024/a.png"), api.asset_at("b.png"));
        let ids = |r: &Reply, key: &str| -> Vec<i64> {
            let v = r.json();
            (v[key].as_array().unwrap().iter())
                .map(|x| x["id"].as_i64().unwrap())
                .collect()
        };
        let r = api
            .post(
                "/api/assets/trash",
                serde_json::json!({"ids": [a, b, 424242, b]}),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        assert_eq!(
            (ids(&r, "moved"), ids(&r, "failed")),
            (vec![a, b], vec![424242])
        );
        assert_eq!(r.json()["failed"][0]["code"], "not_found");
        assert_eq!(r.json()["moved"][0]["trashed"], true);
        // Each went through the leased move: its files are in the trash folder, none left.
        assert!(support::trashed_to(&api.env.store, &root, b, "b.png").exists());
        assert!(!root.join("b.png").exists() && !root.join("copy-of-a.png").exists());
        // One already in the trash says so, and the others still move.
        let r = api
            .post("/api/assets/restore", serde_json::json!({"ids": [b]}))
            .await;
        assert_eq!(ids(&r, "moved"), [b]);
        let r = api
            .post("/api/assets/restore", serde_json::json!({"ids": [a, b]}))
            .await;
        assert_eq!((ids(&r, "moved"), ids(&r, "failed")), (vec![a], vec![b]));
        assert_eq!(r.json()["failed"][0]["code"], "conflict");
        assert!(root.join("b.png").exists() && root.join("2024/a.png").exists());
        for body in [
            serde_json::json!({"ids": []}),
            serde_json::json!({"ids": (1..=501).collect::<Vec<i64>>()}),
        ] {
            let r = api.post("/api/assets/trash", body).await;
            assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
        }
        let r = api
            .post("/api/assets/trash", serde_json::json!({"id": [a]}))
            .await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    })
}

/// The zip's entries by name, each read back through its CRC and size check.
fn unzip(bytes: &[u8]) -> std::collections::BTreeMap<String, Vec<u8>> {
    use std::io::Read;
    let archive = rawzip::ZipArchive::from_slice(bytes).expect("a zip");
    let mut out = std::collections::BTreeMap::new();
    let mut entries = archive.entries();
    while let Some(e) = entries.next_entry().expect("an entry") {
        let name = String::from_utf8(e.file_path().as_ref().to_vec()).expect("a name");
        let entry = archive.get_entry(e.wayfinder()).expect("its data");
        let mut data = Vec::new();
        (entry.verifying_reader(entry.data()))
            .read_to_end(&mut data)
            .expect("its CRC and size match");
        out.insert(name, data);
    }
    out
}

#[test]
fn a_selection_downloads_as_one_zip_of_its_originals_streamed() {
    support::block_on(async {
        let api = api();
        let (lib, root) = api.photos("photos");
        png(&root.join("2023/b.png"), 99, 30, 30);
        api.scan(lib);
        let (a, b, b2) = (
            api.asset_at("2024/a.png"),
            api.asset_at("b.png"),
            api.asset_at("2023/b.png"),
        );
        let r = api.get(&format!("/api/download?ids={a},{b},{b2}")).await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        assert_eq!(r.header("content-type"), "application/zip");
        assert_eq!(
            r.header("content-disposition"),
            "attachment; filename=\"mediadex-3.zip\""
        );
        let files = unzip(&r.body);
        // The asset of a.png and its copy is one original: whichever file of it is served.
        let a_name = if files.contains_key("a.png") {
            "a.png"
        } else {
            "copy-of-a.png"
        };
        let mut want = vec![a_name.to_string(), "b.png".into(), format!("b-{b2}.png")];
        want.sort();
        assert_eq!(files.keys().cloned().collect::<Vec<_>>(), want);
        assert_eq!(files["b.png"], std::fs::read(root.join("b.png")).unwrap());
        assert_eq!(
            files[&format!("b-{b2}.png")],
            std::fs::read(root.join("2023/b.png")).unwrap()
        );

        // A file gone since its scan is left out, and the zip says which and why.
        std::fs::remove_file(root.join("b.png")).unwrap();
        let r = api.get(&format!("/api/download?ids={a},{b}")).await;
        assert_eq!(r.status, StatusCode::OK);
        let files = unzip(&r.body);
        let note = String::from_utf8_lossy(&files["not-included.txt"]).into_owned();
        assert!(note.starts_with(&format!("asset {b}: ")), "{note}");
        assert!(files.contains_key(a_name) && !files.contains_key("b.png"));

        // Checked before the first byte: a JSON error; HEAD checks the same and sends nothing.
        let many: Vec<String> = (1..=501).map(|i| i.to_string()).collect();
        for (uri, status) in [
            ("/api/download?ids=".to_string(), StatusCode::BAD_REQUEST),
            ("/api/download?ids=1,x".into(), StatusCode::BAD_REQUEST),
            (
                format!("/api/download?ids={}", many.join(",")),
                StatusCode::BAD_REQUEST,
            ),
            (
                format!("/api/download?ids={a},424242"),
                StatusCode::NOT_FOUND,
            ),
            ("/api/download".into(), StatusCode::BAD_REQUEST),
        ] {
            let r = api.get(&uri).await;
            assert_eq!(r.status, status, "{uri}: {:?}", r.body);
            assert!(!r.code().is_empty(), "{uri}");
        }
        let head = |uri: String| req(Method::HEAD, &uri).body(Body::empty()).unwrap();
        let r = api.send(head(format!("/api/download?ids={a}"))).await;
        assert_eq!((r.status, r.body.len()), (StatusCode::OK, 0));
        assert_eq!(r.header("content-type"), "application/zip");
        let r = api
            .send(head(format!("/api/download?ids={a},424242")))
            .await;
        assert_eq!(r.status, StatusCode::NOT_FOUND);
    })
}

#[test]
fn the_open_problems_are_listed_of_every_library_or_one() {
    support::block_on(async {
        let api = api();
        let (lib, root) = api.photos("photos");
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/raw/no_marker.jpg");
        std::fs::copy(fixture, root.join("broken.jpg")).unwrap();
        api.scan(lib);
        api.env.clock.advance(1_000);
        api.scan(lib);
        for uri in [
            "/api/problems".to_string(),
            format!("/api/problems?library={lib}"),
        ] {
            let r = api.get(&uri).await;
            assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
            let v = r.json();
            assert_eq!(v["total"], 1, "{v}");
            assert_eq!(v["items"][0]["path"], "broken.jpg");
            assert_eq!(v["items"][0]["library_id"], lib);
            assert!(v["items"][0]["run_id"].as_i64().unwrap() > 0);
            assert!(
                v["items"][0]["error"]
                    .as_str()
                    .unwrap()
                    .contains("no JPEG marker"),
                "{v}"
            );
        }
        let r = api.get("/api/problems?library=999").await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::NOT_FOUND, "not_found".into())
        );
        let r = api.get("/api/problems?limit=0").await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
    })
}

// ---------------------------------------------------------------------------------------
// People (issue 28 item 5): the list, a person's photos, a photo's people, the user's word.

#[test]
fn people_are_listed_named_merged_split_and_shown_with_their_photos() {
    support::block_on(async {
        use crate::people::{Fake, photos, recluster, walk};
        let api = api();
        let env = &api.env;
        let ids = photos(
            env,
            &[
                "01-A.jpg", "02-A.jpg", "03-A.jpg", "04-B.jpg", "05-B.jpg", "06-B.jpg",
            ],
        );
        walk(env, &Fake::new(1), 8);
        recluster(env);
        let people = api.get("/api/people").await.json();
        assert_eq!(people.as_array().unwrap().len(), 2, "{people}");
        let faces = api
            .get(&format!("/api/assets/{}/people", ids["01-A.jpg"]))
            .await
            .json();
        let (anna, face) = (
            faces[0]["person"].as_i64().unwrap(),
            faces[0]["face_id"].clone(),
        );
        let named = api
            .post(
                &format!("/api/people/{anna}/name"),
                serde_json::json!({"name": "Anna"}),
            )
            .await;
        assert_eq!(named.json()["name"], "Anna");
        let page = api.get(&format!("/api/people/{anna}?limit=2")).await.json();
        assert_eq!(page["photos"], 3);
        assert_eq!(page["items"].as_array().unwrap().len(), 2);
        assert_eq!(page["items"][0]["id"], ids["01-A.jpg"]);
        let listed = api.get(&format!("/api/assets?person={anna}")).await.json();
        assert_eq!(listed["items"].as_array().unwrap().len(), 3, "{listed}");
        let next = page["next_cursor"].as_str().unwrap();
        let rest = api
            .get(&format!("/api/people/{anna}?limit=2&cursor={next}"))
            .await
            .json();
        assert_eq!(rest["items"][0]["id"], ids["03-A.jpg"]);
        assert_eq!(rest["next_cursor"], Value::Null);
        // A split, a merge back, and a face that is not Anna.
        let split = api
            .post(
                &format!("/api/faces/{face}/person"),
                serde_json::json!({"person": null}),
            )
            .await
            .json();
        assert_eq!(split["faces"], 1);
        let merged = api
            .post(
                &format!("/api/people/{anna}/merge"),
                serde_json::json!({"from": split["id"]}),
            )
            .await
            .json();
        assert_eq!(merged["faces"], 3);
        let not = api
            .post(
                &format!("/api/faces/{face}/not"),
                serde_json::json!({"person": anna}),
            )
            .await;
        assert_eq!(not.status, StatusCode::NO_CONTENT);
        let faces = api
            .get(&format!("/api/assets/{}/people", ids["01-A.jpg"]))
            .await
            .json();
        assert_eq!(faces[0]["person"], Value::Null);
        let hidden = api
            .post(
                &format!("/api/people/{anna}/hide"),
                serde_json::json!({"hidden": true}),
            )
            .await
            .json();
        assert_eq!(hidden["hidden"], true);
        assert_eq!(
            api.get("/api/people")
                .await
                .json()
                .as_array()
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            api.get("/api/people?hidden=true")
                .await
                .json()
                .as_array()
                .unwrap()
                .len(),
            2
        );
        let queued = api.post_empty("/api/people/recluster").await;
        assert_eq!(queued.status, StatusCode::ACCEPTED);
        let missing = api
            .post("/api/people/999/name", serde_json::json!({"name": "x"}))
            .await;
        assert_eq!(
            (missing.status, missing.code()),
            (StatusCode::NOT_FOUND, "not_found".to_string())
        );
    })
}

/// A face's crop for the People view: the box and its margin cut from the preview, square,
/// cached (served with the original gone, tagged, 304 on its tag); the placeholder, uncached,
/// while the picture has no preview; 404 for a face no detection holds.
#[test]
fn a_face_crop_is_cut_from_the_preview_around_its_box_and_cached() {
    support::block_on(async {
        let api = api();
        let (lib, root) = api.photos("photos");
        // A red picture with a green "face" 40 px wide at (300, 50).
        let mut img = image::RgbImage::from_pixel(400, 200, image::Rgb([200, 0, 0]));
        for (x, y, p) in img.enumerate_pixels_mut() {
            if (300..340).contains(&x) && (50..90).contains(&y) {
                *p = image::Rgb([0, 200, 0]);
            }
        }
        img.save(root.join("face.png")).unwrap();
        // The same pixels stored on their side (EXIF 6): the crop is cut upright around the face.
        let turned = crate::faces::png_with_orientation(&img, 6);
        std::fs::write(root.join("turned.png"), turned).unwrap();
        std::fs::copy(fixture("astronaut_half.heic"), root.join("astro.heic")).unwrap();
        api.scan(lib);
        let store = &api.env.store;
        let face_at = |rel: &str| {
            let id = api.asset_at(rel);
            let face = mediadex::model::DetectedFace {
                x: 300.0,
                y: 50.0,
                w: 40.0,
                h: 40.0,
                score: 0.99,
                landmarks: [(0.0, 0.0); 5],
            };
            assert!(store.store_faces(id, 1, vec![face]).unwrap());
            id
        };
        let asset = face_at("face.png");
        let faces = api.get(&format!("/api/assets/{asset}/people")).await.json();
        let face = faces[0]["face_id"].as_i64().expect("a face id");
        let uri = format!("/api/faces/{face}/crop");
        let r = api.get(&uri).await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        assert_eq!(r.header("content-type"), "image/jpeg");
        assert!(r.header("cache-control").contains("immutable"));
        let crop = image::load_from_memory(&r.body).expect("a JPEG").to_rgb8();
        // 40 px and 35% on each side: 68 px square (never enlarged), the face in its middle and
        // the red around it.
        assert_eq!(crop.dimensions(), (68, 68));
        let [_, g, _] = crop.get_pixel(34, 34).0;
        let [r0, _, _] = crop.get_pixel(3, 3).0;
        assert!(g > 150 && r0 > 150, "middle {g} green, corner {r0} red");
        let tag = r.header("etag").to_string();
        let again = api
            .send(
                req(Method::GET, &uri)
                    .header("if-none-match", &tag)
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(again.status, StatusCode::NOT_MODIFIED);
        std::fs::remove_file(root.join("face.png")).unwrap();
        let cached = api.get(&uri).await;
        assert_eq!((cached.status, &cached.body), (StatusCode::OK, &r.body));

        let turned = face_at("turned.png");
        let faces = api
            .get(&format!("/api/assets/{turned}/people"))
            .await
            .json();
        let r = api
            .get(&format!("/api/faces/{}/crop", faces[0]["face_id"]))
            .await;
        assert_eq!(r.header("content-type"), "image/jpeg", "{:?}", r.body);
        let crop = image::load_from_memory(&r.body).expect("a JPEG").to_rgb8();
        assert_eq!(crop.dimensions(), (68, 68));
        let [_, g, _] = crop.get_pixel(34, 34).0;
        assert!(g > 150, "the turned face in the middle: {g}");

        // No heif-dec in this server: no preview, so the placeholder, not cached.
        let heic = face_at("astro.heic");
        let faces = api.get(&format!("/api/assets/{heic}/people")).await.json();
        let r = api
            .get(&format!("/api/faces/{}/crop", faces[0]["face_id"]))
            .await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.header("content-type"), "image/svg+xml");
        assert_eq!(r.header("cache-control"), "no-cache");
        let r = api.get("/api/faces/31337/crop").await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::NOT_FOUND, "not_found".into())
        );
    })
}
