//! The pipeline of one scan run: a walker thread feeds a bounded channel; a reader thread
//! diffs each file against what the store knows of its directory (an unchanged file is
//! never opened) and reads the changed ones on rayon, a batch at a time, while the calling
//! thread hands the previous batch to the sink (the fenced writer): reading batch N+1
//! overlaps the commit of batch N, and at most one batch waits. Memory is bounded by the
//! channel, two batches and the directories on the current walk path, not by the library.
//!
//! The diff also finds what is gone: for every directory the walk listed completely, the
//! known files it did not see and the known sub-directories that are no longer there
//! (`Summary::unseen`). A directory that could not be listed completely decides nothing.
//! A refused batch (lost lease) or a cancellation stops the walk and the reading. A walker
//! that panicked listed nothing completely: the run is an error, and nothing is gone.
//!
//! An unchanged file is not read, but one whose asset is in the trash or gone is claimed
//! again (DESIGN.md section 6, "the index heals itself"): the batch names it to be restored
//! by id, or it is read and stored afresh.
//!
//! A changed file's facts end the capture-date chain here, where its name and stamp are at
//! hand: a picture or video takes what its XMP sidecar and Takeout JSON say (`scan::beside`
//! finds them, `media::beside` merges), then undated media get the date in the name, else
//! the mtime (`media::fill_undated`). A sidecar or JSON the walk found new, changed or gone
//! makes the diff read its photo again (reason `sidecar`) when the walk leaves their folder,
//! whichever of the two it met first and whichever batch took each; the batch that takes a
//! new or changed one names its photos for the store to mark in that commit, so a run that
//! ends before their re-read loses no edit (`Batch::read_again`); each photo read says
//! which sidecar and JSON its facts come from (`Observed::beside_from`), for the store to
//! mark one whose sidecar has no row yet (issue 25 finding 15). A file the store marked
//! (back from the trash, or its sidecar's mark) is read though unchanged. Each batch names
//! the rows of the files it read that the store listed present (`Batch::known_present`),
//! so that the writer does not write back one a move settled after the read; a file gone
//! between the listing and its read is not in the batch at all (nothing was read).
//!
//! Each batch also carries the run's problems met in it, each with its error (what could
//! not be listed, read or parsed, and what was not indexed though its name or bytes claim
//! a photo or video), for the sink to record beside the batch.

use super::beside::{self, Listings};
use super::diff::{Reason, reason};
use super::hash::{Checksum, Extract, ReadTimes, prefetch, read_once};
use super::walk::{CHUNK, Stamp, WalkHook, Walked, walk};
use crate::media;
use crate::model::{MediaFacts, MediaKind};
use crate::store::StoreError;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded};
use rayon::prelude::*;
use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What the store knows of one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownStamp {
    /// The file row's id.
    pub id: i64,
    pub stamp: Stamp,
    /// What the file still needs if its stamp is unchanged.
    pub again: Again,
}

/// What a file with an unchanged stamp still needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Again {
    /// Nothing: it is not opened.
    #[default]
    Nothing,
    /// Its last read failed: read it again (reason `error`).
    Retry,
    /// The store marked it to be read again (migration 0021): it came back from the trash
    /// (reason `back`), or its sidecar's new stamp was stored before its re-read (reason
    /// `sidecar`).
    Reread(Reason),
    /// It is a picture or video whose asset is gone: read it, and its claim stores it
    /// afresh (reason `new`: it is new to the index).
    Claim,
    /// Its asset is in the trash: restore the asset by id, without reading the file.
    Restore,
}

impl Again {
    /// Why an unchanged file is read all the same, if it is.
    fn reason(self) -> Option<Reason> {
        match self {
            Again::Retry => Some(Reason::Error),
            Again::Reread(why) => Some(why),
            Again::Claim => Some(Reason::New),
            Again::Nothing | Again::Restore => None,
        }
    }
}

/// What the store knows directly inside one directory.
#[derive(Clone, Debug, Default)]
pub struct DirKnown {
    /// Present files by name.
    pub files: HashMap<OsString, KnownStamp>,
    /// Sub-directories with known files, by name.
    pub subdirs: HashSet<OsString>,
}

/// Looks up what is known per directory (library-relative; `""` is the root).
pub trait Known {
    fn dir(&mut self, rel_dir: &Path) -> Result<DirKnown, SinkError>;
}

/// One changed file, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    pub rel: PathBuf,
    pub stamp: Stamp,
    pub reason: Reason,
    /// `None` when the file could not be read (then `error` says why).
    pub checksum: Option<Checksum>,
    /// The content hash from the same read (`media::content_hash`); `None` with `checksum`.
    pub content_hash: Option<Checksum>,
    pub facts: Option<MediaFacts>,
    pub error: Option<String>,
    /// The sidecars or Takeout JSONs beside it that could not be read or parsed, each at its
    /// own path with its error: their problems, never the photo's.
    pub beside_problems: Vec<(PathBuf, String)>,
    /// The sidecar and Takeout JSON its facts come from (library-relative).
    pub beside_from: Vec<PathBuf>,
    /// Whether another name in its folder may share its stem (`beside::Listings::namesake`).
    pub namesake: bool,
}

/// What one batch carries to the sink.
#[derive(Debug, Default)]
pub struct Batch {
    pub changed: Vec<Observed>,
    /// How many files were seen with an unchanged stamp (they need no write of their own).
    pub unchanged: u64,
    /// File ids among the unchanged whose asset is in the trash: their asset is restored.
    pub reclaim: Vec<i64>,
    /// Known photos whose sidecar or Takeout JSON this batch stores with a new stamp: the
    /// store marks them to be read again in the same commit, so that a run that ends
    /// before their re-read (or never reads them: a scan of the sidecar alone) loses no
    /// edit. A re-read clears the mark (library-relative paths).
    pub read_again: Vec<PathBuf>,
    /// Row ids of the files of `changed` that the store listed present: the writer does not
    /// write one back that a move (the user's trash) marked missing after the read.
    pub known_present: Vec<i64>,
    /// The run's problems met in this batch, each with its error: entries that could not be
    /// listed or followed, then changed files that could not be read and pictures or videos
    /// that could not be parsed (see `problem`).
    pub problems: Vec<(PathBuf, String)>,
}

impl Batch {
    fn len(&self) -> usize {
        self.changed.len() + self.unchanged as usize + self.problems.len()
    }
}

