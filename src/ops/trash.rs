//! Trash and restore of one asset, with their follow-ups: a command without workers first
//! carries on the moves whose holder died; a restore queues the face walk in the transaction
//! that makes the asset live again (it picks the asset up if it lacks the current detector's
//! faces: it was skipped while trashed).

use super::error::Thing;
use super::{Error, Services};
use crate::model::Asset;

/// Moves the asset's files into their library's trash folder; answers the asset as it is now.
pub fn trash(s: &Services, id: i64) -> Result<Asset, Error> {
    carry_on(s);
    crate::trash::trash(&s.store, id)?;
    asset(s, id)
}

/// Moves a trashed asset's files back; queues its faces; answers the asset as it is now.
pub fn restore(s: &Services, id: i64) -> Result<Asset, Error> {
    carry_on(s);
    crate::trash::restore_with(&s.store, id, &moves(s), &crate::trash::NoMoveHooks)?;
    if s.restore_faces.is_some() {
        (s.wake)(); // the face walk queued with the restore
    }
    asset(s, id)
}

/// The asset, or `NotFound`.
pub fn asset(s: &Services, id: i64) -> Result<Asset, Error> {
    s.store.asset(id)?.ok_or(Error::NotFound(Thing::Asset, id))
}

/// Without workers, the moves whose holder died (their lease expired) are carried on here. A
/// failure is logged, not fatal: the moves stay queued for the next worker.
fn carry_on(s: &Services) {
    if !s.without_workers {
        return;
    }
    match crate::trash::finish_abandoned(&s.store, &moves(s)) {
        Ok(0) => {}
        Ok(n) => tracing::info!(moves = n, "carried on interrupted trash moves"),
        Err(e) => tracing::warn!(error = %e, "could not carry on interrupted trash moves"),
    }
}

/// How this process's moves run: a restore queues the face walk with its flip.
fn moves(s: &Services) -> crate::trash::MoveConfig {
    crate::trash::MoveConfig {
        faces: s.restore_faces.clone(),
        ..crate::trash::MoveConfig::default()
    }
}
