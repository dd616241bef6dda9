//! Scan runs: a request through admission with its one scope rule (`Scope::parse`, for the
//! CLI and the API alike), the start-up scan of every library, cancelling a library's runs
//! or one run, force-releasing a run, following a retried run to the successor that carries
//! its work, one run's reasons and problems, and the problems still open.

use super::error::Thing;
use super::{Error, Services};
use crate::model::{
    Library, OpenProblem, Provenance, RunProblem, ScanRequest, ScanRun, Target, Trigger,
};
use crate::store::{Admission, AdmissionOptions, Store};

/// A library-relative folder to scan: `/`-separated names, none `..` or `.`, no empty name,
/// backslash or NUL; `""` is the whole library. Slashes around it are dropped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scope(String);

/// A scope that would leave the library or names no folder.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the scope must be a folder inside the library, like `2024/holiday`")]
pub struct ScopeError;

impl Scope {
    pub fn parse(raw: &str) -> Result<Scope, ScopeError> {
        let scope = raw.trim_matches('/');
        let bad_name = |p: &str| p == ".." || p == "." || p.is_empty();
        let bad =
            (!scope.is_empty() && scope.split('/').any(bad_name)) || scope.contains(['\\', '\0']);
        if bad {
            return Err(ScopeError);
        }
        Ok(Scope(scope.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What a scan request asks besides the library.
#[derive(Clone, Debug)]
pub struct Ask {
    pub scope: Scope,
    pub force: bool,
    pub trigger: Trigger,
    /// The same key with the same request answers the original run (HTTP `Idempotency-Key`).
    pub key: Option<String>,
}

/// Asks for a scan of one library; wakes the workers.
pub fn request(s: &Services, library_id: i64, ask: &Ask) -> Result<(ScanRun, Admission), Error> {
    let request = ScanRequest {
        library_id,
        scope: ask.scope.as_str().to_string(),
        trigger: ask.trigger,
        watch_event: None,
    };
    let options = AdmissionOptions {
        idempotency_key: ask.key.clone(),
        hourly_limit: s.hourly_limit,
        forced: ask.force,
    };
    let answer = s.store.request_scan_keyed(request, options)?;
    (s.wake)();
    Ok(answer)
}

/// Every library gets a scan at start: changes made while mediadex was not running are
/// found (an unchanged library costs a walk and no writes). Coalesces with waiting runs;
/// no hourly limit (a start is no request of the user's). A refusal is logged.
pub fn request_at_start(store: &Store) {
    let libraries = match store.libraries() {
        Ok(libraries) => libraries,
        Err(e) => {
            tracing::warn!(error = %e, "cannot list libraries for the start-up scans");
            return;
        }
    };
    for library in libraries {
        let request = ScanRequest {
            library_id: library.id,
            scope: String::new(),
            trigger: Trigger::Boot,
            watch_event: None,
        };
        if let Err(e) = store.request_scan(request) {
            tracing::warn!(library = %library.name, error = %e, "start-up scan not requested");
        }
    }
}

/// Asks for a scan of each library, in order; the first refusal ends the requests.
pub fn request_each(s: &Services, libraries: &[Library], ask: &Ask) -> Result<Vec<ScanRun>, Error> {
    libraries
        .iter()
        .map(|l| Ok(request(s, l.id, ask)?.0))
        .collect()
}

/// Cancels each library's waiting and running runs, one write per library (never a read
/// then a cancel by id: reclaim may retire a run in between, and its successor would run);
/// a worker holding one stops within a fraction of a second and what it committed stays.
pub fn cancel_libraries(s: &Services, libraries: &[Library]) -> Result<Vec<ScanRun>, Error> {
    let mut cancelled = vec![];
    for l in libraries {
        cancelled.extend(s.store.cancel_scans(l.id)?);
    }
    (s.wake)();
    Ok(cancelled)
}

fn run(s: &Services, id: i64) -> Result<ScanRun, Error> {
    s.store
        .scan_run(id)?
        .ok_or(Error::NotFound(Thing::ScanRun, id))
}

/// Cancels the run's library's waiting and running runs in one write, so a successor that
/// reclaim made of the run a moment ago is cancelled too. Answers the run itself, or the
/// successor that carried its work.
pub fn cancel_run(s: &Services, id: i64) -> Result<ScanRun, Error> {
    run(s, id)?;
    let mut cancelled = s.store.cancel_scan_run(id)?;
    if cancelled.is_empty() {
        return Err(Error::RunEnded { id, act: "cancel" });
    }
    (s.wake)();
    // Not among them: reclaim had retired it, and the first (by id) carried its work.
    let at = cancelled.iter().position(|r| r.id == id).unwrap_or(0);
    Ok(cancelled.swap_remove(at))
}

/// Puts a running run back under a new generation (its holder's later writes land nothing).
pub fn release_run(s: &Services, id: i64) -> Result<ScanRun, Error> {
    run(s, id)?;
    if !s.store.release_unowned(Target::ScanRun, id)? {
        return Err(Error::RunEnded { id, act: "release" });
    }
    (s.wake)();
    run(s, id)
}

/// The runs as they are now, following a retried run to its successor.
pub fn latest(s: &Services, runs: &[ScanRun]) -> Result<Vec<ScanRun>, Error> {
    let mut latest = vec![];
    for run in runs {
        let history = s.store.scan_runs(Some(run.library_id), 50)?;
        let mut current = run.id;
        while let Some(next) = history.iter().find(|r| r.predecessor_id == Some(current)) {
            current = next.id;
        }
        if let Some(r) = history.into_iter().find(|r| r.id == current) {
            latest.push(r);
        }
    }
    Ok(latest)
}

/// One page of a run's problems, in the order it met them.
pub struct Problems {
    /// Each with its number in the run's order, from 1.
    pub items: Vec<(i64, RunProblem)>,
    /// How many problems the run kept.
    pub total: i64,
    /// The run kept as many as it may: it may have met more (its progress counts them).
    pub truncated: bool,
}

/// Up to `limit` of run `id`'s problems after number `after`; `NotFound` for no such run.
pub fn problems(s: &Services, id: i64, after: i64, limit: i64) -> Result<Problems, Error> {
    s.store
        .scan_run(id)?
        .ok_or(Error::NotFound(Thing::ScanRun, id))?;
    let total = s.store.run_problem_count(id)?;
    Ok(Problems {
        items: s.store.run_problems(id, after, limit)?,
        total,
        truncated: total >= crate::store::PROBLEMS_PER_RUN,
    })
}

/// The first `limit` problems still open (`store::Store::open_problems`) of library
/// `library` (`None`: every library), and how many there are; `NoLibrary` for no such one.
pub fn open_problems(
    s: &Services,
    library: Option<i64>,
    limit: i64,
) -> Result<(Vec<OpenProblem>, i64), Error> {
    if let Some(id) = library {
        s.store
            .library(id)?
            .ok_or_else(|| Error::NoLibrary(id.to_string()))?;
    }
    Ok(s.store.open_problems(library, limit)?)
}

/// Each run's reason counts (`new`, `size`, `unchanged`, ...).
pub fn reasons(s: &Services, run_id: i64) -> Result<Vec<(Provenance, i64)>, Error> {
    Ok(s.store.run_reasons(run_id)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_is_a_folder_inside_the_library() {
        for (raw, scope) in [
            ("", ""),
            ("/", ""),
            ("2024", "2024"),
            ("/2024/holiday/", "2024/holiday"),
            ("a..b/.hidden", "a..b/.hidden"),
            ("été 2024", "été 2024"),
        ] {
            assert_eq!(
                Scope::parse(raw).map(|s| s.0),
                Ok(scope.to_string()),
                "{raw:?}"
            );
        }
    }

    #[test]
    fn a_scope_that_leaves_the_library_or_names_no_folder_is_refused() {
        for raw in [
            "..",
            "../x",
            "a/../../b",
            "a/..",
            ".",
            "./a",
            "a/./b",
            "a//b",
            "a\\b",
            "..\\x",
            "a\0b",
        ] {
            assert_eq!(Scope::parse(raw), Err(ScopeError), "{raw:?}");
        }
    }
}
