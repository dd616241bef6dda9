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
        db: &Db<'_>,
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
            known(db, kind, visit.scheme, id, &look)?
        };
        self.0.insert(look, id);
        Ok((None, known))
    }
}

fn known(
    db: &Db<'_>,
    kind: WalkKindId,
    scheme: i64,
    id: i64,
    look: &Pixels,
) -> Result<Option<Known>, StoreError> {
    let Some(twin) = assets::pixel_twin(db, kind, scheme, id, look)? else {
        return Ok(None);
    };
    Ok(match (kind, twin) {
        (WalkKindId::Faces, Some(twin)) => Some(Known::Faces(faces::of_asset(db, twin, scheme)?)),
        (WalkKindId::Similar, phash) => Some(Known::Phash(phash.map(|p| p as u64))),
        _ => None,
    })
}

#[cfg(test)]
mod both {
    use super::*;
    use crate::store::db::tests::on_both_schemas;

    fn a_batch_names_its_first_look_and_a_stamped_twins_findings(
        db: &Db<'_>,
    ) -> Result<(), StoreError> {
        let hash = [5u8; 32];
        for id in 1..=2 {
            db.execute(
                "INSERT INTO assets (id, checksum, size, created_at, kind, content_hash,
                                     content_hash_scheme, orientation)
                 VALUES (?1, ?2, 1, 0, 'image', ?3, 1, 6)",
                args!(id, [id as u8; 32], hash),
            )?;
        }
        db.execute(
            "UPDATE assets SET faces_scheme = 2, phash = 9, phash_scheme = 3 WHERE id = 1",
            args!(),
        )?;
        let look: Look = Some((hash.to_vec(), 1, Some(6)));
        let visit = |force| WalkVisit {
            scheme: 2,
            force,
            rollback: false,
        };
        let mut seen = Seen::default();
        let (same, known) = seen.of(db, WalkKindId::Faces, visit(false), 2, look.clone())?;
        assert_eq!(
            (same, known),
            (None, Some(Known::Faces(vec![]))),
            "the twin's faces"
        );
        let (same, known) = seen.of(db, WalkKindId::Faces, visit(false), 3, look.clone())?;
        assert_eq!(
            (same, known),
            (Some(2), None),
            "the batch's first of this look"
        );
        let mut seen = Seen::default();
        let similar = WalkVisit {
            scheme: 3,
            ..visit(false)
        };
        let found = seen.of(db, WalkKindId::Similar, similar, 2, look.clone())?;
        assert_eq!(found, (None, Some(Known::Phash(Some(9)))));
        let mut seen = Seen::default();
        assert_eq!(
            seen.of(db, WalkKindId::Faces, visit(true), 2, look.clone())?,
            (None, None)
        );
        assert_eq!(
            seen.of(db, WalkKindId::ContentHash, visit(false), 2, look)?,
            (None, None)
        );
        Ok(())
    }

    on_both_schemas!(a_batch_names_its_first_look_and_a_stamped_twins_findings);
}
