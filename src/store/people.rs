//! Face descriptors and people (migration 0025, DESIGN.md section 8): the vectors the
//! embedding walk stores per face and embedder version with the asset's `embed_scheme`
//! stamp (written by the fenced walk commit, with the faces it assigned at once), who each
//! face is (`face_people`), the user's word (confirmed faces, rejections, names, hidden
//! people) and the count of the user's changes that fences a recluster's commit (made by
//! `job_ends`), and the
//! reads behind "who is in this photo", "all photos of X" and the People list (each person's
//! face count is kept by migration 0028's triggers, not counted here). The grouping rule is
//! `people::cluster`'s: this file only stores what it is handed.

use super::db::{Db, Pair, Row};
use super::rows::checksum_col;
use super::{Store, StoreError};
use crate::model::{
    DetectedFace, EmbeddedAsset, FaceVector, FacesToEmbed, Millis, NewJob, PeopleState, Person,
    PhotoFace, RECLUSTER_JOB_KIND, Reclustered, Regrouping, SAME_FACE, face_key, overlap,
};

const PERSON_FACES: &str = "SELECT faces FROM people WHERE id = ?1";
/// A face's vector, unless the face was deleted meanwhile (re-detected, swept).
const PUT_VECTOR: &str = "
    INSERT INTO face_vectors (face_id, embedder_version, vector)
    SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM faces WHERE id = ?1)
    ON CONFLICT (face_id, embedder_version) DO UPDATE SET vector = excluded.vector";
/// Stamps the asset only when every face of its current detection has a vector of this
/// version: a re-detection between the batch's read and this commit leaves it unstamped.
/// A walk of an older embedder (`?3` false) keeps what a newer one stamped.
const STAMP: &str = "
    UPDATE assets SET embed_scheme = ?2
     WHERE id = ?1 AND faces_scheme IS NOT NULL
       AND (?3 OR embed_scheme IS NULL OR embed_scheme <= ?2)
       AND NOT EXISTS (SELECT 1 FROM faces f
                        WHERE f.asset_id = assets.id AND f.detector_version = assets.faces_scheme
                          AND NOT EXISTS (SELECT 1 FROM face_vectors v
                                           WHERE v.face_id = f.id AND v.embedder_version = ?2))";
const FACES_SCHEME: &str = "SELECT faces_scheme FROM assets WHERE id = ?1";
const TO_EMBED: &str = "
    SELECT f.id, f.x, f.y, f.w, f.h, f.score, f.landmarks,
           EXISTS (SELECT 1 FROM face_vectors v WHERE v.face_id = f.id AND v.embedder_version = ?3)
      FROM faces f WHERE f.asset_id = ?1 AND f.detector_version = ?2 ORDER BY f.id";
/// The faces of live pictures, of their current detection, with a vector of version ?1.
const VECTORS: &str = "
    SELECT f.id, f.asset_id, a.checksum, f.x, f.y, f.w, f.h, v.vector
      FROM assets a
      JOIN faces f ON f.asset_id = a.id AND f.detector_version = a.faces_scheme
      JOIN face_vectors v ON v.face_id = f.id AND v.embedder_version = ?1
     WHERE a.trashed_at IS NULL AND v.vector IS NOT NULL";
/// A face joins a person unless it is in one already, the person is gone, or the person
/// holds another face of its photo (two faces of one photo are never one person).
const JOIN: &str = "
    INSERT INTO face_people (face_id, person_id, asset_id, confirmed)
    SELECT f.id, ?2, f.asset_id, 0 FROM faces f
     WHERE f.id = ?1 AND EXISTS (SELECT 1 FROM people WHERE id = ?2)
       AND NOT EXISTS (SELECT 1 FROM face_people o
                        WHERE o.person_id = ?2 AND o.asset_id = f.asset_id)
    ON CONFLICT (face_id) DO NOTHING";
