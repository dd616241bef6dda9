//! The people family's statements on both engines (issue 30): each check runs on a fresh
//! schema (SQLite as `Store::open` makes it, PostgreSQL's baseline), inserts the rows it
//! needs and asserts what the family's functions answer and write.
//! Must not import: http, scan, walks, queue, ops

use super::*;
use crate::store::db::tests::on_both_schemas;

const NOW: Millis = 5;

fn asset(db: &Db<'_>, n: u8, faces_scheme: Option<i64>) -> Result<i64, StoreError> {
    let sql = "INSERT INTO assets (checksum, size, created_at, faces_scheme)
               VALUES (?1, 1, 0, ?2) RETURNING id";
    db.one(sql, args!([n; 32], faces_scheme), |r| r.get(0))
}

/// A 10x10 face at (`x`, 20) of `asset`'s detection `version`, with two landmarks.
fn face(db: &Db<'_>, asset: i64, version: i64, x: f64) -> Result<i64, StoreError> {
    let sql = "INSERT INTO faces (asset_id, detector_version, x, y, w, h, score, landmarks)
               VALUES (?1, ?2, ?3, 20.0, 10.0, 10.0, 0.5, '[[1,2],[3,4]]') RETURNING id";
    db.one(sql, args!(asset, version, x), |r| r.get(0))
}

fn trash(db: &Db<'_>, asset: i64) -> Result<(), StoreError> {
    let sql = "UPDATE assets SET trashed_at = 9, trash_reason = 'user' WHERE id = ?1";
    db.execute(sql, args!(asset))?;
    Ok(())
}

fn embed_scheme(db: &Db<'_>, asset: i64) -> Result<Option<i64>, StoreError> {
    db.one(
        "SELECT embed_scheme FROM assets WHERE id = ?1",
        args!(asset),
        |r| r.get(0),
    )
}