/// Where batches go. An error stops the run (the lease is lost, or the store failed).
pub trait Sink {
    fn commit(&mut self, batch: Batch) -> Result<(), SinkError>;
    /// Called once after the last batch: returns when every batch committed is on disk
    /// (a sink may answer `commit` before its batch's transaction commits).
    fn flush(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
    /// Polled while batches are read: true once the run was cancelled.
    fn cancelled(&self) -> bool {
        false
    }
}

/// Why a run stopped before its end, typed so the run's handler can tell a cause that
/// passes by itself from one that does not.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error("the scan lease was lost")]
    LeaseLost,
    #[error("the scan was cancelled")]
    Cancelled,
    /// The store refused a read or a batch: nothing of the batch landed. A full disk makes
    /// the scan wait for space; a locked database makes it retry.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A thread of the scan could not be started (the system had no thread to give).
    #[error("cannot start the {what}: {source}")]
    Spawn {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// The reader thread panicked: a bug, and what it read is not complete anywhere.
    #[error("the scan reader panicked")]
    ReaderPanicked,
    /// The walker failed (panicked): its listing is not complete anywhere.
    #[error("the walk of the library failed ({0}); nothing was marked missing")]
    Walker(String),
}

#[derive(Clone, Debug)]
pub struct Settings {
    pub forced: bool,
    /// Entries per batch (changed files are read on rayon a batch at a time).
    pub batch: usize,
    /// Bytes of changed files per batch: a batch of videos commits (and shows progress)
    /// long before it holds `batch` of them, and a crash re-reads at most this much.
    pub batch_bytes: u64,
    /// Capacity of the walker's channel, in entries (rounded up to whole chunks).
    pub channel: usize,
    /// A test seam: called by the walker as it enters and leaves each directory.
    pub walk_hook: Option<WalkHook>,
    /// A test seam: called on the committing thread with each batch just before the sink
    /// takes it, so a test can change the library or end the run between two batches.
    pub commit_hook: Option<CommitHook>,
}

/// See `Settings::commit_hook`.
#[derive(Clone)]
pub struct CommitHook(pub std::sync::Arc<dyn Fn(&Batch) + Send + Sync>);

impl std::fmt::Debug for CommitHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CommitHook")
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            forced: false,
            // Each batch is one fsync'd commit, and it rewrites every index leaf page its
            // random checksum keys land in: 4096 files per batch made a 100,000-file first
            // index 1.20x faster than 1024 (benches/scan-compare.sh), for +4 MiB peak RSS
            // (a batch holds facts, never file bytes).
            batch: 4096,
            batch_bytes: 1 << 30,
            channel: 1024,
            walk_hook: None,
            commit_hook: None,
        }
    }
}

/// What the walk found gone, from the directories it listed completely.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Gone {
    /// Known files the walk did not see: file row id and library-relative path.
    pub files: Vec<(i64, PathBuf)>,
    /// Known sub-directories that were no longer there (library-relative).
    pub dirs: Vec<PathBuf>,
}

/// Counts of what a run saw, by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub by_reason: HashMap<&'static str, u64>,
    pub unchanged: u64,
    pub problems: u64,
    /// Files opened (hashed) by this run: zero for an unchanged rescan.
    pub files_read: u64,
    pub read_errors: u64,
    /// What is gone (meaningful for a walk of the whole library that ran to its end).
    pub unseen: Gone,
    /// Where this run's time went.
    pub stages: Stages,
}

/// Where a run spent its time, by stage (`Summary::stages`; `stage_totals` sums every run
/// of the process, for benches/scan.rs). Clocks are read per walk chunk, per batch and
/// three times per file read (the vDSO, no system call), so they are always on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stages {
    /// The walker thread's CPU time (listing directories, stat of every entry); its waits
    /// on a full channel are not counted.
    pub walk: Duration,
    /// Diffing the walk against what the store knows (its directory reads included).
    pub diff: Duration,
    /// Opening and reading changed files, summed over rayon's threads.
    pub read: Duration,
    /// Checksums and content hashes, summed over rayon's threads.
    pub hash: Duration,
    /// Media facts, summed over rayon's threads.
    pub extract: Duration,
    /// Handing batches to the sink (the fenced commits), on the committing thread.
    pub write: Duration,
}

impl Stages {
    fn as_array(&self) -> [Duration; 6] {
        [
            self.walk,
            self.diff,
            self.read,
            self.hash,
            self.extract,
            self.write,
        ]
    }
}

/// Every run's `Stages` of this process, summed in nanoseconds, in `as_array`'s order.
static STAGES: [AtomicU64; 6] = [const { AtomicU64::new(0) }; 6];

fn record_stages(stages: &Stages) {
    for (sum, time) in STAGES.iter().zip(stages.as_array()) {
        sum.fetch_add(
            u64::try_from(time.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }
}

/// The time every scan run of this process has spent in each stage so far.
pub fn stage_totals() -> Stages {
    let at = |i: usize| Duration::from_nanos(STAGES[i].load(Ordering::Relaxed));
    Stages {
        walk: at(0),
        diff: at(1),
        read: at(2),
        hash: at(3),
        extract: at(4),
        write: at(5),
    }
}

/// The CPU time of the calling thread so far (its wall time where there is no such clock).
fn thread_cpu(started: Instant) -> Duration {
    #[cfg(target_os = "linux")]
    {
        let _ = started;
        let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        let secs = u64::try_from(now.tv_sec).unwrap_or(0);
        Duration::new(secs, u32::try_from(now.tv_nsec).unwrap_or(0))
    }
    #[cfg(not(target_os = "linux"))]
    started.elapsed()
}

/// How often the committing side looks at the sink's cancellation while it waits.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// Runs the pipeline over `root/scope`. `extract` reads a changed file's metadata.
pub fn run(
    root: &Path,
    scope: &Path,
    settings: &Settings,
    known: &mut (dyn Known + Send),
    sink: &mut dyn Sink,
    extract: &Extract<'_>,
) -> Result<Summary, SinkError> {
    // The walker sends chunks of up to CHUNK entries: `channel` entries is this many chunks.
    let (tx, rx) = bounded(settings.channel.div_ceil(CHUNK).max(1));
    let walker = spawn_walker(root, scope, settings, tx)?;
    let stop = AtomicBool::new(false);
    let outcome = std::thread::scope(|s| {
        // A rendezvous channel: the reader hands batch N+1 over only once batch N is
        // committed, so one batch is read while one commits and none piles up.
        let (batch_tx, batch_rx) = bounded::<Batch>(0);
        let (rx, stop) = (&rx, &stop);
        let reader = std::thread::Builder::new()
            .name("mediadex-scan-reader".into())
            .spawn_scoped(s, move || {
                produce(root, settings, known, extract, rx, &batch_tx, stop)
            })
            .map_err(|source| SinkError::Spawn {
                what: "scan reader",
                source,
            })?;
        let mut write = Duration::ZERO;
        let hook = settings.commit_hook.as_ref();
        let committed = consume(sink, &batch_rx, hook, &mut write);
        stop.store(true, Ordering::SeqCst);
        drop(batch_rx);
        let read = reader
            .join()
            .unwrap_or_else(|_| Err(SinkError::ReaderPanicked));
        committed.and(read).map(|mut summary| {
            summary.stages.write = write;
            summary
        })
    });
    // Dropping the receiver ends a walk still in progress.
    drop(rx);
    // A panicking walker drops its sender too, which reads as the end of a complete listing:
    // only its join tells the two apart, and what the diff found gone is then worthless.
    match (outcome, walker.join()) {
        (Ok(_), Err(panic)) => Err(SinkError::Walker(panic_text(panic.as_ref()))),
        (Ok(mut summary), Ok(walk_cpu)) => {
            summary.stages.walk = walk_cpu;
            record_stages(&summary.stages);
            Ok(summary)
        }
        (outcome, _) => outcome,
    }
}

/// The walker thread; it answers its CPU time.
fn spawn_walker(
    root: &Path,
    scope: &Path,
    settings: &Settings,
    tx: Sender<Vec<Walked>>,
) -> Result<std::thread::JoinHandle<Duration>, SinkError> {
    let (walk_root, walk_scope) = (root.to_path_buf(), scope.to_path_buf());
    let hook = settings.walk_hook.clone();
    std::thread::Builder::new()
        .name("mediadex-walker".into())
        .spawn(move || {
            let started = Instant::now();
            walk(&walk_root, &walk_scope, &tx, hook.as_ref());
            thread_cpu(started)
        })
        .map_err(|source| SinkError::Spawn {
            what: "walker",
            source,
        })
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str));
    format!("the walker panicked: {}", text.unwrap_or("no message"))
}

