//! The scan pipeline (DESIGN.md section 5): walk → diff against known files → hash and
//! extract on rayon → fenced batches to the writer. It never writes SQL itself.
//!
//! Must not import: http, ops, rusqlite, r2d2

pub mod adopt;
pub mod beside;
pub mod diff;
pub mod hash;
pub mod identity;
pub mod job;
pub mod pipeline;
pub mod walk;
