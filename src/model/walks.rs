//! Content hashes and the walk chains: records, files, visits, detected faces, perceptual
//! hashes and the groups of similar pictures. Plain data (see the parent module); must not
//! depend on any other module of the crate.

use super::*;

/// blake3 over a picture's essence (DESIGN.md section 6) and the rule version (scheme) that
/// computed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ContentHash {
    pub scheme: i64,
    pub hash: [u8; 32],
}

string_enum!(
    /// The walks of DESIGN.md section 7. The name is the walk record's key.
    WalkKindId {
        ContentHash => "content-hash",
        Faces => "faces",
        Similar => "similar",
        Embeddings => "embeddings",
    }
);

impl WalkKindId {
    /// The job kind and unique key of the kind's chain: one live chain per kind.
    pub fn job_kind(self) -> &'static str {
        match self {
            WalkKindId::ContentHash => "walk:content-hash",
            WalkKindId::Faces => "walk:faces",
            WalkKindId::Similar => "walk:similar",
            WalkKindId::Embeddings => "walk:embeddings",
        }
    }
}

/// A request for a walk that a completion makes in its own transaction (a scan's or a
/// restore's face follow-up): the chain row to enqueue (the live chain takes its place) and
/// the scheme to raise the record's `seen` to, and the walks asked for `with` it (the layers
/// derived from the same new pictures: the perceptual hash beside the faces). Built by
/// `walks::follow_up`, written by the store; the scan and the trash only carry it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkRequest {
    pub kind: WalkKindId,
    pub scheme: i64,
    pub job: NewJob,
    pub with: Vec<WalkRequest>,
}

/// The walk record of one kind: `scheme` = the last scheme a walk covered to the end,
/// `seen` = the highest scheme any binary has run on this database.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WalkRecord {
    pub kind: WalkKindId,
    pub scheme: i64,
    pub seen: i64,
    pub completed_at: Option<Millis>,
}

/// One file of an asset a walk may read: library root, library-relative path bytes,
/// whether the last scan saw it present, the stamp the scan recorded, and where the latest
/// trash that moved it put it (its intent's `to_path`, as the journal says: a trash folder's
/// name is never guessed from the asset's id).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkFile {
    pub root: String,
    pub rel_path: Vec<u8>,
    pub present: bool,
    pub stamp: FileStamp,
    pub trashed_to: Option<Vec<u8>>,
}

/// An asset a walk batch visits, with the files that may show it.
#[derive(Clone, Debug, PartialEq)]
pub struct WalkAsset {
    pub id: i64,
    pub checksum: [u8; 32],
    pub trashed: bool,
    pub files: Vec<WalkFile>,
    /// A decode of its file ran to its deadline (this many seconds) and the file still has
    /// the stamp that was decoded (`DecodeTimeout`): nothing decodes it again.
    pub timed_out: Option<u64>,
    /// An earlier asset of the same batch with the same pixels (content hash under one
    /// scheme, shown the same way up): the faces and similar walks decode that one only.
    pub same_pixels: Option<i64>,
    /// What the walk already found in another asset of the same pixels under its scheme:
    /// it is this asset's result too, and no file is read.
    pub known: Option<Known>,
}

/// A walk's result for one picture, known from another asset of the same pixels
/// (`WalkAsset::known`; issue 29: 5,000 copies of a picture with edited metadata are
/// detected once, not 5,000 times).
#[derive(Clone, Debug, PartialEq)]
pub enum Known {
    Faces(Vec<DetectedFace>),
    Phash(Option<u64>),
}

impl Known {
    /// The faces known, for the faces walk.
    pub fn faces(&self) -> Option<Vec<DetectedFace>> {
        match self {
            Known::Faces(faces) => Some(faces.clone()),
            Known::Phash(_) => None,
        }
    }

    /// The perceptual hash known (`None` inside: the picture cannot be hashed), for the
    /// similar walk.
    pub fn phash(&self) -> Option<Option<u64>> {
        match self {
            Known::Phash(phash) => Some(*phash),
            Known::Faces(_) => None,
        }
    }
}

