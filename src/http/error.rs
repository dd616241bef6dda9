//! The one error → response map of the API. Every code a client can meet is listed once, in
//! `codes!` below, with its status; every failure a handler can meet becomes an `ApiError`
//! carrying one of them, and answers a JSON body `{"error": {"code", "message"}}` whose
//! `code` is stable (clients branch on it; the message is for people). The use cases' own
//! errors (`ops::Error`) map here, variant by variant. Owns no handler logic.
//!
//! Must not import: app

use crate::ops::Error as OpsError;
use crate::store::{PeopleRefusal, StoreError};
use crate::thumbs::{ClipError, ThumbError};
use crate::trash::TrashError;
use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// Lists each code once: its variant, its text and its status.
macro_rules! codes {
    ($($variant:ident = $text:literal, $status:ident;)*) => {
        /// Every error code of the API (the table of docs/api.md is this list).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Code {
            $($variant,)*
        }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $text,)*
                }
            }

            pub fn status(self) -> StatusCode {
                match self {
                    $(Code::$variant => StatusCode::$status,)*
                }
            }
        }
    };
}

codes! {
    BadRequest = "bad_request", BAD_REQUEST;
    Unauthorized = "unauthorized", UNAUTHORIZED;
    BadHost = "bad_host", FORBIDDEN;
    Csrf = "csrf", FORBIDDEN;
    OutsideLibrary = "outside_library", FORBIDDEN;
    ReadOnly = "read_only", FORBIDDEN;
    NotFound = "not_found", NOT_FOUND;
    FileMissing = "file_missing", NOT_FOUND;
    FileUnreadable = "file_unreadable", NOT_FOUND;
    UnknownWalk = "unknown_walk", NOT_FOUND;
    MethodNotAllowed = "method_not_allowed", METHOD_NOT_ALLOWED;
    Conflict = "conflict", CONFLICT;
    Finished = "finished", CONFLICT;
    MoveFailed = "move_failed", CONFLICT;
    LeaseLost = "lease_lost", CONFLICT;
    NoChain = "no_chain", CONFLICT;
    NotRunning = "not_running", CONFLICT;
    Trashed = "trashed", CONFLICT;
    NotAnImage = "not_an_image", CONFLICT;
    NoPicture = "no_picture", CONFLICT;
    PayloadTooLarge = "payload_too_large", PAYLOAD_TOO_LARGE;
    UnsupportedMediaType = "unsupported_media_type", UNSUPPORTED_MEDIA_TYPE;
    RangeNotSatisfiable = "range_not_satisfiable", RANGE_NOT_SATISFIABLE;
    InvalidBody = "invalid_body", UNPROCESSABLE_ENTITY;
    DetectionFailed = "detection_failed", UNPROCESSABLE_ENTITY;
    RateLimited = "rate_limited", TOO_MANY_REQUESTS;
    Internal = "internal", INTERNAL_SERVER_ERROR;
    Busy = "busy", SERVICE_UNAVAILABLE;
    Unavailable = "unavailable", SERVICE_UNAVAILABLE;
    ShuttingDown = "shutting_down", SERVICE_UNAVAILABLE;
    MoveInterrupted = "move_interrupted", SERVICE_UNAVAILABLE;
    NoDetector = "no_detector", SERVICE_UNAVAILABLE;
    DatabaseAway = "database_away", SERVICE_UNAVAILABLE;
    DiskFull = "disk_full", INSUFFICIENT_STORAGE;
}

#[derive(Debug)]
pub struct ApiError {
    pub code: Code,
    pub message: String,
    /// Seconds, for 429 and 503.
    pub retry_after: Option<i64>,
}

impl ApiError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(Code::BadRequest, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError::new(Code::NotFound, message)
    }

    /// A failure of ours: logged in full, answered without internals.
    pub fn internal(what: &str, detail: impl std::fmt::Display) -> Self {
        tracing::error!(error = %detail, "{what}");
        ApiError::new(Code::Internal, format!("{what}; see the server log"))
    }

    fn retry_after(self, secs: i64) -> Self {
        ApiError {
            retry_after: Some(secs),
            ..self
        }
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
                code: self.code.as_str(),
                message: &self.message,
            },
        };
        let mut response = (self.code.status(), Json(body)).into_response();
        if let Some(secs) = self.retry_after
            && let Ok(v) = HeaderValue::from_str(&secs.max(1).to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
        response
    }
}

impl From<OpsError> for ApiError {
    fn from(e: OpsError) -> Self {
        let code = match &e {
            OpsError::Store(_) | OpsError::Trash(_) => return ops_cause(e),
            OpsError::Scope(_) | OpsError::LibraryPath(_) => Code::BadRequest,
            OpsError::NoLibrary(_) | OpsError::NoLibraries | OpsError::NotFound(..) => {
                Code::NotFound
            }
            OpsError::RunEnded { .. } | OpsError::JobEnded { .. } | OpsError::ChainEnded(..) => {
                Code::Finished
            }
            OpsError::UnknownWalk { .. } => Code::UnknownWalk,
            OpsError::NoChain(_) => Code::NoChain,
            OpsError::ChainWaiting(..) => Code::NotRunning,
            OpsError::NoDetector => Code::NoDetector,
            OpsError::Trashed(_) => Code::Trashed,
            OpsError::KeepTrashed(_) => Code::Conflict,
            OpsError::KeepFile { .. } => Code::BadRequest,
            OpsError::NotAnImage(_) => Code::NotAnImage,
            OpsError::NoPicture(_) => Code::NoPicture,
            OpsError::DetectionFailed(..) => Code::DetectionFailed,
            OpsError::People(PeopleRefusal::NoPerson(_) | PeopleRefusal::NoFace(_)) => {
                Code::NotFound
            }
            OpsError::People(_) => Code::Conflict,
        };
        ApiError::new(code, e.to_string())
    }
}

