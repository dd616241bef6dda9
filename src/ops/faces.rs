//! Re-detection of one picture's faces on request (`mediadex faces redetect`, `POST
//! /api/assets/{id}/faces/redetect`): the face walk's rules (live images only) checked
//! first, each refusal its own error, then the current detector run and its faces stored for
//! its version in one writer op (a walk batch writing the same asset meanwhile writes the
//! same rows).

use super::error::Thing;
use super::{Error, Services};
use crate::model::{Asset, MediaKind, WalkKindId, WalkVisit};

/// Detects the faces of one live picture now and stores them; answers the asset with them.
pub fn redetect(s: &Services, id: i64) -> Result<Asset, Error> {
    let walk = s.faces.as_ref().ok_or(Error::NoDetector)?;
    let asset = s
        .store
        .asset(id)?
        .ok_or(Error::NotFound(Thing::Asset, id))?;
    if asset.trashed_at.is_some() {
        return Err(Error::Trashed(id));
    }
    if asset.facts.kind != Some(MediaKind::Image) {
        return Err(Error::NotAnImage(id));
    }
    // The face walk's own selection (live images only), forced, starting at this id.
    let visit = WalkVisit {
        scheme: walk.scheme,
        force: true,
        rollback: false,
    };
    let batch = s.store.walk_batch(WalkKindId::Faces, visit, id - 1, 1)?;
    let one = batch
        .into_iter()
        .find(|a| a.id == id)
        .ok_or(Error::NoPicture(id))?;
    let faces = walk
        .detect_one(&one)
        .map_err(|e| Error::DetectionFailed(id, e))?;
    if !s.store.store_faces(id, walk.scheme, faces)? {
        return Err(Error::NoPicture(id));
    }
    s.store.asset(id)?.ok_or(Error::NoPicture(id))
}
