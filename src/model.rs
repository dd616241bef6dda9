//! Plain data types shared by every module: ids, leases, states, rows as the rest of the
//! program sees them. Owns no behaviour beyond parsing and naming; must not depend on any
//! other module of the crate.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Milliseconds since the Unix epoch, as told by the injected clock.
pub type Millis = i64;

/// Which lease-carrying table a lease belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    Job,
    ScanRun,
}

/// A lease: the right to write into one row while `generation` is still the row's generation,
/// the row is `running` and the lease has not expired. `expires_at` is the holder's view
/// after its last successful claim or renew.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Lease {
    pub target: Target,
    pub id: i64,
    pub generation: i64,
    pub owner: String,
    pub expires_at: Millis,
}

macro_rules! string_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($(#[$vm])* $variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
            pub fn parse(text: &str) -> Option<Self> {
                match text { $($text => Some($name::$variant),)+ _ => None }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

string_enum!(
    /// Life of a job row.
    JobState {
        Queued => "queued",
        Running => "running",
        Done => "done",
        Failed => "failed",
        Cancelled => "cancelled",
    }
);

string_enum!(
    /// Life of a scan run row. `accepted` is waiting; `interrupted` is a run that was handed
    /// back (shutdown, forced release) and folded into the run already waiting.
    RunState {
        Accepted => "accepted",
        Running => "running",
        Completed => "completed",
        Suspect => "suspect",
        Failed => "failed",
        Cancelled => "cancelled",
        Interrupted => "interrupted",
    }
);

string_enum!(
    /// What asked for a scan.
    Trigger {
        Manual => "manual",
        Boot => "boot",
        Watch => "watch",
        Schedule => "schedule",
        Api => "api",
    }
);

impl JobState {
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobState::Done | JobState::Failed | JobState::Cancelled
        )
    }
}

impl RunState {
    pub fn is_terminal(self) -> bool {
        !matches!(self, RunState::Accepted | RunState::Running)
    }
}

/// How a scan run that ran to its end is recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunOutcome {
    Completed,
    /// Finished, but the circuit breaker held back trashing: the UI asks the user.
    Suspect,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Library {
    pub id: i64,
    pub name: String,
    pub root: String,
    pub created_at: Millis,
}

/// A job to insert.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewJob {
    pub kind: String,
    pub unique_key: Option<String>,
    pub payload: String,
    pub max_attempts: i64,
}

impl NewJob {
    pub fn new(kind: impl Into<String>, payload: impl Into<String>) -> Self {
        NewJob {
            kind: kind.into(),
            unique_key: None,
            payload: payload.into(),
            max_attempts: 5,
        }
    }

    pub fn unique(mut self, key: impl Into<String>) -> Self {
        self.unique_key = Some(key.into());
        self
    }

    pub fn max_attempts(mut self, n: i64) -> Self {
        self.max_attempts = n.max(1);
        self
    }
}

/// What a worker claims: a job kind and, for a walk chain, the highest scheme it walks. A
/// chain row of a higher scheme is left to the newer binary walking it; only once no newer
/// binary holds a live lease on it does this worker take it (a rollback).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct JobFilter {
    pub kind: String,
    pub max_scheme: Option<i64>,
}

