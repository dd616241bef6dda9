//! The one error vocabulary of the use cases: each variant says what went wrong in words a
//! user can act on, and whether trying again later can help (`is_transient`) or the request
//! itself is wrong (`is_input`). The adapters map it: `http/error.rs` to a status and a code,
//! the CLI to an exit code.

use crate::config::ConfigError;
use crate::model::WalkKindId;
use crate::store::StoreError;
use crate::trash::TrashError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Scope(#[from] super::ScopeError),
    /// A folder that cannot be a library (missing, not a directory, ...).
    #[error(transparent)]
    LibraryPath(ConfigError),
    #[error("no library with id or name '{0}' (see `mediadex library list`)")]
    NoLibrary(String),
    #[error("no libraries yet; add one with `mediadex library add PATH`")]
    NoLibraries,
    #[error("no {0} {1}")]
    NotFound(Thing, i64),
    #[error("scan run {id} has already ended; nothing to {act}")]
    RunEnded { id: i64, act: &'static str },
    #[error("job {id} is not waiting or running; nothing to {act}")]
    JobEnded { id: i64, act: &'static str },
    #[error("no walk {name:?} on this server; walks: {known}")]
    UnknownWalk { name: String, known: String },
    #[error("no {0} walk is waiting or running; nothing to release")]
    NoChain(WalkKindId),
    #[error("the {0} walk (job {1}) waits for a worker; no lease to release")]
    ChainWaiting(WalkKindId, i64),
    #[error("job {1} of the {0} walk ended before the release; try again")]
    ChainEnded(WalkKindId, i64),
    #[error("this mediadex has no face detector, so it cannot detect faces")]
    NoDetector,
    #[error("asset {0} is in the trash; restore it to detect its faces")]
    Trashed(i64),
    #[error("asset {0} is not a picture; faces are found in pictures")]
    NotAnImage(i64),
    /// Trashed or swept between the check and the detection.
    #[error("no live picture {0} (unknown, trashed, or not an image)")]
    NoPicture(i64),
    #[error("face detection of asset {0} failed: {1}")]
    DetectionFailed(i64, crate::walks::faces::DetectError),
    /// Keeping a group's copy that is in the trash (or also among those to trash) would
    /// leave the group without a live copy.
    #[error("asset {0} cannot be kept: it is in the trash or among those to trash")]
    KeepTrashed(i64),
    /// The file to keep of an identical group is not one present file of the asset (none,
    /// or one in each of several libraries: name the library).
    #[error(
        "asset {asset} has {found} present files at {path:?} (one is needed; with several \
         libraries, name the library)"
    )]
    KeepFile {
        asset: i64,
        path: String,
        found: usize,
    },
    /// A change to people the rules refuse (an unknown person or face, two faces of one
    /// photo in one person).
    #[error(transparent)]
    People(#[from] crate::store::PeopleRefusal),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Trash(#[from] TrashError),
}

/// What a `NotFound` did not find.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Thing {
    Asset,
    Job,
    ScanRun,
}

impl std::fmt::Display for Thing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Thing::Asset => "asset",
            Thing::Job => "job",
            Thing::ScanRun => "scan run",
        })
    }
}

impl Error {
    /// The same request may succeed later unchanged: the database was busy or its disk
    /// full, a move was interrupted or its library was away, a walk's chain moved on under the release.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Store(e) | Error::Trash(TrashError::Store(e)) => e.is_transient(),
            Error::DetectionFailed(_, e) => e.retry() == crate::queue::Retry::Transient,
            Error::Trash(
                TrashError::Guard(_) | TrashError::NoRoom(_) | TrashError::LibraryAway { .. },
            ) => true,
            Error::ChainEnded(..) => true,
            _ => false,
        }
    }

    /// The request itself is wrong (a bad scope or path, an unknown id, a conflict with
    /// what is there): a permanent failure the user fixes by asking otherwise.
    pub fn is_input(&self) -> bool {
        match self {
            Error::Store(e) => matches!(e, StoreError::Conflict(_) | StoreError::NotFound(_)),
            Error::LibraryPath(e) => matches!(
                e,
                ConfigError::EmptyDataDir
                    | ConfigError::Invalid { .. }
                    | ConfigError::LibraryPath(_)
            ),
            Error::Trash(_) | Error::DetectionFailed(..) | Error::ChainEnded(..) => false,
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_database_is_transient_and_bad_input_is_permanent() {
        assert!(Error::Store(StoreError::Locked).is_transient());
        assert!(Error::Trash(TrashError::Store(StoreError::DiskFull)).is_transient());
        let bad = Error::from(super::super::ScopeError);
        assert!(!bad.is_transient() && bad.is_input());
        let conflict = Error::Store(StoreError::Conflict("taken".into()));
        assert!(!conflict.is_transient() && conflict.is_input());
        assert!(!Error::Store(StoreError::WriterGone).is_input());
    }
}
