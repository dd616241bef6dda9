//! The request guard in front of every route: the Host check against DNS rebinding on a
//! loopback bind, the access token (`Authorization: Bearer`, or for reads only the page's
//! `mediadex_token` cookie), and the rule that a state-changing request carries the token
//! in its header or is same-origin with the `X-Mediadex: 1` header (a header a cross-site
//! page cannot send without a CORS preflight we never grant). The cookie never authorizes
//! a state change: a page on another port of the same host is same-site and gets it sent.
//! Owns these rules only; handlers never see a request the guard refused.

use super::error::{ApiError, Code};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The custom header that marks a same-origin request from the page.
pub const CUSTOM_HEADER: &str = "x-mediadex";

/// How requests are admitted, decided once at start from the bind address and flags.
#[derive(Clone, Debug)]
pub struct Security {
    /// Bound to a loopback address: the Host header must name the loopback.
    pub loopback: bool,
    /// Every API request needs the token (a non-loopback bind without
    /// `--insecure-no-auth`).
    pub token_required: bool,
    /// The access token; `None` only with `--insecure-no-auth`.
    pub token: Option<String>,
}

impl Security {
    /// The policy for a server bound to `addr`.
    pub fn for_bind(addr: std::net::SocketAddr, token: Option<String>, insecure: bool) -> Self {
        let loopback = addr.ip().is_loopback();
        Security {
            loopback,
            token_required: !loopback && !insecure,
            token,
        }
    }

    fn check(&self, method: &Method, path: &str, headers: &HeaderMap) -> Result<(), ApiError> {
        if self.loopback && !host_is_loopback(headers) {
            return Err(ApiError::new(
                Code::BadHost,
                "the Host header does not name this machine's loopback address; \
                 open mediadex at http://127.0.0.1 or http://localhost",
            ));
        }
        let bearer = self.bearer_ok(headers);
        let cookie = self.cookie_ok(headers);
        let csrf = || {
            ApiError::new(
                Code::Csrf,
                "a state-changing request needs the access token (`Authorization: Bearer`) \
                 or the `X-Mediadex: 1` header from this server's own page; the \
                 mediadex_token cookie only lets the page read",
            )
        };
        let authorized = bearer || public(method, path) || (cookie && reads(method));
        if self.token_required && !authorized {
            if cookie && changes_state(method) {
                return Err(csrf());
            }
            return Err(ApiError::new(
                Code::Unauthorized,
                "this server needs its access token: send `Authorization: Bearer <token>` \
                 (`mediadex token` prints it)",
            ));
        }
        if changes_state(method) && !bearer && !same_origin_with_header(headers) {
            return Err(csrf());
        }
        Ok(())
    }

    /// The token came as `Authorization: Bearer`.
    fn bearer_ok(&self, headers: &HeaderMap) -> bool {
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|given| self.is_token(given))
    }

    /// The token came as the page's `mediadex_token` cookie (images and the event stream
    /// cannot send headers). It authorizes reads only: SameSite=Strict keeps it from other
    /// sites, but a page on another port of the same host is the same site.
    fn cookie_ok(&self, headers: &HeaderMap) -> bool {
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|c| c.trim().strip_prefix("mediadex_token="))
            .any(|given| self.is_token(given))
    }

    fn is_token(&self, given: &str) -> bool {
        self.token
            .as_ref()
            .is_some_and(|token| same_bytes(given.trim().as_bytes(), token.as_bytes()))
    }
}

/// The guard as axum middleware.
pub async fn guard(
    State(security): State<Arc<Security>>,
    request: Request,
    next: Next,
) -> Response {
    match security.check(request.method(), request.uri().path(), request.headers()) {
        Ok(()) => next.run(request).await,
        Err(e) => e.into_response(),
    }
}

/// What a service manager and a browser may fetch without the token: the health check and
/// the page shell (which holds no data).
fn public(method: &Method, path: &str) -> bool {
    matches!(*method, Method::GET | Method::HEAD)
        && (matches!(
            path,
            "/healthz" | "/" | "/index.html" | "/app.css" | "/viewer.css" | "/api"
        ) || path.starts_with("/js/"))
}

/// What the token cookie may do.
fn reads(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD)
}

fn changes_state(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// The host part of a Host header value (`name`, `name:port`, `[v6]:port`).
fn host_name(value: &str) -> &str {
    if let Some(rest) = value.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    value.rsplit_once(':').map_or(value, |(h, _)| h)
}

fn is_loopback_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost"
        || name.ends_with(".localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn host_is_loopback(headers: &HeaderMap) -> bool {
    headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| is_loopback_name(host_name(v)))
}

/// The custom header is present, and the browser did not say the request is cross-site
/// (an `Origin` naming another host, or `Sec-Fetch-Site: cross-site`).
fn same_origin_with_header(headers: &HeaderMap) -> bool {
    let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
    if text(CUSTOM_HEADER).map(str::trim) != Some("1") {
        return false;
    }
    if text("sec-fetch-site").is_some_and(|s| s == "cross-site") {
        return false;
    }
    match (text(header::ORIGIN.as_str()), text(header::HOST.as_str())) {
        (None, _) => true,
        (Some(origin), Some(host)) => origin
            .split_once("://")
            .is_some_and(|(_, authority)| authority.eq_ignore_ascii_case(host)),
        (Some(_), None) => false,
    }
}

/// Compares in time independent of where the first difference is.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_of_the_loopback() {
        for ok in [
            "localhost:8080",
            "127.0.0.1",
            "127.0.0.1:1",
            "[::1]:9",
            "app.localhost",
        ] {
            assert!(is_loopback_name(host_name(ok)), "{ok}");
        }
        for bad in [
            "evil.example:8080",
            "192.168.1.2",
            "localhost.evil.example",
            "[::2]:1",
            "",
        ] {
            assert!(!is_loopback_name(host_name(bad)), "{bad}");
        }
    }
}