impl JobFilter {
    pub fn new(kind: impl Into<String>, max_scheme: Option<i64>) -> Self {
        JobFilter {
            kind: kind.into(),
            max_scheme,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Job {
    pub id: i64,
    pub kind: String,
    pub unique_key: Option<String>,
    pub payload: String,
    pub state: JobState,
    pub generation: i64,
    pub attempts: i64,
    pub max_attempts: i64,
    pub run_at: Millis,
    pub lease_owner: Option<String>,
    pub lease_expires_at: Option<Millis>,
    /// The holder's last successful heartbeat (claim or renew).
    pub heartbeat_at: Option<Millis>,
    pub checkpoint: Option<String>,
    pub last_error: Option<String>,
    pub created_at: Millis,
    pub updated_at: Millis,
    pub finished_at: Option<Millis>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ScanRun {
    pub id: i64,
    pub library_id: i64,
    /// Library-relative path, `/`-separated; empty means the whole library.
    pub scope: String,
    pub trigger: Trigger,
    pub watch_event: Option<String>,
    pub state: RunState,
    pub reason: Option<String>,
    pub generation: i64,
    pub attempt: i64,
    pub run_at: Millis,
    pub lease_owner: Option<String>,
    pub lease_expires_at: Option<Millis>,
    pub progress: Option<String>,
    pub requested_at: Millis,
    pub accepted_at: Millis,
    pub started_at: Option<Millis>,
    pub finished_at: Option<Millis>,
    pub updated_at: Millis,
    pub predecessor_id: Option<i64>,
    /// Every file in scope is re-read, changed or not.
    pub forced: bool,
}

/// A request for a scan, as admission receives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanRequest {
    pub library_id: i64,
    pub scope: String,
    pub trigger: Trigger,
    pub watch_event: Option<String>,
}

/// The smallest scope covering both: scopes are library-relative paths and `""` is the
/// whole library, so the answer is their longest common run of path components.
pub fn widen_scope(a: &str, b: &str) -> String {
    let common: Vec<&str> = a
        .split('/')
        .zip(b.split('/'))
        .take_while(|(x, y)| x == y && !x.is_empty())
        .map(|(x, _)| x)
        .collect();
    common.join("/")
}

/// What `reclaim_stale` did, for logs and counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReclaimReport {
    /// Expired jobs put back in the queue (generation + 1, attempts + 1, backoff).
    pub jobs_requeued: u64,
    /// Expired jobs that had used their last attempt.
    pub jobs_failed: u64,
    /// Expired scan runs retired as `failed` / `lease_expired`.
    pub runs_retired: u64,
    /// Successor runs created or folded into a waiting run.
    pub run_successors: u64,
}

/// Named persistent counters (exported later by /metrics).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Counter {
    FenceRejections,
    ReclaimedJobsRequeued,
    ReclaimedJobsFailed,
    ReclaimedRunsRetired,
    ReclaimSuccessors,
    JobRetries,
    /// Files whose whole content a scan read and hashed (committed batches only).
    FilesHashed,
    /// Their bytes.
    BytesHashed,
}

impl Counter {
    pub const ALL: &'static [Counter] = &[
        Counter::FenceRejections,
        Counter::ReclaimedJobsRequeued,
        Counter::ReclaimedJobsFailed,
        Counter::ReclaimedRunsRetired,
        Counter::ReclaimSuccessors,
        Counter::JobRetries,
        Counter::FilesHashed,
        Counter::BytesHashed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Counter::FenceRejections => "fence_rejections",
            Counter::ReclaimedJobsRequeued => "reclaimed_jobs_requeued",
            Counter::ReclaimedJobsFailed => "reclaimed_jobs_failed",
            Counter::ReclaimedRunsRetired => "reclaimed_runs_retired",
            Counter::ReclaimSuccessors => "reclaim_successors",
            Counter::JobRetries => "job_retries",
            Counter::FilesHashed => "files_hashed",
            Counter::BytesHashed => "bytes_hashed",
        }
    }
}

/// What kind of media a file is, by its content (not its name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MediaKind {
    Image,
    Video,
    /// Sniffed as something that is neither (a document, an archive, unknown bytes).
    Other,
}

impl MediaKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MediaKind::Image => "image",
            MediaKind::Video => "video",
            MediaKind::Other => "other",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "image" => Some(MediaKind::Image),
            "video" => Some(MediaKind::Video),
            "other" => Some(MediaKind::Other),
            _ => None,
        }
    }
}

