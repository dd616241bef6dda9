//! Extended tier (issue 28 items 6 and 7): faces and people on the `make-corpus` library
//! built with its Extras. Detection finds at least 95% of the manifest's labelled faces and
//! no face in its no-face pictures (nature, the cat, the motion-blurred clocks of
//! Extras/Similar); then detection, the chip, the descriptor and `people::cluster` with its
//! default `Params` put every astronaut in one person, zidane.jpg's two men in two people, and
//! each man with his own crops of Extras/People. Run with `MEDIADEX_CORPUS=/path/to/lib cargo
//! test --release --test it corpus_people:: -- --ignored --nocapture` (or
//! `scripts/corpus-tier.sh`).

use crate::support::corpus::{col, manifest_rows};
use mediadex::faces::{self, DetectedFace, FaceDetector, FaceEmbedder, RetinaFace};
use mediadex::people::cluster::{self, Face, Params, Said};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

fn library() -> PathBuf {
    PathBuf::from(std::env::var_os("MEDIADEX_CORPUS").expect("MEDIADEX_CORPUS"))
}

/// Pictures with a face count in the manifest: (path, role, fewest, most faces).
fn counted(lib: &Path) -> Vec<(String, String, usize, usize)> {
    let clock = |p: &str| p.starts_with("Extras/Similar/clock");
    manifest_rows(lib)
        .iter()
        .filter_map(|r| Some((col(r, 0)?, col(r, 1)?, col(r, 3)?)))
        .filter(|(p, role, _)| ["face", "noface", "person"].contains(&role.as_str()) || clock(p))
        .filter(|(p, _, _)| !p.ends_with(".mp4"))
        .map(|(p, role, faces)| {
            let mut range = faces.split('-').map(|n| n.parse::<usize>().expect("count"));
            let low = range.next().expect("a count");
            (p, role, low, range.next().unwrap_or(low))
        })
        .collect()
}

fn detect(det: &RetinaFace, path: &Path) -> Vec<DetectedFace> {
    det.detect(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
#[ignore = "needs MEDIADEX_CORPUS (scripts/corpus-tier.sh)"]
fn labelled_faces_are_found_and_no_face_pictures_have_none() {
    let lib = library();
    let det = RetinaFace::new().expect("model");
    let rows = counted(&lib);
    let found: Vec<usize> = rows
        .par_iter()
        .map(|(p, ..)| detect(&det, &lib.join(p)).len())
        .collect();
    let (mut wanted, mut seen, mut false_faces) = (0, 0, Vec::new());
    for ((path, role, low, high), n) in rows.iter().zip(found) {
        println!("{path} ({role}, {low}-{high}): {n}");
        wanted += low;
        seen += n.min(*low);
        if n > *high {
            false_faces.push(format!("{path}: {n} faces, at most {high}"));
        }
    }
    let recall = seen as f64 / wanted as f64;
    println!("recall {seen}/{wanted} = {recall:.3}; false faces: {false_faces:?}");
    assert!(recall >= 0.95, "recall {seen}/{wanted}");
    assert!(false_faces.is_empty(), "{false_faces:?}");
}

/// The faces of `pictures`, each with its descriptor, and where each came from.
fn embedded(lib: &Path, pictures: &[&str]) -> (Vec<Face>, Vec<(String, DetectedFace)>) {
    let det = RetinaFace::new().expect("detector");
    let emb = FaceEmbedder::new().expect("embedder");
    let per: Vec<Vec<(DetectedFace, Vec<f32>)>> = pictures
        .par_iter()
        .map(|p| {
            let path = lib.join(p);
            let found = detect(&det, &path);
            let chips = faces::chips(&path, &found).expect("chips");
            found
                .into_iter()
                .zip(chips)
                .filter_map(|(f, chip)| Some((f, emb.embed(&chip?).expect("embeds").to_vec())))
                .collect()
        })
        .collect();
    let (mut all, mut whence) = (Vec::new(), Vec::new());
    for (photo, list) in per.into_iter().enumerate() {
        for (face, vector) in list {
            let id = all.len() as i64;
            let key = id as u128;
            all.push(Face {
                id,
                photo: photo as i64,
                key,
                vector,
            });
            whence.push((pictures[photo].to_string(), face));
        }
    }
    (all, whence)
}

#[test]
#[ignore = "needs MEDIADEX_CORPUS with its Extras (scripts/corpus-tier.sh)"]
fn the_corpus_people_are_one_person_each_and_zidanes_men_are_two() {
    let lib = library();
    let people: Vec<String> = counted(&lib)
        .into_iter()
        .filter(|(p, role, low, _)| {
            (role == "person" || p.starts_with("Albums/People/")) && *low > 0
        })
        .map(|(p, ..)| p)
        .collect();
    assert!(
        people.iter().any(|p| p.starts_with("Extras/People/")),
        "no Extras"
    );
    let names: Vec<&str> = people.iter().map(String::as_str).collect();
    let (all, whence) = embedded(&lib, &names);
    let p = Params::default();
    let out = cluster::recluster(&all, &Said::default(), &HashMap::new(), p);
    let mut person_of: HashMap<i64, String> = HashMap::new();
    for (who, ids) in &out.people {
        ids.iter().for_each(|&id| {
            person_of.insert(id, format!("{who:?}"));
        });
    }
    let of = |id: usize| person_of.get(&(id as i64)).cloned();
    let mut by_picture: BTreeMap<&str, Vec<(usize, &DetectedFace)>> = BTreeMap::new();
    for (i, (p, f)) in whence.iter().enumerate() {
        by_picture.entry(p).or_default().push((i, f));
        println!("{p}: face at ({:.0}, {:.0}) is {:?}", f.x, f.y, of(i));
    }
    // Every astronaut picture's face (one each) in one person.
    let astronaut: Vec<Option<String>> = whence
        .iter()
        .enumerate()
        .filter(|(_, (p, _))| p.contains("/astronaut"))
        .map(|(i, _)| of(i))
        .collect();
    assert!(astronaut.len() >= 8, "astronaut faces: {astronaut:?}");
    assert!(
        astronaut[0].is_some(),
        "the astronaut is nobody: {astronaut:?}"
    );
    assert!(
        astronaut.iter().all(|a| *a == astronaut[0]),
        "{astronaut:?}"
    );
    // zidane.jpg: the left man's face (the smaller x) and the right man's, two people.
    let mut men = by_picture["Albums/People/zidane.jpg"].clone();
    assert_eq!(men.len(), 2, "zidane.jpg: {men:?}");
    men.sort_by(|a, b| a.1.x.total_cmp(&b.1.x));
    let (left, right) = (of(men[0].0), of(men[1].0));
    assert!(
        left.is_some() && right.is_some() && left != right,
        "{left:?} {right:?}"
    );
    assert_ne!(left, astronaut[0]);
    for (crop, man) in [
        ("Extras/People/zidane_left.jpg", &left),
        ("Extras/People/zidane_left_face.jpg", &left),
        ("Extras/People/zidane_right.jpg", &right),
        ("Extras/People/zidane_right_face.jpg", &right),
    ] {
        let faces = &by_picture[crop];
        assert_eq!(faces.len(), 1, "{crop}: {faces:?}");
        assert_eq!(&of(faces[0].0), man, "{crop}");
    }
}