/// A decode of an asset's file that ran to its full deadline (`seconds`), remembered for
/// the stamp of the file it read (its recorded size and mtime): while a present file of the
/// asset still has that stamp, the walks, the thumbnail job and requests skip the decode.
/// A decoder stopped from outside (a signal, a shutdown) is no timeout and is not one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeTimeout {
    pub asset_id: i64,
    pub size: u64,
    pub mtime_ns: i64,
    pub seconds: u64,
}

/// What a placeholder says for a decode that timed out after `seconds`.
pub fn timed_out_reason(seconds: u64) -> String {
    format!("decoding timed out after {seconds} s")
}

/// A face found by a detector, in original-image pixel coordinates (EXIF orientation
/// undone): the box, the score and five landmarks (eyes, nose, mouth corners).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct DetectedFace {
    pub x: f32,
    pub y: f32,
    pub w: f32,
    pub h: f32,
    pub score: f32,
    pub landmarks: [(f32, f32); 5],
}

/// What one walk batch found, to be committed with its cursor. An asset left out (its file
/// could not be read) keeps its old stamp.
#[derive(Clone, Debug, PartialEq)]
pub enum WalkResults {
    ContentHashes(Vec<(i64, ContentHash)>),
    /// Faces under `version`; `timed_out`: the decodes that ran to their deadline (those
    /// assets keep their old stamp, and the fact is remembered for their file's stamp).
    Faces {
        version: i64,
        found: Vec<(i64, Vec<DetectedFace>)>,
        timed_out: Vec<DecodeTimeout>,
    },
    /// Perceptual hashes under `scheme`; `None`: the picture can never be hashed (stamped
    /// "no hash", so the walk does not try it again). `timed_out` as for faces.
    Similar {
        scheme: i64,
        hashes: Vec<(i64, Option<u64>)>,
        timed_out: Vec<DecodeTimeout>,
    },
    /// Face descriptors under embedder `version`, per asset visited (an asset whose faces
    /// all had vectors is there with none: it is stamped); `assigned`: (face, person), the
    /// new faces that joined a person at once (`people::cluster::assign`). `timed_out` as
    /// for faces.
    Embeddings {
        version: i64,
        found: Vec<EmbeddedAsset>,
        assigned: Vec<(i64, i64)>,
        timed_out: Vec<DecodeTimeout>,
    },
}

impl WalkResults {
    pub fn len(&self) -> usize {
        match self {
            WalkResults::ContentHashes(v) => v.len(),
            WalkResults::Faces { found, .. } => found.len(),
            WalkResults::Similar { hashes, .. } => hashes.len(),
            WalkResults::Embeddings { found, .. } => found.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A live picture's perceptual hash, as the grouping of similar photos reads it: its asset,
/// the hash, and the first 8 bytes of its content hash (`None` without one): two assets of
/// one content are the same picture, never "similar".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PictureHash {
    pub id: i64,
    pub hash: u64,
    pub content: Option<u64>,
}

/// One group of similar pictures (`ops::similar`): its assets, by id (the first is the
/// group's key for paging).
#[derive(Clone, Debug, PartialEq)]
pub struct SimilarGroup {
    pub assets: Vec<Asset>,
}

/// One fenced walk batch commit: the results, the chain's advance (`next`, the follow-up
/// row carrying the cursor) or, for the last (short) batch (`complete_scheme` set), the walk
/// record's raise to `complete_scheme`. `next` is always given: the last batch's continues
/// the chain instead when an asset was made live behind its cursor meanwhile (a restore),
/// which the store alone can tell in the commit's transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct WalkCommit {
    pub kind: WalkKindId,
    pub results: WalkResults,
    pub next: NewJob,
    pub complete_scheme: Option<i64>,
    /// The chain walks a rollback: it re-stamps what a newer scheme stamped.
    pub rollback: bool,
    /// Queued with the record's raise, when the walk reaches the end.
    pub then: Option<NewJob>,
}

/// Which assets a walk chain visits under `scheme`: those lacking its stamp (one a newer
/// scheme stamped lacks nothing, except in a `rollback`), or every one (`force`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalkVisit {
    pub scheme: i64,
    pub force: bool,
    pub rollback: bool,
}