/// The facts the pure extractors of `media/` read from one file. Every field is optional:
/// a corrupt, truncated or mislabelled file yields what could be read, plus `error`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MediaFacts {
    pub kind: Option<MediaKind>,
    /// MIME type by content sniffing, e.g. `image/jpeg`, `video/quicktime`.
    pub mime: Option<String>,
    /// Stored pixel dimensions.
    pub width: Option<u32>,
    pub height: Option<u32>,
    /// Dimensions as displayed (after EXIF orientation: swapped for 5..=8).
    pub display_width: Option<u32>,
    pub display_height: Option<u32>,
    /// Capture time as the camera wrote it, `YYYY-MM-DDTHH:MM:SS[.fff]` local wall time.
    pub taken_local: Option<String>,
    /// The UTC offset of `taken_local` in minutes, when the file says so.
    pub taken_offset_minutes: Option<i32>,
    pub make: Option<String>,
    pub model: Option<String>,
    pub lat: Option<f64>,
    pub lon: Option<f64>,
    /// EXIF orientation 1..=8.
    pub orientation: Option<u16>,
    pub duration_ms: Option<i64>,
    pub video_codec: Option<String>,
    /// What could not be read, for the file row; `None` when everything parsed.
    pub error: Option<String>,
}

impl MediaFacts {
    /// The capture time as shown to users: RFC 3339 with the offset when the file says it,
    /// else the camera's local wall time.
    pub fn taken_at(&self) -> Option<String> {
        let local = self.taken_local.as_deref()?;
        Some(match self.taken_offset_minutes {
            Some(m) => {
                let sign = if m < 0 { '-' } else { '+' };
                format!("{local}{sign}{:02}:{:02}", m.abs() / 60, m.abs() % 60)
            }
            None => local.to_string(),
        })
    }
}

string_enum!(
    /// Why a scan processed (read) a file: the diff's verdict, kept on the file row.
    FileReason {
        New => "new",
        Size => "size",
        Mtime => "mtime",
        Inode => "inode",
        Forced => "forced",
        Error => "error",
    }
);

string_enum!(
    /// What a run's provenance counts are kept by: the file reasons, plus files seen
    /// unchanged, files marked missing and files that turned out to duplicate a live asset.
    Provenance {
        New => "new",
        Size => "size",
        Mtime => "mtime",
        Inode => "inode",
        Forced => "forced",
        Error => "error",
        Unchanged => "unchanged",
        Missing => "missing",
        Duplicate => "duplicate",
    }
);

impl From<FileReason> for Provenance {
    fn from(r: FileReason) -> Self {
        match r {
            FileReason::New => Provenance::New,
            FileReason::Size => Provenance::Size,
            FileReason::Mtime => Provenance::Mtime,
            FileReason::Inode => Provenance::Inode,
            FileReason::Forced => Provenance::Forced,
            FileReason::Error => Provenance::Error,
        }
    }
}

string_enum!(
    /// Whether a known path was found by the last full scan that could say so.
    FileState {
        Present => "present",
        Missing => "missing",
    }
);

string_enum!(
    /// How one ingested file's checksum was matched to an asset (DESIGN.md section 6).
    Claim {
        /// No asset had this checksum: a new one was created.
        Created => "created",
        /// A live asset had it and the file did not point at it before: a duplicate.
        Duplicate => "duplicate",
        /// The file already pointed at the live asset with this checksum.
        Kept => "kept",
        /// A trashed asset had it: restored by id.
        Restored => "restored",
        /// The trashed asset was swept meanwhile: stored afresh under a new id.
        Recreated => "recreated",
        /// The file could not be read (no checksum): recorded with its error, link kept.
        Unreadable => "unreadable",
    }
);

string_enum!(
    /// Why an asset is in the trash.
    TrashReason {
        /// Its last file went missing in a full scan.
        Missing => "missing",
        /// Its last file was overwritten with other content.
        Replaced => "replaced",
        /// The user trashed it.
        User => "user",
    }
);

string_enum!(
    /// What a trash journal intent moves.
    TrashAction {
        Trash => "trash",
        Restore => "restore",
    }
);

string_enum!(
    /// Life of a trash journal intent: pending until the move is committed (or given up).
    IntentState {
        Pending => "pending",
        Done => "done",
        Aborted => "aborted",
    }
);

/// What the diff compares: an unchanged stamp means the file is not opened again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct FileStamp {
    pub size: u64,
    /// Modification time in nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
    pub dev: u64,
    pub inode: u64,
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
}

