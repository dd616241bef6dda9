//! User trash and restore with the file moves (DESIGN.md sections 4 and 6). A move is one
//! asset's trash or restore, held by the lease on its `move` job; only the holder moves
//! files, and every step is settled with a fenced store write:
//! 1. refuse before anything moves when a library is away (its folder not there or not
//!    provably the library, as a scan's circuit breaker tells), when a folder cannot be
//!    written (a read-only library) or a trash folder cannot be created (its disk is full);
//! 2. move each file (never over an existing one, never one whose bytes or row no longer
//!    match what the move began with, never without the lease confirmed right before) and
//!    settle its intent;
//! 3. flip the asset, unless a copy of it appeared meanwhile or a restore put no file of
//!    its own back (a follower's does not count; a restore queues its face walk in the
//!    same transaction); a trash of copies
//!    (`trash_copies`: keep one file of a live asset, trash its byte-identical others) flips
//!    nothing and ends only while the kept file is present;
//! 4. on any failure, record the rollback, put every moved file back, and end the move
//!    failed with one error naming the file and the reason.
//!
//! A process that merely starts never touches a move: one whose holder died is claimed after
//! its lease expired (`MoveJob`, by the worker pool or the next trash or restore command) and
//! carried on from where the files are, forward or, once a rollback was recorded, back; it
//! waits while a library of the move is away.
//! No SQL here; rows go through `Store`.
//!
//! Must not import: http, ops, rusqlite

use crate::disk::{DiskFull, FreeSpace};
use crate::model::{
    Begun, FileStamp, Finish, IntentState, Job, MOVE_JOB_KIND, Millis, Move, MoveOutcome, RelPath,
    Settle, TrashIntent, WalkRequest,
};
use crate::queue::{
    GuardError, JobDone, JobHandler, LeaseGuard, NoHooks, Registry, WorkContext, WorkError,
};
use crate::scan::identity::{self, Verdict};
use crate::store::{Store, StoreError};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum TrashError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The lease was lost mid-move (the process paused past its ttl): whoever reclaimed it
    /// finishes the move; this process wrote nothing more.
    #[error("{0}; the move is finished by whoever took it over")]
    Guard(#[from] GuardError),
    #[error("cannot move {from} to {to}: {why}")]
    Move {
        from: String,
        to: String,
        why: String,
    },
    #[error("{path} cannot be written ({why}): nothing was moved")]
    ReadOnly { path: String, why: String },
    /// The library's disk has no room for the trash folder a move creates (a rename itself
    /// needs none).
    #[error("{0}: every file stays where it was; trash or restore it again once space is freed")]
    NoRoom(DiskFull),
    #[error(
        "a copy of asset {asset} appeared while it was being trashed ({paths}): the asset stays \
         in the library and every file is back where it was"
    )]
    Linked { asset: i64, paths: String },
    /// The library's folder is not there or is not the library (an unmounted share,
    /// another disk at its path): a move never takes an absent file for a vanished one.
    #[error("{why}: nothing was moved; try again once the library is back")]
    LibraryAway { library: i64, why: String },
    #[error("the move of asset {asset} was rolled back: {reason}")]
    RolledBack { asset: i64, reason: String },
}

/// The lease a move is held under, and a restore's follow-up. A move of a few files takes
/// milliseconds; the ttl only bounds how long a move whose process died blocks its asset.
#[derive(Clone, Debug)]
pub struct MoveConfig {
    pub ttl: Millis,
    pub heartbeat_every: Duration,
    /// The face walk a restore queues in the transaction that makes its asset live again
    /// (the walk skipped the asset while it was trashed); `None` queues nothing. Built by
    /// `walks::follow_up`.
    pub faces: Option<WalkRequest>,
}

impl Default for MoveConfig {
    fn default() -> Self {
        MoveConfig {
            ttl: 60_000,
            heartbeat_every: Duration::from_secs(20),
            faces: None,
        }
    }
}

/// Test seams around each rename: a test pauses or kills the mover there, or fills the
/// library's disk.
pub trait MoveHooks: Send + Sync {
    fn before_rename(&self, _from: &Path, _to: &Path) {}
    fn after_rename(&self, _intent: &TrashIntent) {}
    /// The free space on the disk holding `dir`, as the preflight sees it.
    fn free_bytes(&self, dir: &Path) -> Option<u64> {
        crate::disk::SystemFreeSpace.free_bytes(dir)
    }
}

