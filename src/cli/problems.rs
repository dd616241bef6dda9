//! Rendering of a scan run's problems (`mediadex runs --problems ID`), for people and as
//! JSON. Owns that JSON shape (documented in docs/json.md); pure.

use super::render::{human_path, table, to_json};
use mediadex::model::RunProblem;
use serde::Serialize;

#[derive(Serialize)]
struct ProblemOut<'a> {
    /// The problem's number in the run's order, from 1.
    seq: i64,
    /// Library-relative; lossy where `path_bytes` is given.
    path: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    path_bytes: Option<String>,
    error: &'a str,
}

/// The problems of run `run`, in the order it met them.
pub fn problems(
    run: i64,
    problems: &[(i64, RunProblem)],
    json: bool,
) -> serde_json::Result<String> {
    if json {
        let out: Vec<ProblemOut<'_>> = problems
            .iter()
            .map(|(seq, p)| ProblemOut {
                seq: *seq,
                path: &p.rel_path_text,
                path_bytes: p.bytes_if_lossy(),
                error: &p.error,
            })
            .collect();
        return to_json(&out);
    }
    if problems.is_empty() {
        return Ok(format!("scan run {run} met no problems\n"));
    }
    let rows = problems
        .iter()
        .map(|(_, p)| vec![human_path(&p.rel_path), p.error.clone()])
        .collect();
    Ok(table(&["PATH", "ERROR"], rows))
}
