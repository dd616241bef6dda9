//! The web page, embedded in the binary from `web/` (plain HTML, CSS and JavaScript modules
//! under `web/js/`: no build step). Served with `Cache-Control: no-cache` and an ETag of the binary's bytes, so a
//! browser revalidates after an upgrade and otherwise gets 304s. Holds no data: the page
//! reads everything through the API.

use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use include_dir::{Dir, include_dir};
use std::sync::OnceLock;

static WEB: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/web");

fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// One ETag for the whole page: it changes exactly when the embedded files do.
fn etag() -> &'static str {
    static ETAG: OnceLock<String> = OnceLock::new();
    ETAG.get_or_init(|| {
        let mut hasher = blake3::Hasher::new();
        for file in WEB.files() {
            hasher.update(file.path().as_os_str().as_encoded_bytes());
            hasher.update(file.contents());
        }
        format!("\"{}\"", &hasher.finalize().to_hex()[..16])
    })
}

/// `GET /`, `/index.html`, `/app.css`, `/viewer.css` and the page's modules, `/js/NAME.js`.
pub async fn file(uri: Uri, headers: HeaderMap) -> Response {
    let name = match uri.path() {
        "/" => "index.html",
        other => other.trim_start_matches('/'),
    };
    let Some(file) = WEB.get_file(name) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let tag = etag();
    let cache = [
        (header::CACHE_CONTROL, "no-cache"),
        (header::ETAG, tag),
        (header::CONTENT_TYPE, content_type(name)),
    ];
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == tag));
    if fresh {
        return (StatusCode::NOT_MODIFIED, cache).into_response();
    }
    (cache, file.contents()).into_response()
}