/// A move that must create a folder is refused, before anything moves, below this much
/// free space: a folder takes a block or two, and a disk this full is full for the user.
const FOLDER_ROOM: u64 = 64 * 1024;

pub struct NoMoveHooks;
impl MoveHooks for NoMoveHooks {}

/// How a move that was carried to its end ended: flipped, or rolled back for this reason.
type Ended = Result<MoveOutcome, TrashError>;

/// Moves an asset's files into their library's trash folder, then marks it trashed.
pub fn trash(store: &Store, asset_id: i64) -> Result<MoveOutcome, TrashError> {
    trash_with(store, asset_id, &MoveConfig::default(), &NoMoveHooks)
}

/// Moves an asset's files back from the trash folder, then marks it live.
pub fn restore(store: &Store, asset_id: i64) -> Result<MoveOutcome, TrashError> {
    restore_with(store, asset_id, &MoveConfig::default(), &NoMoveHooks)
}

pub fn trash_with(
    store: &Store,
    asset_id: i64,
    config: &MoveConfig,
    hooks: &dyn MoveHooks,
) -> Result<MoveOutcome, TrashError> {
    libraries_here(store, store.asset_libraries(asset_id)?)?;
    let begun = store.begin_trash(asset_id, config.ttl)?;
    run(store, begun, config, hooks)
}

/// Keeps one file of a live asset and moves its other files (byte-identical copies) into
/// the trash folder under a leased move (DESIGN.md section 6): the journal's intents name
/// each file, so the trash folder stays explained and the next scan neither re-adds nor
/// misses them; the asset stays live, shown by `keep` (library id, library-relative path).
/// `restore` of the asset puts them back.
pub fn trash_copies(
    store: &Store,
    asset_id: i64,
    keep: (i64, Vec<u8>),
    config: &MoveConfig,
    hooks: &dyn MoveHooks,
) -> Result<MoveOutcome, TrashError> {
    libraries_here(store, store.asset_libraries(asset_id)?)?;
    let begun = store.begin_trash_copies(asset_id, keep, config.ttl)?;
    run(store, begun, config, hooks)
}

pub fn restore_with(
    store: &Store,
    asset_id: i64,
    config: &MoveConfig,
    hooks: &dyn MoveHooks,
) -> Result<MoveOutcome, TrashError> {
    libraries_here(store, store.asset_libraries(asset_id)?)?;
    let begun = store.begin_restore(asset_id, config.ttl, config.faces.clone())?;
    run(store, begun, config, hooks)
}

/// Carries out moves whose holder died: reclaims expired leases, then claims each due move
/// and carries it on. Returns how many moves it ended. For a process without workers (the
/// command line); a service's pool runs `MoveJob` instead.
pub fn finish_abandoned(store: &Store, config: &MoveConfig) -> Result<usize, TrashError> {
    store.reclaim_stale()?;
    let mut ended = 0;
    while let Some((lease, job)) = store.claim_job(&[MOVE_JOB_KIND], config.ttl)? {
        let held = store.held_move(job.id)?;
        match run(store, Begun::Held(lease, held), config, &NoMoveHooks) {
            Ok(outcome) => tracing::info!(job = job.id, ?outcome, "finished an interrupted move"),
            Err(e) => {
                tracing::warn!(job = job.id, error = %e, "an interrupted move did not finish")
            }
        }
        ended += 1;
    }
    Ok(ended)
}

/// Runs a begun move under its lease's guard: the first fenced heartbeat before any file
/// moves, then a heartbeat thread for as long as the move runs. A move left unfinished by an
/// error is handed back as a failed attempt (retried with backoff by any worker).
pub fn run(
    store: &Store,
    begun: Begun,
    config: &MoveConfig,
    hooks: &dyn MoveHooks,
) -> Result<MoveOutcome, TrashError> {
    let (lease, held) = match begun {
        Begun::Settled(outcome) => return Ok(outcome),
        Begun::Held(lease, held) => (lease, held),
    };
    let registry = Arc::new(Registry::default());
    let guard = LeaseGuard::register(store, lease, config.ttl, &registry);
    guard.begin(config.heartbeat_every, &NoHooks)?;
    let result = carry_out(store, &guard, held, (config.faces.as_ref(), hooks));
    guard.stop_heartbeat();
    match result {
        Ok(ended) => ended,
        Err(TrashError::Guard(e)) => Err(e.into()),
        Err(e) => {
            if let Err(lost) = guard.ack(|s, l| s.fail_job(l, &e.to_string())) {
                tracing::warn!(error = %lost, "could not hand an unfinished move back");
            }
            Err(e)
        }
    }
}

