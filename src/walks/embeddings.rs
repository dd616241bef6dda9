//! The embedding walk (DESIGN.md section 8, issue 28 item 3): one descriptor per face, per
//! embedder version. It visits every live picture whose faces were detected and that lacks
//! this embedder's stamp (a re-detection clears the stamp and marks the chain: it follows
//! the face walk's), and embeds only the faces that have no vector of this version yet: a
//! new embedder re-embeds what it has not seen, a crash redoes at most one batch, and a
//! `--restart` re-visits every picture but embeds nothing twice. The new faces then join,
//! at once, the person they are near (`people::cluster::assign`), in the batch's fenced
//! commit; the others wait for the recluster that the walk's completion queues (a minute later).
//!
//! The encoder is a trait object (`faces::WalkDlib` implements it), so that the walks do
//! not import the model. A file is used only if it still holds the asset's bytes
//! (`faces::candidate_of`); an unreadable one keeps its old stamp, a decode that ran to its
//! deadline is remembered as in the face walk.

use super::WalkKind;
use super::faces::{DetectError, Visit, candidate_of, remembered_timeout, timeout_of};
use crate::model::{
    DetectedFace, EmbeddedAsset, FaceVector, NewJob, WalkAsset, WalkKindId, WalkResults, face_key,
    timed_out_reason,
};
use crate::people::cluster::{self, Face, Params, Said};
use crate::store::Store;
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

/// A face descriptor, shared by all rayon workers.
pub trait FaceEncoder: Send + Sync + 'static {
    /// The descriptors of `faces` (as detection stored them for the file at `path`), in
    /// their order; `None` for a face no chip can be cut from. `Err` as a detector's.
    fn encode(
        &self,
        path: &Path,
        faces: &[DetectedFace],
    ) -> Result<Vec<Option<Vec<f32>>>, DetectError>;
    /// The embedder version: the walk's scheme.
    fn version(&self) -> i64;
}

/// Pictures per batch: a face takes tens of milliseconds and a picture a decode, so a
/// batch commits well within a lease.
pub const BATCH: usize = 32;

/// How long the recluster a walk's end asks for waits (ms): the asks of a face walk's
/// batches within it are one recluster.
pub const RECLUSTER_AFTER: crate::model::Millis = 60_000;

pub struct EmbeddingsWalk {
    pub encoder: Arc<dyn FaceEncoder>,
    /// Read only (the faces to embed, the people the new faces may join).
    pub store: Store,
    pub scheme: i64,
    pub batch: usize,
    pub people: Params,
}

impl EmbeddingsWalk {
    /// The encoder's version unless overridden (`MEDIADEX_EMBED_SCHEME`).
    pub fn new(store: &Store, encoder: Arc<dyn FaceEncoder>, scheme: Option<i64>) -> Self {
        EmbeddingsWalk {
            scheme: scheme.unwrap_or_else(|| encoder.version()),
            encoder,
            store: store.clone(),
            batch: BATCH,
            people: crate::people::PARAMS,
        }
    }

    /// The vectors of the asset's faces that lack one of this version, with their keys.
    fn visit(&self, asset: &WalkAsset) -> Visit<Visited> {
        let faces = match self.store.faces_to_embed(asset.id, self.scheme) {
            Ok(Some(faces)) => faces.faces,
            Ok(None) => return Visit::Skipped,
            Err(e) => {
                tracing::warn!(asset = asset.id, error = %e, "cannot read the faces to embed");
                return Visit::Skipped;
            }
        };
        let (ids, wanted): (Vec<i64>, Vec<DetectedFace>) = faces
            .into_iter()
            .filter(|(_, _, has)| !has)
            .map(|(id, face, _)| (id, face))
            .unzip();
        let keys = ids
            .iter()
            .zip(&wanted)
            .map(|(id, f)| (*id, face_key(&asset.checksum, f.x, f.y)))
            .collect();
        let done = |vectors| {
            Visit::Done(Visited {
                asset: EmbeddedAsset {
                    asset_id: asset.id,
                    vectors,
                },
                keys,
            })
        };
        if wanted.is_empty() {
            return done(Vec::new());
        }
        if remembered_timeout(asset, "embeddings") {
            return Visit::Skipped;
        }
        let Some(candidate) = candidate_of(asset) else {
            return Visit::Skipped;
        };
        match self.encoder.encode(&candidate.path, &wanted) {
            Ok(vectors) if vectors.len() == ids.len() => {
                done(ids.into_iter().zip(vectors).collect())
            }
            Ok(vectors) => {
                tracing::warn!(
                    asset = asset.id,
                    faces = ids.len(),
                    vectors = vectors.len(),
                    "the encoder answered another number of faces"
                );
                Visit::Skipped
            }
            Err(DetectError::TimedOut(secs)) => {
                tracing::warn!(asset = asset.id, problem = %timed_out_reason(secs), "face embedding skipped; remembered for this file");
                Visit::TimedOut(timeout_of(asset, &candidate, secs))
            }
            Err(e) => {
                tracing::warn!(asset = asset.id, error = %e, "face embedding failed");
                Visit::Skipped
            }
        }
    }