/// The faces of an asset's other detections are no one's any more (its current ones are).
const FORGET_OLD: &str = "
    DELETE FROM face_people WHERE asset_id = ?1
       AND face_id IN (SELECT id FROM faces WHERE asset_id = ?1 AND detector_version <> ?2)";
/// Who an asset's faces are, of any detection: the box of each placed face with its person
/// and whether the user put it there (1) or the clustering did (0), and of each face the
/// user said is not someone (2). Confirmed words first: they take their face first.
const WORD: &str = "
    SELECT f.x, f.y, f.w, f.h, p.person_id, p.confirmed FROM faces f
      JOIN face_people p ON p.face_id = f.id
     WHERE f.asset_id = ?1
    UNION ALL
    SELECT f.x, f.y, f.w, f.h, r.person_id, 2 FROM faces f
      JOIN face_rejections r ON r.face_id = f.id
     WHERE f.asset_id = ?1
    ORDER BY 6 DESC";
const ASSIGNED: &str = "SELECT face_id, person_id, confirmed FROM face_people";
const REJECTED: &str = "SELECT face_id, person_id FROM face_rejections";
const PEOPLE_IDS: &str = "SELECT id FROM people ORDER BY id";
const SAID: &str = "SELECT coalesce((SELECT value FROM counters WHERE name = 'people_said'), 0)";
const SAY: &str = "
    INSERT INTO counters (name, value) VALUES ('people_said', 1)
    ON CONFLICT (name) DO UPDATE SET value = counters.value + 1";
const UNPLACE: &str = "DELETE FROM face_people WHERE face_id = ?1 AND confirmed = 0";
const NEW_PERSON: &str = "INSERT INTO people (created_at, updated_at) VALUES (?1, ?1) RETURNING id";
/// People nobody named or hid who have no face left: a clustering's group that is gone.
const DROP_EMPTY: &str = "
    DELETE FROM people WHERE name IS NULL AND hidden = 0
       AND NOT EXISTS (SELECT 1 FROM face_people WHERE person_id = people.id)";
/// Each person's live faces: their count (migration 0028) less their faces in trashed
/// photos, which the trash's index finds; two faces of one photo are never one person (the
/// rule, `place`, `merge`), so it is their photo count too. The cover: one range of
/// `face_people_cover`, the user's newest face, else the newest.
const LIST: Pair = Pair {
    // SQLite is told the plan (`INDEXED BY`, `CROSS JOIN` fixing the join order), which
    // PostgreSQL's grammar has no words for; its own planner finds the trash's index.
    sqlite: "
    WITH gone AS (
        SELECT fp.person_id, count(*) AS n FROM assets a INDEXED BY assets_trashed
          CROSS JOIN face_people fp ON fp.asset_id = a.id
         WHERE a.trashed_at IS NOT NULL GROUP BY fp.person_id)
    SELECT p.id, p.name, p.hidden, p.faces - coalesce(g.n, 0), p.faces - coalesce(g.n, 0),
           (SELECT fp.face_id FROM face_people fp WHERE fp.person_id = p.id
             ORDER BY fp.confirmed DESC, fp.asset_id DESC LIMIT 1)
      FROM people p LEFT JOIN gone g ON g.person_id = p.id
     WHERE (?1 OR p.hidden = 0) AND (?2 IS NULL OR p.id = ?2)
     ORDER BY p.name IS NULL, p.name, p.id",
    postgres: "
    WITH gone AS (
        SELECT fp.person_id, count(*) AS n FROM assets a
          JOIN face_people fp ON fp.asset_id = a.id
         WHERE a.trashed_at IS NOT NULL GROUP BY fp.person_id)
    SELECT p.id, p.name, p.hidden, p.faces - coalesce(g.n, 0), p.faces - coalesce(g.n, 0),
           (SELECT fp.face_id FROM face_people fp WHERE fp.person_id = p.id
             ORDER BY fp.confirmed DESC, fp.asset_id DESC LIMIT 1)
      FROM people p LEFT JOIN gone g ON g.person_id = p.id
     WHERE (?1 OR p.hidden = 0) AND (CAST(?2 AS BIGINT) IS NULL OR p.id = ?2)
     ORDER BY p.name IS NULL, p.name, p.id",
};
/// "All photos of X": one range of `face_people_person`, live pictures only, by id.
const PHOTOS_OF: &str = "
    SELECT DISTINCT fp.asset_id FROM face_people fp JOIN assets a ON a.id = fp.asset_id
     WHERE fp.person_id = ?1 AND fp.asset_id > ?2 AND a.trashed_at IS NULL
     ORDER BY fp.asset_id LIMIT ?3";
