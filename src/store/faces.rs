//! The `faces` table: the faces a detector version found in an asset, and the asset's
//! `faces_scheme` stamp. Replacing an asset's faces for a version is one step (delete that
//! version's rows, insert, stamp; the faces of other versions leave their people, a face found
//! again keeps who it is and the user's word on it, and the new ones' descriptors are asked
//! for: `walks::faces_replaced`), used by the fenced walk commit
//! and by the unfenced one-off op. Rows go with their asset (ON DELETE CASCADE: the trash sweep).

use super::{Store, StoreError};
use crate::model::{DetectedFace, FaceBox};
use rusqlite::{Connection, params};

/// A walk of an older detector (`?3` false) keeps what a newer one stamped. New faces have
/// no descriptors yet: the embedding stamp goes.
const STAMP: &str = "
    UPDATE assets SET faces_scheme = ?2, embed_scheme = NULL
     WHERE id = ?1 AND (?3 OR faces_scheme IS NULL OR faces_scheme <= ?2)";
const CLEAR: &str = "DELETE FROM faces WHERE asset_id = ?1 AND detector_version = ?2";
const INSERT: &str = "
    INSERT INTO faces (asset_id, detector_version, x, y, w, h, score, landmarks)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) RETURNING id";
const OF_ASSET: &str = "
    SELECT x, y, w, h, score, landmarks FROM faces
     WHERE asset_id = ?1 AND detector_version = ?2 ORDER BY id";
const ONE: &str = "SELECT asset_id, x, y, w, h FROM faces WHERE id = ?1";

/// Replaces the faces of `asset_id` for `version` and stamps the asset. Returns false (and
/// writes nothing) when the asset is gone (the sweep deleted it meanwhile) or, unless
/// `over_newer`, stamped by a newer detector (a newer binary on the same database).
pub(super) fn replace(
    conn: &Connection,
    asset_id: i64,
    (version, over_newer): (i64, bool),
    faces: &[DetectedFace],
    now: crate::model::Millis,
) -> Result<bool, StoreError> {
    if conn
        .prepare_cached(STAMP)?
        .execute(params![asset_id, version, over_newer])?
        == 0
    {
        return Ok(false);
    }
    let said = super::people::word_on(conn, asset_id)?;
    conn.prepare_cached(CLEAR)?
        .execute(params![asset_id, version])?;
    let mut insert = conn.prepare_cached(INSERT)?;
    let mut found = Vec::with_capacity(faces.len());
    for f in faces {
        let landmarks: Vec<[f32; 2]> = f.landmarks.iter().map(|&(x, y)| [x, y]).collect();
        let landmarks = serde_json::to_string(&landmarks)
            .map_err(|e| StoreError::Conflict(format!("face landmarks: {e}")))?;
        let id: i64 = insert.query_row(
            params![asset_id, version, f.x, f.y, f.w, f.h, f.score, landmarks],
            |r| r.get(0),
        )?;
        found.push((id, [f.x, f.y, f.w, f.h]));
    }
    super::people::forget_old_faces(conn, asset_id, version)?;
    super::people::carry_word(conn, asset_id, &said, &found)?;
    super::walks::faces_replaced(conn, asset_id, now)?;
    Ok(true)
}

/// The faces of one asset at one detector version, in insertion order.
pub(super) fn of_asset(
    conn: &Connection,
    asset_id: i64,
    version: i64,
) -> Result<Vec<DetectedFace>, StoreError> {
    let mut stmt = conn.prepare_cached(OF_ASSET)?;
    let rows = stmt.query_map(params![asset_id, version], |r| {
        let text: String = r.get(5)?;
        Ok((
            DetectedFace {
                x: r.get::<_, f64>(0)? as f32,
                y: r.get::<_, f64>(1)? as f32,
                w: r.get::<_, f64>(2)? as f32,
                h: r.get::<_, f64>(3)? as f32,
                score: r.get::<_, f64>(4)? as f32,
                landmarks: [(0.0, 0.0); 5],
            },
            text,
        ))
    })?;
    rows.map(|row| {
        let (mut face, text) = row?;
        // A row this binary did not write may hold fewer points: missing ones stay 0.
        let points: Vec<[f32; 2]> = serde_json::from_str(&text).unwrap_or_default();
        for (slot, p) in face.landmarks.iter_mut().zip(points) {
            *slot = (p[0], p[1]);
        }
        Ok(face)
    })
    .collect()
}

impl Store {
    /// Stores the faces a detector found in one asset (a one-off detection, not a walk):
    /// replaces that version's rows and stamps `faces_scheme`. False if the asset is gone.
    pub fn store_faces(
        &self,
        asset_id: i64,
        version: i64,
        faces: Vec<DetectedFace>,
    ) -> Result<bool, StoreError> {
        self.write(move |conn, now| replace(conn, asset_id, (version, true), &faces, now))
    }

    /// The stored faces of an asset for one detector version.
    pub fn faces(&self, asset_id: i64, version: i64) -> Result<Vec<DetectedFace>, StoreError> {
        self.read(|conn| of_asset(conn, asset_id, version))
    }

    /// One face's photo and box (stored pixels), `None` when no face has that id (a
    /// re-detection replaced it, or its asset was swept).
    pub fn face_box(&self, id: i64) -> Result<Option<FaceBox>, StoreError> {
        use rusqlite::OptionalExtension;
        self.read(|conn| {
            let row = conn.prepare_cached(ONE)?.query_row([id], |r| {
                Ok(FaceBox {
                    face_id: id,
                    asset_id: r.get(0)?,
                    x: r.get::<_, f64>(1)? as f32,
                    y: r.get::<_, f64>(2)? as f32,
                    w: r.get::<_, f64>(3)? as f32,
                    h: r.get::<_, f64>(4)? as f32,
                })
            });
            Ok(row.optional()?)
        })
    }
}
