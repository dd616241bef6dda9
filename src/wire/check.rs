//! `mediadex check`: each disagreement between the index and the disk (its kind, what it is
//! about, its words) and what a repair did, the same in the CLI and the API. A path is its
//! text, with its exact bytes in base64 beside it only where the text is lossy (docs/json.md,
//! "Paths that are not text").

use serde::Serialize;

/// A path's text, and its base64 bytes where the text is not them.
fn path_fields(path: Option<&[u8]>) -> (Option<String>, Option<String>) {
    let Some(bytes) = path else {
        return (None, None);
    };
    let text = String::from_utf8_lossy(bytes).replace('\\', "/");
    let exact = std::str::from_utf8(bytes) == Ok(text.as_str());
    let b64 =
        (!exact).then(|| base64::Engine::encode(&base64::engine::general_purpose::STANDARD, bytes));
    (Some(text), b64)
}

/// One disagreement (a check's finding), or one thing a repair did or left with why: both
/// say the same of what they are about.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Entry {
    pub kind: &'static str,
    pub library_id: Option<i64>,
    pub asset_id: Option<i64>,
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    pub message: String,
}

pub type Finding = Entry;
pub type Repair = Entry;

impl Entry {
    fn of(
        kind: &'static str,
        (library_id, asset_id): (Option<i64>, Option<i64>),
        path: Option<&[u8]>,
        message: &str,
    ) -> Entry {
        let (path, path_bytes) = path_fields(path);
        Entry {
            kind,
            library_id,
            asset_id,
            path,
            path_bytes,
            message: message.to_string(),
        }
    }

    pub fn finding(f: &crate::model::Finding) -> Entry {
        let ids = (f.library_id, f.asset_id);
        Entry::of(f.kind.as_str(), ids, f.path.as_deref(), &f.message)
    }

    pub fn repair(r: &crate::model::Repair) -> Entry {
        let ids = (r.library_id, r.asset_id);
        Entry::of(r.kind.as_str(), ids, r.path.as_deref(), &r.message)
    }
}

/// A check: how many libraries it covered, and what disagrees (empty: all agrees).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Check {
    pub libraries: usize,
    pub findings: Vec<Finding>,
}

impl Check {
    pub fn new(c: &crate::model::Check) -> Check {
        Check {
            libraries: c.libraries,
            findings: c.findings.iter().map(Entry::finding).collect(),
        }
    }
}

/// A repair: what the check found first, then what was done.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Repaired {
    pub found: Vec<Finding>,
    pub done: Vec<Repair>,
}

impl Repaired {
    pub fn new(r: &crate::model::Repaired) -> Repaired {
        Repaired {
            found: r.found.iter().map(Entry::finding).collect(),
            done: r.done.iter().map(Entry::repair).collect(),
        }
    }
}