/// The identity of a library root for the circuit breaker: the root's device id and the id
/// in its `.mediadex-library` marker, as recorded at `library add`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LibraryIdentity {
    pub root_dev: Option<u64>,
    pub marker_id: Option<String>,
}

/// One path of an asset.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AssetPath {
    pub file_id: i64,
    pub library_id: i64,
    pub rel_path: Vec<u8>,
    pub rel_path_text: String,
    pub state: FileState,
}

impl AssetPath {
    /// The exact path bytes in base64, only where `rel_path_text` is not them (a name that
    /// is not UTF-8 shows U+FFFD; a backslash shows as `/`): the JSON outputs carry these
    /// beside the text so that a script can open every file. Base64 rather than an array of
    /// numbers: a 4,000-byte path stays one short string, and `base64 -d` or one standard
    /// library call gives the bytes back.
    pub fn bytes_if_lossy(&self) -> Option<String> {
        let exact = std::str::from_utf8(&self.rel_path) == Ok(self.rel_path_text.as_str());
        (!exact).then(|| {
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &self.rel_path)
        })
    }
}

/// An asset with the paths that show it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Asset {
    pub id: i64,
    pub owner: String,
    pub checksum: [u8; 32],
    pub size: u64,
    /// What the extractors found (its `error` is always `None` here: errors stay on files).
    pub facts: MediaFacts,
    pub created_at: Millis,
    pub trashed_at: Option<Millis>,
    pub trash_reason: Option<TrashReason>,
    /// Present paths first, then missing ones; by library and path.
    pub paths: Vec<AssetPath>,
    /// The content hash and the scheme that computed it; `None` until stamped.
    pub content_hash: Option<ContentHash>,
    /// The detector version `faces` came from; `None` until a detector ran on it.
    pub faces_scheme: Option<i64>,
    /// The faces stored for `faces_scheme`.
    pub faces: Vec<DetectedFace>,
}

/// Files sharing one asset: byte-identical copies.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DuplicateGroup {
    pub asset_id: i64,
    pub checksum: [u8; 32],
    pub size: u64,
    /// The present files, two or more.
    pub files: Vec<AssetPath>,
}

/// Assets that are the same picture with different metadata: one content hash (under one
/// scheme), different checksums. At least one of them is live; trashed ones are listed too.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ContentTwins {
    pub content_hash: ContentHash,
    /// By id, each with its paths.
    pub assets: Vec<Asset>,
}

/// A trash journal entry: move `from_path` to `to_path` (library-relative) in the library,
/// then commit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TrashIntent {
    pub id: i64,
    pub asset_id: i64,
    pub library_id: i64,
    pub action: TrashAction,
    pub from_path: Vec<u8>,
    pub to_path: Vec<u8>,
    pub state: IntentState,
    pub created_at: Millis,
    /// Shared by the intents of one begin call (one trash or one restore); a later move
    /// has a higher id.
    pub move_id: i64,
}

/// How the asset flipped when the last intent of a trash or restore was settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MoveOutcome {
    Trashed,
    Restored,
    /// The asset was live already (another path restored it): nothing to do.
    AlreadyLive,
    /// The sweep deleted the asset first: the moved file is found afresh by the next scan.
    Gone,
}

/// The job kind of a move: one asset's trash or restore, held by a lease like any work.
pub const MOVE_JOB_KIND: &str = "move";

/// One asset's trash or restore (DESIGN.md sections 4 and 6): its intents, one per file,
/// held by the lease on job `job_id`. `rollback` is set once the move is being undone, with
/// the reason it could not be finished.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Move {
    pub job_id: i64,
    pub asset_id: i64,
    pub action: TrashAction,
    pub move_id: i64,
    pub intents: Vec<TrashIntent>,
    pub rollback: Option<String>,
}

/// What starting a move answers: settled at once (nothing to move), or held under a lease.
#[derive(Debug)]
pub enum Begun {
    Settled(MoveOutcome),
    Held(Lease, Move),
}