/// The worker pool's handler of `move` jobs: a move whose first holder died, carried on
/// (a restore with its face walk, when it has one).
pub struct MoveJob {
    store: Store,
    faces: Option<WalkRequest>,
}

impl MoveJob {
    pub fn new(store: &Store) -> Self {
        MoveJob {
            store: store.clone(),
            faces: None,
        }
    }

    /// The face walk the restores it finishes queue (`MoveConfig::faces`).
    pub fn with_faces(self, faces: Option<WalkRequest>) -> Self {
        MoveJob { faces, ..self }
    }
}

impl JobHandler for MoveJob {
    fn run(&self, ctx: &WorkContext, job: &Job) -> Result<JobDone, WorkError> {
        let held = self.store.held_move(job.id)?;
        match carry_out(&self.store, ctx, held, (self.faces.as_ref(), &NoMoveHooks)) {
            Ok(Ok(outcome)) => {
                tracing::info!(job = job.id, ?outcome, "finished an interrupted move");
                Ok(JobDone::Committed)
            }
            Ok(Err(reason)) => {
                tracing::warn!(job = job.id, %reason, "rolled an interrupted move back");
                Ok(JobDone::Committed)
            }
            Err(e) => Err(e.into()),
        }
    }
}

impl From<TrashError> for WorkError {
    /// An unfinished move's failure, for the pool (a move is never given up: the class only
    /// decides how its holder waits). A store failure is as transient as the store says; a
    /// disk without room for the trash folder waits for space like any full disk; a file in
    /// the way or a folder that cannot be written stays so until someone acts.
    fn from(e: TrashError) -> Self {
        match e {
            TrashError::Guard(e) => WorkError::Guard(e),
            TrashError::Store(e) => e.into(),
            e @ (TrashError::NoRoom(_) | TrashError::LibraryAway { .. }) => {
                WorkError::Paused(e.to_string())
            }
            e => WorkError::bad_data(e.to_string()),
        }
    }
}

/// Why a forward move stopped: undo what it did, or leave it to the lease's next holder.
enum Stop {
    Undo(TrashError),
    Leave(TrashError),
}

impl<E: Into<TrashError>> From<E> for Stop {
    fn from(e: E) -> Self {
        Stop::Leave(e.into())
    }
}

/// What a move is carried out with: a restore's face walk and the test seams.
type With<'a> = (Option<&'a WalkRequest>, &'a dyn MoveHooks);

/// Carries a held move to its end: `Ok(ended)` once its job is finished (flipped, or rolled
/// back for a reason), `Err` while it is unfinished and still held.
fn carry_out(
    store: &Store,
    guard: &LeaseGuard,
    held: Move,
    with: With<'_>,
) -> Result<Ended, TrashError> {
    // Files looked for in an absent library would seem vanished: wait for it instead.
    libraries_here(store, held.intents.iter().map(|i| i.library_id))?;
    let reason = match held.rollback.clone() {
        Some(reason) => TrashError::RolledBack {
            asset: held.asset_id,
            reason,
        },
        None => match forward(store, guard, &held, with) {
            Ok(outcome) => return Ok(Ok(outcome)),
            Err(Stop::Leave(e)) => return Err(e),
            Err(Stop::Undo(e)) => {
                guard.guarded(|s, l| s.start_rollback(l, &e.to_string()))?;
                e
            }
        },
    };
    let now = store.held_move(held.job_id)?;
    roll_back(store, guard, &now)?;
    guard.guarded(|s, l| s.end_rolled_back(l))?;
    Ok(Err(reason))
}