/// A person's faces in live photos, by photo: one range of `face_people_person`.
const FACES_OF: &str = "
    SELECT fp.asset_id, fp.face_id FROM face_people fp JOIN assets a ON a.id = fp.asset_id
     WHERE fp.person_id = ?1 AND a.trashed_at IS NULL ORDER BY fp.asset_id, fp.face_id";
/// "Who is in this photo": its faces of its current detection, each with its person.
const IN_PHOTO: &str = "
    SELECT f.id, fp.person_id, p.name, coalesce(fp.confirmed, 0), f.x, f.y, f.w, f.h
      FROM assets a JOIN faces f ON f.asset_id = a.id AND f.detector_version = a.faces_scheme
      LEFT JOIN face_people fp ON fp.face_id = f.id
      LEFT JOIN people p ON p.id = fp.person_id
     WHERE a.id = ?1 ORDER BY f.id";
const RENAME: &str = "UPDATE people SET name = ?2, updated_at = ?3 WHERE id = ?1";
const HIDE: &str = "UPDATE people SET hidden = ?2, updated_at = ?3 WHERE id = ?1";
const EXISTS: &str = "SELECT name FROM people WHERE id = ?1";
/// A photo both people are in: they cannot be one person.
const SHARED_PHOTO: &str = "
    SELECT a.asset_id FROM face_people a JOIN face_people b ON b.asset_id = a.asset_id
     WHERE a.person_id = ?1 AND b.person_id = ?2 LIMIT 1";
/// Both people's faces are the user's word after a merge: the rule keeps a person's second
/// group only where the user put most of its faces (`cluster`), and each group must be.
const MERGE_FACES: &str =
    "UPDATE face_people SET person_id = ?1, confirmed = 1 WHERE person_id IN (?1, ?2)";
const MERGE_REJECTIONS: &str = "
    INSERT INTO face_rejections (face_id, person_id)
    SELECT face_id, ?1 FROM face_rejections WHERE person_id = ?2 ON CONFLICT DO NOTHING";
const MERGE_NAME: &str = "
    UPDATE people SET name = coalesce(name, (SELECT name FROM people WHERE id = ?2)),
                      updated_at = ?3 WHERE id = ?1";
const DELETE_PERSON: &str = "DELETE FROM people WHERE id = ?1";
const FACE_ASSET: &str = "SELECT asset_id FROM faces WHERE id = ?1";
/// Another face of the photo `?2` in person `?1`, and whether the user put it there.
const OTHER_IN_PHOTO: &str = "
    SELECT face_id, confirmed FROM face_people
     WHERE person_id = ?1 AND asset_id = ?2 AND face_id <> ?3";
const PLACE: &str = "
    INSERT INTO face_people (face_id, person_id, asset_id, confirmed) VALUES (?1, ?2, ?3, 1)
    ON CONFLICT (face_id) DO UPDATE SET person_id = excluded.person_id, confirmed = 1";
