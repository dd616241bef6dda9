//! User trash and restore with the file moves (DESIGN.md section 6): the store journals an
//! intent per file, this module moves the file into or out of the library's
//! `.mediadex-trash/`, then the intent is committed. A crash between the two is repaired by
//! `replay` at start: a file found at its destination is committed, one still at its origin
//! is moved then committed, one found nowhere is given up. A move never overwrites a file.
//! No SQL here; rows go through `Store`.

use crate::model::{MoveOutcome, TrashIntent};
use crate::store::{Store, StoreError};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum TrashError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot move {from} to {to}: {why}")]
    Move {
        from: String,
        to: String,
        why: String,
    },
}

/// Moves an asset's files into their library's trash folder, then marks it trashed.
pub fn trash(store: &Store, asset_id: i64) -> Result<Vec<MoveOutcome>, TrashError> {
    let intents = store.begin_trash(asset_id)?;
    carry_out(store, intents)
}

/// Moves an asset's files back from the trash folder, then marks it live.
pub fn restore(store: &Store, asset_id: i64) -> Result<Vec<MoveOutcome>, TrashError> {
    let intents = store.begin_restore(asset_id)?;
    carry_out(store, intents)
}

/// Finishes the moves a crash interrupted. Returns how many intents were settled.
pub fn replay(store: &Store) -> Result<usize, TrashError> {
    let pending = store.pending_intents()?;
    let n = pending.len();
    for intent in pending {
        let (from, to) = paths(store, &intent)?;
        if to.exists() && !from.exists() {
            store.commit_intent(intent.id)?;
        } else if from.exists() && !to.exists() {
            match move_file(&from, &to) {
                Ok(()) => {
                    store.commit_intent(intent.id)?;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "giving up an interrupted trash move");
                    store.abort_intent(intent.id)?;
                }
            }
        } else {
            tracing::warn!(from = %from.display(), "interrupted trash move: file not found where expected");
            store.abort_intent(intent.id)?;
        }
    }
    Ok(n)
}

fn carry_out(store: &Store, intents: Vec<TrashIntent>) -> Result<Vec<MoveOutcome>, TrashError> {
    let mut outcomes = Vec::new();
    let mut failure = None;
    for intent in intents {
        if failure.is_some() {
            store.abort_intent(intent.id)?;
            continue;
        }
        let (from, to) = paths(store, &intent)?;
        match move_file(&from, &to) {
            Ok(()) => outcomes.extend(store.commit_intent(intent.id)?),
            Err(e) => {
                store.abort_intent(intent.id)?;
                failure = Some(e);
            }
        }
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(outcomes),
    }
}

fn paths(store: &Store, intent: &TrashIntent) -> Result<(PathBuf, PathBuf), TrashError> {
    let library = store
        .library(intent.library_id)?
        .ok_or_else(|| StoreError::NotFound(format!("library {} is gone", intent.library_id)))?;
    let root = Path::new(&library.root);
    Ok((
        root.join(rel_path(&intent.from_path)),
        root.join(rel_path(&intent.to_path)),
    ))
}

#[cfg(unix)]
fn rel_path(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

#[cfg(not(unix))]
fn rel_path(bytes: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
}

/// A rename inside one library (same file system), refusing to replace anything.
fn move_file(from: &Path, to: &Path) -> Result<(), TrashError> {
    let fail = |why: String| TrashError::Move {
        from: from.display().to_string(),
        to: to.display().to_string(),
        why,
    };
    if to.exists() {
        return Err(fail(
            "the destination exists already; nothing was moved".into(),
        ));
    }
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(|e| fail(e.to_string()))?;
    }
    std::fs::rename(from, to).map_err(|e| fail(e.to_string()))
}