/// Who each face is: (face, person, confirmed), by face.
fn placements(db: &Db<'_>) -> Result<Vec<(i64, i64, bool)>, StoreError> {
    let sql = "SELECT face_id, person_id, confirmed FROM face_people ORDER BY face_id";
    db.all(sql, args!(), |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
}

fn vector(seed: f32) -> Vec<f32> {
    (0..128).map(|i| i as f32 / 64.0 - seed).collect()
}

fn embedded(asset_id: i64, vectors: Vec<(i64, Option<Vec<f32>>)>) -> EmbeddedAsset {
    EmbeddedAsset { asset_id, vectors }
}

fn vectors_are_stored_and_the_asset_stamped_once_every_face_has_one(
    db: &Db<'_>,
) -> Result<(), StoreError> {
    let a = asset(db, 1, Some(1))?;
    let (f1, f2) = (face(db, a, 1, 10.0)?, face(db, a, 1, 50.0)?);
    face(db, a, 0, 10.0)?; // an older detection's face: no vector is asked of it
    assert_eq!(faces_to_embed(db, asset(db, 2, None)?, 7)?, None);
    let to_embed = faces_to_embed(db, a, 7)?.expect("a detection");
    assert_eq!(to_embed.faces_scheme, 1);
    let ids: Vec<(i64, bool)> = to_embed.faces.iter().map(|f| (f.0, f.2)).collect();
    assert_eq!(ids, [(f1, false), (f2, false)]);
    let first = to_embed.faces[0].1;
    assert_eq!(
        (first.x, first.y, first.w, first.score),
        (10.0, 20.0, 10.0, 0.5)
    );
    assert_eq!(first.landmarks[..3], [(1.0, 2.0), (3.0, 4.0), (0.0, 0.0)]);

    // One face of two, and a face deleted meanwhile: no stamp, and no error.
    store_vectors(
        db,
        7,
        &[embedded(
            a,
            vec![(f1, Some(vector(1.0))), (9_999, Some(vector(2.0)))],
        )],
        false,
    )?;
    assert_eq!(embed_scheme(db, a)?, None);
    store_vectors(db, 7, &[embedded(a, vec![(f2, Some(vector(3.0)))])], false)?;
    assert_eq!(embed_scheme(db, a)?, Some(7));
    let done: Vec<bool> = faces_to_embed(db, a, 7)?
        .expect("a detection")
        .faces
        .iter()
        .map(|f| f.2)
        .collect();
    assert_eq!(done, [true, true]);
    let read = face_vectors(db, 7)?;
    assert_eq!(read.len(), 2);
    assert_eq!((read[0].id, read[0].asset_id), (f1, a));
    assert_eq!(read[0].key, face_key(&[1; 32], 10.0, 20.0));
    assert_eq!(read[0].vector, vector(1.0));
    trash(db, a)?;
    assert!(face_vectors(db, 7)?.is_empty());
    Ok(())
}

fn a_chipless_face_counts_for_the_stamp_and_an_older_embedder_keeps_a_newer_one(
    db: &Db<'_>,
) -> Result<(), StoreError> {
    let a = asset(db, 1, Some(1))?;
    let (f1, f2) = (face(db, a, 1, 10.0)?, face(db, a, 1, 50.0)?);
    // A face with no chip is stored (NULL) and counts for the stamp, but is no vector.
    store_vectors(
        db,
        8,
        &[embedded(a, vec![(f1, Some(vector(4.0))), (f2, None)])],
        false,
    )?;
    assert_eq!(embed_scheme(db, a)?, Some(8));
    let ids: Vec<i64> = face_vectors(db, 8)?.iter().map(|v| v.id).collect();
    assert_eq!(ids, [f1]);
    // An older embedder keeps a newer stamp, unless it is a rollback.
    let older = embedded(a, vec![(f1, Some(vector(5.0))), (f2, Some(vector(6.0)))]);
    store_vectors(db, 5, std::slice::from_ref(&older), false)?;
    assert_eq!(embed_scheme(db, a)?, Some(8));
    store_vectors(db, 5, &[older], true)?;
    assert_eq!(embed_scheme(db, a)?, Some(5));
    Ok(())
}

fn a_face_joins_once_and_never_beside_another_face_of_its_photo(
    db: &Db<'_>,
) -> Result<(), StoreError> {
    let (a, b) = (asset(db, 1, Some(1))?, asset(db, 2, Some(1))?);
    let (f1, f2, g1) = (
        face(db, a, 1, 10.0)?,
        face(db, a, 1, 50.0)?,
        face(db, b, 1, 10.0)?,
    );
    let (p, q) = (new_person(db, NOW)?, new_person(db, NOW)?);
    join_people(db, &[(f1, p), (f2, p), (g1, p), (f1, q), (f2, 9_999)])?;
    assert_eq!(placements(db)?, [(f1, p, false), (g1, p, false)]);
    let state = people_state(db)?;
    assert_eq!(state.assigned, [(f1, p), (g1, p)]);
    assert!(state.confirmed.is_empty() && state.rejected.is_empty());
    assert_eq!((state.people, state.said_at), (vec![p, q], 0));
    assert_eq!(face_count(db, p)?, Some(2));
    assert_eq!(face_count(db, q)?, Some(0));
    assert_eq!(face_count(db, 9_999)?, None);
    Ok(())
}

fn a_redetection_carries_the_users_word_to_the_faces_found_again(
    db: &Db<'_>,
) -> Result<(), StoreError> {
    let a = asset(db, 1, Some(1))?;
    let (f1, f2, f3) = (
        face(db, a, 1, 10.0)?,
        face(db, a, 1, 50.0)?,
        face(db, a, 1, 90.0)?,
    );
    let (p, q, r) = (
        new_person(db, NOW)?,
        new_person(db, NOW)?,
        new_person(db, NOW)?,
    );
    // Named, so that no change of the user's drops it while it has no face.
    assert!(rename(db, r, Some("R"), NOW)?);
    join_people(db, &[(f2, q)])?;
    assert_eq!(place(db, f1, Some(p), NOW)?, Ok(p));
    assert_eq!(reject(db, f3, r)?, Ok(()));
    let said = word_on(db, a)?;
    let words: Vec<(i64, u8)> = said.iter().map(|s| (s.person, s.word)).collect();
    // The user's word first: it takes its face before the clustering's.
    assert_eq!(words, [(r, 2), (p, 1), (q, 0)]);
    assert_eq!(said[1].area, [10.0, 20.0, 10.0, 10.0]);

    db.execute("UPDATE assets SET faces_scheme = 2 WHERE id = ?1", args!(a))?;
    let found: Vec<i64> = [11.0, 51.0, 91.0, 300.0]
        .iter()
        .map(|&x| face(db, a, 2, x))
        .collect::<Result<_, _>>()?;
    forget_old_faces(db, a, 2)?;
    assert!(
        placements(db)?.is_empty(),
        "the old faces left their people"
    );
    let boxes: Vec<(i64, [f32; 4])> = found
        .iter()
        .zip([11.0, 51.0, 91.0, 300.0])
        .map(|(&id, x)| (id, [x, 20.0, 10.0, 10.0]))
        .collect();
    carry_word(db, a, &said, &boxes)?;
    assert_eq!(placements(db)?, [(found[0], p, true), (found[1], q, false)]);
    assert!(people_state(db)?.rejected.contains(&(found[2], r)));
    Ok(())
}

fn a_recluster_regroups_the_faces_it_considered_and_drops_emptied_people(
    db: &Db<'_>,
) -> Result<(), StoreError> {
    let ids: Vec<i64> = (1..=4)
        .map(|n| asset(db, n, Some(1)))
        .collect::<Result<_, _>>()?;
    let faces: Vec<i64> = ids
        .iter()
        .map(|&a| face(db, a, 1, 10.0))
        .collect::<Result<_, _>>()?;
    let (p, emptied, named) = (
        new_person(db, NOW)?,
        new_person(db, NOW)?,
        new_person(db, NOW)?,
    );
    assert!(rename(db, named, Some("Named"), NOW)?);
    join_people(db, &[(faces[0], emptied)])?;
    assert_eq!(place(db, faces[3], Some(p), NOW)?, Ok(p));
    let said = said_at(db)?;
    let r = Regrouping {
        known: vec![(p, vec![faces[1]])],
        new: vec![vec![faces[0], faces[2]]],
        // The user's face is considered too: a recluster never moves it.
        considered: faces.clone(),
        said_at: said,
    };
    let done = regroup(db, &r, NOW)?;
    assert_eq!(
        done,
        Reclustered::Done {
            placed: 3,
            created: 1
        }
    );
    let state = people_state(db)?;
    let fresh = *state.people.last().expect("the new group's person");
    assert_eq!(
        state.people,
        [p, named, fresh],
        "the empty unnamed person is dropped"
    );
    assert!(fresh > named && !state.people.contains(&emptied));
    let want = [
        (faces[0], fresh, false),
        (faces[1], p, false),
        (faces[2], fresh, false),
        (faces[3], p, true),
    ];
    assert_eq!(placements(db)?, want);
    assert_eq!(said_at(db)?, said, "a recluster is not the user's word");
    Ok(())
}

/// Four photos, one face each (the third photo trashed) and a stranger beside the first
/// face: Zoë has the first three, the first by the user's word; `q` the fourth; Ann, hidden,
/// none.
struct Scene {
    ids: Vec<i64>,
    faces: Vec<i64>,
    stranger: i64,
    p: i64,
    q: i64,
    h: i64,
}

fn scene(db: &Db<'_>) -> Result<Scene, StoreError> {
    let ids: Vec<i64> = (1..=4)
        .map(|n| asset(db, n, Some(1)))
        .collect::<Result<_, _>>()?;
    let faces: Vec<i64> = ids
        .iter()
        .map(|&a| face(db, a, 1, 10.0))
        .collect::<Result<_, _>>()?;
    let stranger = face(db, ids[0], 1, 50.0)?;
    face(db, ids[0], 0, 10.0)?; // an older detection: not in the photo any more
    let (p, q, h) = (
        new_person(db, NOW)?,
        new_person(db, NOW)?,
        new_person(db, NOW)?,
    );
    assert!(rename(db, p, Some("Zoë"), NOW)? && rename(db, h, Some("Ann"), NOW)?);
    assert!(hide(db, h, true, NOW)?);
    join_people(db, &[(faces[1], p), (faces[2], p), (faces[3], q)])?;
    assert_eq!(place(db, faces[0], Some(p), NOW)?, Ok(p));
    trash(db, ids[2])?;
    Ok(Scene {
        ids,
        faces,
        stranger,
        p,
        q,
        h,
    })
}

fn the_list_names_first_counts_live_photos_and_shows_the_users_cover(
    db: &Db<'_>,
) -> Result<(), StoreError> {
    let Scene { faces, p, q, h, .. } = scene(db)?;
    let shown = list(db, false, None)?;
    let names: Vec<(i64, Option<&str>)> = shown.iter().map(|x| (x.id, x.name.as_deref())).collect();
    assert_eq!(names, [(p, Some("Zoë")), (q, None)]);
    let zoe = &shown[0];
    assert_eq!((zoe.faces, zoe.photos, zoe.hidden), (2, 2, false));
    assert_eq!(
        zoe.cover_face,
        Some(faces[0]),
        "the user's face is the cover"
    );
    assert_eq!(shown[1].cover_face, Some(faces[3]));
    let every: Vec<i64> = list(db, true, None)?.iter().map(|x| x.id).collect();
    assert_eq!(every, [h, p, q], "named first, by name");
    let one = list(db, true, Some(h))?;
    assert_eq!(
        (one.len(), one[0].hidden, one[0].faces, one[0].cover_face),
        (1, true, 0, None)
    );
    assert!(list(db, true, Some(9_999))?.is_empty());
    Ok(())
}

fn a_persons_photos_and_a_photos_people_leave_trashed_and_older_faces_out(
    db: &Db<'_>,
) -> Result<(), StoreError> {
    let Scene {
        ids,
        faces,
        stranger,
        p,
        ..
    } = scene(db)?;
    assert_eq!(photos_of(db, p, 0, 10)?, [ids[0], ids[1]]);
    assert_eq!(photos_of(db, p, ids[0], 10)?, [ids[1]]);
    assert_eq!(photos_of(db, p, 0, 1)?, [ids[0]]);
    assert_eq!(
        faces_of_person(db, p)?,
        [(ids[0], faces[0]), (ids[1], faces[1])]
    );
    let in_photo = photo_people(db, ids[0])?;
    let who: Vec<(i64, Option<i64>, Option<&str>, bool)> = in_photo
        .iter()
        .map(|f| (f.face_id, f.person_id, f.name.as_deref(), f.confirmed))
        .collect();
    assert_eq!(
        who,
        [
            (faces[0], Some(p), Some("Zoë"), true),
            (stranger, None, None, false)
        ]
    );
    assert_eq!(
        [in_photo[0].x, in_photo[0].y, in_photo[0].w, in_photo[0].h],
        [10.0, 20.0, 10.0, 10.0]
    );
    Ok(())
}

fn naming_and_hiding_say_whether_the_person_exists_and_count_as_the_users_word(
    db: &Db<'_>,
) -> Result<(), StoreError> {
    let p = new_person(db, NOW)?;
    assert!(rename(db, p, Some("Ann"), 6)?);
    assert!(!rename(db, 9_999, Some("Bob"), 6)?);
    assert!(hide(db, p, true, 7)?);
    assert!(!hide(db, 9_999, true, 7)?);
    assert_eq!(said_at(db)?, 4);
    let sql = "SELECT name, hidden, updated_at FROM people WHERE id = ?1";
    let row: (String, bool, i64) =
        db.one(sql, args!(p), |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    assert_eq!(row, ("Ann".to_string(), true, 7));
    assert!(rename(db, p, None, 8)? && hide(db, p, false, 8)?);
    let person = list(db, false, Some(p))?;
    assert_eq!((person[0].name.as_deref(), person[0].hidden), (None, false));
    Ok(())
}

fn a_merge_refuses_what_cannot_be_one_person_and_moves_the_rest(
    db: &Db<'_>,
) -> Result<(), StoreError> {
    let (a, b, c) = (
        asset(db, 1, Some(1))?,
        asset(db, 2, Some(1))?,
        asset(db, 3, Some(1))?,
    );
    let (fa, fb, fc, fc2) = (
        face(db, a, 1, 10.0)?,
        face(db, b, 1, 10.0)?,
        face(db, c, 1, 10.0)?,
        face(db, c, 1, 50.0)?,
    );
    let (p, q, s) = (
        new_person(db, NOW)?,
        new_person(db, NOW)?,
        new_person(db, NOW)?,
    );
    assert!(rename(db, q, Some("Q"), NOW)?);
    join_people(db, &[(fa, p), (fb, q), (fc, s), (fc2, p)])?;
    assert_eq!(reject(db, fc, q)?, Ok(()));
    assert_eq!(merge(db, p, p, NOW)?, Err(PeopleRefusal::SamePerson));
    assert_eq!(
        merge(db, p, 9_999, NOW)?,
        Err(PeopleRefusal::NoPerson(9_999))
    );
    assert_eq!(
        merge(db, s, p, NOW)?,
        Err(PeopleRefusal::SharedPhoto(s, p, c))
    );
    let said = said_at(db)?;
    assert_eq!(merge(db, p, q, 8)?, Ok(()));
    assert_eq!(said_at(db)?, said + 1);
    assert_eq!(
        placements(db)?,
        [(fa, p, true), (fb, p, true), (fc, s, false), (fc2, p, true)]
    );
    assert!(
        people_state(db)?.rejected.contains(&(fc, p)),
        "q's rejections are p's"
    );
    assert_eq!(list(db, true, Some(p))?[0].name.as_deref(), Some("Q"));
    assert!(list(db, true, Some(q))?.is_empty());
    assert_eq!(face_count(db, p)?, Some(3));
    Ok(())
}

fn a_move_waits_the_clustering_out_but_not_the_user(db: &Db<'_>) -> Result<(), StoreError> {
    let a = asset(db, 1, Some(1))?;
    let (f1, f2, f3) = (
        face(db, a, 1, 10.0)?,
        face(db, a, 1, 50.0)?,
        face(db, a, 1, 90.0)?,
    );
    let p = new_person(db, NOW)?;
    assert_eq!(
        place(db, 9_999, Some(p), NOW)?,
        Err(PeopleRefusal::NoFace(9_999))
    );
    assert_eq!(
        place(db, f1, Some(9_999), NOW)?,
        Err(PeopleRefusal::NoPerson(9_999))
    );
    join_people(db, &[(f1, p)])?;
    assert_eq!(reject(db, f2, p)?, Ok(()));
    // The clustering's face of the photo leaves; the user's word on f2 is replaced.
    assert_eq!(place(db, f2, Some(p), NOW)?, Ok(p));
    assert_eq!(placements(db)?, [(f2, p, true)]);
    assert!(people_state(db)?.rejected.is_empty());
    let taken = PeopleRefusal::PhotoTaken {
        other: f2,
        photo: a,
        person: p,
    };
    assert_eq!(place(db, f3, Some(p), NOW)?, Err(taken));
    // A split: a new person, and the person left empty by it (no name) is dropped.
    let fresh = place(db, f2, None, NOW)?.expect("a new person");
    assert!(fresh > p);
    assert_eq!(placements(db)?, [(f2, fresh, true)]);
    assert_eq!(people_state(db)?.people, [fresh]);
    Ok(())
}

fn a_rejection_takes_the_face_out_and_keeps_it_out(db: &Db<'_>) -> Result<(), StoreError> {
    let (a, b) = (asset(db, 1, Some(1))?, asset(db, 2, Some(1))?);
    let (f1, f2, g1) = (
        face(db, a, 1, 10.0)?,
        face(db, a, 1, 50.0)?,
        face(db, b, 1, 10.0)?,
    );
    let (p, q) = (new_person(db, NOW)?, new_person(db, NOW)?);
    join_people(db, &[(f1, p), (f2, q), (g1, p)])?;
    assert_eq!(reject(db, 9_999, p)?, Err(PeopleRefusal::NoFace(9_999)));
    assert_eq!(reject(db, f1, 9_999)?, Err(PeopleRefusal::NoPerson(9_999)));
    assert_eq!(said_at(db)?, 0, "a refusal writes nothing");
    assert_eq!(reject(db, f1, p)?, Ok(()));
    assert_eq!(reject(db, f1, p)?, Ok(()), "saying it twice is no error");
    assert_eq!(placements(db)?, [(f2, q, false), (g1, p, false)]);
    assert_eq!(people_state(db)?.rejected, [(f1, p)]);
    assert_eq!(reject(db, g1, p)?, Ok(()));
    let state = people_state(db)?;
    assert_eq!(state.people, [q], "p, unnamed and empty, is gone");
    assert_eq!(state.rejected, [], "and the user's word on it with it");
    assert_eq!(state.said_at, 3);
    Ok(())
}

on_both_schemas!(
    vectors_are_stored_and_the_asset_stamped_once_every_face_has_one,
    a_chipless_face_counts_for_the_stamp_and_an_older_embedder_keeps_a_newer_one,
    a_face_joins_once_and_never_beside_another_face_of_its_photo,
    a_redetection_carries_the_users_word_to_the_faces_found_again,
    a_recluster_regroups_the_faces_it_considered_and_drops_emptied_people,
    the_list_names_first_counts_live_photos_and_shows_the_users_cover,
    a_persons_photos_and_a_photos_people_leave_trashed_and_older_faces_out,
    naming_and_hiding_say_whether_the_person_exists_and_count_as_the_users_word,
    a_merge_refuses_what_cannot_be_one_person_and_moves_the_rest,
    a_move_waits_the_clustering_out_but_not_the_user,
    a_rejection_takes_the_face_out_and_keeps_it_out,
);
