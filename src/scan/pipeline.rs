//! The pipeline of one scan run: a walker thread feeds a bounded channel; this thread diffs
//! each file against what the store knows of its directory (an unchanged file is never
//! opened); changed files are hashed and their metadata extracted on rayon, a batch at a
//! time; each batch goes to the sink (the fenced writer) before the next is read. Memory is
//! bounded by the channel, the batch and the directories on the current walk path, not by
//! the library. A refused batch (lost lease) or a cancellation stops the walk.

use super::diff::{Reason, reason};
use super::hash::Checksum;
use super::walk::{Stamp, Walked, walk};
use crate::model::MediaFacts;
use crossbeam_channel::bounded;
use rayon::prelude::*;
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What the store knows of one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownStamp {
    pub stamp: Stamp,
    /// Its last read failed: read it again even if its stamp is unchanged.
    pub retry: bool,
}

/// What the store knows of one directory's files: name → stamp.
pub type DirStamps = HashMap<OsString, KnownStamp>;

/// Looks up known files per directory (library-relative; `""` is the root).
pub trait Known {
    fn dir(&mut self, rel_dir: &Path) -> Result<DirStamps, SinkError>;
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
}

/// What one batch carries to the sink.
#[derive(Debug, Default)]
pub struct Batch {
    pub changed: Vec<Observed>,
    /// Files seen with an unchanged stamp (their "last seen" moves on).
    pub unchanged: Vec<PathBuf>,
    /// Entries that could not be listed or followed.
    pub problems: Vec<(PathBuf, String)>,
}

impl Batch {
    fn len(&self) -> usize {
        self.changed.len() + self.unchanged.len() + self.problems.len()
    }
}

/// Where batches go. An error stops the run (the lease is lost, or the store failed).
pub trait Sink {
    fn commit(&mut self, batch: Batch) -> Result<(), SinkError>;
    /// Polled between files: true once the run was cancelled.
    fn cancelled(&self) -> bool {
        false
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error("the scan lease was lost")]
    LeaseLost,
    #[error("the scan was cancelled")]
    Cancelled,
    #[error("{0}")]
    Store(String),
}

#[derive(Clone, Debug)]
pub struct Settings {
    pub forced: bool,
    /// Entries per batch (changed files are read on rayon a batch at a time).
    pub batch: usize,
    /// Capacity of the walker's channel.
    pub channel: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            forced: false,
            // Each batch is one fsync'd commit: large enough to amortise it.
            batch: 1024,
            channel: 1024,
        }
    }
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
}

/// Runs the pipeline over `root/scope`. `extract` reads a changed file's metadata.
pub fn run(
    root: &Path,
    scope: &Path,
    settings: &Settings,
    known: &mut dyn Known,
    sink: &mut dyn Sink,
    extract: &(dyn Fn(&Path) -> MediaFacts + Sync),
) -> Result<Summary, SinkError> {
    let (tx, rx) = bounded(settings.channel.max(1));
    let (walk_root, walk_scope) = (root.to_path_buf(), scope.to_path_buf());
    let walker = std::thread::Builder::new()
        .name("mediadex-walker".into())
        .spawn(move || walk(&walk_root, &walk_scope, &tx))
        .map_err(|e| SinkError::Store(format!("cannot start the walker: {e}")))?;
    let mut state = Diffing::new(root, settings, known);
    let mut summary = Summary::default();
    let outcome = (|| {
        for item in &rx {
            if sink.cancelled() {
                return Err(SinkError::Cancelled);
            }
            state.take(item)?;
            if state.pending() >= settings.batch.max(1) {
                sink.commit(state.flush(extract, &mut summary))?;
            }
        }
        sink.commit(state.flush(extract, &mut summary))
    })();
    // Dropping the receiver ends a walk still in progress.
    drop(rx);
    let _ = walker.join();
    outcome.map(|()| summary)
}

/// The diff step's state: the batch being built and the known stamps of the directories on
/// the current walk path.
struct Diffing<'a> {
    root: &'a Path,
    forced: bool,
    known: &'a mut dyn Known,
    dirs: Vec<(PathBuf, DirStamps)>,
    to_read: Vec<(PathBuf, Stamp, Reason)>,
    batch: Batch,
}

impl<'a> Diffing<'a> {
    fn new(root: &'a Path, settings: &Settings, known: &'a mut dyn Known) -> Self {
        Diffing {
            root,
            forced: settings.forced,
            known,
            dirs: Vec::new(),
            to_read: Vec::new(),
            batch: Batch::default(),
        }
    }

    /// Entries taken since the last flush.
    fn pending(&self) -> usize {
        self.batch.len() + self.to_read.len()
    }

