//! People (issue 28): faces grouped by who they are. Owns the grouping rule (`cluster`,
//! pure over the face embeddings and what the user said: it touches nothing) and the
//! "recluster all" job (`recluster`: reads the faces and the user's word from the store,
//! hands them to the rule and commits its answer under the job's lease). Must not touch the
//! files (the walks embed the faces) nor hold SQL (the store keeps faces, vectors, people and
//! the user's word).
//!
//! Must not import: http, ops, walks, rusqlite

pub mod cluster;
pub mod recluster;

/// The rule's numbers. `eps` is below dlib's own 0.6 ("same person" on LFW): a wrong merge
/// hurts more than a miss, and a person needs a core of 3 faces (Immich's minFaces).
pub const PARAMS: cluster::Params = cluster::Params {
    eps: 0.5,
    min_core: 3,
};