const UNREJECT: &str = "DELETE FROM face_rejections WHERE face_id = ?1 AND person_id = ?2";
const REJECT: &str = "
    INSERT INTO face_rejections (face_id, person_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING";
const LEAVE: &str = "DELETE FROM face_people WHERE face_id = ?1 AND person_id = ?2";

/// Why a change the user asked for to people was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeopleRefusal {
    #[error("no person {0}")]
    NoPerson(i64),
    #[error("no face {0}")]
    NoFace(i64),
    #[error("{0:?} is no person: give a person's id (see `mediadex people`) or `new`")]
    NotAPerson(String),
    #[error("a person cannot be merged into themselves")]
    SamePerson,
    /// Two faces of one photo are never one person.
    #[error(
        "person {0} and person {1} are both in photo {2}: two faces of one photo are never \
         one person (move the wrong face to someone else first)"
    )]
    SharedPhoto(i64, i64, i64),
    /// The user put another face of the same photo in that person.
    #[error(
        "face {other} of the same photo ({photo}) was put in person {person} by you: move \
         it elsewhere first"
    )]
    PhotoTaken { other: i64, photo: i64, person: i64 },
}

/// A stored vector: 128 little-endian float32.
fn vector_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn vector_of(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// How many faces person `id` has (migration 0028's count, trashed photos included);
/// `None` for no such person.
pub(super) fn face_count(db: &Db<'_>, id: i64) -> Result<Option<i64>, StoreError> {
    db.optional(PERSON_FACES, args!(id), |r| r.get(0))
}

pub(super) fn said_at(db: &Db<'_>) -> Result<i64, StoreError> {
    db.one(SAID, args!(), |r| r.get(0))
}

fn say(db: &Db<'_>) -> Result<(), StoreError> {
    db.execute(SAY, args!())?;
    Ok(())
}

/// Stores a batch's vectors and stamps each asset whose faces all have one now.
pub(super) fn store_vectors(
    db: &Db<'_>,
    version: i64,
    found: &[EmbeddedAsset],
    rollback: bool,
) -> Result<(), StoreError> {
    for asset in found {
        for (face, vector) in &asset.vectors {
            let bytes = vector.as_deref().map(vector_bytes);
            db.execute(PUT_VECTOR, args!(*face, version, bytes))?;
        }
        db.execute(STAMP, args!(asset.asset_id, version, rollback))?;
    }
    Ok(())
}

/// The faces the walk assigned at once (each joins unless something changed meanwhile).
pub(super) fn join_people(db: &Db<'_>, assigned: &[(i64, i64)]) -> Result<(), StoreError> {
    for &(face, person) in assigned {
        db.execute(JOIN, args!(face, person))?;
    }
    Ok(())
}

/// An asset's faces were detected anew under `version`: those of other versions leave their
/// people (the user's word on them goes with them: they are not what the photo shows now).
pub(super) fn forget_old_faces(db: &Db<'_>, asset_id: i64, version: i64) -> Result<(), StoreError> {
    db.execute(FORGET_OLD, args!(asset_id, version))?;
    Ok(())
}

/// Who one face of a photo is, by where the face is: `person` (placed by the user when
/// `word` is 1, by the clustering when 0), or not `person` (2).
pub(super) struct Said {
    area: [f32; 4],
    person: i64,
    word: u8,
}

/// Who `asset_id`'s faces are, read before a re-detection replaces them.
pub(super) fn word_on(db: &Db<'_>, asset_id: i64) -> Result<Vec<Said>, StoreError> {
    db.all(WORD, args!(asset_id), |r| {
        let side = |i| r.get::<f64>(i).map(|v| v as f32);
        Ok(Said {
            area: [side(0)?, side(1)?, side(2)?, side(3)?],
            person: r.get(4)?,
            word: r.get(5)?,
        })
    })
}

/// A re-detection keeps who each face is: a face found again (its new box overlaps the old
/// one by `SAME_FACE`) stays in its person, confirmed if the user put it there, and is still
/// not whom the user said it is not. Without this a detector upgrade would undo the user's
/// splits and moves, and the clustering's people would lose every face at once. A placement
/// goes to its best match only, and one person to one face of the photo.
pub(super) fn carry_word(
    db: &Db<'_>,
    asset_id: i64,
    said: &[Said],
    found: &[(i64, [f32; 4])],
) -> Result<(), StoreError> {
    let best = |s: &Said, free: &dyn Fn(i64) -> bool| {
        found
            .iter()
            .filter(|(id, _)| free(*id))
            .map(|(id, area)| (*id, overlap(s.area, *area)))
            .filter(|&(_, o)| o >= SAME_FACE)
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(id, _)| id)
    };
    let mut placed: Vec<(i64, i64)> = Vec::new();
    for s in said {
        if s.word == 2 {
            if let Some(face) = best(s, &|_| true) {
                db.execute(REJECT, args!(face, s.person))?;
            }
            continue;
        }
        let free = |id: i64| placed.iter().all(|&(f, p)| f != id && p != s.person);
        if let Some(face) = best(s, &free) {
            if s.word == 1 {
                db.execute(PLACE, args!(face, s.person, asset_id))?;
            } else {
                db.execute(JOIN, args!(face, s.person))?;
            }
            placed.push((face, s.person));
        }
    }
    Ok(())
}