    fn take(&mut self, item: Walked) -> Result<(), SinkError> {
        match item {
            Walked::Problem { rel, error } => self.batch.problems.push((rel, error)),
            Walked::File { rel, stamp } => {
                let known = self.known_stamp(&rel)?;
                let why = reason(&stamp, known.as_ref().map(|k| &k.stamp), self.forced)
                    .or_else(|| known.filter(|k| k.retry).map(|_| Reason::Error));
                match why {
                    None => self.batch.unchanged.push(rel),
                    Some(why) => self.to_read.push((rel, stamp, why)),
                }
            }
        }
        Ok(())
    }

    /// The known stamp of `rel`, loading its directory's stamps when the walk enters it and
    /// dropping those of directories the walk has left.
    fn known_stamp(&mut self, rel: &Path) -> Result<Option<KnownStamp>, SinkError> {
        let parent = rel.parent().unwrap_or(Path::new("")).to_path_buf();
        while self
            .dirs
            .last()
            .is_some_and(|(d, _)| d != &parent && !parent.starts_with(d))
        {
            self.dirs.pop();
        }
        if self.dirs.last().is_none_or(|(d, _)| d != &parent) {
            let stamps = self.known.dir(&parent)?;
            self.dirs.push((parent, stamps));
        }
        let name = rel.file_name().map(OsString::from).unwrap_or_default();
        Ok(self.dirs.last().and_then(|(_, m)| m.get(&name).copied()))
    }

    /// Reads the changed files of this batch on rayon and hands the batch over.
    fn flush(
        &mut self,
        extract: &(dyn Fn(&Path) -> MediaFacts + Sync),
        summary: &mut Summary,
    ) -> Batch {
        let root = self.root;
        let read: Vec<Observed> = std::mem::take(&mut self.to_read)
            .into_par_iter()
            .map(|(rel, stamp, why)| observe(root, rel, stamp, why, extract))
            .collect();
        let mut batch = std::mem::take(&mut self.batch);
        batch.changed = read;
        tally(&batch, summary);
        batch
    }
}

fn observe(
    root: &Path,
    rel: PathBuf,
    stamp: Stamp,
    reason: Reason,
    extract: &(dyn Fn(&Path) -> MediaFacts + Sync),
) -> Observed {
    let path = root.join(&rel);
    match crate::media::content_hash::hash_file(&path) {
        Ok(hashes) => {
            let facts = extract(&path);
            Observed {
                rel,
                stamp,
                reason,
                checksum: Some(hashes.checksum),
                content_hash: Some(hashes.content_hash),
                error: facts.error.clone(),
                facts: Some(facts),
            }
        }
        // Vanished or unreadable mid-scan: recorded on the file, the run goes on.
        Err(e) => Observed {
            rel,
            stamp,
            reason,
            checksum: None,
            content_hash: None,
            facts: None,
            error: Some(format!("cannot read: {e}")),
        },
    }
}

fn tally(batch: &Batch, summary: &mut Summary) {
    for o in &batch.changed {
        *summary.by_reason.entry(o.reason.as_str()).or_default() += 1;
        summary.files_read += 1;
        if o.checksum.is_none() {
            summary.read_errors += 1;
        }
    }
    summary.unchanged += batch.unchanged.len() as u64;
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
        fn dir(&mut self, rel_dir: &Path) -> Result<DirStamps, SinkError> {
            Ok(self
                .0
                .iter()
                .filter(|(p, _)| p.parent().unwrap_or(Path::new("")) == rel_dir)
                .filter_map(|(p, s)| Some((p.file_name()?.to_os_string(), *s)))
                .collect())
        }
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
                let retry = o.checksum.is_none();
                known.0.insert(
                    o.rel.clone(),
                    KnownStamp {
                        stamp: o.stamp,
                        retry,
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
        let extract = |_: &Path| MediaFacts::default();
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
    fn a_first_scan_reads_every_file_in_bounded_batches() {
        let dir = library(40);
        let (sink, summary) = scan(dir.path(), &mut Memory::default(), &small_batches());
        assert_eq!(summary.by_reason.get("new"), Some(&40));
        assert_eq!(summary.files_read, 40);
        assert!(sink.batches.iter().all(|b| b.len() <= 7));
        let f0 = sink.changed()["d0/e0/f0.jpg"].checksum;
        assert_eq!(f0, Some(*blake3::hash(b"photo 0").as_bytes()));
    }

    #[test]
    fn an_unchanged_rescan_opens_no_file() {
        let dir = library(40);
        let mut known = Memory::default();
        let (first, _) = scan(dir.path(), &mut known, &small_batches());
        first.remember(&mut known);
        let extracted = AtomicUsize::new(0);
        let extract = |_: &Path| {
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

    /// A first scan of `root` in small batches into `sink`.
    fn first_scan_into(root: &Path, sink: &mut Recorder) -> Result<Summary, SinkError> {
        let extract = |_: &Path| MediaFacts::default();
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
}
