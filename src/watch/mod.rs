//! Watching library roots (DESIGN §10): kernel change events, debounced, become scoped scan
//! requests through admission (trigger `watch`); roots on network or FUSE filesystems are
//! polled instead, and a library whose kernel watch hits the OS limit degrades to polling
//! and says so in its status. Owns the watcher thread, the per-library polling threads and
//! the watch status; it only ever *requests* scans — admission coalesces them and the scan
//! pipeline does the work — and never writes anything else.
//!
//! Must not import: scan::job, scan::pipeline, http, ops, rusqlite

mod fstype;
mod poll;
mod scope;

pub use fstype::{fstype_in, fstype_of, is_remote};
pub use poll::Fingerprints;
pub use scope::scope_for;

use crate::model::{Library, ScanRequest, Trigger};
use crate::store::{AdmissionOptions, Store};
use crossbeam_channel::{Receiver, Sender, select};
use notify::{EventKind, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, NoCache};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How the watcher behaves; see `Config` for where the defaults come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchOptions {
    /// Quiet time after the last event before a batch of changes is acted on.
    pub debounce: Duration,
    /// How often a polled root is walked.
    pub poll_interval: Duration,
    /// Poll every root, even local ones (tests, and filesystems mountinfo misreports).
    pub force_poll: bool,
    /// Admission's hourly limit per library (a refused request is retried later).
    pub hourly_limit: Option<u32>,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            debounce: Duration::from_secs(2),
            poll_interval: Duration::from_secs(300),
            force_poll: false,
            hourly_limit: None,
        }
    }
}

/// How a library's changes are noticed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WatchMode {
    /// Kernel change events.
    Events,
    /// A walk of the tree every `poll_interval`.
    Polling,
}

/// One library's watch, for the page, `/metrics` and logs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WatchStatus {
    pub library_id: i64,
    pub mode: WatchMode,
    /// Why the library is polled (network filesystem, watch limit, …); `None` for events.
    pub reason: Option<String>,
    /// True when the library fell back to polling after kernel watching failed.
    pub degraded: bool,
    /// A change noticed but not yet admitted (admission refused it; retried).
    pub pending_scope: Option<String>,
}

/// Where kernel events come from: the notify debouncer in production, a fake in tests.
pub trait EventSource: Send {
    fn watch(&mut self, root: &Path) -> notify::Result<()>;
    fn unwatch(&mut self, root: &Path);
}

type Statuses = Arc<Mutex<BTreeMap<i64, WatchStatus>>>;
/// Called after admission accepted a request, to wake idle workers.
pub type Waker = Arc<dyn Fn() + Send + Sync>;

enum Command {
    Add(Library),
    Remove(i64),
    Stop,
}

/// The running watcher. Dropping it without `shutdown` leaves its threads to end with the
/// process.
pub struct Watcher {
    commands: Sender<Command>,
    thread: Option<JoinHandle<()>>,
    statuses: Statuses,
}

impl Watcher {
    /// Watches `libraries` with kernel events where they work, polling elsewhere.
    pub fn start(store: &Store, libraries: &[Library], options: WatchOptions, wake: Waker) -> Self {
        let debounce = options.debounce;
        Self::start_with(store, libraries, options, wake, move |tx| {
            kernel_source(debounce, tx)
        })
    }

