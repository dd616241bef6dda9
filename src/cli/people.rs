//! Rendering of people (`mediadex people ...`), for people and as JSON (the wire contract's
//! `Person`, documented in docs/json.md). Owns only the tables; pure.

use super::render::{table, to_json};
use mediadex::model::{Person, PhotoFace};
use mediadex::wire;

pub fn list(people: &[Person], json: bool) -> serde_json::Result<String> {
    if json {
        return to_json(&people.iter().map(wire::Person::new).collect::<Vec<_>>());
    }
    if people.is_empty() {
        return Ok(
            "no people yet (faces become people once three or more of one person are found; \
             `mediadex people recluster` groups them again)\n"
                .into(),
        );
    }
    let rows = people
        .iter()
        .map(|p| {
            vec![
                p.id.to_string(),
                p.name.clone().unwrap_or_else(|| "(unnamed)".into()),
                p.faces.to_string(),
                p.photos.to_string(),
                if p.hidden { "hidden" } else { "" }.to_string(),
            ]
        })
        .collect();
    Ok(table(&["ID", "NAME", "FACES", "PHOTOS", ""], rows))
}

/// One person, after a change.
pub fn one(p: &Person, json: bool) -> serde_json::Result<String> {
    if json {
        return to_json(&wire::Person::new(p));
    }
    let name = p.name.as_deref().unwrap_or("(unnamed)");
    let hidden = if p.hidden { ", hidden" } else { "" };
    Ok(format!(
        "person {} {name}: {} faces in {} photos{hidden}\n",
        p.id, p.faces, p.photos
    ))
}

/// One person with their faces, by photo.
pub fn show(p: &Person, faces: &[(i64, i64)], json: bool) -> serde_json::Result<String> {
    if json {
        #[derive(serde::Serialize)]
        struct InPhoto {
            asset_id: i64,
            face_id: i64,
        }
        #[derive(serde::Serialize)]
        struct Out {
            #[serde(flatten)]
            person: wire::Person,
            in_photos: Vec<InPhoto>,
        }
        return to_json(&Out {
            person: wire::Person::new(p),
            in_photos: (faces.iter())
                .map(|&(asset_id, face_id)| InPhoto { asset_id, face_id })
                .collect(),
        });
    }
    let rows = (faces.iter())
        .map(|(photo, face)| vec![photo.to_string(), face.to_string()])
        .collect();
    Ok(format!(
        "{}{}",
        one(p, false)?,
        table(&["PHOTO", "FACE"], rows)
    ))
}

/// The faces of one photo and who each is.
pub fn photo(faces: &[PhotoFace], json: bool) -> serde_json::Result<String> {
    if json {
        return to_json(&faces.iter().map(wire::FacePerson::new).collect::<Vec<_>>());
    }
    if faces.is_empty() {
        return Ok("no faces found in this photo\n".into());
    }
    let rows = faces
        .iter()
        .map(|f| {
            let who = match (f.person_id, &f.name) {
                (Some(p), Some(name)) => format!("{p} {name}"),
                (Some(p), None) => p.to_string(),
                (None, _) => "(waits)".to_string(),
            };
            let box_ = format!("{:.0},{:.0} {:.0}x{:.0}", f.x, f.y, f.w, f.h);
            let said = if f.confirmed { "yours" } else { "" };
            vec![f.face_id.to_string(), who, box_, said.to_string()]
        })
        .collect();
    Ok(table(&["FACE", "PERSON", "BOX", ""], rows))
}