/// The committing side: hands each batch to the sink, watching for a cancellation while
/// it waits for the next one. Returns when the reader is done or on the first refusal.
/// `write` sums the time the sink took over the batches.
fn consume(
    sink: &mut dyn Sink,
    batches: &Receiver<Batch>,
    hook: Option<&CommitHook>,
    write: &mut Duration,
) -> Result<(), SinkError> {
    loop {
        if sink.cancelled() {
            return Err(SinkError::Cancelled);
        }
        match batches.recv_timeout(CANCEL_POLL) {
            Ok(batch) => {
                if let Some(hook) = hook {
                    (hook.0)(&batch);
                }
                let started = Instant::now();
                let committed = sink.commit(batch);
                *write += started.elapsed();
                committed?
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return sink.flush(),
        }
    }
}

/// The reading side: diffs the walk, reads the changed files a batch at a time, hands each
/// batch over. Stops when the committing side stopped (`stop`, or its end of the channel).
fn produce(
    root: &Path,
    settings: &Settings,
    known: &mut (dyn Known + Send),
    extract: &Extract<'_>,
    walked: &Receiver<Vec<Walked>>,
    batches: &Sender<Batch>,
    stop: &AtomicBool,
) -> Result<Summary, SinkError> {
    let mut state = Diffing::new(root, settings, known);
    let mut summary = Summary::default();
    let hand_over = |batch: Batch| batches.send(batch).map_err(|_| SinkError::Cancelled);
    for chunk in walked.iter() {
        let mut diffing = Instant::now();
        for item in chunk {
            if stop.load(Ordering::SeqCst) {
                return Err(SinkError::Cancelled);
            }
            state.take(item)?;
            if state.pending() >= settings.batch.max(1)
                || state.to_read_bytes >= settings.batch_bytes
            {
                summary.stages.diff += diffing.elapsed();
                hand_over(state.flush(extract, &mut summary))?;
                diffing = Instant::now();
            }
        }
        summary.stages.diff += diffing.elapsed();
    }
    state.leave_all();
    hand_over(state.flush(extract, &mut summary))?;
    summary.unseen = std::mem::take(&mut state.gone);
    Ok(summary)
}

/// One directory on the current walk path: what the store knows inside it, minus what the
/// walk has seen there so far.
struct Frame {
    rel: PathBuf,
    known: DirKnown,
    /// False when the walk could not list it completely: then what it did not see there
    /// is not gone.
    listed: bool,
    /// The files the walk saw in it, for the photos a sidecar makes it read again.
    seen: HashMap<OsString, Seen>,
    /// Its sidecars and Takeout JSONs the walk found new or changed, each with the batch
    /// (`Diffing::epoch`) that took it.
    beside: Vec<(OsString, u64)>,
    /// The store's photos of it by the names beside them (`beside::photos_by_beside_name`),
    /// made when the walk first meets a new or changed sidecar or JSON in it.
    photos_by_beside: Option<HashMap<String, Vec<String>>>,
}

impl Frame {
    /// The photos of this folder that may have a row by now (known to the store, or seen
    /// by this run and perhaps stored by a batch already committed) and that the sidecar or
    /// JSON `beside` serves. A photo the walk sees after this is read with the sidecar as it
    /// is then, and is added (`saw_photo`) only for a later sidecar's sake.
    fn photos_of(&mut self, beside: &str) -> &[String] {
        let (known, seen) = (&self.known.files, &self.seen);
        let by_name = self.photos_by_beside.get_or_insert_with(|| {
            let names = known.keys().chain(seen.keys());
            beside::photos_by_beside_name(names.filter_map(|n| n.to_str()))
        });
        by_name.get(beside).map_or(&[], Vec::as_slice)
    }

    /// The walk saw `name` in this folder: once a sidecar made the map, it is kept whole.
    fn saw_photo(&mut self, name: &OsStr) {
        if let (Some(by_name), Some(name)) = (&mut self.photos_by_beside, name.to_str()) {
            beside::add_photo(by_name, name);
        }
    }

    fn new(rel: PathBuf, known: DirKnown, listed: bool) -> Frame {
        Frame {
            rel,
            known,
            listed,
            seen: HashMap::new(),
            beside: Vec::new(),
            photos_by_beside: None,
        }
    }
}

/// One file the walk saw: its stamp, its row if the store listed it present, the batch that
/// took it, and the batch that read it (`None`: unchanged, not read).
#[derive(Clone, Copy, Debug)]
struct Seen {
    stamp: Stamp,
    known: Option<i64>,
    taken_in: u64,
    read_in: Option<u64>,
}

/// The diff step's state: the batch being built and the directories on the walk path.
struct Diffing<'a> {
    root: &'a Path,
    forced: bool,
    known: &'a mut (dyn Known + Send),
    dirs: Vec<Frame>,
    to_read: Vec<(PathBuf, Stamp, Reason)>,
    /// Bytes of the files in `to_read`.
    to_read_bytes: u64,
    batch: Batch,
    gone: Gone,
    /// How many batches were flushed: what a file was taken and read in.
    epoch: u64,
}

impl<'a> Diffing<'a> {
    fn new(root: &'a Path, settings: &Settings, known: &'a mut (dyn Known + Send)) -> Self {
        Diffing {
            root,
            forced: settings.forced,
            known,
            dirs: Vec::new(),
            to_read: Vec::new(),
            to_read_bytes: 0,
            batch: Batch::default(),
            gone: Gone::default(),
            epoch: 0,
        }
    }

    /// Entries taken since the last flush.
    fn pending(&self) -> usize {
        self.batch.len() + self.to_read.len()
    }

    fn take(&mut self, item: Walked) -> Result<(), SinkError> {
        match item {
            Walked::Dir { rel } => self.enter(rel)?,
            Walked::File { rel, stamp } => {
                let (name, known) = self.see_file(&rel)?.unzip();
                let why = reason(&stamp, known.as_ref().map(|k| &k.stamp), self.forced)
                    .or_else(|| known.and_then(|k| k.again.reason()));
                let id = known.map(|k| k.id);
                self.saw(&rel, name.zip(id), stamp, why.is_some());
                match (why, known) {
                    (None, Some(k)) if k.again == Again::Restore => {
                        self.batch.unchanged += 1;
                        self.batch.reclaim.push(k.id);
                    }
                    (None, _) => self.batch.unchanged += 1,
                    (Some(why), known) => {
                        self.batch.known_present.extend(known.map(|k| k.id));
                        self.to_read_bytes += stamp.size;
                        self.to_read.push((rel, stamp, why));
                    }
                }
            }
            Walked::Problem { rel, error } => {
                self.see_problem(&rel);
                self.batch.problems.push((rel, error));
            }
        }
        Ok(())
    }

    /// The walk entered directory `rel`: it is seen in its parent, and its own known
    /// entries are loaded.
    fn enter(&mut self, rel: PathBuf) -> Result<(), SinkError> {
        let parent = rel.parent().map(Path::to_path_buf);
        if let Some(parent) = &parent {
            self.leave_until(parent);
        } else {
            self.leave_all();
        }
        if let (Some(top), Some(name)) = (self.dirs.last_mut(), rel.file_name())
            && Some(&top.rel) == parent.as_ref()
        {
            top.known.subdirs.remove(name);
        }
        let known = self.known.dir(&rel)?;
        self.dirs.push(Frame::new(rel, known, true));
        Ok(())
    }

