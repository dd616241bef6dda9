//! Trash and restore of one asset, with their follow-ups: a command without workers first
//! carries on the moves whose holder died; a restore queues the face walk in the transaction
//! that makes the asset live again (it picks the asset up if it lacks the current detector's
//! faces: it was skipped while trashed). Keeping one asset of a group trashes the others, each
//! by its own leased move; keeping one file of a byte-identical group (one asset, several
//! files) trashes its other files by one leased move of copies, and the asset's restore puts
//! them back; a selection's trash or restore moves each asset the same way.

use super::error::Thing;
use super::{Error, Services};
use crate::model::{Asset, FileState};

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

/// One asset's move: `trash` or `restore`.
pub type Move = fn(&Services, i64) -> Result<Asset, Error>;

/// Moves each of `ids` (each once, in the order given) by `op`, one leased move each as
/// its own request would: a failure is that asset's answer and the others still move.
pub fn each(s: &Services, ids: &[i64], op: Move) -> Vec<(i64, Result<Asset, Error>)> {
    let mut seen = std::collections::HashSet::new();
    (ids.iter())
        .filter(|&&id| seen.insert(id))
        .map(|&id| (id, op(s, id)))
        .collect()
}

/// What keeping one of a group did: the kept asset, and each other one as it is now.
#[derive(Debug)]
pub struct Kept {
    pub kept: Asset,
    pub trashed: Vec<Asset>,
}

/// Keeps `keep` and trashes each of `others`, one leased move each (a crash mid-way leaves
/// the moves begun so far to be carried on like any move). The kept asset must be live, so
/// the group never loses its last copy. Another already in the trash is left as it is, so
/// the same request repeated after a failure carries on where the last one stopped.
pub fn keep(s: &Services, keep: i64, others: &[i64]) -> Result<Kept, Error> {
    if others.contains(&keep) {
        return Err(Error::KeepTrashed(keep));
    }
    let kept = asset(s, keep)?;
    if kept.trashed_at.is_some() {
        return Err(Error::KeepTrashed(keep));
    }
    for &id in others {
        asset(s, id)?;
    }
    carry_on(s);
    let mut trashed = Vec::with_capacity(others.len());
    for &id in others {
        if asset(s, id)?.trashed_at.is_none() {
            crate::trash::trash(&s.store, id)?;
        }
        trashed.push(asset(s, id)?);
    }
    Ok(Kept {
        kept: asset(s, keep)?,
        trashed,
    })
}

/// Keeps the file `path` (library-relative; in `library` when several libraries hold that
/// path) of the live asset `asset_id` and moves the asset's other present files, its
/// byte-identical copies, to their library's trash folder under one leased move
/// (`trash::trash_copies`). The asset stays live, shown by the kept file; `restore` of the
/// asset puts the copies back. Answers the asset as it is now.
pub fn keep_file(
    s: &Services,
    asset_id: i64,
    library: Option<i64>,
    path: &str,
) -> Result<Asset, Error> {
    let shown = asset(s, asset_id)?;
    if shown.trashed_at.is_some() {
        return Err(Error::KeepTrashed(asset_id));
    }
    let keep: Vec<(i64, Vec<u8>)> = (shown.paths.iter())
        .filter(|p| p.state == FileState::Present && p.rel_path_text == path)
        .filter(|p| library.is_none_or(|l| l == p.library_id))
        .map(|p| (p.library_id, p.rel_path.clone()))
        .collect();
    let [keep] = <[_; 1]>::try_from(keep).map_err(|found| Error::KeepFile {
        asset: asset_id,
        path: path.to_string(),
        found: found.len(),
    })?;
    carry_on(s);
    crate::trash::trash_copies(
        &s.store,
        asset_id,
        keep,
        &moves(s),
        &crate::trash::NoMoveHooks,
    )?;
    asset(s, asset_id)
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
