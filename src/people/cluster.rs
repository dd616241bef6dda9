//! Faces grouped into people: the rule, pure, over the embeddings and the user's word the
//! caller hands it (issue 28 item 4). Two steps, so that what the user said is applied on
//! top of the distances and never bent by them.
//!
//! **The distances** (conservative by construction):
//! - Two faces are *near* when their embeddings are at most `eps` apart (Euclidean, dlib's
//!   metric) and they are not in one photo.
//! - A face is a *core* face when it and its near faces make at least `min_core` (Immich's
//!   minFaces). Two core faces join when they are near and share `min_core - 2` near faces:
//!   a person is a crowd, and a line of look-alikes, each near only the next, joins nothing.
//!   Joins go in increasing distance, ties by the faces' content keys (never by id: the same
//!   faces give the same groups whatever order they were scanned in), and a join that would
//!   put two faces of one photo in a group is refused.
//! - Each other face joins the group of its nearest core face that takes it.
//! - A group of fewer than `min_core` faces is nobody yet: its faces wait and are tried
//!   again on the next run, as Immich retries them nightly.
//!
//! **The user's word, then who each group is:**
//! - Each face votes for the person it is now: the one the user put it in (named,
//!   confirmed, moved, merged), else the one it was in before. A group is the person with
//!   most votes in it (ties: the lower id); a person takes one group, or more when the user
//!   put most faces of each in it (a merge stays a merge). A group no person takes is new.
//! - A face the user put in a person is in that person, wherever the distances put it; a
//!   face the user said is not a person is never in it (it waits instead).
//! - So ids and names stay put across a recluster and an embedder upgrade.
//!
//! Cost: the near pairs come from comparing every pair, O(n²) distances: fine for the faces a
//! household's library holds (20,000 faces: 2·10⁸ distances), not for millions.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// One face as the rule sees it.
#[derive(Clone, Debug)]
pub struct Face {
    pub id: i64,
    /// The photo (asset) it is in: two faces of one photo are never one person.
    pub photo: i64,
    /// A key from the face's content (its photo's checksum and box), unique per face: the
    /// order ties are broken in, which must not depend on the order faces were found in.
    pub key: u128,
    pub vector: Vec<f32>,
}

/// The rule's two numbers.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    /// The largest distance between two faces of one person.
    pub eps: f32,
    /// The fewest faces that make a person (and that a core face needs about it).
    pub min_core: usize,
}

impl Default for Params {
    /// `eps` 0.5, calibrated (issue 28 item 7) on the labelled set of `scripts/people-set.sh`
    /// (38 faces of 9 people) by `examples/people_eval.rs`: pairwise precision stays 1.000
    /// up to 0.600 and falls to 0.895 at 0.625 (two people merged); recall is 0.941 from
    /// 0.400 to 0.525 and 0.990 from 0.550. A wrong merge hurts more than a miss, so 0.5
    /// keeps 0.125 below the first wrong merge for 5 points of recall (models/README.md).
    /// `min_core` 3 is the core of three faces.
    fn default() -> Params {
        Params {
            eps: 0.5,
            min_core: 3,
        }
    }
}

/// What the user said, which no run undoes.
#[derive(Clone, Debug, Default)]
pub struct Said {
    /// Faces the user put in a person (named or confirmed in the viewer, moved, merged).
    pub confirmed: HashMap<i64, i64>,
    /// (face, person): the user said this face is not this person.
    pub rejected: HashSet<(i64, i64)>,
}

/// Who a group is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Who {
    /// A person that existed before this run.
    Known(i64),
    /// A new person (numbered in this outcome).
    New(usize),
}

/// A run's answer: each person with their faces (ascending ids), and the faces that wait.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub people: BTreeMap<Who, Vec<i64>>,
    pub waiting: Vec<i64>,
}

