//! The one error → status mapping of the API. Every failure a handler can meet becomes an
//! `ApiError`: an HTTP status and a JSON body `{"error": {"code", "message"}}` whose `code`
//! is stable (clients branch on it; the message is for people). Owns no handler logic.

use crate::store::StoreError;
use crate::thumbs::ThumbError;
use crate::trash::TrashError;
use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// Seconds, for 429 and 503.
    pub retry_after: Option<i64>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }
}

/// A list's `limit` query parameter: `default` when absent, else within `1..=max`.
pub fn limit(given: Option<i64>, default: i64, max: i64) -> Result<i64, ApiError> {
    let limit = given.unwrap_or(default);
    if (1..=max).contains(&limit) {
        Ok(limit)
    } else {
        Err(ApiError::bad_request(format!(
            "limit must be between 1 and {max}"
        )))
    }
}

impl ApiError {
    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub fn forbidden(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::FORBIDDEN, code, message)
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    /// A failure of ours: logged in full, answered without internals.
    pub fn internal(what: &str, detail: impl std::fmt::Display) -> Self {
        tracing::error!(error = %detail, "{what}");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("{what}; see the server log"),
        )
    }
}

#[derive(serde::Serialize)]
struct Body<'a> {
    error: Inner<'a>,
}

#[derive(serde::Serialize)]
struct Inner<'a> {
    code: &'a str,
    message: &'a str,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = Body {
            error: Inner {
                code: self.code,
                message: &self.message,
            },
        };
        let mut response = (self.status, Json(body)).into_response();
        if let Some(secs) = self.retry_after
            && let Ok(v) = HeaderValue::from_str(&secs.max(1).to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        let message = e.to_string();
        match e {
            StoreError::NotFound(_) => ApiError::not_found(message),
            StoreError::Conflict(_) => ApiError::new(StatusCode::CONFLICT, "conflict", message),
            StoreError::RateLimited { retry_after_ms, .. } => ApiError {
                retry_after: Some((retry_after_ms + 999) / 1000),
                ..ApiError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", message)
            },
            StoreError::LeaseLost { .. } => {
                ApiError::new(StatusCode::CONFLICT, "lease_lost", message)
            }
            StoreError::Locked => ApiError {
                retry_after: Some(5),
                ..ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "busy", message)
            },
            StoreError::DiskFull => {
                ApiError::new(StatusCode::INSUFFICIENT_STORAGE, "disk_full", message)
            }
            StoreError::NewerSchema { .. } | StoreError::MigrationBlocked { .. } => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message)
            }
            StoreError::WriterGone => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "shutting_down", message)
            }
            other => ApiError::internal("database failure", other),
        }
    }
}

impl From<TrashError> for ApiError {
    fn from(e: TrashError) -> Self {
        match e {
            TrashError::Store(e) => e.into(),
            e @ TrashError::ReadOnly { .. } => {
                ApiError::new(StatusCode::FORBIDDEN, "read_only", e.to_string())
            }
            e @ TrashError::Guard(_) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "move_interrupted",
                e.to_string(),
            ),
            e @ TrashError::NoRoom(_) => {
                ApiError::new(StatusCode::INSUFFICIENT_STORAGE, "disk_full", e.to_string())
            }
            e @ (TrashError::Move { .. }
            | TrashError::Linked { .. }
            | TrashError::RolledBack { .. }) => {
                ApiError::new(StatusCode::CONFLICT, "move_failed", e.to_string())
            }
        }
    }
}

impl From<ThumbError> for ApiError {
    fn from(e: ThumbError) -> Self {
        ApiError::new(StatusCode::NOT_FOUND, "file_unreadable", e.to_string())
    }
}

impl From<JsonRejection> for ApiError {
    fn from(e: JsonRejection) -> Self {
        let status = e.status();
        let code = match status {
            StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
            StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
            _ => "bad_request",
        };
        ApiError::new(status, code, e.body_text())
    }
}

impl From<PathRejection> for ApiError {
    fn from(e: PathRejection) -> Self {
        ApiError::bad_request(e.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(e: QueryRejection) -> Self {
        ApiError::bad_request(e.body_text())
    }
}

impl From<tokio::task::JoinError> for ApiError {
    fn from(e: tokio::task::JoinError) -> Self {
        ApiError::internal("a request task failed", e)
    }
}