fn face_vector(r: &Row<'_>) -> Result<FaceVector, StoreError> {
    let checksum = checksum_col(r, 2)?;
    let (x, y): (f64, f64) = (r.get(3)?, r.get(4)?);
    let bytes: Vec<u8> = r.get(7)?;
    Ok(FaceVector {
        id: r.get(0)?,
        asset_id: r.get(1)?,
        key: face_key(&checksum, x as f32, y as f32),
        vector: vector_of(&bytes),
    })
}

fn detected(r: &Row<'_>) -> Result<(i64, DetectedFace, bool), StoreError> {
    let text: String = r.get(6)?;
    // A row this binary did not write may hold fewer points: missing ones stay 0.
    let points: Vec<[f32; 2]> = serde_json::from_str(&text).unwrap_or_default();
    let mut landmarks = [(0.0, 0.0); 5];
    for (slot, p) in landmarks.iter_mut().zip(points) {
        *slot = (p[0], p[1]);
    }
    let side = |i| r.get::<f64>(i).map(|v| v as f32);
    let face = DetectedFace {
        x: side(1)?,
        y: side(2)?,
        w: side(3)?,
        h: side(4)?,
        score: side(5)?,
        landmarks,
    };
    Ok((r.get(0)?, face, r.get(7)?))
}

fn people_state(db: &Db<'_>) -> Result<PeopleState, StoreError> {
    let mut state = PeopleState {
        said_at: said_at(db)?,
        ..PeopleState::default()
    };
    db.each(ASSIGNED, args!(), |r| {
        let (face, person, confirmed): (i64, i64, bool) = (r.get(0)?, r.get(1)?, r.get(2)?);
        state.assigned.push((face, person));
        if confirmed {
            state.confirmed.push((face, person));
        }
        Ok(())
    })?;
    state.rejected = db.all(REJECTED, args!(), |r| Ok((r.get(0)?, r.get(1)?)))?;
    state.people = db.all(PEOPLE_IDS, args!(), |r| r.get(0))?;
    Ok(state)
}

/// A recluster's rows: the faces it looked at lose their clustering's person; each group
/// goes to its person (a new one for a new group); people left with nothing are dropped.
pub(super) fn regroup(db: &Db<'_>, r: &Regrouping, now: Millis) -> Result<Reclustered, StoreError> {
    for &face in &r.considered {
        db.execute(UNPLACE, args!(face))?;
    }
    let mut placed = 0;
    for (person, faces) in &r.known {
        for &face in faces {
            placed += db.execute(JOIN, args!(face, *person))?;
        }
    }
    for faces in &r.new {
        let person = new_person(db, now)?;
        for &face in faces {
            placed += db.execute(JOIN, args!(face, person))?;
        }
    }
    db.execute(DROP_EMPTY, args!())?;
    Ok(Reclustered::Done {
        placed,
        created: r.new.len(),
    })
}

