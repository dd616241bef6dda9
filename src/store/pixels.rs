//! Assets of the same pixels, for the walks that read pictures (issue 29 item 4), a
//! composition: two assets whose content hashes agree under one scheme differ only in
//! metadata, so when they are also shown the same way up their faces and perceptual hash
//! are the same. For each asset of a faces or similar batch this says which earlier asset
//! of the batch has its pixels (`WalkAsset::same_pixels`), or what the walk already found
//! in another live asset under its scheme (`WalkAsset::known`: the twin from `assets`, its
//! faces from `faces`). Reads only and holds no SQL; must not write, and must not decide
//! what a walk does with it (that is `walks`').

use super::db::Db;
use super::rows::{Look, Pixels};
use super::{StoreError, assets, faces};
use crate::model::{Known, WalkKindId, WalkVisit};
use rusqlite::Connection;
use std::collections::HashMap;

/// The looks met so far in one batch, each with the first asset that had it.
#[derive(Default)]
pub(super) struct Seen(HashMap<Pixels, i64>);

impl Seen {
    /// For asset `id` of a `kind` batch: an earlier asset of the batch with its look, or
    /// what the walk found in another asset with it. Nothing for the walks that do not read
    /// pictures, for an asset whose content hash is not known yet, and from other assets on
    /// a forced walk or a rollback (each asset is to be read again then).
    pub(super) fn of(
        &mut self,
        conn: &Connection,
        kind: WalkKindId,
        visit: WalkVisit,
        id: i64,
        look: Look,
    ) -> Result<(Option<i64>, Option<Known>), StoreError> {
        if !matches!(kind, WalkKindId::Faces | WalkKindId::Similar) {
            return Ok((None, None));
        }
        let Some(look) = look else {
            return Ok((None, None));
        };
        if let Some(&first) = self.0.get(&look) {
            return Ok((Some(first), None));
        }
        let known = if visit.force || visit.rollback {
            None
        } else {
            known(conn, kind, visit.scheme, id, &look)?
        };
        self.0.insert(look, id);
        Ok((None, known))
    }
}

fn known(
    conn: &Connection,
    kind: WalkKindId,
    scheme: i64,
    id: i64,
    look: &Pixels,
) -> Result<Option<Known>, StoreError> {
    let Some(twin) = assets::pixel_twin(&Db::sqlite(conn), kind, scheme, id, look)? else {
        return Ok(None);
    };
    Ok(match (kind, twin) {
        (WalkKindId::Faces, Some(twin)) => Some(Known::Faces(faces::of_asset(&Db::sqlite(conn), twin, scheme)?)),
        (WalkKindId::Similar, phash) => Some(Known::Phash(phash.map(|p| p as u64))),
        _ => None,
    })
}