    /// The known stamp of file `rel`, which the walk has now seen.
    /// Answers its name as the store listed it, so that an unchanged file costs no copy.
    fn see_file(&mut self, rel: &Path) -> Result<Option<(OsString, KnownStamp)>, SinkError> {
        let parent = rel.parent().unwrap_or(Path::new(""));
        self.leave_until(parent);
        if self.dirs.last().is_none_or(|f| f.rel != parent) {
            // Only when the walk starts at a file (a scope naming one): its directory was
            // not listed, so nothing is decided about the rest of it.
            let known = self.known.dir(parent)?;
            self.dirs
                .push(Frame::new(parent.to_path_buf(), known, false));
        }
        let name = rel.file_name().unwrap_or_default();
        Ok(self
            .dirs
            .last_mut()
            .and_then(|f| f.known.files.remove_entry(name)))
    }

    /// A problem at `rel`: if it is a directory being listed, its listing is incomplete;
    /// otherwise the entry exists in its parent (unreadable, a loop, a link leading out)
    /// and is not gone.
    fn see_problem(&mut self, rel: &Path) {
        if let Some(frame) = self.dirs.iter_mut().find(|f| f.rel == rel) {
            frame.listed = false;
            return;
        }
        let Some(parent) = rel.parent() else { return };
        self.leave_until(parent);
        if let (Some(top), Some(name)) = (self.dirs.last_mut(), rel.file_name())
            && top.rel == parent
        {
            top.known.files.remove(name);
            top.known.subdirs.remove(name);
        }
    }

    /// Leaves the directories the walk is done with: those `dir` is not inside.
    fn leave_until(&mut self, dir: &Path) {
        while self.dirs.last().is_some_and(|f| !dir.starts_with(&f.rel)) {
            self.leave();
        }
    }

    fn leave_all(&mut self) {
        while !self.dirs.is_empty() {
            self.leave();
        }
    }

    /// Leaves the innermost directory: if it was listed completely, what is left of its
    /// known entries is gone.
    fn leave(&mut self) {
        let Some(mut frame) = self.dirs.pop() else {
            return;
        };
        self.read_partners(&mut frame);
        if !frame.listed {
            return;
        }
        let rel = &frame.rel;
        self.gone
            .files
            .extend((frame.known.files.iter()).map(|(name, k)| (k.id, rel.join(name))));
        self.gone
            .dirs
            .extend(frame.known.subdirs.iter().map(|name| frame.rel.join(name)));
    }

    /// Records that the walk saw file `rel` (`read`: it is to be read), in its folder's frame
    /// (`see_file` made it the innermost), and a sidecar among the changed, whose known
    /// photos this batch marks to be read again.
    fn saw(&mut self, rel: &Path, known: Option<(OsString, i64)>, stamp: Stamp, read: bool) {
        let (Some(frame), Some(name)) = (self.dirs.last_mut(), rel.file_name()) else {
            return;
        };
        let (key, known) = match known {
            Some((name, id)) => (name, Some(id)),
            None => (name.to_os_string(), None),
        };
        let epoch = self.epoch;
        if let Some(beside) = name.to_str().filter(|n| read && beside::is_beside(n)) {
            frame.beside.push((name.to_os_string(), epoch));
            let dir = frame.rel.clone();
            let photos = frame.photos_of(beside).iter();
            self.batch
                .read_again
                .extend(photos.map(|photo| dir.join(photo)));
        }
        let seen = Seen {
            stamp,
            known,
            taken_in: epoch,
            read_in: read.then_some(epoch),
        };
        if known.is_none() {
            frame.saw_photo(&key);
        }
        frame.seen.insert(key, seen);
    }

    /// The walk is done with `frame`: each photo of it whose sidecar or Takeout JSON was
    /// created or changed after the photo's read (or that was not read: unchanged), or
    /// whose sidecar is gone and that was not read after this listing, is read again
    /// (reason `sidecar`) and its asset rewritten. Walk order does not matter: the whole
    /// folder has been seen by now.
    fn read_partners(&mut self, frame: &mut Frame) {
        let gone: Vec<&str> = if frame.listed {
            let names = frame.known.files.keys().filter_map(|n| n.to_str());
            names.filter(|n| beside::is_beside(n)).collect()
        } else {
            Vec::new()
        };
        if frame.beside.is_empty() && gone.is_empty() {
            return;
        }
        let seen: HashSet<&str> = frame.seen.keys().filter_map(|n| n.to_str()).collect();
        let mut stems: HashMap<&str, Vec<&str>> = HashMap::new();
        for name in &seen {
            if let Some((stem, _)) = name.rsplit_once('.') {
                stems.entry(stem).or_default().push(name);
            }
        }
        let stale = |photo: &str, after: u64| {
            let read_in = frame.seen.get(OsStr::new(photo)).and_then(|s| s.read_in);
            read_in.is_none_or(|read| read < after)
        };
        let changed = frame
            .beside
            .iter()
            .filter_map(|(n, at)| Some((n.to_str()?, *at)));
        // A sidecar gone from the listing went at some moment before now: a photo read in a
        // batch already flushed may have been read with it (issue 25 defect 11), one read in
        // the batch being built is read after this listing, without it.
        let now = self.epoch;
        let mut again: Vec<String> = changed
            .chain(gone.iter().map(|n| (*n, now)))
            .flat_map(|(name, at)| {
                let partners = beside::partners(name, &seen, &stems);
                partners.into_iter().filter(move |p| stale(p, at))
            })
            .map(str::to_string)
            .collect();
        again.sort_unstable();
        again.dedup();
        for photo in again {
            self.read_again(frame, &photo);
        }
    }

    /// Queues photo `name` of `frame` to be read again for its sidecar. One counted as
    /// unchanged in the batch being built is not counted twice.
    fn read_again(&mut self, frame: &mut Frame, name: &str) {
        let Some(seen) = frame.seen.get_mut(OsStr::new(name)) else {
            return;
        };
        if seen.read_in.is_none() && seen.taken_in == self.epoch {
            self.batch.unchanged = self.batch.unchanged.saturating_sub(1);
        }
        seen.read_in = Some(self.epoch);
        self.batch.known_present.extend(seen.known);
        self.to_read_bytes += seen.stamp.size;
        self.to_read
            .push((frame.rel.join(name), seen.stamp, Reason::Sidecar));
    }

    /// Reads the changed files of this batch on rayon and hands the batch over. Each read
    /// first asks the kernel to start reading the file after it (`prefetch`): rayon hands
    /// each thread a run of neighbours, so a thread's next file comes off the disk while it
    /// hashes this one, and the disk is not idle while both threads hash.
    fn flush(&mut self, extract: &Extract<'_>, summary: &mut Summary) -> Batch {
        let root = self.root;
        self.to_read_bytes = 0;
        self.epoch += 1;
        let listings = Listings::default();
        let to_read = std::mem::take(&mut self.to_read);
        let (read, times): (Vec<Observed>, Vec<ReadTimes>) = to_read
            .par_iter()
            .enumerate()
            .filter_map(|(i, (rel, stamp, why))| {
                if let Some((next, next_stamp, _)) = to_read.get(i + 1) {
                    prefetch(&root.join(next), next_stamp.size);
                }
                observe(root, rel.clone(), *stamp, *why, extract, &listings)
            })
            .unzip();
        add_read_times(&mut summary.stages, &times);
        let mut batch = std::mem::take(&mut self.batch);
        batch.problems.extend(read.iter().filter_map(problem));
        batch
            .problems
            .extend(read.iter().flat_map(|o| o.beside_problems.iter().cloned()));
        batch.changed = read;
        tally(&batch, summary);
        batch
    }
}