fn new_person(db: &Db<'_>, now: Millis) -> Result<i64, StoreError> {
    db.one(NEW_PERSON, args!(now), |r| r.get(0))
}

fn person_row(r: &Row<'_>) -> Result<Person, StoreError> {
    Ok(Person {
        id: r.get(0)?,
        name: r.get(1)?,
        hidden: r.get(2)?,
        faces: r.get(3)?,
        photos: r.get(4)?,
        cover_face: r.get(5)?,
    })
}

fn exists(db: &Db<'_>, id: i64) -> Result<bool, StoreError> {
    Ok(db.optional(EXISTS, args!(id), |_| Ok(()))?.is_some())
}

/// The face's photo, or why not.
fn photo_of(db: &Db<'_>, face: i64) -> Result<Result<i64, PeopleRefusal>, StoreError> {
    Ok(db
        .optional(FACE_ASSET, args!(face), |r| r.get(0))?
        .ok_or(PeopleRefusal::NoFace(face)))
}

/// `merge`'s writes, once both people are known to exist and share no photo.
fn merge_rows(db: &Db<'_>, into: i64, from: i64, now: Millis) -> Result<(), StoreError> {
    db.execute(MERGE_FACES, args!(into, from))?;
    db.execute(MERGE_REJECTIONS, args!(into, from))?;
    db.execute(MERGE_NAME, args!(into, from, now))?;
    db.execute(DELETE_PERSON, args!(from))?;
    say(db)
}

/// `move_face`'s writes: the face into `person` (a new one for `None`), confirmed. Another
/// face of its photo that the clustering put there waits instead; one the user put there
/// refuses the move.
fn place(
    db: &Db<'_>,
    face: i64,
    person: Option<i64>,
    now: Millis,
) -> Result<Result<i64, PeopleRefusal>, StoreError> {
    let photo = match photo_of(db, face)? {
        Ok(photo) => photo,
        Err(no) => return Ok(Err(no)),
    };
    let person = match person {
        Some(p) if !exists(db, p)? => return Ok(Err(PeopleRefusal::NoPerson(p))),
        Some(p) => p,
        None => new_person(db, now)?,
    };
    let others: Vec<(i64, bool)> = db.all(OTHER_IN_PHOTO, args!(person, photo, face), |r| {
        Ok((r.get(0)?, r.get(1)?))
    })?;
    if let Some(&(other, _)) = others.iter().find(|(_, confirmed)| *confirmed) {
        return Ok(Err(PeopleRefusal::PhotoTaken {
            other,
            photo,
            person,
        }));
    }
    for (other, _) in others {
        db.execute(UNPLACE, args!(other))?;
    }
    db.execute(PLACE, args!(face, person, photo))?;
    db.execute(UNREJECT, args!(face, person))?;
    db.execute(DROP_EMPTY, args!())?;
    say(db)?;
    Ok(Ok(person))
}

/// `reject_face`'s writes: the face leaves `person` and no recluster puts it back.
fn reject(db: &Db<'_>, face: i64, person: i64) -> Result<Result<(), PeopleRefusal>, StoreError> {
    if let Err(no) = photo_of(db, face)? {
        return Ok(Err(no));
    }
    if !exists(db, person)? {
        return Ok(Err(PeopleRefusal::NoPerson(person)));
    }
    db.execute(REJECT, args!(face, person))?;
    db.execute(LEAVE, args!(face, person))?;
    db.execute(DROP_EMPTY, args!())?;
    say(db)?;
    Ok(Ok(()))
}

/// `merge_people`'s checks and writes.
fn merge(
    db: &Db<'_>,
    into: i64,
    from: i64,
    now: Millis,
) -> Result<Result<(), PeopleRefusal>, StoreError> {
    if into == from {
        return Ok(Err(PeopleRefusal::SamePerson));
    }
    for id in [into, from] {
        if !exists(db, id)? {
            return Ok(Err(PeopleRefusal::NoPerson(id)));
        }
    }
    let shared: Option<i64> = db.optional(SHARED_PHOTO, args!(into, from), |r| r.get(0))?;
    if let Some(photo) = shared {
        return Ok(Err(PeopleRefusal::SharedPhoto(into, from, photo)));
    }
    merge_rows(db, into, from, now)?;
    Ok(Ok(()))
}