    /// As `start`, with the event source made by `source` (given the channel its events go to).
    pub fn start_with(
        store: &Store,
        libraries: &[Library],
        options: WatchOptions,
        wake: Waker,
        source: impl FnOnce(Sender<DebounceEventResult>) -> notify::Result<Box<dyn EventSource>>
        + Send
        + 'static,
    ) -> Self {
        let (commands, command_rx) = crossbeam_channel::unbounded();
        for library in libraries {
            let _ = commands.send(Command::Add(library.clone()));
        }
        let statuses: Statuses = Arc::default();
        let ctx = Ctx {
            store: store.clone(),
            options,
            wake,
            statuses: statuses.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("mediadex-watch".into())
            .spawn(move || run(ctx, command_rx, source))
            .map_err(|e| tracing::error!(error = %e, "could not start the file watcher"))
            .ok();
        Watcher {
            commands,
            thread,
            statuses,
        }
    }

    /// Starts watching a library added while running.
    pub fn add(&self, library: Library) {
        self.handle().add(library);
    }

    /// Stops watching a library that was removed.
    pub fn remove(&self, library_id: i64) {
        self.handle().remove(library_id);
    }

    /// Every watched library's status, by library id.
    pub fn statuses(&self) -> Vec<WatchStatus> {
        self.handle().statuses()
    }

    /// A cheap, cloneable handle for others (the HTTP API) to add and remove libraries and
    /// read the statuses while the watcher runs.
    pub fn handle(&self) -> WatchHandle {
        WatchHandle {
            commands: self.commands.clone(),
            statuses: self.statuses.clone(),
        }
    }

    /// Stops the watcher and its polling threads and waits for them.
    pub fn shutdown(mut self) {
        let _ = self.commands.send(Command::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// See `Watcher::handle`. Once the watcher stopped, `add` and `remove` do nothing.
#[derive(Clone)]
pub struct WatchHandle {
    commands: Sender<Command>,
    statuses: Statuses,
}

impl WatchHandle {
    pub fn add(&self, library: Library) {
        let _ = self.commands.send(Command::Add(library));
    }

    pub fn remove(&self, library_id: i64) {
        let _ = self.commands.send(Command::Remove(library_id));
    }

    pub fn statuses(&self) -> Vec<WatchStatus> {
        lock(&self.statuses).values().cloned().collect()
    }
}

fn lock(statuses: &Statuses) -> std::sync::MutexGuard<'_, BTreeMap<i64, WatchStatus>> {
    statuses
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What the watcher thread and the polling threads share.
#[derive(Clone)]
struct Ctx {
    store: Store,
    options: WatchOptions,
    wake: Waker,
    statuses: Statuses,
}

impl Ctx {
    /// Asks admission for a scan of `scope`; false when refused (the caller retries later).
    fn request(&self, library_id: i64, scope: &str, event: String) -> bool {
        let request = ScanRequest {
            library_id,
            scope: scope.to_string(),
            trigger: Trigger::Watch,
            watch_event: Some(event),
        };
        let options = AdmissionOptions {
            hourly_limit: self.options.hourly_limit,
            ..AdmissionOptions::default()
        };
        match self.store.request_scan_keyed(request, options) {
            Ok((run, admission)) => {
                tracing::debug!(
                    library_id,
                    scope,
                    run = run.id,
                    ?admission,
                    "watch: scan requested"
                );
                self.set_pending(library_id, None);
                (self.wake)();
                true
            }
            Err(e) => {
                tracing::warn!(library_id, scope, error = %e, "watch: scan request refused; will retry");
                self.set_pending(library_id, Some(scope.to_string()));
                false
            }
        }
    }

    fn set_status(&self, status: WatchStatus) {
        lock(&self.statuses).insert(status.library_id, status);
    }

    fn set_pending(&self, library_id: i64, scope: Option<String>) {
        if let Some(status) = lock(&self.statuses).get_mut(&library_id) {
            status.pending_scope = scope;
        }
    }
}

/// A library being watched, by whichever means.
enum Watched {
    Events {
        root: PathBuf,
    },
    Polling {
        root: PathBuf,
        stop: Sender<()>,
        thread: Option<JoinHandle<()>>,
    },
}

impl Watched {
    fn root(&self) -> &Path {
        match self {
            Watched::Events { root } | Watched::Polling { root, .. } => root,
        }
    }
}

struct State {
    ctx: Ctx,
    source: Option<Box<dyn EventSource>>,
    source_error: Option<String>,
    watched: BTreeMap<i64, Watched>,
    /// Changes seen and not yet admitted: library → (scope, what happened).
    pending: BTreeMap<i64, (String, Tally)>,
}

fn run(
    ctx: Ctx,
    commands: Receiver<Command>,
    source: impl FnOnce(Sender<DebounceEventResult>) -> notify::Result<Box<dyn EventSource>>,
) {
    let (events_tx, events) = crossbeam_channel::unbounded();
    let (source, source_error) = match source(events_tx) {
        Ok(source) => (Some(source), None),
        Err(e) => (
            None,
            Some(limit_or(&e, "the OS file watcher could not start")),
        ),
    };
    let mut state = State {
        ctx,
        source,
        source_error,
        watched: BTreeMap::new(),
        pending: BTreeMap::new(),
    };
    loop {
        select! {
            recv(commands) -> command => match command {
                Ok(Command::Add(library)) => state.add(&library),
                Ok(Command::Remove(id)) => state.remove(id),
                Ok(Command::Stop) | Err(_) => break,
            },
            recv(events) -> batch => match batch {
                Ok(Ok(batch)) => state.on_events(&batch),
                Ok(Err(errors)) => state.on_errors(&errors),
                Err(_) => state.source_lost(),
            },
            default(Duration::from_secs(1)) => {},
        }
        state.flush();
    }
    let ids: Vec<i64> = state.watched.keys().copied().collect();
    for id in ids {
        state.remove(id);
    }
}

/// A reason naming the OS limit when that was the cause, else `what` and the error.
fn limit_or(error: &notify::Error, what: &str) -> String {
    match error.kind {
        notify::ErrorKind::MaxFilesWatch => {
            "the OS limit on watched folders was reached (raise fs.inotify.max_user_watches)"
                .to_string()
        }
        _ => format!("{what}: {error}"),
    }
}

impl State {
    fn add(&mut self, library: &Library) {
        self.remove(library.id);
        let root = match std::fs::canonicalize(&library.root) {
            Ok(root) => root,
            Err(_) => PathBuf::from(&library.root),
        };
        if let Some(reason) = self.poll_reason(&root) {
            self.start_polling(library.id, root, reason, false);
            return;
        }
        let watched = match self.source.as_mut() {
            Some(source) => source.watch(&root),
            None => return,
        };
        match watched {
            Ok(()) => {
                tracing::info!(library = library.id, root = %root.display(), "watching for changes");
                self.ctx.set_status(WatchStatus {
                    library_id: library.id,
                    mode: WatchMode::Events,
                    reason: None,
                    degraded: false,
                    pending_scope: None,
                });
                self.watched.insert(library.id, Watched::Events { root });
            }
            Err(e) => {
                let reason = limit_or(&e, "watching failed");
                self.start_polling(library.id, root, reason, true);
            }
        }
    }

    /// Why `root` must be polled rather than watched, if it must.
    fn poll_reason(&self, root: &Path) -> Option<String> {
        if self.ctx.options.force_poll {
            return Some("polling was asked for".into());
        }
        if let Some(fstype) = fstype_of(root).filter(|t| is_remote(t)) {
            return Some(format!(
                "{fstype} filesystem: changes made elsewhere raise no events"
            ));
        }
        self.source_error.clone()
    }

    fn start_polling(&mut self, library_id: i64, root: PathBuf, reason: String, degraded: bool) {
        if degraded {
            tracing::warn!(library = library_id, %reason, "file watching degraded to polling");
        } else {
            tracing::info!(library = library_id, %reason, "polling for changes");
        }
        self.ctx.set_status(WatchStatus {
            library_id,
            mode: WatchMode::Polling,
            reason: Some(reason),
            degraded,
            pending_scope: None,
        });
        // Events between the failure and the first poll's baseline are lost: a scan of
        // the whole library makes up for them.
        if degraded {
            self.pending
                .insert(library_id, (String::new(), Tally::degraded()));
        }
        let (stop, stopped) = crossbeam_channel::bounded(1);
        let ctx = self.ctx.clone();
        let poll_root = root.clone();
        let thread = std::thread::Builder::new()
            .name(format!("mediadex-poll-{library_id}"))
            .spawn(move || poll_loop(&ctx, library_id, &poll_root, &stopped))
            .map_err(|e| tracing::error!(error = %e, "could not start a polling thread"))
            .ok();
        self.watched
            .insert(library_id, Watched::Polling { root, stop, thread });
    }

    fn remove(&mut self, library_id: i64) {
        self.pending.remove(&library_id);
        lock(&self.ctx.statuses).remove(&library_id);
        match self.watched.remove(&library_id) {
            Some(Watched::Events { root }) => {
                if let Some(source) = self.source.as_mut() {
                    source.unwatch(&root);
                }
            }
            Some(Watched::Polling { stop, thread, .. }) => {
                let _ = stop.send(());
                if let Some(thread) = thread {
                    let _ = thread.join();
                }
            }
            None => {}
        }
    }

    /// The library whose root holds `path` (the deepest root, for nested libraries).
    fn library_of(&self, path: &Path) -> Option<(i64, &Path)> {
        self.watched
            .iter()
            .filter(|(_, w)| matches!(w, Watched::Events { .. }) && path.starts_with(w.root()))
            .max_by_key(|(_, w)| w.root().components().count())
            .map(|(id, w)| (*id, w.root()))
    }

    fn on_events(&mut self, batch: &[notify_debouncer_full::DebouncedEvent]) {
        for event in batch {
            let Some(kind) = Kind::of(&event.kind) else {
                continue;
            };
            for path in &event.paths {
                let hit = self.library_of(path);
                let Some((id, scope)) =
                    hit.and_then(|(id, root)| Some((id, scope_for(root, path)?)))
                else {
                    continue;
                };
                let entry = self
                    .pending
                    .entry(id)
                    .or_insert((scope.clone(), Tally::default()));
                entry.0 = crate::model::widen_scope(&entry.0, &scope);
                entry.1.count(kind);
            }
        }
    }

    fn on_errors(&mut self, errors: &[notify::Error]) {
        for error in errors {
            if !matches!(error.kind, notify::ErrorKind::MaxFilesWatch) {
                tracing::warn!(error = %error, "file watcher error");
                continue;
            }
            // Which libraries lost coverage: those the error names, or all watched by
            // events when it names none (inotify reports the limit without a path).
            let named: Vec<i64> = error
                .paths
                .iter()
                .filter_map(|p| self.library_of(p).map(|(id, _)| id))
                .collect();
            let hit: Vec<i64> = if named.is_empty() {
                self.events_libraries()
            } else {
                named
            };
            for id in hit {
                self.degrade(id, limit_or(error, "watching failed"));
            }
        }
    }

    fn events_libraries(&self) -> Vec<i64> {
        let events = |w: &&Watched| matches!(w, Watched::Events { .. });
        self.watched
            .iter()
            .filter(|(_, w)| events(w))
            .map(|(id, _)| *id)
            .collect()
    }

    fn degrade(&mut self, library_id: i64, reason: String) {
        let Some(Watched::Events { root }) = self.watched.remove(&library_id) else {
            return;
        };
        if let Some(source) = self.source.as_mut() {
            source.unwatch(&root);
        }
        self.start_polling(library_id, root, reason, true);
    }

    /// The event source ended (it cannot restart itself): every events library polls.
    fn source_lost(&mut self) {
        if self.source.take().is_none() {
            return;
        }
        self.source_error = Some("the OS file watcher stopped".into());
        for id in self.events_libraries() {
            self.degrade(id, "the OS file watcher stopped".into());
        }
    }

    /// Requests a scan for every library with pending changes; refused ones stay pending.
    fn flush(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        for (id, (scope, tally)) in pending {
            if !self.ctx.request(id, &scope, tally.describe()) {
                self.pending.insert(id, (scope, tally));
            }
        }
    }
}

/// The polling thread of one library: a baseline, then a comparison every interval. The
/// baseline only moves on once admission accepted the request for the difference.
fn poll_loop(ctx: &Ctx, library_id: i64, root: &Path, stop: &Receiver<()>) {
    let mut base = Fingerprints::take(root);
    loop {
        select! {
            recv(stop) -> _ => return,
            default(ctx.options.poll_interval) => {},
        }
        if !root.is_dir() {
            // A NAS blip: the root is not there. Nothing changed that we can see; the
            // scan's circuit breaker deals with a root that comes back different.
            continue;
        }
        let now = Fingerprints::take(root);
        match base.changed_scope(&now) {
            None => base = now,
            Some(scope) => {
                if ctx.request(library_id, &scope, "poll: changes found".into()) {
                    base = now;
                }
            }
        }
    }
}

/// The event kinds that matter (reads and opens do not).
#[derive(Clone, Copy)]
enum Kind {
    Create,
    Modify,
    Remove,
    Other,
}

impl Kind {
    fn of(kind: &EventKind) -> Option<Kind> {
        match kind {
            EventKind::Access(_) => None,
            EventKind::Create(_) => Some(Kind::Create),
            EventKind::Modify(_) => Some(Kind::Modify),
            EventKind::Remove(_) => Some(Kind::Remove),
            EventKind::Any | EventKind::Other => Some(Kind::Other),
        }
    }
}

/// What happened in a batch, for the run's `watch_event`.
#[derive(Clone, Debug, Default)]
struct Tally {
    created: u32,
    modified: u32,
    removed: u32,
    other: u32,
    degraded: bool,
}

impl Tally {
    fn degraded() -> Tally {
        Tally {
            degraded: true,
            ..Tally::default()
        }
    }

    fn count(&mut self, kind: Kind) {
        let slot = match kind {
            Kind::Create => &mut self.created,
            Kind::Modify => &mut self.modified,
            Kind::Remove => &mut self.removed,
            Kind::Other => &mut self.other,
        };
        *slot = slot.saturating_add(1);
    }

    fn describe(&self) -> String {
        if self.degraded {
            return "watch degraded to polling: full rescan".into();
        }
        let parts = [
            ("created", self.created),
            ("modified", self.modified),
            ("removed", self.removed),
            ("other", self.other),
        ];
        let said: Vec<String> = parts
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(w, n)| format!("{n} {w}"))
            .collect();
        format!("events: {}", said.join(", "))
    }
}

/// The production event source: notify's recommended watcher behind the full debouncer,
/// without its file-id cache (that cache walks every root once more at start; we only need
/// paths) and without following symlinks out of the root.
struct Kernel(notify_debouncer_full::Debouncer<notify::RecommendedWatcher, NoCache>);

fn kernel_source(
    debounce: Duration,
    tx: Sender<DebounceEventResult>,
) -> notify::Result<Box<dyn EventSource>> {
    let config = notify::Config::default().with_follow_symlinks(false);
    let debouncer = notify_debouncer_full::new_debouncer_opt::<_, notify::RecommendedWatcher, _>(
        debounce, None, tx, NoCache, config,
    )?;
    Ok(Box::new(Kernel(debouncer)))
}

impl EventSource for Kernel {
    fn watch(&mut self, root: &Path) -> notify::Result<()> {
        self.0.watch(root, RecursiveMode::Recursive)
    }

    fn unwatch(&mut self, root: &Path) {
        let _ = self.0.unwatch(root);
    }
}
