//! Assets of the same pixels, for the walks that read pictures (issue 29 item 4): two assets
//! whose content hashes agree under one scheme differ only in metadata, so when they are
//! also shown the same way up their faces and perceptual hash are the same. For each asset
//! of a faces or similar batch this says which earlier asset of the batch has its pixels
//! (`WalkAsset::same_pixels`), or what the walk already found in another live asset under
//! its scheme (`WalkAsset::known`). Reads only; must not write, and must not decide what a
//! walk does with it (that is `walks`').

use super::{StoreError, faces};
use crate::model::{Known, WalkKindId, WalkVisit};
use rusqlite::{Connection, OptionalExtension, Row, params};
use std::collections::HashMap;

/// Another live picture of the same pixels (?1 content hash under scheme ?2, orientation
/// ?3) than ?4 that the faces walk stamped with scheme ?5. Seeks the 8-byte prefix index of
/// migration 0027, then compares the whole hash.
const FACES_TWIN: &str = "
    SELECT id FROM assets
     WHERE substr(content_hash, 1, 8) = substr(?1, 1, 8) AND content_hash = ?1
       AND content_hash_scheme = ?2 AND orientation IS ?3 AND id <> ?4
       AND trashed_at IS NULL AND kind = 'image' AND faces_scheme = ?5
     LIMIT 1";
/// The same for the similar walk: the perceptual hash it stamped with scheme ?5 (NULL: the
/// picture cannot be hashed).
const SIMILAR_TWIN: &str = "
    SELECT phash FROM assets
     WHERE substr(content_hash, 1, 8) = substr(?1, 1, 8) AND content_hash = ?1
       AND content_hash_scheme = ?2 AND orientation IS ?3 AND id <> ?4
       AND trashed_at IS NULL AND kind = 'image' AND phash_scheme = ?5
     LIMIT 1";

/// What an asset's pixels are known by: its content hash and that hash's scheme (none yet
/// before the content-hash walk reached it), and its orientation.
pub(super) type Look = Option<(Vec<u8>, i64, Option<i64>)>;

/// The look in columns `at`, `at + 1` and `at + 2`: content_hash, content_hash_scheme,
/// orientation.
pub(super) fn look(r: &Row<'_>, at: usize) -> rusqlite::Result<Look> {
    let hash: Option<Vec<u8>> = r.get(at)?;
    let scheme: Option<i64> = r.get(at + 1)?;
    Ok(match (hash, scheme) {
        (Some(hash), Some(scheme)) => Some((hash, scheme, r.get(at + 2)?)),
        _ => None,
    })
}

/// The looks met so far in one batch, each with the first asset that had it.
#[derive(Default)]
pub(super) struct Seen(HashMap<(Vec<u8>, i64, Option<i64>), i64>);

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
    (hash, hash_scheme, orientation): &(Vec<u8>, i64, Option<i64>),
) -> Result<Option<Known>, StoreError> {
    let args = params![hash, hash_scheme, orientation, id, scheme];
    Ok(match kind {
        WalkKindId::Faces => {
            let twin: Option<i64> = conn
                .prepare_cached(FACES_TWIN)?
                .query_row(args, |r| r.get(0))
                .optional()?;
            match twin {
                Some(twin) => Some(Known::Faces(faces::of_asset(conn, twin, scheme)?)),
                None => None,
            }
        }
        WalkKindId::Similar => conn
            .prepare_cached(SIMILAR_TWIN)?
            .query_row(args, |r| r.get::<_, Option<i64>>(0))
            .optional()?
            .map(|phash| Known::Phash(phash.map(|p| p as u64))),
        WalkKindId::ContentHash | WalkKindId::Embeddings => None,
    })
}
