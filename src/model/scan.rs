//! What the scan pipeline and the diff exchange with the store: stamps, known files and
//! folders, batches and their reports. Plain data (see the parent module); must not depend on
//! any other module of the crate.

use super::*;

/// What the diff compares: an unchanged stamp means the file is not opened again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct FileStamp {
    pub size: u64,
    /// Modification time in nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
    pub dev: u64,
    pub inode: u64,
}

impl FileStamp {
    /// The stamp of a file as the OS describes it (`metadata` follows a symlink to its
    /// target, `symlink_metadata` does not: the caller chooses). Here, below every module
    /// that compares stamps, so that none of them imports the scanner for it.
    #[cfg(unix)]
    pub fn of(meta: &std::fs::Metadata) -> FileStamp {
        use std::os::unix::fs::MetadataExt;
        FileStamp {
            size: meta.size(),
            mtime_ns: meta.mtime().saturating_mul(1_000_000_000) + meta.mtime_nsec(),
            dev: meta.dev(),
            inode: meta.ino(),
        }
    }

    /// Elsewhere no device or inode number is at hand: size and time only.
    #[cfg(not(unix))]
    pub fn of(meta: &std::fs::Metadata) -> FileStamp {
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        FileStamp {
            size: meta.len(),
            mtime_ns,
            dev: 0,
            inode: 0,
        }
    }
}

/// A present file of a library as the store knows it, for the diff.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KnownFile {
    /// The file row's id.
    pub id: i64,
    /// Library-relative path bytes, `/`-separated.
    pub rel_path: Vec<u8>,
    pub stamp: FileStamp,
    pub asset_id: Option<i64>,
    /// The last read of this file failed (its stamp may match, but it was never hashed):
    /// the scan may want to try again.
    pub has_error: bool,
    /// Its last read found a picture or video (false: a file kept without an asset).
    pub media: bool,
    /// Why the next scan reads it though its stamp is unchanged (`back`, `sidecar`), if it
    /// must (migration 0021).
    pub read_again: Option<FileReason>,
}

/// What the store knows directly inside one directory of a library: its present files, and
/// the names of its sub-directories that hold file rows (present or missing).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KnownDir {
    pub files: Vec<KnownFile>,
    /// Names (one path component, raw bytes) of the sub-directories with known files.
    pub subdirs: Vec<Vec<u8>>,
}

/// What a walk that listed its directories found gone, for a full scan's missing marking:
/// known files of fully listed directories that the walk did not see, and known
/// sub-directories that were no longer there (everything below them is gone).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unseen {
    /// File row ids.
    pub files: Vec<i64>,
    /// Library-relative directory paths, `/`-separated bytes.
    pub dirs: Vec<Vec<u8>>,
}

/// How a scan run ends, handed to its fenced completion.
#[derive(Clone, Debug, PartialEq)]
pub struct ScanEnd {
    /// The circuit breaker's threshold: the largest share of present files that may go
    /// missing in one full scan.
    pub max_missing_share: f64,
    /// False when the library root's identity changed: nothing may go missing.
    pub identity_ok: bool,
    /// What the walk found gone (used by a full-scope run only).
    pub unseen: Unseen,
    /// Unchanged files not yet counted in the run's reasons.
    pub unchanged: u64,
    /// The final progress, or `None` to keep the last one.
    pub progress: Option<String>,
    /// The walk the completion queues in its own transaction (the face walk that detects
    /// the run's new and restored assets), if any.
    pub follow_up: Option<WalkRequest>,
    /// The trash-folder files no move explains, read as the trashed assets they are
    /// (`scan::adopt`): a full scope's completion adopts them unless it ends suspect.
    pub adoptions: Vec<super::Adoption>,
}

impl ScanEnd {
    /// An end with nothing unseen and nothing left to count.
    pub fn breaker(max_missing_share: f64, identity_ok: bool) -> ScanEnd {
        ScanEnd {
            max_missing_share,
            identity_ok,
            unseen: Unseen::default(),
            unchanged: 0,
            progress: None,
            follow_up: None,
            adoptions: Vec::new(),
        }
    }

    pub fn unseen(self, unseen: Unseen) -> ScanEnd {
        ScanEnd { unseen, ..self }
    }
}

/// The error kept on a file that was read and is no picture or video. It tells such a file
/// (no asset, not read again until it changes) from a picture whose asset is gone, which
/// the next scan claims again; older versions wrote the same text.
pub const NOT_MEDIA: &str = "not a photo or video";

