//! Rendering of `mediadex check [--repair]`, for people (one line per disagreement, then
//! what the repair did) and as JSON (`wire::Check`, `wire::Repaired`, documented in
//! docs/json.md); pure.

use super::render::to_json;
use mediadex::model::{Check, Finding, Repaired};

/// What a check found.
pub fn check(found: &Check, json: bool) -> serde_json::Result<String> {
    if json {
        return to_json(&mediadex::wire::Check::new(found));
    }
    if found.findings.is_empty() {
        return Ok(format!(
            "checked {} libraries: the index agrees with the disk\n",
            found.libraries
        ));
    }
    let mut out = findings(&found.findings);
    out.push_str(&format!(
        "{} disagreements; `mediadex check --repair` fixes what can be fixed without losing \
         anything\n",
        found.findings.len()
    ));
    Ok(out)
}

/// What a repair found, then what it did.
pub fn repaired(r: &Repaired, json: bool) -> serde_json::Result<String> {
    if json {
        return to_json(&mediadex::wire::Repaired::new(r));
    }
    let mut out = if r.found.is_empty() {
        "the index agrees with the disk\n".to_string()
    } else {
        findings(&r.found)
    };
    for done in &r.done {
        out.push_str(&format!("repair: {}\n", done.message));
    }
    Ok(out)
}

fn findings(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| format!("{}: {}\n", f.kind, f.message))
        .collect()
}
