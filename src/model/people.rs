//! Face descriptors and people: what the embedding walk stores per face, the people the
//! clustering and the user make, and the user's word on them. Plain data (see the parent
//! module); must not depend on any other module of the crate.

use super::*;

/// The job kind (and unique key) of the "recluster all" job: one live at a time.
pub const RECLUSTER_JOB_KIND: &str = "people:recluster";

/// A key from a face's content: its photo's checksum (first 8 bytes) and its box's corner,
/// the same whatever order the faces were found in (the clustering breaks ties by it).
pub fn face_key(checksum: &[u8; 32], x: f32, y: f32) -> u128 {
    let mut head = [0u8; 8];
    head.copy_from_slice(&checksum[..8]);
    let corner = (u64::from(x.to_bits()) << 32) | u64::from(y.to_bits());
    (u128::from(u64::from_be_bytes(head)) << 64) | u128::from(corner)
}

/// Two detections of one picture found the same face when their boxes overlap at least this
/// much (intersection over union): a new detector's boxes move by a few pixels, a
/// neighbour's face shares far less.
pub const SAME_FACE: f32 = 0.5;

/// How much two boxes `[x, y, w, h]` of one picture overlap: intersection over union, 0 to 1
/// (0 when either is empty). The detector's non-maximum suppression uses it too.
pub fn overlap(a: [f32; 4], b: [f32; 4]) -> f32 {
    let w = (a[0] + a[2]).min(b[0] + b[2]) - a[0].max(b[0]);
    let h = (a[1] + a[3]).min(b[1] + b[3]) - a[1].max(b[1]);
    if w <= 0.0 || h <= 0.0 {
        return 0.0;
    }
    let both = w * h;
    let union = a[2] * a[3] + b[2] * b[3] - both;
    if union > 0.0 { both / union } else { 0.0 }
}

/// One asset's faces as the embedding walk embeds them: the detector version they are of
/// (the asset's `faces_scheme` when read), and each face with its id and whether it already
/// has a vector of the walk's embedder version (then it is not embedded again).
#[derive(Clone, Debug, PartialEq)]
pub struct FacesToEmbed {
    pub faces_scheme: i64,
    pub faces: Vec<(i64, DetectedFace, bool)>,
}

/// The vectors one asset's visit gave: per face, its descriptor (`None`: no chip can be cut
/// from it, stored so that no walk tries it again).
#[derive(Clone, Debug, PartialEq)]
pub struct EmbeddedAsset {
    pub asset_id: i64,
    pub vectors: Vec<(i64, Option<Vec<f32>>)>,
}

/// A face with its descriptor, as the clustering reads it: its id, its photo, a key from its
/// content (the photo's checksum and the box: the same in any scan order) and the vector.
#[derive(Clone, Debug, PartialEq)]
pub struct FaceVector {
    pub id: i64,
    pub asset_id: i64,
    pub key: u128,
    pub vector: Vec<f32>,
}

/// Who each face is now, and what the user said, as the clustering needs them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PeopleState {
    /// (face, person) for every face in a person now.
    pub assigned: Vec<(i64, i64)>,
    /// (face, person): the user put the face in the person.
    pub confirmed: Vec<(i64, i64)>,
    /// (face, person): the user said the face is not the person.
    pub rejected: Vec<(i64, i64)>,
    /// The people who exist (a person the user named stays even with no face).
    pub people: Vec<i64>,
    /// The count of the user's changes when this was read: a recluster computed from it
    /// commits only while it is unchanged.
    pub said_at: i64,
}

/// A recluster's answer, to be committed under its job's lease: each known person with its
/// faces, the new people's faces, and the faces it looked at (only their rows are replaced:
/// a face embedded meanwhile keeps what the walk gave it).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Regrouping {
    pub known: Vec<(i64, Vec<i64>)>,
    pub new: Vec<Vec<i64>>,
    pub considered: Vec<i64>,
    pub said_at: i64,
}

/// What a recluster's commit did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reclustered {
    /// The people were replaced: this many faces in people, this many new people.
    Done { placed: usize, created: usize },
    /// The user changed something since the faces were read: nothing was written and the
    /// job was queued again, to run on what the user said.
    Again,
}

/// A person as the lists show them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Person {
    pub id: i64,
    pub name: Option<String>,
    pub hidden: bool,
    /// Faces in this person, and the photos (live assets) they are in.
    pub faces: i64,
    pub photos: i64,
    /// A face to show for the person (its best-scored, then lowest id), if any.
    pub cover_face: Option<i64>,
}

/// A face of a photo as "who is in this photo" answers it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PhotoFace {
    pub face_id: i64,
    pub person_id: Option<i64>,
    pub name: Option<String>,
    pub confirmed: bool,
    pub x: f32,
    pub y: f32,
    pub w: f32,
    pub h: f32,
}

/// One face's photo and box, in the photo's stored pixels (before its EXIF orientation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FaceBox {
    pub face_id: i64,
    pub asset_id: i64,
    pub x: f32,
    pub y: f32,
    pub w: f32,
    pub h: f32,
}
