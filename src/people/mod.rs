//! People (issue 28): faces grouped by who they are. Owns the grouping rule (`cluster`),
//! pure over the face embeddings and what the user said; must not touch the database, the
//! queue or the files (the store keeps faces, vectors, people and the user's word; a walk
//! or a use case hands them to the rule and stores its answer).
//!
//! Must not import: store, http, ops, queue, walks

pub mod cluster;