fn distance2(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// Union-find over the faces (in key order), each root holding its group's photos.
struct Groups {
    parent: Vec<usize>,
    photos: Vec<BTreeSet<i64>>,
}

impl Groups {
    fn new(faces: &[&Face]) -> Groups {
        Groups {
            parent: (0..faces.len()).collect(),
            photos: faces.iter().map(|f| BTreeSet::from([f.photo])).collect(),
        }
    }

    fn root(&mut self, mut i: usize) -> usize {
        while self.parent[i] != i {
            self.parent[i] = self.parent[self.parent[i]];
            i = self.parent[i];
        }
        i
    }

    /// Joins the groups of `a` and `b` unless that puts one photo in twice; whether they
    /// are one group now. The root is the lowest index, so a group's first face by key.
    fn join(&mut self, a: usize, b: usize) -> bool {
        let (ra, rb) = (self.root(a), self.root(b));
        if ra == rb {
            return true;
        }
        if !self.photos[ra].is_disjoint(&self.photos[rb]) {
            return false;
        }
        let (keep, gone) = (ra.min(rb), ra.max(rb));
        let moved = std::mem::take(&mut self.photos[gone]);
        self.photos[keep].extend(moved);
        self.parent[gone] = keep;
        true
    }

    /// Each group's faces (indices), by root.
    fn members(&mut self) -> BTreeMap<usize, Vec<usize>> {
        let mut out: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for i in 0..self.parent.len() {
            let r = self.root(i);
            out.entry(r).or_default().push(i);
        }
        out
    }
}

/// How many near faces `a` and `b` share (both lists ascending).
fn common(a: &[usize], b: &[usize]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// The near pairs `(distance², i, j)` with `i < j`, in join order.
fn near_pairs(faces: &[&Face], eps: f32) -> Vec<(f32, usize, usize)> {
    let limit = eps * eps;
    let mut pairs = Vec::new();
    for i in 0..faces.len() {
        for j in i + 1..faces.len() {
            if faces[i].photo == faces[j].photo {
                continue;
            }
            let d = distance2(&faces[i].vector, &faces[j].vector);
            if d <= limit {
                pairs.push((d, i, j));
            }
        }
    }
    // Faces are in key order, so (i, j) breaks distance ties by content.
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    pairs
}

/// Groups every face anew. `before` is who each face was (unconfirmed faces included), for
/// the matching that keeps ids.
pub fn recluster(faces: &[Face], said: &Said, before: &HashMap<i64, i64>, p: Params) -> Outcome {
    let mut faces: Vec<&Face> = faces.iter().collect();
    faces.sort_by_key(|f| f.key);
    let mut groups = Groups::new(&faces);
    let pairs = near_pairs(&faces, p.eps);
    let mut near = vec![Vec::new(); faces.len()];
    for &(_, i, j) in &pairs {
        near[i].push(j);
        near[j].push(i);
    }
    near.iter_mut().for_each(|n| n.sort_unstable());
    let core: Vec<bool> = near.iter().map(|n| n.len() + 1 >= p.min_core).collect();
    let shared = p.min_core.saturating_sub(2);
    for &(_, i, j) in &pairs {
        if core[i] && core[j] && common(&near[i], &near[j]) >= shared {
            groups.join(i, j);
        }
    }
    // Each other face to its nearest core face whose group takes it (pairs are in distance
    // order, so the first that fits is the nearest).
    let mut placed = core.clone();
    for &(_, i, j) in &pairs {
        for (border, at) in [(i, j), (j, i)] {
            if !placed[border] && core[at] && groups.join(border, at) {
                placed[border] = true;
            }
        }
    }
    let found: Vec<Vec<i64>> = groups
        .members()
        .into_values()
        .map(|m| m.into_iter().map(|i| faces[i].id).collect())
        .collect();
    name_groups(found, said, before, p)
}

/// Who each group is (the user's word on top): people, and the faces that wait.
fn name_groups(
    found: Vec<Vec<i64>>,
    said: &Said,
    before: &HashMap<i64, i64>,
    p: Params,
) -> Outcome {
    let now = |id: &i64| said.confirmed.get(id).or_else(|| before.get(id)).copied();
    let (big, small): (Vec<Vec<i64>>, Vec<Vec<i64>>) =
        found.into_iter().partition(|ids| ids.len() >= p.min_core);
    let mut votes: Vec<(usize, i64, usize)> = Vec::new();
    for (g, ids) in big.iter().enumerate() {
        let mut count: BTreeMap<i64, usize> = BTreeMap::new();
        ids.iter()
            .filter_map(now)
            .for_each(|person| *count.entry(person).or_default() += 1);
        votes.extend(count.into_iter().map(|(person, n)| (n, person, g)));
    }
    votes.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut who: Vec<Option<Who>> = vec![None; big.len()];
    let mut taken: BTreeSet<i64> = BTreeSet::new();
    for (_, person, g) in votes {
        // A second group for one person only when the user put most of it there (a merge).
        let placed = big[g]
            .iter()
            .filter(|id| said.confirmed.get(id) == Some(&person));
        let merged = placed.count() * 2 > big[g].len();
        if who[g].is_none() && (taken.insert(person) || merged) {
            who[g] = Some(Who::Known(person));
        }
    }
    let mut out = Outcome::default();
    let mut fresh = 0;
    for (g, ids) in big.into_iter().enumerate() {
        let w = who[g].unwrap_or_else(|| {
            fresh += 1;
            Who::New(fresh - 1)
        });
        out.people.entry(w).or_default().extend(ids);
    }
    out.waiting = small.into_iter().flatten().collect();
    apply_word(&mut out, said);
    out
}

/// Puts each face the user placed in its person, and takes each face out of the person the
/// user said it is not.
fn apply_word(out: &mut Outcome, said: &Said) {
    let placed = |id: &i64| said.confirmed.get(id).copied();
    for (who, ids) in out.people.iter_mut() {
        ids.retain(|id| placed(id).is_none_or(|p| *who == Who::Known(p)));
    }
    out.waiting.retain(|id| placed(id).is_none());
    for (&face, &person) in &said.confirmed {
        let ids = out.people.entry(Who::Known(person)).or_default();
        if !ids.contains(&face) {
            ids.push(face);
        }
    }
    for (who, ids) in out.people.iter_mut() {
        ids.retain(|id| {
            let no = matches!(who, Who::Known(p) if said.rejected.contains(&(*id, *p)));
            if no {
                out.waiting.push(*id);
            }
            !no
        });
        ids.sort_unstable();
    }
    out.people.retain(|_, ids| !ids.is_empty());
    out.waiting.sort_unstable();
}

/// The person a new face joins at once, if any: the one with at least `min_core - 1` of
/// its faces near it (most such faces first, then the nearest, then the lower id), that
/// holds no face of its photo and that the user did not say it is not. `None`: it waits
/// for the next `recluster`.
pub fn assign(face: &Face, people: &[(i64, Vec<&Face>)], said: &Said, p: Params) -> Option<i64> {
    let limit = p.eps * p.eps;
    let mut best: Option<(usize, f32, i64)> = None;
    for (person, members) in people {
        if said.rejected.contains(&(face.id, *person))
            || members.iter().any(|m| m.photo == face.photo)
        {
            continue;
        }
        let near: Vec<f32> = members
            .iter()
            .map(|m| distance2(&m.vector, &face.vector))
            .filter(|d| *d <= limit)
            .collect();
        if near.len() + 1 < p.min_core {
            continue;
        }
        let nearest = near.iter().copied().fold(f32::INFINITY, f32::min);
        let this = (near.len(), nearest, *person);
        if best.is_none_or(|b| outranks(this, b)) {
            best = Some(this);
        }
    }
    best.map(|(_, _, person)| person)
}

/// More near faces first, then the nearer, then the lower person id.
fn outranks(a: (usize, f32, i64), b: (usize, f32, i64)) -> bool {
    let order = a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)).then(b.2.cmp(&a.2));
    order == std::cmp::Ordering::Greater
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: Params = Params {
        eps: 0.6,
        min_core: 3,
    };

    /// A face `id` in photo `photo`, at `center` moved by a small offset that `id` picks.
    fn face(id: i64, photo: i64, center: [f32; 4]) -> Face {
        let wobble = (id % 7) as f32 * 0.02;
        let mut vector = center.to_vec();
        vector[(id % 4) as usize] += wobble;
        Face {
            id,
            photo,
            // A content key unrelated to the id's order.
            key: (id as u128).wrapping_mul(0x9E37_79B9_7F4A_7C15) % 1_000_003,
            vector,
        }
    }

    const A: [f32; 4] = [0.0, 0.0, 0.0, 0.0];
    const B: [f32; 4] = [3.0, 0.0, 0.0, 0.0];
    const C: [f32; 4] = [0.0, 3.0, 0.0, 0.0];

    /// Anna (faces 1-5), Bert (11-15), and two faces of someone seen twice (21, 22).
    fn household() -> Vec<Face> {
        let mut faces: Vec<Face> = (1..=5).map(|i| face(i, 100 + i, A)).collect();
        faces.extend((11..=15).map(|i| face(i, 100 + i, B)));
        faces.extend([face(21, 121, C), face(22, 122, C)]);
        faces
    }

    /// The outcome as sets of faces, names aside.
    fn shape(o: &Outcome) -> (BTreeSet<Vec<i64>>, Vec<i64>) {
        (o.people.values().cloned().collect(), o.waiting.clone())
    }

    fn none() -> HashMap<i64, i64> {
        HashMap::new()
    }

    #[test]
    fn two_crowds_are_two_people_and_a_pair_waits() {
        let o = recluster(&household(), &Said::default(), &none(), P);
        let (people, waiting) = shape(&o);
        let want: BTreeSet<Vec<i64>> = [vec![1, 2, 3, 4, 5], vec![11, 12, 13, 14, 15]].into();
        assert_eq!(people, want);
        assert_eq!(waiting, vec![21, 22]);
    }

    #[test]
    fn the_same_faces_make_the_same_people_whatever_their_order() {
        let mut faces = household();
        faces.extend((31..=34).map(|i| face(i, 100 + i, [1.5, 0.0, 0.0, 0.0])));
        let first = recluster(&faces, &Said::default(), &none(), P);
        let mut seed = 7u64;
        for _ in 0..20 {
            for i in (1..faces.len()).rev() {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                faces.swap(i, (seed >> 33) as usize % (i + 1));
            }
            assert_eq!(recluster(&faces, &Said::default(), &none(), P), first);
        }
    }

    #[test]
    fn two_faces_of_one_photo_are_never_one_person() {
        // Six faces at one place, two pairs of them in one photo each.
        let faces: Vec<Face> = (1..=6)
            .map(|i| face(i, 100 + (i + 1) / 2 * 10, A))
            .collect();
        let o = recluster(&faces, &Said::default(), &none(), P);
        for ids in o.people.values() {
            let photos: BTreeSet<i64> = ids.iter().map(|i| 100 + (i + 1) / 2 * 10).collect();
            assert_eq!(photos.len(), ids.len(), "one photo twice in {ids:?}: {o:?}");
        }
    }

    #[test]
    fn a_line_of_look_alikes_does_not_bridge_two_people() {
        let mut faces = household();
        // From Anna's crowd to Bert's, 0.5 apart: each near the next only.
        for (n, x) in [0.5f32, 1.0, 1.5, 2.0, 2.5].iter().enumerate() {
            let id = 41 + n as i64;
            let mut f = face(id, 200 + id, [*x, 0.0, 0.0, 0.0]);
            f.vector = vec![*x, 0.0, 0.0, 0.0];
            faces.push(f);
        }
        let o = recluster(&faces, &Said::default(), &none(), P);
        let both = o
            .people
            .values()
            .any(|ids| ids.contains(&1) && ids.contains(&11));
        assert!(!both, "the line joined Anna and Bert: {o:?}");
        assert_eq!(o.people.len(), 2, "{o:?}");
    }

    #[test]
    fn people_keep_their_ids_across_a_recluster() {
        let before: HashMap<i64, i64> = (1..=5)
            .map(|i| (i, 7))
            .chain((11..=15).map(|i| (i, 9)))
            .collect();
        let o = recluster(&household(), &Said::default(), &before, P);
        assert_eq!(o.people[&Who::Known(7)], vec![1, 2, 3, 4, 5]);
        assert_eq!(o.people[&Who::Known(9)], vec![11, 12, 13, 14, 15]);
    }

    #[test]
    fn the_users_word_holds_against_the_distances() {
        let mut said = Said::default();
        // Face 11 (at Bert's place) is Anna, person 7, and so are 1 and 2; face 3 is not Anna.
        said.confirmed.extend([(11, 7), (1, 7), (2, 7)]);
        said.rejected.insert((3, 7));
        // The pair 21, 22 was merged into one person 5 by the user: both confirmed.
        said.confirmed.extend([(21, 5), (22, 5)]);
        let before: HashMap<i64, i64> = (1..=5).map(|i| (i, 7)).collect();
        let o = recluster(&household(), &said, &before, P);
        let anna = &o.people[&Who::Known(7)];
        assert!(anna.contains(&11) && anna.contains(&1), "{o:?}");
        assert!(!anna.contains(&3), "face 3 is not Anna: {o:?}");
        assert!(o.waiting.contains(&3), "{o:?}");
        assert_eq!(
            o.people[&Who::Known(5)],
            vec![21, 22],
            "a merge of two faces stays a person"
        );
        let bert: Vec<&Vec<i64>> = o.people.values().filter(|ids| ids.contains(&12)).collect();
        assert_eq!(bert, vec![&vec![12, 13, 14, 15]], "{o:?}");
    }

    #[test]
    fn a_new_face_joins_the_person_it_is_near_or_waits() {
        let faces = household();
        let anna: Vec<&Face> = faces.iter().filter(|f| f.id <= 5).collect();
        let bert: Vec<&Face> = faces.iter().filter(|f| (11..=15).contains(&f.id)).collect();
        let people = [(7, anna), (9, bert)];
        let said = Said::default();
        assert_eq!(assign(&face(50, 500, A), &people, &said, P), Some(7));
        assert_eq!(assign(&face(51, 501, B), &people, &said, P), Some(9));
        assert_eq!(
            assign(&face(52, 502, C), &people, &said, P),
            None,
            "nobody near"
        );
        assert_eq!(
            assign(&face(53, 101, A), &people, &said, P),
            None,
            "Anna is in photo 101 already"
        );
        let no = Said {
            rejected: HashSet::from([(54, 7)]),
            ..Said::default()
        };
        assert_eq!(
            assign(&face(54, 504, A), &people, &no, P),
            None,
            "the user said it is not Anna"
        );
    }

    #[test]
    fn a_merge_of_two_people_survives_a_recluster_and_takes_their_new_faces() {
        let mut faces = household();
        // The user merged Bert (9) into Anna (7): every face either had is confirmed Anna.
        let said = Said {
            confirmed: (1..=5).chain(11..=15).map(|i| (i, 7)).collect(),
            ..Said::default()
        };
        faces.push(face(16, 116, B)); // a new photo of Bert, after the merge
        let before: HashMap<i64, i64> = (1..=5).chain(11..=15).map(|i| (i, 7)).collect();
        let o = recluster(&faces, &said, &before, P);
        let all: Vec<i64> = (1..=5).chain(11..=16).collect();
        assert_eq!(o.people[&Who::Known(7)], all, "{o:?}");
    }
}