/// Moves every file of the move still pending, then flips the asset (a restore with its
/// face walk, in the same transaction).
fn forward(
    store: &Store,
    guard: &LeaseGuard,
    held: &Move,
    (faces, hooks): With<'_>,
) -> Result<MoveOutcome, Stop> {
    let pending: Vec<&TrashIntent> = held
        .intents
        .iter()
        .filter(|i| i.state == IntentState::Pending)
        .collect();
    let places = pending
        .iter()
        .map(|i| paths(store, i))
        .collect::<Result<Vec<_>, _>>()?;
    preflight(&places, hooks).map_err(Stop::Undo)?;
    for (intent, (from, to)) in pending.into_iter().zip(places) {
        guard.ensure_live()?;
        let how = match locate(&from, &to).map_err(|e| Stop::Undo(fail(&from, &to, &e)))? {
            // Other bytes written at the path since the move began are not the asset's
            // file: they stay, and the asset's file counts as gone from there.
            Place::From if !ours(store, intent, &from)? => Settle::Vanished,
            Place::From => {
                hooks.before_rename(&from, &to);
                guard.confirm()?;
                move_file(&from, &to).map_err(Stop::Undo)?;
                hooks.after_rename(intent);
                Settle::Done
            }
            Place::To if !ours(store, intent, &to)? => Settle::Vanished,
            Place::To => Settle::Done,
            Place::Both { same: true } => {
                guard.confirm()?;
                unlink_twin(&from, &to).map_err(Stop::Undo)?;
                Settle::Done
            }
            Place::Both { same: false } => return Err(Stop::Undo(taken(&from, &to))),
            Place::Neither => Settle::Vanished,
        };
        guard.guarded(|s, l| s.settle_intent(l, intent.id, how))?;
    }
    match guard.guarded(|s, l| s.finish_move(l, faces.cloned()))? {
        Finish::Flipped(outcome) => Ok(outcome),
        Finish::Linked(paths) => Err(Stop::Undo(TrashError::Linked {
            asset: held.asset_id,
            paths: paths.join(", "),
        })),
        Finish::NothingBack => Err(Stop::Undo(TrashError::RolledBack {
            asset: held.asset_id,
            reason: "no file of its own was put back (none is in the trash folder as the \
                     trash left it); the asset stays in the trash, and so do the files that \
                     followed it there (a stack's RAW, a Live clip: restore them on their own)"
                .into(),
        })),
        Finish::KeptGone => Err(Stop::Undo(TrashError::RolledBack {
            asset: held.asset_id,
            reason: "the file to keep is no longer in the library; every copy stays".into(),
        })),
    }
}

/// Puts every file of the move back where it started, newest first, settling each.
fn roll_back(store: &Store, guard: &LeaseGuard, held: &Move) -> Result<(), TrashError> {
    for intent in held.intents.iter().rev() {
        if intent.state == IntentState::Aborted {
            continue;
        }
        guard.ensure_live()?;
        let (from, to) = paths(store, intent)?;
        let how = match locate(&from, &to).map_err(|e| fail(&to, &from, &e))? {
            Place::From => Settle::Back,
            // Not the file this move moved: it stays, and the move's file is gone.
            Place::To if !ours(store, intent, &to)? => Settle::Vanished,
            Place::To => {
                guard.confirm()?;
                move_file(&to, &from)?;
                Settle::Back
            }
            Place::Both { same: true } => {
                guard.confirm()?;
                unlink_twin(&to, &from)?;
                Settle::Back
            }
            // A pending intent's file never left (a move never replaces): what is at its
            // destination is someone else's, and stays.
            Place::Both { same: false } if intent.state == IntentState::Pending => Settle::Back,
            Place::Both { same: false } => return Err(taken(&to, &from)),
            Place::Neither => Settle::Vanished,
        };
        guard.guarded(|s, l| s.settle_intent(l, intent.id, how))?;
    }
    Ok(())
}

fn paths(store: &Store, intent: &TrashIntent) -> Result<(PathBuf, PathBuf), TrashError> {
    let library = store
        .library(intent.library_id)?
        .ok_or_else(|| StoreError::NotFound(format!("library {} is gone", intent.library_id)))?;
    let root = Path::new(&library.root);
    // A journal row that names no path inside the library moves nothing.
    let under = |bytes: &[u8]| RelPath::new(bytes).map(|rel| rel.under(root));
    match (under(&intent.from_path), under(&intent.to_path)) {
        (Ok(from), Ok(to)) => Ok((from, to)),
        (Err(e), _) | (_, Err(e)) => Err(TrashError::Move {
            from: String::from_utf8_lossy(&intent.from_path).into_owned(),
            to: String::from_utf8_lossy(&intent.to_path).into_owned(),
            why: e.to_string(),
        }),
    }
}

