//! Rendering of walk state (`mediadex walk` and the `walks` of `mediadex status`), for people
//! and as JSON. Owns the JSON shape of a walk's state (documented in docs/json.md); pure.

use super::render::{table, to_json};
use mediadex::walks::{WalkPeer, WalkState};
use serde::Serialize;

#[derive(Serialize)]
pub struct WalkOut {
    /// The scheme this binary walks under.
    current_scheme: i64,
    /// The last scheme a walk covered to the end (0: never).
    scheme: i64,
    /// The highest scheme any mediadex has run on this database.
    seen: i64,
    /// `seen` is above `current_scheme`: a newer mediadex ran here before, and none is
    /// live now.
    rollback: bool,
    /// Another mediadex walking this kind under another scheme, live on this database.
    other: Option<WalkPeer>,
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
        rollback: w.rollback(),
        other: w.other.clone(),
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
    // Two versions on one database is said before a rollback: it is why `seen` is above.
    let note = if let Some(other) = &w.other {
        format!("; {}", other.describe(w.kind))
    } else if w.rollback() {
        format!(
            "; WARNING: scheme {} was run here by a newer mediadex",
            w.seen
        )
    } else {
        String::new()
    };
    format!(
        "scheme {} (walked to the end: {}); {chain}{note}",
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

#[cfg(test)]
mod tests {
    use super::*;
    use mediadex::model::WalkKindId;

    fn state(seen: i64, other: Option<WalkPeer>) -> WalkState {
        WalkState {
            kind: WalkKindId::ContentHash,
            current: 1,
            scheme: 1,
            seen,
            completed_at: None,
            chain: None,
            other,
        }
    }

    #[test]
    fn a_live_newer_mediadex_is_named_and_is_no_rollback() {
        let peer = WalkPeer::from((2, "nas:4242:0a1b2c3d".to_string()));
        let w = state(2, Some(peer));
        assert_eq!(
            summary(&w),
            "scheme 1 (walked to the end: 1); idle; another mediadex with content-hash scheme \
             2 is using this database (pid 4242)"
        );
        let v: serde_json::Value =
            serde_json::from_str(&walk(&w, true).expect("json")).expect("parse");
        assert_eq!(v["rollback"], false);
        assert_eq!(v["other"]["scheme"], 2);
        assert_eq!(v["other"]["pid"], "4242");
    }

    #[test]
    fn a_newer_scheme_with_no_live_mediadex_is_a_rollback() {
        let w = state(2, None);
        assert!(summary(&w).ends_with("WARNING: scheme 2 was run here by a newer mediadex"));
        let v: serde_json::Value =
            serde_json::from_str(&walk(&w, true).expect("json")).expect("parse");
        assert_eq!(
            (v["rollback"].as_bool(), v["other"].is_null()),
            (Some(true), true)
        );
    }
}
