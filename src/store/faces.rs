//! The `faces` table: the faces a detector version found in an asset, and the asset's
//! `faces_scheme` stamp: the stamp, and one version's rows replaced (delete, insert). What
//! else a replacement brings (people, the embedding walk) is `chains::replace_faces`'s.
//! Rows go with their asset (ON DELETE CASCADE: the trash sweep).

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

/// Stamps asset `asset_id` with detector `version` (clearing its embedding stamp). False
/// (nothing written) when the asset is gone or, unless `over_newer`, stamped by a newer
/// detector.
pub(super) fn stamp(
    conn: &Connection,
    asset_id: i64,
    version: i64,
    over_newer: bool,
) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached(STAMP)?
        .execute(params![asset_id, version, over_newer])?
        != 0)
}

/// Replaces the faces of `asset_id` for `version` with `faces`; answers each new row's id
/// with its box.
pub(super) fn put(
    conn: &Connection,
    asset_id: i64,
    version: i64,
    faces: &[DetectedFace],
) -> Result<Vec<(i64, [f32; 4])>, StoreError> {
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
    Ok(found)
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
    /// The stored faces of an asset for one detector version.
    pub fn faces(&self, asset_id: i64, version: i64) -> Result<Vec<DetectedFace>, StoreError> {
        self.read_lite(|conn| of_asset(conn, asset_id, version))
    }

    /// One face's photo and box (stored pixels), `None` when no face has that id (a
    /// re-detection replaced it, or its asset was swept).
    pub fn face_box(&self, id: i64) -> Result<Option<FaceBox>, StoreError> {
        use rusqlite::OptionalExtension;
        self.read_lite(|conn| {
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
