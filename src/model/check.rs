//! `mediadex check` (DESIGN.md section 6, the library invariant): where the index and the
//! disk disagree, said in words, and what `--repair` did about it. Plain data (see the parent
//! module); must not depend on any other module of the crate.

use super::*;

string_enum!(
    /// A kind of disagreement between the index and the disk.
    FindingKind {
        /// The library's folder is not there, or not the one indexed: it was skipped.
        LibraryAway => "library_away",
        /// A live, published asset none of whose files is on disk.
        LiveWithoutFile => "live_without_file",
        /// A file row says present; nothing is at its path.
        FileGone => "file_gone",
        /// A file row says present; the file at its path has another stamp.
        FileChanged => "file_changed",
        /// A trashed asset whose files are gone from its trash folder.
        TrashGone => "trash_gone",
        /// A trashed asset whose file is back at its library path.
        TrashBack => "trash_back",
        /// A move begun and unsettled that no live move job carries on.
        MoveOrphaned => "move_orphaned",
        /// A file in a trash folder that neither the trash journal nor an asset explains.
        TrashUnexplained => "trash_unexplained",
        /// A pending asset whose scan run is gone or ended, with no run of its library
        /// coming to publish it.
        Stranded => "stranded",
    }
);

/// One disagreement: its kind, what it is about, and what it is in words.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub kind: FindingKind,
    pub library_id: Option<i64>,
    pub asset_id: Option<i64>,
    /// The library-relative path it is about, when there is one.
    pub path: Option<Vec<u8>>,
    pub message: String,
}

/// What a check found, and over how many libraries (away ones included).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Check {
    pub libraries: usize,
    pub findings: Vec<Finding>,
}

string_enum!(
    /// What `--repair` did about a finding.
    RepairKind {
        /// A trash-folder file indexed as a trashed asset whose trash moved it there.
        Adopted => "adopted",
        /// A stranded asset with a present file made visible.
        Published => "published",
        /// A stranded asset without a present file put in the trash as missing.
        TrashedMissing => "trashed_missing",
        /// An orphaned move given a move job again.
        MoveRequeued => "move_requeued",
        /// A full scan of a present library asked for (it heals the rest).
        ScanRequested => "scan_requested",
        /// Nothing could be done without risk; left as it is, with why.
        Left => "left",
    }
);

/// One thing a repair did (or left), in words.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Repair {
    pub kind: RepairKind,
    pub library_id: Option<i64>,
    pub asset_id: Option<i64>,
    pub path: Option<Vec<u8>>,
    pub message: String,
}

/// A repair: what the check found first, and what was done about it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Repaired {
    pub found: Vec<Finding>,
    pub done: Vec<Repair>,
}

/// A file of a library's trash folder to index as a trashed asset (`Store::check_adopt`):
/// where it is (`trash_path`), where its trash took it from (`from_path`), its stamp and
/// what its bytes are.
#[derive(Clone, Debug, PartialEq)]
pub struct Adoption {
    pub library_id: i64,
    pub from_path: Vec<u8>,
    pub trash_path: Vec<u8>,
    pub stamp: FileStamp,
    pub checksum: [u8; 32],
    pub facts: MediaFacts,
}

/// What an adoption came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Adopted {
    /// Indexed as this new trashed asset.
    New(i64),
    /// Another file of this trashed asset (one trash moved both): joined to its latest
    /// trash, so that its restore puts both back.
    Joined(i64),
    /// Byte-identical to this asset, which the index has live (or not yet published):
    /// nothing was written.
    Copy(i64),
    /// A file row holds its library path already (another file is there or was): nothing
    /// was written, for a restore would have nowhere to put it.
    PlaceTaken,
    /// The trash journal names it now (another process adopted or moved it meanwhile).
    Known,
}

/// A pending asset found stranded: its run (gone when `run_state` is `None`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StrandedAsset {
    pub asset_id: i64,
    pub run_id: i64,
    pub run_state: Option<String>,
}

/// A move's pending intents that no live move job carries on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrphanedMove {
    pub move_id: i64,
    pub asset_id: i64,
    pub action: TrashAction,
}

/// A file row as the check compares it with the disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckedFile {
    pub rel_path: Vec<u8>,
    pub stamp: FileStamp,
    pub asset_id: Option<i64>,
    pub present: bool,
    /// Its asset is in the trash.
    pub trashed: bool,
}

/// A file the latest trash move of a trashed asset put in its trash folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrashedFile {
    pub asset_id: i64,
    pub library_id: i64,
    pub from_path: Vec<u8>,
    pub to_path: Vec<u8>,
}
