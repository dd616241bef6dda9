//! People: a person as the list and their page give them, and a face of a photo with who it
//! is (docs/json.md, "A person" and "A face's person").

use serde::Serialize;

/// A person: their id (stable across reclusters), name (`null` until the user names them),
/// whether the user hid them, their faces and the live photos those are in, and a face to
/// show for them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Person {
    pub id: i64,
    pub name: Option<String>,
    pub hidden: bool,
    pub faces: i64,
    pub photos: i64,
    pub cover_face: Option<i64>,
}

impl Person {
    pub fn new(p: &crate::model::Person) -> Person {
        Person {
            id: p.id,
            name: p.name.clone(),
            hidden: p.hidden,
            faces: p.faces,
            photos: p.photos,
            cover_face: p.cover_face,
        }
    }
}

/// A face of a photo (its box in stored pixels) and who it is: `person` `null` while it
/// waits; `confirmed` when the user put it there.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FacePerson {
    pub face_id: i64,
    pub person: Option<i64>,
    pub name: Option<String>,
    pub confirmed: bool,
    pub x: f32,
    pub y: f32,
    pub w: f32,
    pub h: f32,
}

impl FacePerson {
    pub fn new(f: &crate::model::PhotoFace) -> FacePerson {
        FacePerson {
            face_id: f.face_id,
            person: f.person_id,
            name: f.name.clone(),
            confirmed: f.confirmed,
            x: f.x,
            y: f.y,
            w: f.w,
            h: f.h,
        }
    }
}