/// One processed file, as the scan pipeline hands it to the store.
#[derive(Clone, Debug, PartialEq)]
pub struct IngestItem {
    /// Library-relative path bytes, `/`-separated, lossless.
    pub rel_path: Vec<u8>,
    /// The same path rendered lossily, for display.
    pub rel_path_text: String,
    pub stamp: FileStamp,
    pub reason: FileReason,
    /// blake3 of the whole file; `None` when it could not be read.
    pub checksum: Option<[u8; 32]>,
    /// The content hash computed from the same read, stamped on the asset it claims.
    pub content_hash: Option<ContentHash>,
    pub facts: Option<MediaFacts>,
    /// What went wrong reading or parsing the file, kept on its row.
    pub error: Option<String>,
    /// Whether another file of its folder may share its stem: `false` only when the scan
    /// listed the folder and found none, and the writer then skips the stack and Live Photo
    /// lookups by name. `true` is always correct, only slower.
    pub namesake: bool,
}

/// What became of one ingested file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ItemOutcome {
    pub file_id: i64,
    pub asset_id: Option<i64>,
    pub claim: Claim,
}

/// The answer of one fenced ingest batch: one outcome per item, in input order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BatchReport {
    pub items: Vec<ItemOutcome>,
}

impl BatchReport {
    pub fn count(&self, claim: Claim) -> usize {
        self.items.iter().filter(|i| i.claim == claim).count()
    }

    /// Assets this batch created or brought back (new faces to detect once the run ends).
    pub fn new_or_restored_assets(&self) -> Vec<i64> {
        self.items
            .iter()
            .filter(|i| matches!(i.claim, Claim::Created | Claim::Recreated | Claim::Restored))
            .filter_map(|i| i.asset_id)
            .collect()
    }
}

/// How a full scan ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FinishReport {
    pub state: RunState,
    /// Why the run is suspect (the circuit breaker held), or `None`.
    pub reason: Option<String>,
    /// Files marked missing by this run (0 when suspect or scoped).
    pub missing_files: u64,
    /// Assets trashed because their last file went missing.
    pub trashed_assets: u64,
    /// Trash-folder files no move explained that are now in the trash (new assets, or
    /// copies joining a trashed one).
    pub adopted: u64,
}

/// A file or folder a scan run could not list, read or parse, with its error: one row of
/// the run's problem list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunProblem {
    /// Library-relative path bytes, `/`-separated, lossless.
    pub rel_path: Vec<u8>,
    /// The same path rendered lossily, for display.
    pub rel_path_text: String,
    pub error: String,
}

impl RunProblem {
    /// The path's exact bytes in base64 where `rel_path_text` is lossy (the rule of
    /// `AssetPath::bytes_if_lossy`), else `None`.
    pub fn bytes_if_lossy(&self) -> Option<String> {
        let exact = std::str::from_utf8(&self.rel_path) == Ok(self.rel_path_text.as_str());
        (!exact).then(|| {
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &self.rel_path)
        })
    }
}

/// A problem still open in a library (issue 27): the latest problem met at a path, until a
/// later run reads that path fine or it is gone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenProblem {
    pub library_id: i64,
    /// The last run that met it.
    pub run_id: i64,
    pub problem: RunProblem,
}

/// One fenced write of a scan run's data: its processed files, the ids of present files it
/// saw unchanged whose asset is in the trash (restored by id), how many unchanged files it
/// saw since its last write (they cost no row of their own), and the problems it met.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IngestBatch {
    pub items: Vec<IngestItem>,
    pub reclaim: Vec<i64>,
    /// Library-relative paths of known photos whose sidecar or Takeout JSON among `items`
    /// has a new stamp: marked to be read again (`files.read_again`), unless an item reads
    /// them.
    pub read_again: Vec<Vec<u8>>,
    /// Row ids of the `items` the store listed present when the scan met them: one that
    /// is missing now was settled by a move after the read, and is not written back.
    pub known_present: Vec<i64>,
    /// Library-relative paths of photos among `items` with the sidecars and Takeout JSONs
    /// their facts were read from: a photo one of whose files the store has no present row
    /// for after this batch is marked to be read again (`files.read_again`), so that a run
    /// cut before that file's own batch commits leaves no facts nothing would take away
    /// when the file goes (issue 25 finding 15).
    pub read_with: Vec<(Vec<u8>, Vec<Vec<u8>>)>,
    pub unchanged: u64,
    pub problems: Vec<RunProblem>,
}
