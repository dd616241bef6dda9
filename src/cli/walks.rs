//! Rendering of walk state (`mediadex walk` and the `walks` of `mediadex status`), for people
//! and as JSON. Owns the JSON shape of a walk's state (documented in the README); pure.

use super::render::{table, to_json};
use mediadex::walks::WalkState;
use serde::Serialize;

#[derive(Serialize)]
pub struct WalkOut {
    /// The scheme this binary walks under.
    current_scheme: i64,
    /// The last scheme a walk covered to the end (0: never).
    scheme: i64,
    /// The highest scheme any mediadex has run on this database.
    seen: i64,
    /// `seen` is above `current_scheme`: a newer mediadex ran here before.
    rollback: bool,
    completed_at: Option<i64>,
    /// The live chain, or null when the walk is idle.
    chain: Option<ChainOut>,
}

#[derive(Serialize)]
struct ChainOut {
    job_id: i64,
    state: &'static str,
    scheme: Option<i64>,
    cursor: i64,
    done: u64,
    left: i64,
}

pub fn walk_out(w: &WalkState) -> WalkOut {
    WalkOut {
        current_scheme: w.current,
        scheme: w.scheme,
        seen: w.seen,
        rollback: w.seen > w.current,
        completed_at: w.completed_at,
        chain: w.chain.as_ref().map(|c| ChainOut {
            job_id: c.job_id,
            state: c.state.as_str(),
            scheme: c.scheme,
            cursor: c.cursor,
            done: c.done,
            left: c.left,
        }),
    }
}

/// One line of text per walk.
pub fn summary(w: &WalkState) -> String {
    let chain = match &w.chain {
        Some(c) => format!(
            "chain {} {} at asset {} ({} done, {} left)",
            c.job_id, c.state, c.cursor, c.done, c.left
        ),
        None => "idle".to_string(),
    };
    let rollback = if w.seen > w.current {
        format!(
            "; WARNING: scheme {} was run here by a newer mediadex",
            w.seen
        )
    } else {
        String::new()
    };
    format!(
        "scheme {} (walked to the end: {}); {chain}{rollback}",
        w.current, w.scheme
    )
}

pub fn walk(w: &WalkState, json: bool) -> serde_json::Result<String> {
    if json {
        let mut out = serde_json::to_value(walk_out(w))?;
        if let Some(map) = out.as_object_mut() {
            map.insert("kind".into(), w.kind.as_str().into());
        }
        return to_json(&out);
    }
    Ok(table(
        &["WALK", "STATE"],
        vec![vec![w.kind.to_string(), summary(w)]],
    ))
}