/// How one intent of a held move is settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settle {
    /// The file moved (pending -> done); its row follows the action.
    Done,
    /// The file is where it started (pending or done -> aborted); a done row reverts.
    Back,
    /// The file is found at neither place (pending or done -> aborted); its row is missing.
    Vanished,
}

/// The end of a held move's forward half.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finish {
    /// The asset flipped and the move's job is done.
    Flipped(MoveOutcome),
    /// Files of the asset are present that the move did not move (linked by a scan while
    /// it ran): nothing flipped, the move must be rolled back.
    Linked(Vec<String>),
}

/// The trash folder in each library root.
pub const TRASH_DIR: &str = ".mediadex-trash";

/// Where a trashed file goes in its library: `.mediadex-trash/<asset id>/<rel_path>`.
pub fn trash_path(asset_id: i64, rel_path: &[u8]) -> Vec<u8> {
    let mut p = format!("{TRASH_DIR}/{asset_id}/").into_bytes();
    p.extend_from_slice(rel_path);
    p
}

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
    }
);

impl WalkKindId {
    /// The job kind and unique key of the kind's chain: one live chain per kind.
    pub fn job_kind(self) -> &'static str {
        match self {
            WalkKindId::ContentHash => "walk:content-hash",
            WalkKindId::Faces => "walk:faces",
        }
    }
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
/// whether the last scan saw it present, and the stamp the scan recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkFile {
    pub root: String,
    pub rel_path: Vec<u8>,
    pub present: bool,
    pub stamp: FileStamp,
}

/// An asset a walk batch visits, with the files that may show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkAsset {
    pub id: i64,
    pub checksum: [u8; 32],
    pub trashed: bool,
    pub files: Vec<WalkFile>,
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
    Faces {
        version: i64,
        found: Vec<(i64, Vec<DetectedFace>)>,
    },
}

impl WalkResults {
    pub fn len(&self) -> usize {
        match self {
            WalkResults::ContentHashes(v) => v.len(),
            WalkResults::Faces { found, .. } => found.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One fenced walk batch commit: the results, the chain's advance (`next`, the follow-up
/// row carrying the cursor) or, for the last (short) batch, the walk record's raise to
/// `complete_scheme`. Exactly one of `next` and `complete_scheme` is set.
#[derive(Clone, Debug, PartialEq)]
pub struct WalkCommit {
    pub kind: WalkKindId,
    pub results: WalkResults,
    pub next: Option<NewJob>,
    pub complete_scheme: Option<i64>,
    /// The chain walks a rollback: it re-stamps what a newer scheme stamped.
    pub rollback: bool,
}

/// Which assets a walk chain visits under `scheme`: those lacking its stamp (one a newer
/// scheme stamped lacks nothing, except in a `rollback`), or every one (`force`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalkVisit {
    pub scheme: i64,
    pub force: bool,
    pub rollback: bool,
}

/// The job kind that makes the thumbnails of the assets a scan run published.
pub const THUMBS_JOB_KIND: &str = "thumbs";

/// A `thumbs` job row's payload: the scan run whose fenced completion published the assets,
/// the highest asset id it published (`last`), and the cursor (`after`: the last asset id
/// done; the first row starts just below the lowest id published). Each batch completes
/// its row and enqueues the next with the cursor moved on, in one fenced transaction.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThumbsPayload {
    pub run: i64,
    pub after: i64,
    pub last: i64,
    /// Assets visited by the rows before this one.
    #[serde(default)]
    pub visited: u64,
}

impl ThumbsPayload {
    /// The first row for the ids `first..=last` a completion of `run` published.
    pub fn published(run: i64, first: i64, last: i64) -> ThumbsPayload {
        ThumbsPayload {
            run,
            after: first - 1,
            last,
            visited: 0,
        }
    }

    /// `None` for a payload this binary cannot read.
    pub fn parse(text: &str) -> Option<ThumbsPayload> {
        serde_json::from_str(text).ok()
    }