    /// The people the batch's new faces join at once (each in turn, so that two faces of
    /// one photo never join one person). A read failure assigns nothing: they wait for the
    /// next recluster.
    fn assign(&self, found: &[Visited]) -> Vec<(i64, i64)> {
        let new = new_faces(found);
        if new.is_empty() {
            return Vec::new();
        }
        let snapshot = self.store.people_state().and_then(|state| {
            let vectors = self.store.face_vectors(self.scheme)?;
            Ok((state, vectors))
        });
        let (state, vectors) = match snapshot {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "new faces wait: cannot read the people");
                return Vec::new();
            }
        };
        let placed: HashMap<i64, i64> = state.assigned.iter().copied().collect();
        let said = Said {
            rejected: state.rejected.iter().copied().collect(),
            ..Said::default()
        };
        let mut people: BTreeMap<i64, Vec<Face>> = BTreeMap::new();
        for v in vectors {
            if let Some(&person) = placed.get(&v.id) {
                people.entry(person).or_default().push(face(v));
            }
        }
        let mut out = Vec::new();
        for f in new.into_iter().filter(|f| !placed.contains_key(&f.id)) {
            let f = face(f);
            let joins = {
                let view: Vec<(i64, Vec<&Face>)> = people
                    .iter()
                    .map(|(p, members)| (*p, members.iter().collect()))
                    .collect();
                cluster::assign(&f, &view, &said, self.people)
            };
            if let Some(person) = joins {
                out.push((f.id, person));
                people.entry(person).or_default().push(f);
            }
        }
        out
    }
}

fn face(v: FaceVector) -> Face {
    Face {
        id: v.id,
        photo: v.asset_id,
        key: v.key,
        vector: v.vector,
    }
}

/// What one asset's visit gave: its vectors, and each new face's content key.
struct Visited {
    asset: EmbeddedAsset,
    keys: HashMap<i64, u128>,
}

/// The faces this batch embedded, by id.
fn new_faces(found: &[Visited]) -> Vec<FaceVector> {
    let mut out: Vec<FaceVector> = found
        .iter()
        .flat_map(|v| {
            v.asset.vectors.iter().filter_map(|(id, vector)| {
                Some(FaceVector {
                    id: *id,
                    asset_id: v.asset.asset_id,
                    key: *v.keys.get(id)?,
                    vector: vector.clone()?,
                })
            })
        })
        .collect();
    out.sort_by_key(|f| f.id);
    out
}

impl WalkKind for EmbeddingsWalk {
    fn id(&self) -> WalkKindId {
        WalkKindId::Embeddings
    }

    fn scheme(&self) -> i64 {
        self.scheme
    }

    fn batch_size(&self) -> usize {
        self.batch.max(1)
    }

    fn process(&self, batch: &[WalkAsset]) -> WalkResults {
        let visits = batch.par_iter().map(|a| (a.id, self.visit(a))).collect();
        let (found, timed_out) = Visit::split(visits);
        let found: Vec<Visited> = found.into_iter().map(|(_, f)| f).collect();
        let assigned = self.assign(&found);
        WalkResults::Embeddings {
            version: self.scheme,
            found: found.into_iter().map(|v| v.asset).collect(),
            assigned,
            timed_out,
        }
    }

    /// The faces that joined nobody wait: a walk that reached the end asks for a recluster,
    /// which tries them all again (and makes new people of the crowds among them). It is put
    /// off a minute: during a face walk each batch's faces make a short embedding chain
    /// whose end asks again, and a recluster reads every vector; the asks of that minute
    /// are one recluster (the job's key is unique while it waits).
    fn on_complete(&self) -> Option<NewJob> {
        Some(crate::store::recluster_job().delayed(RECLUSTER_AFTER))
    }
}