/// A changed file the run could not read, a picture or video it could not parse, or a file
/// that is none though its name or bytes claim one (the extract's words, such as
/// "unsupported format (CRW)"): a problem of the run, listed with its error. A file that is
/// no picture or video and claims none has no error and is no problem (the scan keeps it as
/// a file row and moves on).
fn problem(o: &Observed) -> Option<(PathBuf, String)> {
    Some((o.rel.clone(), o.error.clone()?))
}

/// One batch's read, hash and extract times, summed into the run's.
fn add_read_times(stages: &mut Stages, times: &[ReadTimes]) {
    let sum = |f: fn(&ReadTimes) -> Duration| times.iter().map(f).sum::<Duration>();
    stages.read += sum(|t| t.read);
    stages.hash += sum(|t| t.hash);
    stages.extract += sum(|t| t.extract);
}

fn observe(
    root: &Path,
    rel: PathBuf,
    stamp: Stamp,
    reason: Reason,
    extract: &Extract<'_>,
    listings: &Listings,
) -> Option<(Observed, ReadTimes)> {
    let path = root.join(&rel);
    Some(match read_once(&path, stamp.size, extract) {
        Ok(mut read) => {
            // The date chain after everything the file itself says: its sidecar's, then its
            // Takeout JSON's (with the notes), then the name's, then the mtime.
            let (mut found, mut namesake) = (beside::Found::default(), true);
            if read.facts.kind.is_some_and(|k| k != MediaKind::Other) {
                found = beside::read(root, &rel, listings);
                media::beside::apply(&mut read.facts, &found.beside);
                namesake = listings.namesake(root, &rel);
            }
            let name = rel.file_name().map(|n| n.to_string_lossy());
            media::fill_undated(
                &mut read.facts,
                name.as_deref().unwrap_or(""),
                stamp.mtime_ns,
            );
            let observed = Observed {
                rel,
                stamp,
                reason,
                checksum: Some(read.checksum),
                content_hash: Some(read.content_hash),
                error: read.facts.error.clone(),
                facts: Some(read.facts),
                beside_problems: found.problems,
                beside_from: found.from,
                namesake,
            };
            (observed, read.times)
        }
        // Gone since the listing (deleted, or moved by a trash): nothing is written, or a row
        // a trash marked missing would come back present with no file (issue 25, finding 21).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        // Unreadable mid-scan: recorded on the file, the run goes on.
        Err(e) => {
            let observed = Observed {
                rel,
                stamp,
                reason,
                checksum: None,
                content_hash: None,
                facts: None,
                error: Some(format!("cannot read: {e}")),
                beside_problems: Vec::new(),
                beside_from: Vec::new(),
                namesake: true,
            };
            (observed, ReadTimes::default())
        }
    })
}