/// The faces of an asset's current detection, each with whether it has a vector of
/// `version`; `None` while the asset has no detection.
fn faces_to_embed(
    db: &Db<'_>,
    asset_id: i64,
    version: i64,
) -> Result<Option<FacesToEmbed>, StoreError> {
    let scheme: Option<Option<i64>> = db.optional(FACES_SCHEME, args!(asset_id), |r| r.get(0))?;
    let Some(faces_scheme) = scheme.flatten() else {
        return Ok(None);
    };
    let faces = db.all(TO_EMBED, args!(asset_id, faces_scheme, version), detected)?;
    Ok(Some(FacesToEmbed {
        faces_scheme,
        faces,
    }))
}

fn face_vectors(db: &Db<'_>, version: i64) -> Result<Vec<FaceVector>, StoreError> {
    db.all(VECTORS, args!(version), face_vector)
}

/// The people (`hidden` ones too when asked), or the one person `id` names.
fn list(db: &Db<'_>, hidden: bool, id: Option<i64>) -> Result<Vec<Person>, StoreError> {
    db.all(db.pick(&LIST), args!(hidden, id), person_row)
}

fn photos_of(db: &Db<'_>, person: i64, after: i64, limit: i64) -> Result<Vec<i64>, StoreError> {
    db.all(PHOTOS_OF, args!(person, after, limit), |r| r.get(0))
}

fn faces_of_person(db: &Db<'_>, person: i64) -> Result<Vec<(i64, i64)>, StoreError> {
    db.all(FACES_OF, args!(person), |r| Ok((r.get(0)?, r.get(1)?)))
}

fn photo_people(db: &Db<'_>, asset_id: i64) -> Result<Vec<PhotoFace>, StoreError> {
    db.all(IN_PHOTO, args!(asset_id), |r| {
        let side = |i| r.get::<f64>(i).map(|v| v as f32);
        Ok(PhotoFace {
            face_id: r.get(0)?,
            person_id: r.get(1)?,
            name: r.get(2)?,
            confirmed: r.get(3)?,
            x: side(4)?,
            y: side(5)?,
            w: side(6)?,
            h: side(7)?,
        })
    })
}

/// Names (or, with `None`, unnames) person `id`; `hidden` the same. False: no such person.
fn rename(db: &Db<'_>, id: i64, name: Option<&str>, now: Millis) -> Result<bool, StoreError> {
    let n = db.execute(RENAME, args!(id, name, now))?;
    say(db)?;
    Ok(n == 1)
}

fn hide(db: &Db<'_>, id: i64, hidden: bool, now: Millis) -> Result<bool, StoreError> {
    let n = db.execute(HIDE, args!(id, hidden, now))?;
    say(db)?;
    Ok(n == 1)
}

impl Store {
    /// The faces of an asset's current detection for the embedding walk, each with whether
    /// it has a vector of `version` already; `None` while the asset has no detection.
    pub fn faces_to_embed(
        &self,
        asset_id: i64,
        version: i64,
    ) -> Result<Option<FacesToEmbed>, StoreError> {
        self.read(|db| faces_to_embed(db, asset_id, version))
    }

    /// Every face of a live picture's current detection with a vector of `version`.
    pub fn face_vectors(&self, version: i64) -> Result<Vec<FaceVector>, StoreError> {
        self.read(|db| face_vectors(db, version))
    }

    /// Who each face is, what the user said, and the count of the user's changes, read
    /// together.
    pub fn people_state(&self) -> Result<PeopleState, StoreError> {
        self.read(people_state)
    }

