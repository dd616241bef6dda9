//! Rendering of a scan run's problems (`mediadex runs --problems ID`), for people and as
//! JSON (`wire::Problem`, documented in docs/json.md); pure.

use super::render::{human_path, table, to_json};
use mediadex::model::RunProblem;
use mediadex::wire::Problem;

/// The problems of run `run`, in the order it met them.
pub fn problems(
    run: i64,
    problems: &[(i64, RunProblem)],
    json: bool,
) -> serde_json::Result<String> {
    if json {
        let out: Vec<Problem> = problems
            .iter()
            .map(|(seq, p)| Problem::of(*seq, p))
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
