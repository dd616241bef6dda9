//! The use cases, each once (DESIGN.md section 2, `ops/`): add and remove a library, request,
//! cancel and release a scan, a run's problems, trash and restore with their follow-ups,
//! redetect a picture's faces, similar photos, people, start and release a walk, cancel and release a job, and the
//! status summary. The CLI and the HTTP handlers are adapters over these: they parse, call one
//! operation here and render what it returns. Each operation takes the `Services` it needs and
//! plain arguments, and answers model values or one typed `Error` that says whether trying
//! again can help. Parses no arguments, renders no output, holds no SQL.
//!
//! Must not import: app, http, wire, axum, clap, rusqlite, r2d2

pub mod check;
mod error;
pub mod faces;
pub mod jobs;
pub mod library;
pub mod people;
pub mod scans;
pub mod similar;
pub mod status;
pub mod trash;
pub mod walks;

pub use error::{Error, Thing};
pub use scans::{Scope, ScopeError};

use crate::model::WalkKindId;
use crate::store::Store;
use crate::walks::faces::FacesWalk;
use std::sync::Arc;

/// Wakes this process's idle workers after an operation queued work (a no-op without them).
pub type Wake = crate::watch::Waker;

/// What the operations act through: the store, and this process's workers, watcher and
/// detector where it has them.
#[derive(Clone)]
pub struct Services {
    pub store: Store,
    pub wake: Wake,
    /// The watcher of this process, when it watches: told of libraries added and removed.
    pub watch: Option<crate::watch::WatchHandle>,
    /// Admission's hourly limit per library (`MEDIADEX_SCAN_HOURLY_LIMIT`).
    pub hourly_limit: Option<u32>,
    /// The walk kinds this process runs, each with the scheme it walks under.
    pub walks: Arc<[(WalkKindId, i64)]>,
    /// The face walk of this build (its detector and scheme); `None` without a detector.
    pub faces: Option<Arc<FacesWalk>>,
    /// The face walk a restore queues in the transaction that makes its asset live again
    /// (`app::faces_follow_up`); `None`: a restore queues none.
    pub restore_faces: Option<crate::model::WalkRequest>,
    /// Bits two pictures' hashes may differ in to be similar (`similar_distance`).
    pub similar_distance: u32,
    /// No workers run in this process (a CLI command): a trash or restore first carries on
    /// the moves whose holder died, as a worker would.
    pub without_workers: bool,
}

impl Services {
    /// The services of a process with no workers, watcher or detector (a CLI command).
    pub fn new(store: Store) -> Services {
        Services {
            store,
            wake: Arc::new(|| {}),
            watch: None,
            hourly_limit: None,
            walks: Arc::new([]),
            faces: None,
            restore_faces: None,
            similar_distance: crate::config::DEFAULT_SIMILAR_DISTANCE,
            without_workers: true,
        }
    }
}
