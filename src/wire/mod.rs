//! The wire contract: the JSON shapes of libraries, assets, duplicate and similar groups,
//! people and check findings that `mediadex ... --json` and the HTTP API both give, built from model values.
//! One projection for both
//! surfaces; only the path fields take each surface's form (`PathForm`: texts with their
//! exact bytes beside them for the CLI, one object per file for the API; docs/json.md,
//! "Paths that are not text"). Apart from the model, so that a stored type can change
//! without changing what a script or the page reads; docs/json.md's field tables are kept
//! true by tests/it/wire.rs. Plain data: owns no I/O, SQL or HTTP, renders nothing for
//! people.
//!
//! Must not import: store, queue, ops, app, rusqlite

mod assets;
mod check;
mod duplicates;
mod library;
mod people;
mod problems;
mod similar;

pub use assets::{Asset, AssetDetail, Face, FilePath, PathForm, Paths, Preview};
pub use check::{Check, Finding, Repair, Repaired};
pub use duplicates::{DuplicateGroup, Twin};
pub use library::Library;
pub use people::{FacePerson, Person};
pub use problems::{OpenProblem, Problem};
pub use similar::{Similar, SimilarGroup};