fn fail(from: &Path, to: &Path, why: &dyn std::fmt::Display) -> TrashError {
    TrashError::Move {
        from: from.display().to_string(),
        to: to.display().to_string(),
        why: why.to_string(),
    }
}

fn taken(from: &Path, to: &Path) -> TrashError {
    fail(from, to, &"the destination exists already")
}

/// Whether the file at `at` is the one the move began with: its file row still shows the
/// move's asset with the stamp the intent recorded (an intent from before stamps were
/// recorded takes the row's), and the file on disk carries that stamp (a rename keeps it).
/// A move carried on after a crash may find another photo saved at the path since, even
/// indexed as another asset: that one is never moved.
fn ours(store: &Store, intent: &TrashIntent, at: &Path) -> Result<bool, TrashError> {
    let Some((asset, row)) = store.intent_row(intent)? else {
        return Ok(false);
    };
    let began = intent.stamp.unwrap_or(row);
    if asset != Some(intent.asset_id) || row != began {
        return Ok(false);
    }
    Ok(std::fs::symlink_metadata(at).is_ok_and(|m| FileStamp::of(&m) == began))
}

/// Refuses a move while a library it touches is away: its folder is not there, or is not
/// provably the library (another disk at its path, its marker gone), as a scan's circuit
/// breaker tells. A file looked for there would seem vanished, and a move would mark it so.
fn libraries_here(
    store: &Store,
    libraries: impl IntoIterator<Item = i64>,
) -> Result<(), TrashError> {
    let mut ids: Vec<i64> = libraries.into_iter().collect();
    ids.sort_unstable();
    ids.dedup();
    for id in ids {
        let library = store
            .library(id)?
            .ok_or_else(|| StoreError::NotFound(format!("library {id} is gone")))?;
        match identity::check(store, &library)? {
            Verdict::Same => {}
            Verdict::Changed(why) | Verdict::Unavailable(why) => {
                return Err(TrashError::LibraryAway { library: id, why });
            }
        }
    }
    Ok(())
}

/// Where a file of a move is now.
enum Place {
    From,
    To,
    /// Both names exist; `same` when they are one file (a hard link whose unlink a crash
    /// interrupted).
    Both {
        same: bool,
    },
    Neither,
}

fn locate(from: &Path, to: &Path) -> io::Result<Place> {
    let at = |p: &Path| match std::fs::symlink_metadata(p) {
        Ok(m) => Ok(Some(m)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    };
    Ok(match (at(from)?, at(to)?) {
        (Some(_), None) => Place::From,
        (None, Some(_)) => Place::To,
        (Some(a), Some(b)) => Place::Both {
            same: same_file(&a, &b),
        },
        (None, None) => Place::Neither,
    })
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

/// Without inode numbers two names cannot be told to be one file: treated as two.
#[cfg(not(unix))]
fn same_file(_: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    false
}

/// Both names are one file: the move's link happened, its unlink did not. Finish it.
fn unlink_twin(from: &Path, to: &Path) -> Result<(), TrashError> {
    std::fs::remove_file(from).map_err(|e| fail(from, to, &e))
}

/// Refuses, before anything moves, a move whose folders cannot be written: the folder a
/// file leaves and the nearest existing folder of its destination; and a move that must
/// create a folder on a disk without room for it.
fn preflight(places: &[(PathBuf, PathBuf)], hooks: &dyn MoveHooks) -> Result<(), TrashError> {
    for (from, to) in places {
        for dir in [from.parent(), to.parent()].into_iter().flatten() {
            let dir = nearest_existing(dir);
            writable(dir).map_err(|e| TrashError::ReadOnly {
                path: dir.display().to_string(),
                why: e.to_string(),
            })?;
        }
        if let Some(parent) = to.parent().filter(|p| !p.exists()) {
            let dir = nearest_existing(parent);
            let free = hooks.free_bytes(dir);
            if free.is_some_and(|f| f < FOLDER_ROOM) {
                return Err(no_room(dir, free));
            }
        }
    }
    Ok(())
}

fn no_room(dir: &Path, free: Option<u64>) -> TrashError {
    TrashError::NoRoom(DiskFull {
        path: dir.to_path_buf(),
        free,
        paused: None,
    })
}

/// A failed folder creation or rename; a full disk says so in the full-disk words.
fn move_error(from: &Path, to: &Path, e: &io::Error) -> TrashError {
    if crate::disk::is_full(e) {
        let dir = to.parent().map_or(to, nearest_existing);
        return no_room(dir, crate::disk::SystemFreeSpace.free_bytes(dir));
    }
    match e.kind() {
        io::ErrorKind::AlreadyExists => taken(from, to),
        _ => fail(from, to, e),
    }
}

fn nearest_existing(dir: &Path) -> &Path {
    dir.ancestors().find(|d| d.exists()).unwrap_or(dir)
}

/// `access(W_OK)`: answers a read-only mount (EROFS) even to root, for whom mode bits do
/// not count.
#[cfg(target_os = "linux")]
fn writable(dir: &Path) -> io::Result<()> {
    Ok(rustix::fs::access(dir, rustix::fs::Access::WRITE_OK)?)
}

#[cfg(not(target_os = "linux"))]
fn writable(dir: &Path) -> io::Result<()> {
    if std::fs::metadata(dir)?.permissions().readonly() {
        Err(io::Error::new(io::ErrorKind::PermissionDenied, "read-only"))
    } else {
        Ok(())
    }
}

/// A move inside one library that never replaces a file: the destination is created by
/// the move itself or the move fails, with no window between a check and the rename.
fn move_file(from: &Path, to: &Path) -> Result<(), TrashError> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(|e| {
            if crate::disk::is_full(&e) {
                move_error(from, to, &e)
            } else {
                fail(from, to, &e)
            }
        })?;
    }
    rename_noreplace(from, to).map_err(|e| move_error(from, to, &e))
}

