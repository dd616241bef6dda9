//! The `faces` table: the faces a detector version found in an asset, and the asset's
//! `faces_scheme` stamp: the stamp, and one version's rows replaced (delete, insert). What
//! else a replacement brings (people, the embedding walk) is `chains::replace_faces`'s.
//! Rows go with their asset (ON DELETE CASCADE: the trash sweep).

use super::db::Db;
use super::{Store, StoreError};
use crate::model::{DetectedFace, FaceBox};

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
    db: &Db<'_>,
    asset_id: i64,
    version: i64,
    over_newer: bool,
) -> Result<bool, StoreError> {
    Ok(db.execute(STAMP, args!(asset_id, version, over_newer))? != 0)
}

/// Replaces the faces of `asset_id` for `version` with `faces`; answers each new row's id
/// with its box.
pub(super) fn put(
    db: &Db<'_>,
    asset_id: i64,
    version: i64,
    faces: &[DetectedFace],
) -> Result<Vec<(i64, [f32; 4])>, StoreError> {
    db.execute(CLEAR, args!(asset_id, version))?;
    let mut found = Vec::with_capacity(faces.len());
    for f in faces {
        let landmarks: Vec<[f32; 2]> = f.landmarks.iter().map(|&(x, y)| [x, y]).collect();
        let landmarks = serde_json::to_string(&landmarks)
            .map_err(|e| StoreError::Conflict(format!("face landmarks: {e}")))?;
        let row = args!(
            asset_id,
            version,
            f64::from(f.x),
            f64::from(f.y),
            f64::from(f.w),
            f64::from(f.h),
            f64::from(f.score),
            landmarks
        );
        let id: i64 = db.one(INSERT, row, |r| r.get(0))?;
        found.push((id, [f.x, f.y, f.w, f.h]));
    }
    Ok(found)
}

/// The faces of one asset at one detector version, in insertion order.
pub(super) fn of_asset(
    db: &Db<'_>,
    asset_id: i64,
    version: i64,
) -> Result<Vec<DetectedFace>, StoreError> {
    db.all(OF_ASSET, args!(asset_id, version), |r| {
        let mut face = DetectedFace {
            x: r.get::<f64>(0)? as f32,
            y: r.get::<f64>(1)? as f32,
            w: r.get::<f64>(2)? as f32,
            h: r.get::<f64>(3)? as f32,
            score: r.get::<f64>(4)? as f32,
            landmarks: [(0.0, 0.0); 5],
        };
        let text: String = r.get(5)?;
        // A row this binary did not write may hold fewer points: missing ones stay 0.
        let points: Vec<[f32; 2]> = serde_json::from_str(&text).unwrap_or_default();
        for (slot, p) in face.landmarks.iter_mut().zip(points) {
            *slot = (p[0], p[1]);
        }
        Ok(face)
    })
}

/// One face's photo and box (stored pixels), `None` when no face has that id.
fn face_box(db: &Db<'_>, id: i64) -> Result<Option<FaceBox>, StoreError> {
    db.optional(ONE, args!(id), |r| {
        Ok(FaceBox {
            face_id: id,
            asset_id: r.get(0)?,
            x: r.get::<f64>(1)? as f32,
            y: r.get::<f64>(2)? as f32,
            w: r.get::<f64>(3)? as f32,
            h: r.get::<f64>(4)? as f32,
        })
    })
}

impl Store {
    /// The stored faces of an asset for one detector version.
    pub fn faces(&self, asset_id: i64, version: i64) -> Result<Vec<DetectedFace>, StoreError> {
        self.read(|db| of_asset(db, asset_id, version))
    }

    /// One face's photo and box (stored pixels), `None` when no face has that id (a
    /// re-detection replaced it, or its asset was swept).
    pub fn face_box(&self, id: i64) -> Result<Option<FaceBox>, StoreError> {
        self.read(|db| face_box(db, id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::db::tests::on_both_schemas;

    fn an_asset(db: &Db<'_>, id: i64) -> Result<(), StoreError> {
        let checksum = [id as u8; 32];
        db.execute(
            "INSERT INTO assets (id, checksum, size, created_at) VALUES (?1, ?2, 1, 0)",
            args!(id, checksum),
        )?;
        Ok(())
    }

    fn face(x: f32) -> DetectedFace {
        DetectedFace {
            x,
            y: 0.25,
            w: 0.5,
            h: 0.125,
            score: 0.75,
            landmarks: [(0.5, 0.25), (1.0, 2.0), (0.0, 0.0), (0.0, 0.0), (3.0, 4.0)],
        }
    }

    fn schemes(db: &Db<'_>, id: i64) -> Result<(Option<i64>, Option<i64>), StoreError> {
        db.one(
            "SELECT faces_scheme, embed_scheme FROM assets WHERE id = ?1",
            args!(id),
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    }

    fn a_stamp_keeps_a_newer_detectors_unless_told(db: &Db<'_>) -> Result<(), StoreError> {
        an_asset(db, 1)?;
        db.execute("UPDATE assets SET embed_scheme = 9 WHERE id = 1", args!())?;
        assert!(stamp(db, 1, 3, false)?);
        assert_eq!(schemes(db, 1)?, (Some(3), None));
        assert!(
            !stamp(db, 1, 2, false)?,
            "an older detector keeps the newer stamp"
        );
        assert_eq!(schemes(db, 1)?, (Some(3), None));
        assert!(stamp(db, 1, 3, false)?, "the same detector stamps again");
        assert!(stamp(db, 1, 2, true)?, "a rollback stamps over a newer one");
        assert_eq!(schemes(db, 1)?, (Some(2), None));
        assert!(!stamp(db, 99, 2, true)?, "a gone asset takes no stamp");
        Ok(())
    }

    fn put_replaces_one_versions_faces_and_they_read_back(db: &Db<'_>) -> Result<(), StoreError> {
        an_asset(db, 1)?;
        let old = put(db, 1, 1, &[face(0.5)])?;
        let first = put(db, 1, 2, &[face(0.0625), face(0.125)])?;
        assert_eq!(first.len(), 2);
        assert_eq!(first[1].1, [0.125, 0.25, 0.5, 0.125]);
        let again = put(db, 1, 2, &[face(0.375)])?;
        assert_eq!(of_asset(db, 1, 2)?, vec![face(0.375)]);
        assert_eq!(
            of_asset(db, 1, 1)?,
            vec![face(0.5)],
            "another version's rows stay"
        );
        assert_eq!(face_box(db, first[1].0)?, None, "a replaced face is gone");
        let found = face_box(db, again[0].0)?.expect("the new face");
        assert_eq!((found.asset_id, found.x, found.h), (1, 0.375, 0.125));
        assert_eq!(face_box(db, old[0].0)?.map(|b| b.x), Some(0.5));
        Ok(())
    }

    fn fewer_stored_landmarks_read_as_zero(db: &Db<'_>) -> Result<(), StoreError> {
        an_asset(db, 1)?;
        db.execute(
            "INSERT INTO faces (asset_id, detector_version, x, y, w, h, score, landmarks)
             VALUES (1, 1, 0.5, 0.5, 0.25, 0.25, 0.5, '[[1.0, 2.0]]')",
            args!(),
        )?;
        let read = of_asset(db, 1, 1)?;
        assert_eq!(read[0].landmarks[0], (1.0, 2.0));
        assert_eq!(read[0].landmarks[4], (0.0, 0.0));
        Ok(())
    }

    on_both_schemas!(
        a_stamp_keeps_a_newer_detectors_unless_told,
        put_replaces_one_versions_faces_and_they_read_back,
        fewer_stored_landmarks_read_as_zero,
    );
}