fn ops_cause(e: OpsError) -> ApiError {
    match e {
        OpsError::Store(e) => e.into(),
        OpsError::Trash(e) => e.into(),
        other => ApiError::internal("an operation failed", other),
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        let message = e.to_string();
        match e {
            StoreError::NotFound(_) => ApiError::not_found(message),
            StoreError::Conflict(_) => ApiError::new(Code::Conflict, message),
            StoreError::RateLimited { retry_after_ms, .. } => {
                ApiError::new(Code::RateLimited, message).retry_after((retry_after_ms + 999) / 1000)
            }
            StoreError::LeaseLost { .. } => ApiError::new(Code::LeaseLost, message),
            StoreError::Locked | StoreError::Pool(_) | StoreError::Contended(_) => {
                ApiError::new(Code::Busy, message).retry_after(5)
            }
            StoreError::Away(_) => ApiError::new(Code::DatabaseAway, message).retry_after(5),
            StoreError::DiskFull => ApiError::new(Code::DiskFull, message),
            StoreError::NewerSchema { .. } | StoreError::MigrationBlocked { .. } => {
                ApiError::new(Code::Unavailable, message)
            }
            StoreError::WriterGone => ApiError::new(Code::ShuttingDown, message),
            other => ApiError::internal("database failure", other),
        }
    }
}

impl From<TrashError> for ApiError {
    fn from(e: TrashError) -> Self {
        let code = match &e {
            TrashError::Store(_) => match e {
                TrashError::Store(e) => return e.into(),
                other => return ApiError::internal("a move failed", other),
            },
            TrashError::ReadOnly { .. } => Code::ReadOnly,
            TrashError::Guard(_) => Code::MoveInterrupted,
            TrashError::NoRoom(_) => Code::DiskFull,
            TrashError::LibraryAway { .. } => Code::Unavailable,
            TrashError::Move { .. } | TrashError::Linked { .. } | TrashError::RolledBack { .. } => {
                Code::MoveFailed
            }
        };
        ApiError::new(code, e.to_string())
    }
}

impl From<ThumbError> for ApiError {
    fn from(e: ThumbError) -> Self {
        ApiError::new(Code::FileUnreadable, e.to_string())
    }
}

impl From<ClipError> for ApiError {
    fn from(e: ClipError) -> Self {
        let code = match &e {
            ClipError::NoFfmpeg | ClipError::TimedOut => Code::Unavailable,
            ClipError::DiskFull(_) => Code::DiskFull,
            ClipError::Failed(_) => Code::FileUnreadable,
            ClipError::Io { .. } => return ApiError::internal("a clip's conversion failed", e),
        };
        ApiError::new(code, e.to_string())
    }
}

impl From<JsonRejection> for ApiError {
    fn from(e: JsonRejection) -> Self {
        let code = match e.status() {
            StatusCode::PAYLOAD_TOO_LARGE => Code::PayloadTooLarge,
            StatusCode::UNSUPPORTED_MEDIA_TYPE => Code::UnsupportedMediaType,
            StatusCode::UNPROCESSABLE_ENTITY => Code::InvalidBody,
            s if s.is_server_error() => return ApiError::internal("reading a request body", e),
            _ => Code::BadRequest,
        };
        ApiError::new(code, e.body_text())
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The rows of docs/api.md's error table (the one headed `| code | status | meaning |`):
    /// each code with its status.
    fn documented() -> BTreeSet<(String, u16)> {
        let doc = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/api.md"));
        let cells = |l: &str| -> Vec<String> {
            l.trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        };
        doc.lines()
            .skip_while(|l| cells(l) != ["code", "status", "meaning"])
            .skip(2)
            .take_while(|l| l.trim_start().starts_with('|'))
            .map(|l| {
                let row = cells(l);
                let code = row[0].trim_matches('`').to_string();
                let status = row[1].parse().unwrap_or_else(|_| panic!("no status: {l}"));
                (code, status)
            })
            .collect()
    }

    #[test]
    fn the_error_table_of_the_api_doc_is_the_list_of_codes() {
        let code: BTreeSet<(String, u16)> = Code::ALL
            .iter()
            .map(|c| (c.as_str().to_string(), c.status().as_u16()))
            .collect();
        let doc = documented();
        assert!(
            !doc.is_empty(),
            "docs/api.md has no `| code | status | meaning |` table"
        );
        let undocumented: Vec<_> = code.difference(&doc).collect();
        let unknown: Vec<_> = doc.difference(&code).collect();
        assert!(
            undocumented.is_empty() && unknown.is_empty(),
            "docs/api.md's error table lacks {undocumented:?} and lists {unknown:?}, which no \
             code is"
        );
    }

    /// Losing the PostgreSQL server passes (issue 30 item 3): the page is told the database
    /// is away, with when to ask again, not that the server failed.
    #[test]
    fn a_database_away_answers_503_database_away_with_a_retry() {
        let away: ApiError = StoreError::Away("connection refused".into()).into();
        assert_eq!((away.code, away.retry_after), (Code::DatabaseAway, Some(5)));
        assert_eq!(away.code.status().as_u16(), 503);
        assert!(
            away.message.contains("connection refused"),
            "{}",
            away.message
        );
        let contended: ApiError = StoreError::Contended("40001".into()).into();
        assert_eq!(contended.code, Code::Busy);
    }

    #[test]
    fn every_code_is_listed_once() {
        let texts: BTreeSet<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(texts.len(), Code::ALL.len());
    }
}