fn tally(batch: &Batch, summary: &mut Summary) {
    for o in &batch.changed {
        *summary.by_reason.entry(o.reason.as_str()).or_default() += 1;
        summary.files_read += 1;
        if o.checksum.is_none() {
            summary.read_errors += 1;
        }
    }
    summary.unchanged += batch.unchanged;
    summary.problems += batch.problems.len() as u64;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Known stamps kept by full relative path, as the store would answer per directory.
    #[derive(Default)]
    struct Memory(HashMap<PathBuf, KnownStamp>);

    impl Known for Memory {
        fn dir(&mut self, rel_dir: &Path) -> Result<DirKnown, SinkError> {
            let mut known = DirKnown::default();
            for (path, stamp) in &self.0 {
                let Ok(rest) = path.strip_prefix(rel_dir) else {
                    continue;
                };
                let mut parts = rest.components();
                match (parts.next(), parts.next()) {
                    (Some(name), None) => {
                        known.files.insert(name.as_os_str().to_os_string(), *stamp);
                    }
                    (Some(name), Some(_)) => {
                        known.subdirs.insert(name.as_os_str().to_os_string());
                    }
                    _ => {}
                }
            }
            Ok(known)
        }
    }

    /// The file id the fake store gives a path.
    fn id_of(known: &Memory, rel: &str) -> i64 {
        known.0[Path::new(rel)].id
    }

    #[derive(Default)]
    struct Recorder {
        batches: Vec<Batch>,
        refuse_from: Option<usize>,
        cancel: bool,
    }

    impl Sink for Recorder {
        fn commit(&mut self, batch: Batch) -> Result<(), SinkError> {
            if self.refuse_from.is_some_and(|n| self.batches.len() >= n) {
                return Err(SinkError::LeaseLost);
            }
            self.batches.push(batch);
            Ok(())
        }
        fn cancelled(&self) -> bool {
            self.cancel
        }
    }

    impl Recorder {
        fn changed(&self) -> HashMap<String, &Observed> {
            self.batches
                .iter()
                .flat_map(|b| &b.changed)
                .map(|o| (o.rel.to_string_lossy().into_owned(), o))
                .collect()
        }

        /// What a store would know after these batches.
        fn remember(&self, known: &mut Memory) {
            for o in self.batches.iter().flat_map(|b| &b.changed) {
                let again = if o.checksum.is_none() {
                    Again::Retry
                } else {
                    Again::Nothing
                };
                let id = known
                    .0
                    .get(&o.rel)
                    .map_or(known.0.len() as i64 + 1, |k| k.id);
                known.0.insert(
                    o.rel.clone(),
                    KnownStamp {
                        id,
                        stamp: o.stamp,
                        again,
                    },
                );
            }
        }
    }

    fn library(files: usize) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        for i in 0..files {
            let sub = dir.path().join(format!("d{}/e{}", i % 3, i % 2));
            fs::create_dir_all(&sub).expect("mkdir");
            fs::write(sub.join(format!("f{i}.jpg")), format!("photo {i}")).expect("write");
        }
        dir
    }

    fn scan(root: &Path, known: &mut Memory, settings: &Settings) -> (Recorder, Summary) {
        let mut sink = Recorder::default();
        let extract = |_: &Path, _: Option<&[u8]>| MediaFacts::default();
        let summary = run(root, Path::new(""), settings, known, &mut sink, &extract).expect("scan");
        (sink, summary)
    }

    fn small_batches() -> Settings {
        Settings {
            batch: 7,
            channel: 3,
            ..Settings::default()
        }
    }

    #[test]
    fn a_batch_is_cut_by_the_bytes_it_reads_too() {
        let dir = library(40);
        let settings = Settings {
            batch: 1000,
            batch_bytes: 20,
            ..small_batches()
        };
        let (sink, summary) = scan(dir.path(), &mut Memory::default(), &settings);
        assert_eq!(summary.files_read, 40);
        let bytes = |b: &Batch| b.changed.iter().map(|o| o.stamp.size).sum::<u64>();
        // Files of 7 or 8 bytes: a batch is cut once it holds 20 bytes, so after 3 files.
        assert!(
            sink.batches.iter().all(|b| bytes(b) <= 24),
            "{:?}",
            sink.batches.iter().map(bytes).collect::<Vec<_>>()
        );
        assert!(sink.batches.len() >= 14, "{} batches", sink.batches.len());
    }

    #[test]
    fn a_first_scan_reads_every_file_in_bounded_batches() {
        let dir = library(40);
        let (sink, summary) = scan(dir.path(), &mut Memory::default(), &small_batches());
        assert_eq!(summary.by_reason.get("new"), Some(&40));
        assert_eq!(summary.files_read, 40);
        assert!(sink.batches.iter().all(|b| b.len() <= 7));
        let f0 = sink.changed()["d0/e0/f0.jpg"].checksum;
        assert_eq!(f0, Some(*blake3::hash(b"photo 0").as_bytes()));
        assert_eq!(summary.unseen, Gone::default());
    }

    /// A first scan says how long it walked, diffed, read, hashed, extracted and wrote; an
    /// unchanged rescan opened nothing, so it read, hashed and extracted for no time at all.
    #[test]
    fn a_run_says_where_its_time_went_by_stage() {
        let dir = library(40);
        let mut known = Memory::default();
        let (first, summary) = scan(dir.path(), &mut known, &small_batches());
        let s = summary.stages;
        let named = [
            ("walk", s.walk),
            ("diff", s.diff),
            ("read", s.read),
            ("hash", s.hash),
            ("extract", s.extract),
            ("write", s.write),
        ];
        for (name, time) in named {
            assert!(time > Duration::ZERO, "{name}: {s:?}");
        }
        first.remember(&mut known);
        let (_, rescan) = scan(dir.path(), &mut known, &small_batches());
        let r = rescan.stages;
        assert_eq!([r.read, r.hash, r.extract], [Duration::ZERO; 3], "{r:?}");
        assert!(r.walk > Duration::ZERO && r.diff > Duration::ZERO, "{r:?}");
        let totals = stage_totals();
        assert!(
            totals.read >= s.read && totals.walk >= s.walk + r.walk,
            "{totals:?}"
        );
    }

    #[test]
    fn an_unchanged_rescan_opens_no_file() {
        let dir = library(40);
        let mut known = Memory::default();
        let (first, _) = scan(dir.path(), &mut known, &small_batches());
        first.remember(&mut known);
        let extracted = AtomicUsize::new(0);
        let extract = |_: &Path, _: Option<&[u8]>| {
            extracted.fetch_add(1, Ordering::SeqCst);
            MediaFacts::default()
        };
        let mut sink = Recorder::default();
        let summary = run(
            dir.path(),
            Path::new(""),
            &small_batches(),
            &mut known,
            &mut sink,
            &extract,
        )
        .expect("rescan");
        assert_eq!((summary.files_read, summary.unchanged), (0, 40));
        assert_eq!(extracted.load(Ordering::SeqCst), 0);
        assert!(sink.changed().is_empty());
        assert_eq!(summary.unseen, Gone::default(), "nothing is gone");
    }

    #[test]
    fn an_unchanged_file_whose_asset_is_trashed_or_gone_is_claimed_again() {
        let dir = library(6);
        let mut known = Memory::default();
        scan(dir.path(), &mut known, &small_batches())
            .0
            .remember(&mut known);
        let mut mark = |rel: &str, again| {
            let k = known.0.get_mut(Path::new(rel)).expect("known");
            k.again = again;
            k.id
        };
        let trashed = mark("d0/e0/f0.jpg", Again::Restore);
        mark("d1/e1/f1.jpg", Again::Claim);
        let (sink, summary) = scan(dir.path(), &mut known, &small_batches());
        let reclaimed: Vec<i64> = sink
            .batches
            .iter()
            .flat_map(|b| b.reclaim.clone())
            .collect();
        assert_eq!(reclaimed, vec![trashed], "restored by id, not read");
        let read: Vec<_> = sink
            .changed()
            .into_iter()
            .map(|(rel, o)| (rel, o.reason))
            .collect();
        assert_eq!(read, vec![("d1/e1/f1.jpg".to_string(), Reason::New)]);
        assert_eq!((summary.files_read, summary.unchanged), (1, 5));
    }

    #[test]
    fn a_walker_that_panics_is_an_error_not_a_finished_listing() {
        let dir = library(40);
        let mut known = Memory::default();
        scan(dir.path(), &mut known, &small_batches())
            .0
            .remember(&mut known);
        let hook = WalkHook(std::sync::Arc::new(|at| {
            if matches!(at, crate::scan::walk::WalkPoint::Left(rel) if rel == Path::new("d1")) {
                panic!("injected");
            }
        }));
        let settings = Settings {
            walk_hook: Some(hook),
            ..small_batches()
        };
        let extract = |_: &Path, _: Option<&[u8]>| MediaFacts::default();
        let mut sink = Recorder::default();
        let result = run(
            dir.path(),
            Path::new(""),
            &settings,
            &mut known,
            &mut sink,
            &extract,
        );
        match result {
            Err(SinkError::Walker(why)) => assert!(why.contains("injected"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn touched_grown_replaced_and_forced_files_say_why() {
        let dir = library(6);
        let mut known = Memory::default();
        scan(dir.path(), &mut known, &small_batches())
            .0
            .remember(&mut known);
        let path = |i: usize| dir.path().join(format!("d{}/e{}/f{i}.jpg", i % 3, i % 2));
        let touched = fs::File::options().write(true).open(path(0)).expect("open");
        touched
            .set_modified(
                std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(86_400),
            )
            .expect("touch");
        fs::write(path(1), "photo 1 but longer").expect("grow");
        let mtime = fs::metadata(path(2))
            .and_then(|m| m.modified())
            .expect("mtime");
        // Same size and time, another file: written beside it, then renamed over it (so the
        // old inode is still taken when the new one is allocated).
        let tmp = dir.path().join("replacement");
        fs::write(&tmp, "photo X").expect("write");
        fs::rename(&tmp, path(2)).expect("replace");
        fs::File::options()
            .write(true)
            .open(path(2))
            .and_then(|f| f.set_modified(mtime))
            .expect("keep mtime");
        let (sink, _) = scan(dir.path(), &mut known, &small_batches());
        let why = |i: usize| {
            let rel = format!("d{}/e{}/f{i}.jpg", i % 3, i % 2);
            sink.changed().get(&rel).map(|o| o.reason)
        };
        assert_eq!(why(0), Some(Reason::Mtime));
        assert_eq!(why(1), Some(Reason::Size));
        assert_eq!(why(2), Some(Reason::Inode));
        assert_eq!(why(3), None);
        let forced = Settings {
            forced: true,
            ..small_batches()
        };
        let (sink, summary) = scan(dir.path(), &mut known, &forced);
        assert_eq!(
            summary.by_reason.get("forced"),
            Some(&6),
            "{:?}",
            sink.changed().keys()
        );
    }

    #[test]
    fn a_file_that_cannot_be_parsed_or_indexed_is_a_problem_and_one_gone_since_its_listing_is_not()
    {
        let dir = library(6);
        // Deleted once the walk has listed it: the read, after the walk, finds it gone.
        let vanished = dir.path().join("d1/e1/f1.jpg");
        let hook = WalkHook(std::sync::Arc::new(move |at| {
            if matches!(at, crate::scan::walk::WalkPoint::Left(rel) if rel == Path::new("d1")) {
                let _ = fs::remove_file(&vanished);
            }
        }));
        let settings = Settings {
            batch: 1000,
            walk_hook: Some(hook),
            ..Settings::default()
        };
        let extract = |path: &Path, _: Option<&[u8]>| {
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            let (kind, error) = match name {
                "f0.jpg" => (MediaKind::Image, Some("truncated JPEG".to_string())),
                // Not indexed, and its name claims a photo: the extract's words say why.
                "f2.jpg" => (MediaKind::Other, Some("unreadable content".to_string())),
                "f3.jpg" => (MediaKind::Other, None),
                _ => (MediaKind::Image, None),
            };
            MediaFacts {
                kind: Some(kind),
                error,
                ..MediaFacts::default()
            }
        };
        let mut sink = Recorder::default();
        let summary = run(
            dir.path(),
            Path::new(""),
            &settings,
            &mut Memory::default(),
            &mut sink,
            &extract,
        )
        .expect("scan");
        let mut problems: Vec<(String, String)> = sink
            .batches
            .iter()
            .flat_map(|b| &b.problems)
            .map(|(rel, error)| (rel.to_string_lossy().into_owned(), error.clone()))
            .collect();
        problems.sort();
        let texts: Vec<(&str, &str)> = problems.iter().map(|(p, e)| (&p[..], &e[..])).collect();
        // The file deleted after the listing is no problem: it is gone, nothing is written.
        let (f0, f2) = ("d0/e0/f0.jpg", "d2/e0/f2.jpg");
        assert_eq!(texts, [(f0, "truncated JPEG"), (f2, "unreadable content")]);
        assert_eq!((summary.problems, summary.read_errors), (2, 0));
    }

    /// A first scan of `root` in small batches into `sink`.
    fn first_scan_into(root: &Path, sink: &mut Recorder) -> Result<Summary, SinkError> {
        let extract = |_: &Path, _: Option<&[u8]>| MediaFacts::default();
        let settings = small_batches();
        run(
            root,
            Path::new(""),
            &settings,
            &mut Memory::default(),
            sink,
            &extract,
        )
    }

    #[test]
    fn a_refused_batch_stops_the_run_and_nothing_after_it_is_sent() {
        let dir = library(40);
        let mut sink = Recorder {
            refuse_from: Some(2),
            ..Recorder::default()
        };
        let result = first_scan_into(dir.path(), &mut sink);
        assert!(matches!(result, Err(SinkError::LeaseLost)));
        assert_eq!(sink.batches.len(), 2);
    }

    #[test]
    fn a_cancelled_run_stops_before_reading_on() {
        let dir = library(40);
        let mut sink = Recorder {
            cancel: true,
            ..Recorder::default()
        };
        let result = first_scan_into(dir.path(), &mut sink);
        assert!(matches!(result, Err(SinkError::Cancelled)));
        assert!(sink.batches.is_empty());
    }

    #[test]
    fn a_deleted_file_and_a_vanished_folder_are_gone_and_nothing_else() {
        let dir = library(12);
        let mut known = Memory::default();
        scan(dir.path(), &mut known, &small_batches())
            .0
            .remember(&mut known);
        fs::remove_file(dir.path().join("d1/e1/f1.jpg")).expect("rm");
        fs::remove_dir_all(dir.path().join("d2")).expect("rm -r");
        let (_, summary) = scan(dir.path(), &mut known, &small_batches());
        let gone = vec![(id_of(&known, "d1/e1/f1.jpg"), PathBuf::from("d1/e1/f1.jpg"))];
        assert_eq!(
            summary.unseen.files, gone,
            "with its path, for the check at completion"
        );
        assert_eq!(summary.unseen.dirs, vec![PathBuf::from("d2")]);
        assert_eq!(summary.unchanged, 12 - 1 - 4);
    }

    /// Feeds walk items straight to the diff, as the walker would send them.
    fn diff_of(known: &mut Memory, items: Vec<Walked>) -> Ids {
        let settings = Settings::default();
        let mut state = Diffing::new(Path::new("/nowhere"), &settings, known);
        for item in items {
            state.take(item).expect("take");
        }
        state.leave_all();
        Ids {
            files: state.gone.files.iter().map(|(id, _)| *id).collect(),
            dirs: state.gone.dirs,
        }
    }

    /// What is gone, files by id.
    #[derive(Debug, Default, PartialEq)]
    struct Ids {
        files: Vec<i64>,
        dirs: Vec<PathBuf>,
    }

    fn known_tree() -> Memory {
        let mut known = Memory::default();
        for (id, rel) in ["a.jpg", "x/b.jpg", "x/y/c.jpg", "z/d.jpg"]
            .iter()
            .enumerate()
        {
            let stamp = Stamp {
                size: 1,
                mtime_ns: 1,
                dev: 1,
                inode: id as u64,
            };
            let (id, again) = (id as i64 + 1, Again::Nothing);
            known
                .0
                .insert(PathBuf::from(rel), KnownStamp { id, stamp, again });
        }
        known
    }

    fn dir(rel: &str) -> Walked {
        Walked::Dir { rel: rel.into() }
    }

    fn problem(rel: &str) -> Walked {
        Walked::Problem {
            rel: rel.into(),
            error: "Permission denied".into(),
        }
    }

    fn file(rel: &str) -> Walked {
        let stamp = Stamp {
            size: 1,
            mtime_ns: 1,
            dev: 1,
            inode: 99,
        };
        Walked::File {
            rel: rel.into(),
            stamp,
        }
    }

    /// The photos a walk in this order queues to be read again for their sidecar, when the
    /// store knows `a.jpg` and `a.jpg.xmp` (ids 1 and 2) and `batch` entries make a batch.
    /// `order`: `/` enters the root, `!` is its listing failing, any other a file in it.
    fn read_again_in(order: &[&str], sidecar_stamp: Stamp, batch: usize) -> Vec<String> {
        let stamp = |inode| Stamp {
            size: 1,
            mtime_ns: 1,
            dev: 1,
            inode,
        };
        let mut known = Memory::default();
        for (id, rel) in [(1, "a.jpg"), (2, "a.jpg.xmp")] {
            let (stamp, again) = (stamp(id as u64), Again::Nothing);
            known
                .0
                .insert(PathBuf::from(rel), KnownStamp { id, stamp, again });
        }
        let settings = Settings::default();
        let mut state = Diffing::new(Path::new("/nowhere"), &settings, &mut known);
        let mut again = Vec::new();
        for entry in order {
            let item = match *entry {
                "/" => dir(""),
                "!" => problem(""),
                "a.jpg.xmp" => Walked::File {
                    rel: entry.into(),
                    stamp: sidecar_stamp,
                },
                name => Walked::File {
                    rel: name.into(),
                    stamp: stamp(1),
                },
            };
            state.take(item).expect("take");
            if state.pending() >= batch {
                // What a flush does to the diff's state, without reading anything.
                again.extend(state.to_read.drain(..).filter(|t| t.2 == Reason::Sidecar));
                state.batch = Batch::default();
                state.epoch += 1;
            }
        }
        state.leave_all();
        again.extend(state.to_read.drain(..).filter(|t| t.2 == Reason::Sidecar));
        again
            .iter()
            .map(|t| t.0.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_changed_or_deleted_sidecar_reads_its_photo_again_whatever_the_walk_order() {
        let unchanged = Stamp {
            size: 1,
            mtime_ns: 1,
            dev: 1,
            inode: 2,
        };
        let changed = Stamp {
            mtime_ns: 5,
            ..unchanged
        };
        let photo_first = ["/", "a.jpg", "a.jpg.xmp"];
        let sidecar_first = ["/", "a.jpg.xmp", "a.jpg"];
        for batch in [1, 100] {
            for order in [photo_first, sidecar_first] {
                let what = format!("batch {batch}, {order:?}");
                assert_eq!(read_again_in(&order, changed, batch), ["a.jpg"], "{what}");
                assert!(read_again_in(&order, unchanged, batch).is_empty(), "{what}");
            }
        }
        // Deleted: the listing of its folder no longer has it.
        assert_eq!(read_again_in(&["/", "a.jpg"], unchanged, 1), ["a.jpg"]);
        // A folder that could not be listed decides nothing about what it did not see.
        assert!(read_again_in(&["/", "!", "a.jpg"], unchanged, 1).is_empty());
    }

    /// Issue 25 defect 11: the photo was read in a batch that was flushed (and could be read
    /// with its sidecar still there) before the walk's listing of the folder ended without
    /// the sidecar: the photo is read again, after the listing, without it.
    #[test]
    fn a_sidecar_deleted_after_its_photo_was_read_reads_the_photo_again() {
        let stamp = |inode, mtime_ns| Stamp {
            size: 1,
            mtime_ns,
            dev: 1,
            inode,
        };
        let mut known = Memory::default();
        for (id, rel) in [(1, "a.jpg"), (2, "a.jpg.xmp")] {
            let (stamp, again) = (stamp(id as u64, 1), Again::Nothing);
            known
                .0
                .insert(PathBuf::from(rel), KnownStamp { id, stamp, again });
        }
        let settings = Settings::default();
        let mut state = Diffing::new(Path::new("/nowhere"), &settings, &mut known);
        state.take(dir("")).expect("take");
        // Changed: read in the first batch, which is flushed before the listing ends.
        let changed = Walked::File {
            rel: "a.jpg".into(),
            stamp: stamp(1, 5),
        };
        state.take(changed).expect("take");
        let first: Vec<_> = state.to_read.drain(..).map(|t| t.2).collect();
        assert_eq!(first, [Reason::Mtime]);
        state.batch = Batch::default();
        state.epoch += 1;
        // The listing ends without the sidecar: it was deleted meanwhile.
        state.leave_all();
        let again: Vec<_> = (state.to_read.iter())
            .map(|t| (t.0.to_string_lossy().into_owned(), t.2))
            .collect();
        assert_eq!(again, [("a.jpg".to_string(), Reason::Sidecar)]);
    }

    /// Issue 25 defect 4: the batch that stores a sidecar's new stamp names the photos it
    /// serves that may have a row by then, for the store to mark in the same commit.
    #[test]
    fn a_changed_sidecar_s_batch_names_its_photos_to_be_read_again() {
        let stamp = |inode, mtime_ns| Stamp {
            size: 1,
            mtime_ns,
            dev: 1,
            inode,
        };
        let mut known = Memory::default();
        for (id, rel) in [(1, "a.jpg"), (2, "a.jpg.xmp"), (3, "b.jpg")] {
            let (stamp, again) = (stamp(id as u64, 1), Again::Nothing);
            known
                .0
                .insert(PathBuf::from(rel), KnownStamp { id, stamp, again });
        }
        let file = |rel: &str, inode, mtime_ns| Walked::File {
            rel: rel.into(),
            stamp: stamp(inode, mtime_ns),
        };
        let settings = Settings::default();
        // A scan of the sidecar alone: the walk starts at it, and sees no photo.
        let mut state = Diffing::new(Path::new("/nowhere"), &settings, &mut known);
        state.take(file("a.jpg.xmp", 2, 5)).expect("take");
        assert_eq!(state.batch.read_again, [PathBuf::from("a.jpg")]);
        // A photo new to the store, stored by a batch before its new sidecar's.
        let mut state = Diffing::new(Path::new("/nowhere"), &settings, &mut known);
        state.take(dir("")).expect("take");
        state.take(file("c.jpg", 4, 1)).expect("take");
        state.batch = Batch::default();
        state.take(file("c.jpg.xmp", 5, 1)).expect("take");
        state.take(file("b.jpg", 3, 1)).expect("take");
        assert_eq!(state.batch.read_again, [PathBuf::from("c.jpg")]);
    }

    #[test]
    fn an_unreadable_folder_makes_nothing_in_it_gone() {
        let mut known = known_tree();
        // `x` was entered but could not be read: the walker announces it, then its error.
        let walk = vec![
            dir(""),
            dir("x"),
            problem("x"),
            dir("z"),
            file("z/d.jpg"),
            file("a.jpg"),
        ];
        assert_eq!(
            diff_of(&mut known, walk),
            Ids::default(),
            "x/b.jpg and x/y are not gone"
        );
        // The same walk with x readable but empty: both are gone.
        let walk = vec![dir(""), dir("x"), dir("z"), file("z/d.jpg"), file("a.jpg")];
        let gone = diff_of(&mut known, walk);
        assert_eq!(gone.files, vec![id_of(&known, "x/b.jpg")]);
        assert_eq!(gone.dirs, vec![PathBuf::from("x/y")]);
    }

    #[test]
    fn a_listing_that_broke_off_part_way_makes_only_that_folder_decide_nothing() {
        let mut known = known_tree();
        // x's listing failed after the walk had entered x/y: the walker reports it at x.
        let walk = vec![dir(""), dir("x"), dir("x/y"), problem("x"), dir("z")];
        let mut gone = diff_of(&mut known, walk).files;
        gone.sort_unstable();
        // x/b.jpg is not gone (x decides nothing); x/y and "" were listed completely.
        assert_eq!(
            gone,
            vec![
                id_of(&known, "a.jpg"),
                id_of(&known, "x/y/c.jpg"),
                id_of(&known, "z/d.jpg")
            ]
        );
    }

    #[test]
    fn an_entry_that_is_a_problem_is_not_gone() {
        let mut known = known_tree();
        // z is now a link that leads out of the library, a.jpg a broken link.
        let gone = diff_of(
            &mut known,
            vec![
                dir(""),
                problem("a.jpg"),
                problem("z"),
                dir("x"),
                dir("x/y"),
            ],
        );
        let mut files = gone.files;
        files.sort_unstable();
        assert_eq!(
            files,
            vec![id_of(&known, "x/b.jpg"), id_of(&known, "x/y/c.jpg")]
        );
        assert!(gone.dirs.is_empty());
    }

    #[test]
    fn reading_the_next_batch_overlaps_the_commit_of_the_previous_one() {
        // The sink holds the first commit until the reader has read into the second batch:
        // with reading and committing in turn, this would never finish.
        struct Overlap<'a> {
            read: &'a AtomicUsize,
            commits: usize,
        }
        impl Sink for Overlap<'_> {
            fn commit(&mut self, _: Batch) -> Result<(), SinkError> {
                self.commits += 1;
                if self.commits == 1 {
                    let start = std::time::Instant::now();
                    while self.read.load(Ordering::SeqCst) <= 7 {
                        assert!(start.elapsed() < Duration::from_secs(20), "no overlap");
                        std::thread::yield_now();
                    }
                }
                Ok(())
            }
        }
        let dir = library(40);
        let read = AtomicUsize::new(0);
        let extract = |_: &Path, _: Option<&[u8]>| {
            read.fetch_add(1, Ordering::SeqCst);
            MediaFacts::default()
        };
        let mut sink = Overlap {
            read: &read,
            commits: 0,
        };
        let summary = run(
            dir.path(),
            Path::new(""),
            &small_batches(),
            &mut Memory::default(),
            &mut sink,
            &extract,
        )
        .expect("scan");
        assert_eq!(summary.files_read, 40);
    }
}
