//! People on request (issue 28 item 5): the list, one person with their photos, who is in a
//! photo, and the user's word: name, hide, merge two people, move a face to a person or to a
//! new one (a split), say a face is not someone; and the "recluster all" job. Each change of
//! the user's is one store write that a later recluster keeps (`store::people`).

use super::error::Thing;
use super::{Error, Services};
use crate::model::{Person, PhotoFace};

/// The people, named first; the hidden ones too with `hidden`.
pub fn list(s: &Services, hidden: bool) -> Result<Vec<Person>, Error> {
    Ok(s.store.people(hidden)?)
}

/// One person, or `NotFound`.
pub fn person(s: &Services, id: i64) -> Result<Person, Error> {
    s.store
        .person(id)?
        .ok_or(Error::People(crate::store::PeopleRefusal::NoPerson(id)))
}

/// A person's live photos after asset `after`, by id (at most `limit`).
pub fn photos(s: &Services, id: i64, after: i64, limit: i64) -> Result<Vec<i64>, Error> {
    person(s, id)?;
    Ok(s.store.photos_of(id, after, limit)?)
}

/// A person's faces in their live photos: (photo, face), by photo.
pub fn faces(s: &Services, id: i64) -> Result<Vec<(i64, i64)>, Error> {
    person(s, id)?;
    Ok(s.store.faces_of_person(id)?)
}

/// Who is in a photo: each face of its current detection with its person.
pub fn in_photo(s: &Services, asset: i64) -> Result<Vec<PhotoFace>, Error> {
    s.store
        .asset(asset)?
        .ok_or(Error::NotFound(Thing::Asset, asset))?;
    Ok(s.store.photo_people(asset)?)
}

/// Names a person (an empty name unnames them); answers the person.
pub fn name(s: &Services, id: i64, name: &str) -> Result<Person, Error> {
    let name = name.trim();
    let name = (!name.is_empty()).then(|| name.to_string());
    if !s.store.name_person(id, name)? {
        return Err(crate::store::PeopleRefusal::NoPerson(id).into());
    }
    person(s, id)
}

/// Hides a person from the list (or, with `hidden` false, shows them again).
pub fn hide(s: &Services, id: i64, hidden: bool) -> Result<Person, Error> {
    if !s.store.hide_person(id, hidden)? {
        return Err(crate::store::PeopleRefusal::NoPerson(id).into());
    }
    person(s, id)
}

/// Merges `from` into `into`; answers `into`.
pub fn merge(s: &Services, into: i64, from: i64) -> Result<Person, Error> {
    s.store.merge_people(into, from)??;
    person(s, into)
}

/// Puts a face in a person (`None`: a new person); answers that person.
pub fn move_face(s: &Services, face: i64, to: Option<i64>) -> Result<Person, Error> {
    let id = s.store.move_face(face, to)??;
    person(s, id)
}

/// The user says a face is not a person.
pub fn reject(s: &Services, face: i64, person: i64) -> Result<(), Error> {
    Ok(s.store.reject_face(face, person)??)
}

/// Queues the "recluster all" job (the live one when one waits, made due now: a walk's end
/// puts its recluster off); answers whether a new one was queued.
pub fn recluster(s: &Services) -> Result<bool, Error> {
    let enqueued = s.store.enqueue_now(crate::store::recluster_job())?;
    (s.wake)();
    Ok(enqueued.created)
}