    /// The job row carrying this payload: one live row per run (a chain advancing itself).
    pub fn job(&self) -> NewJob {
        let payload = serde_json::to_string(self).unwrap_or_else(|_| "{}".to_string());
        // A batch is cheap to redo (made thumbnails are skipped); the attempts only bound a
        // batch whose store reads keep failing.
        NewJob::new(THUMBS_JOB_KIND, payload)
            .unique(format!("{THUMBS_JOB_KIND}:{}", self.run))
            .max_attempts(10)
    }
}

/// An asset the thumbs job visits: the files that may show it (as a walk sees them) and
/// what the thumbnailer needs to know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThumbAsset {
    pub asset: WalkAsset,
    pub kind: MediaKind,
    pub mime: Option<String>,
    pub orientation: Option<u16>,
    pub width: Option<u32>,
    pub height: Option<u32>,
}

/// Lowercase hex of a checksum.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Which assets a page of the asset list shows. Every `None` is "any".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AssetFilter {
    /// The trash instead of the live assets.
    pub trashed: bool,
    pub kind: Option<MediaKind>,
    /// Taken at or after this local wall time (`YYYY-MM-DD[THH:MM:SS]`).
    pub taken_from: Option<String>,
    /// Taken strictly before this local wall time.
    pub taken_before: Option<String>,
    pub make: Option<String>,
    pub model: Option<String>,
    pub has_gps: Option<bool>,
    /// Assets whose current face results hold at least one face (or none).
    pub has_faces: Option<bool>,
}

/// Where a page of the timeline (newest taken first, undated last, then by id) ends: the
/// next page starts strictly after it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AssetCursor {
    /// The last item's capture time as stored, `""` when undated.
    pub taken: String,
    pub id: i64,
}

/// One page of the asset list. Items carry no paths (ask for one asset for those).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AssetPage {
    pub items: Vec<Asset>,
    /// `None` on the last page.
    pub next: Option<AssetCursor>,
}

/// Queue figures of one kind of work (a job kind, or `scan` for scan runs).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct QueueStats {
    pub kind: String,
    /// Waiting (queued or accepted) rows.
    pub waiting: i64,
    /// Age of the oldest waiting row, ms (0 when none waits).
    pub oldest_waiting_ms: Millis,
    pub running: i64,
    /// The longest time since a running row's last heartbeat, ms.
    pub max_heartbeat_age_ms: Millis,
    /// The longest time a running row has held its current lease, ms (since its claim for
    /// scan runs; since its last state change for jobs, which keep no claim time).
    pub max_lease_age_ms: Millis,
}

/// Everything /metrics reports that lives in the database.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MetricsSnapshot {
    pub queues: Vec<QueueStats>,
    /// Persistent counters by name (every `Counter`, plus `scheme_restarts` when present).
    pub counters: Vec<(String, i64)>,
    /// Per library: id, name, when its last completed scan finished.
    pub last_scan: Vec<(i64, String, Option<Millis>)>,
    /// Visible live assets by kind (`unknown` when not sniffed).
    pub assets_by_kind: Vec<(String, i64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widen_scope_is_the_common_ancestor() {
        assert_eq!(widen_scope("", "a/b"), "");
        assert_eq!(widen_scope("a/b", "a/b"), "a/b");
        assert_eq!(widen_scope("a/b/c", "a/b"), "a/b");
        assert_eq!(widen_scope("a/b", "a/c"), "a");
        assert_eq!(widen_scope("ab", "a"), "");
        assert_eq!(widen_scope("x", "y"), "");
    }

    #[test]
    fn path_bytes_are_given_only_where_the_text_is_lossy() {
        let path = |bytes: &[u8], text: &str| AssetPath {
            file_id: 1,
            library_id: 1,
            rel_path: bytes.to_vec(),
            rel_path_text: text.into(),
            state: FileState::Present,
        };
        assert_eq!(path(b"a/b\n.png", "a/b\n.png").bytes_if_lossy(), None);
        assert_eq!(
            path(b"\xff", "\u{fffd}").bytes_if_lossy(),
            Some("/w==".into())
        );
        assert_eq!(path(b"a\\b", "a/b").bytes_if_lossy(), Some("YVxi".into()));
    }
}