/// `renameat2(RENAME_NOREPLACE)`; a file system that does not offer it (EINVAL) gets the
/// link-then-unlink move.
#[cfg(target_os = "linux")]
fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    use rustix::io::Errno;
    match renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => link_then_unlink(from, to),
        Err(e) => Err(e.into()),
    }
}

#[cfg(not(target_os = "linux"))]
fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    link_then_unlink(from, to)
}

/// A hard link fails when the destination exists, so it never replaces; the unlink then
/// completes the move (a crash in between leaves one file under two names, which the
/// move's next holder finishes).
fn link_then_unlink(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::hard_link(from, to).map_err(|e| match e.kind() {
        io::ErrorKind::AlreadyExists => e,
        _ => io::Error::new(
            e.kind(),
            format!(
                "this file system can neither rename without replacing nor hard-link ({e}); \
                 mediadex does not move files here"
            ),
        ),
    })?;
    std::fs::remove_file(from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_while_moving_says_so_in_the_full_disk_words() {
        let dir = tempfile_dir();
        let (from, to) = (dir.join("a.png"), dir.join(".mediadex-trash/1/a.png"));
        let full = io::Error::from(io::ErrorKind::StorageFull);
        let e = move_error(&from, &to, &full);
        assert!(matches!(e, TrashError::NoRoom(_)), "{e:?}");
        let text = e.to_string();
        let want = format!("the disk holding {} is full (", dir.display());
        assert!(text.starts_with(&want), "{text}");
        assert!(
            text.ends_with("trash or restore it again once space is freed"),
            "{text}"
        );
        let other = move_error(
            &from,
            &to,
            &io::Error::from(io::ErrorKind::PermissionDenied),
        );
        assert!(matches!(other, TrashError::Move { .. }), "{other:?}");
    }

    #[test]
    fn the_link_fallback_never_replaces_either() {
        let dir = tempfile_dir();
        let (from, to) = (dir.join("a"), dir.join("b"));
        std::fs::write(&from, b"photo").ok();
        std::fs::write(&to, b"someone else's").ok();
        assert!(link_then_unlink(&from, &to).is_err());
        assert_eq!(
            std::fs::read(&to).ok().as_deref(),
            Some(&b"someone else's"[..])
        );
        std::fs::remove_file(&to).ok();
        assert!(link_then_unlink(&from, &to).is_ok());
        assert!(!from.exists());
        assert_eq!(std::fs::read(&to).ok().as_deref(), Some(&b"photo"[..]));
        std::fs::remove_dir_all(&dir).ok();
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "mediadex-move-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4()
        ));
        std::fs::create_dir_all(&dir).ok();
        dir
    }
}