    /// The people, named first (by name), then by id; hidden ones only with `hidden`.
    pub fn people(&self, hidden: bool) -> Result<Vec<Person>, StoreError> {
        self.read(|db| list(db, hidden, None))
    }

    /// One person (hidden or not).
    pub fn person(&self, id: i64) -> Result<Option<Person>, StoreError> {
        self.read(|db| Ok(list(db, true, Some(id))?.into_iter().next()))
    }

    /// Up to `limit` live photos of a person after asset `after`, by id.
    pub fn photos_of(&self, person: i64, after: i64, limit: i64) -> Result<Vec<i64>, StoreError> {
        self.read(|db| photos_of(db, person, after, limit))
    }

    /// A person's faces in live photos: (photo, face), by photo.
    pub fn faces_of_person(&self, person: i64) -> Result<Vec<(i64, i64)>, StoreError> {
        self.read(|db| faces_of_person(db, person))
    }

    /// The faces of a photo's current detection, each with who it is.
    pub fn photo_people(&self, asset_id: i64) -> Result<Vec<PhotoFace>, StoreError> {
        self.read(|db| photo_people(db, asset_id))
    }

    /// The plans SQLite picks for "all photos of X" and "who is in this photo" (SQLite's
    /// `EXPLAIN QUERY PLAN`: on PostgreSQL this is an error).
    pub fn people_plans(&self) -> Result<Vec<Vec<String>>, StoreError> {
        self.read(|db| {
            let conn = db.lite()?;
            [PHOTOS_OF, IN_PHOTO, LIST.sqlite]
                .iter()
                .map(|sql| super::plan(conn, sql))
                .collect()
        })
    }

    /// Names (or, with `None`, unnames) a person. False: no such person.
    pub fn name_person(&self, id: i64, name: Option<String>) -> Result<bool, StoreError> {
        self.write(move |db, now| rename(db, id, name.as_deref(), now))
    }

    /// Hides (or shows again) a person. False: no such person.
    pub fn hide_person(&self, id: i64, hidden: bool) -> Result<bool, StoreError> {
        self.write(move |db, now| hide(db, id, hidden, now))
    }

    /// Merges person `from` into `into`: each face of either is put in `into` by the user's
    /// word (a recluster keeps it), `into` keeps its name or takes `from`'s, `from` is gone.
    pub fn merge_people(
        &self,
        into: i64,
        from: i64,
    ) -> Result<Result<(), PeopleRefusal>, StoreError> {
        self.write(move |db, now| merge(db, into, from, now))
    }

    /// Puts a face in a person by the user's word (`None`: a new person, a split); answers
    /// the person.
    pub fn move_face(
        &self,
        face: i64,
        person: Option<i64>,
    ) -> Result<Result<i64, PeopleRefusal>, StoreError> {
        self.write(move |db, now| place(db, face, person, now))
    }

    /// The user says `face` is not `person`: it leaves them and no recluster puts it back.
    pub fn reject_face(
        &self,
        face: i64,
        person: i64,
    ) -> Result<Result<(), PeopleRefusal>, StoreError> {
        self.write(move |db, _| reject(db, face, person))
    }
}

/// The "recluster all" job row: one live at a time.
pub fn recluster_job() -> NewJob {
    NewJob::new(RECLUSTER_JOB_KIND, "{}").unique(RECLUSTER_JOB_KIND)
}

#[cfg(test)]
mod checks;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vector_reads_back_as_written_and_the_key_follows_the_content_only() {
        let v: Vec<f32> = (0..128).map(|i| i as f32 / 7.0 - 3.0).collect();
        assert_eq!(vector_of(&vector_bytes(&v)), v);
        let a = face_key(&[1; 32], 10.0, 20.0);
        assert_eq!(a, face_key(&[1; 32], 10.0, 20.0));
        assert_ne!(a, face_key(&[2; 32], 10.0, 20.0));
        assert_ne!(a, face_key(&[1; 32], 10.0, 21.0));
    }
}
