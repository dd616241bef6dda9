//! Measures the people rule on a labelled set of faces (issue 28 item 7): each labelled
//! picture goes through what the walks do — RetinaFace, the chip cut upright from its five
//! landmarks, dlib's descriptor — and then `people::cluster::recluster` over all the faces,
//! at each `eps` of a sweep. Prints, per `eps`, the pairwise precision and recall over the
//! labelled faces, the people it made and the faces left waiting.
//!
//! `cargo run --release --example people_eval LABELS.tsv [MIN_CORE]`, where each line of
//! LABELS.tsv (made by `scripts/people-set.sh`) is `path<TAB>person[<TAB>x<TAB>y]`, relative
//! to the file's folder: the face of that person in that picture is the one whose box holds
//! the point (x, y) in displayed pixels, or, with no point, the picture's largest face. Faces
//! the labels do not name are clustered too (they stand in a library beside the others) but
//! count in no pair.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test, example or bench: a panic is the report

use mediadex::faces::{self, DetectedFace, FaceDetector, FaceEmbedder, RetinaFace};
use mediadex::people::cluster::{self, Face, Params, Said};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

struct Label {
    path: PathBuf,
    person: String,
    at: Option<(f32, f32)>,
}

fn labels(file: &Path) -> Vec<Label> {
    let dir = file.parent().expect("a folder");
    std::fs::read_to_string(file)
        .expect("labels")
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            let at =
                (cols.len() >= 4).then(|| (cols[2].parse().unwrap(), cols[3].parse().unwrap()));
            Label {
                path: dir.join(cols[0]),
                person: cols[1].to_string(),
                at,
            }
        })
        .collect()
}

/// Whether a face's box holds a point. Boxes are in stored pixels and the points in shown
/// ones: the set gives points only for pictures with no EXIF turn, where the two are one.
fn holds(f: &DetectedFace, (x, y): (f32, f32)) -> bool {
    (f.x..f.x + f.width).contains(&x) && (f.y..f.y + f.height).contains(&y)
}

/// Every face of every picture, with its vector; `labelled[i]` is the person of face `i`.
fn embed_all(set: &[Label]) -> (Vec<Face>, Vec<Option<String>>) {
    let det = RetinaFace::new().unwrap();
    let emb = FaceEmbedder::new().unwrap();
    let mut by_path: BTreeMap<&Path, Vec<&Label>> = BTreeMap::new();
    set.iter()
        .for_each(|l| by_path.entry(&l.path).or_default().push(l));
    let per_picture: Vec<Vec<(Vec<f32>, Option<String>)>> = by_path
        .par_iter()
        .map(|(path, wanted)| {
            let found = det
                .detect(path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let chips = faces::chips(path, &found).unwrap();
            let mut names: Vec<Option<String>> = vec![None; found.len()];
            for l in wanted {
                let pick = match l.at {
                    Some(at) => found.iter().position(|f| holds(f, at)),
                    None => (0..found.len()).max_by(|&a, &b| {
                        (found[a].width * found[a].height)
                            .total_cmp(&(found[b].width * found[b].height))
                    }),
                };
                match pick {
                    Some(i) => names[i] = Some(l.person.clone()),
                    None => eprintln!(
                        "MISSED: {} ({}): {} faces",
                        path.display(),
                        l.person,
                        found.len()
                    ),
                }
            }
            chips
                .into_iter()
                .zip(names)
                .filter_map(|(chip, name)| Some((emb.embed(&chip?).unwrap().to_vec(), name)))
                .collect()
        })
        .collect();
    let mut faces = Vec::new();
    let mut names = Vec::new();
    for (photo, list) in per_picture.into_iter().enumerate() {
        for (vector, name) in list {
            let id = faces.len() as i64;
            faces.push(Face {
                id,
                photo: photo as i64,
                key: id as u128,
                vector,
            });
            names.push(name);
        }
    }
    (faces, names)
}

/// Pairwise precision and recall over the labelled faces, the people and the waiting faces.
fn score(names: &[Option<String>], outcome: &cluster::Outcome) -> (f64, f64, usize, usize) {
    let mut person_of: HashMap<i64, usize> = HashMap::new();
    for (n, ids) in outcome.people.values().enumerate() {
        ids.iter().for_each(|&id| {
            person_of.insert(id, n);
        });
    }
    let (mut together, mut right, mut same) = (0u64, 0u64, 0u64);
    for i in 0..names.len() {
        for j in i + 1..names.len() {
            let (Some(a), Some(b)) = (&names[i], &names[j]) else {
                continue;
            };
            let joined = matches!((person_of.get(&(i as i64)), person_of.get(&(j as i64))), (Some(p), Some(q)) if p == q);
            together += u64::from(joined);
            right += u64::from(joined && a == b);
            same += u64::from(a == b);
        }
    }
    let precision = if together == 0 {
        1.0
    } else {
        right as f64 / together as f64
    };
    let recall = if same == 0 {
        1.0
    } else {
        right as f64 / same as f64
    };
    (
        precision,
        recall,
        outcome.people.len(),
        outcome.waiting.len(),
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let file = PathBuf::from(args.get(1).expect("LABELS.tsv"));
    let min_core: usize = args.get(2).map_or(3, |s| s.parse().unwrap());
    let set = labels(&file);
    let (faces, names) = embed_all(&set);
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    names
        .iter()
        .flatten()
        .for_each(|n| *count.entry(n).or_default() += 1);
    println!(
        "{} faces, {} labelled: {count:?}",
        faces.len(),
        names.iter().flatten().count()
    );
    println!("| eps | pairwise precision | pairwise recall | people | waiting |");
    println!("|---|---|---|---|---|");
    for step in 0..=16 {
        let eps = 0.30 + 0.025 * step as f32;
        let p = Params { eps, min_core };
        let outcome = cluster::recluster(&faces, &Said::default(), &HashMap::new(), p);
        let (precision, recall, people, waiting) = score(&names, &outcome);
        println!("| {eps:.3} | {precision:.3} | {recall:.3} | {people} | {waiting} |");
    }
}
