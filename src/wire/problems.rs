//! The JSON shape of one problem a scan run met, as `mediadex runs --problems ID --json` and
//! `GET /api/scans/{id}/problems` both give it (docs/json.md), and of one problem still open
//! (`GET /api/problems`).

use crate::model::RunProblem;
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct Problem {
    /// The problem's number in the run's order, from 1.
    pub seq: i64,
    /// Library-relative; lossy where `path_bytes` is given.
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    pub error: String,
}

impl Problem {
    pub fn of(seq: i64, p: &RunProblem) -> Problem {
        Problem {
            seq,
            path: p.rel_path_text.clone(),
            path_bytes: p.bytes_if_lossy(),
            error: p.error.clone(),
        }
    }
}

/// A problem still open in a library (`GET /api/problems`): the latest one met at its path,
/// until a later run reads the path fine or it is gone.
#[derive(Clone, Debug, Serialize)]
pub struct OpenProblem {
    pub library_id: i64,
    /// The last run that met it.
    pub run_id: i64,
    /// Library-relative; lossy where `path_bytes` is given.
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    pub error: String,
}

impl OpenProblem {
    pub fn of(p: &crate::model::OpenProblem) -> OpenProblem {
        OpenProblem {
            library_id: p.library_id,
            run_id: p.run_id,
            path: p.problem.rel_path_text.clone(),
            path_bytes: p.problem.bytes_if_lossy(),
            error: p.problem.error.clone(),
        }
    }
}
