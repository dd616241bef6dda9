//! The worker pool: threads that claim a due row (scan runs first, then jobs of the kinds
//! that have handlers), run its handler under a `LeaseGuard`, and ack with a fenced write.
//! Graceful shutdown trips every token and hands the leases back. Work stopped by a full disk
//! is paused, not failed: it waits and carries on by itself once space is freed. A failure
//! that passes by itself (`Retry::Transient`: a locked database, a NAS blip) is retried after
//! a growing backoff without spending a job's attempt, and gives a scan run a successor; a
//! permanent one fails the attempt with its reason. Holds no domain logic: that is in the
//! handlers.
use super::cancel::{CancelReason, Registry};
use super::failure::{Failure, Retry};
use super::guard::{GuardError, Hooks, LeaseGuard, NoHooks};
use crate::model::{Job, JobFilter, Lease, Millis, NewJob, RunOutcome, ScanRun, Target};
use crate::store::{Store, StoreError};
use crossbeam_channel::{Receiver, Sender, bounded, select, unbounded};
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// What a handler gets: its lease's guard, for cancellation checks and fenced writes.
pub type WorkContext = LeaseGuard;

/// How a job handler finished.
#[derive(Debug)]
pub enum JobDone {
    Done,
    /// Done, and this follow-up is enqueued in the same fenced transaction (a chain).
    Then(NewJob),
    /// The handler already completed the row in the same fenced transaction as its data
    /// (a walk batch: results, cursor and the chain's advance); nothing is left to write.
    Committed,
}

/// How a scan handler finished.
#[derive(Debug)]
pub enum ScanDone {
    /// The pool writes the completion (fenced).
    Complete {
        outcome: RunOutcome,
        reason: Option<String>,
    },
    /// The handler already committed the completion in the same fenced transaction as its
    /// last data (a full scan's missing-file marking), its heartbeat stopped before that
    /// commit; nothing is left to write.
    Committed,
}

/// Why a handler stopped without finishing.
#[derive(Debug, thiserror::Error)]
pub enum WorkError {
    /// The work noticed cancellation or a lost lease (its guard said so); nothing is acked.
    /// A fenced write that failed in the store is classified as that store error is.
    #[error(transparent)]
    Guard(#[from] GuardError),
    /// The attempt failed. A transient failure is retried after a growing backoff without
    /// spending a job's attempt (`Store::retry_job`), and a scan run ends `failed` with a
    /// successor (`Store::retry_scan`); a permanent one spends the job's attempt (retried
    /// with backoff until its attempts are used) and ends a scan run `failed`, no successor.
    #[error(transparent)]
    Failed(#[from] Failure),
    /// The work cannot go on for now for a cause that passes by itself (a full disk; the
    /// message says which and what waits): a job waits without spending an attempt, a scan
    /// run ends `failed` with a successor that waits (`Store::defer_job`, `pause_scan`).
    #[error("{0}")]
    Paused(String),
}

impl From<StoreError> for WorkError {
    /// A full disk among these still pauses the work: the pool sees to it before the ack.
    fn from(e: StoreError) -> Self {
        WorkError::Failed(Failure::Store(e))
    }
}

impl WorkError {
    /// A store failure: a full disk pauses the work (`what`, e.g. "the thumbnails"); any
    /// other failure fails the attempt, as transient as the store error is.
    pub fn from_store(store: &Store, what: &str, e: StoreError) -> WorkError {
        match e {
            StoreError::DiskFull => WorkError::Paused(disk_full(store, what)),
            e => WorkError::Failed(Failure::Store(e)),
        }
    }

    /// The input is not what it must be: the attempt fails for good.
    pub fn bad_data(why: impl Into<String>) -> WorkError {
        WorkError::Failed(Failure::BadData(why.into()))
    }

    /// Whether the ack retries the work (`None`: it is not a failure, or a pause).
    pub fn retry(&self) -> Option<Retry> {
        match self {
            WorkError::Failed(f) => Some(f.retry()),
            WorkError::Guard(GuardError::Store(e)) => Some(Failure::store_retry(e)),
            WorkError::Guard(_) | WorkError::Paused(_) => None,
        }
    }
}

/// The full-disk message for `what`, naming the disk holding the data dir.
fn disk_full(store: &Store, what: &str) -> String {
    let probe = crate::disk::SystemFreeSpace;
    crate::disk::DiskFull::at(&probe, store.dir(), Some(what.to_string())).to_string()
}

pub trait JobHandler: Send + Sync + 'static {
    fn run(&self, ctx: &WorkContext, job: &Job) -> Result<JobDone, WorkError>;
    /// For a walk chain: the highest scheme this handler walks. The claim leaves a row of a
    /// higher scheme to the newer binary that walks it (see `JobFilter`).
    fn max_scheme(&self) -> Option<i64> {
        None
    }
}

pub trait ScanHandler: Send + Sync + 'static {
    fn run(&self, ctx: &WorkContext, run: &ScanRun) -> Result<ScanDone, WorkError>;
}

/// The handlers of this process, by job kind.
#[derive(Default, Clone)]
pub struct Handlers {
    pub jobs: HashMap<String, Arc<dyn JobHandler>>,
    pub scan: Option<Arc<dyn ScanHandler>>,
}

impl Handlers {
    pub fn job(mut self, kind: &str, handler: impl JobHandler) -> Self {
        self.jobs.insert(kind.to_string(), Arc::new(handler));
        self
    }

    pub fn scan(mut self, handler: impl ScanHandler) -> Self {
        self.scan = Some(Arc::new(handler));
        self
    }
}

#[derive(Clone, Debug)]
pub struct PoolConfig {
    pub workers: usize,
    pub ttl: Millis,
    /// Heartbeat period; DESIGN.md asks for ttl/3.
    pub heartbeat_every: Duration,
    /// How long an idle worker waits before looking for due work again.
    pub poll_every: Duration,
}

impl PoolConfig {
    pub fn with_ttl(workers: usize, ttl: Millis) -> Self {
        PoolConfig {
            workers,
            ttl,
            heartbeat_every: Duration::from_millis((ttl / 3).max(1) as u64),
            poll_every: Duration::from_millis(500),
        }
    }
}

pub struct WorkerPool {
    registry: Arc<Registry>,
    store: Store,
    wake: Sender<()>,
    acked: Receiver<()>,
    stop: Option<Sender<()>>,
    threads: Vec<JoinHandle<()>>,
}

struct Worker {
    store: Store,
    handlers: Handlers,
    kinds: Vec<JobFilter>,
    config: PoolConfig,
    registry: Arc<Registry>,
    hooks: Arc<dyn Hooks>,
    /// Told after every ack (see `WorkerPool::acked`); never blocks a worker.
    acked: Sender<()>,
}

enum Claimed {
    Job(Lease, Job),
    Scan(Lease, ScanRun),
}

impl WorkerPool {
    pub fn start(store: &Store, handlers: Handlers, config: PoolConfig) -> WorkerPool {
        Self::start_with_hooks(store, handlers, config, Arc::new(NoHooks))
    }

    pub fn start_with_hooks(
        store: &Store,
        handlers: Handlers,
        config: PoolConfig,
        hooks: Arc<dyn Hooks>,
    ) -> WorkerPool {
        let registry = Arc::new(Registry::default());
        let (wake, wake_rx) = unbounded::<()>();
        let (stop, stop_rx) = bounded::<()>(0);
        let (acked, acked_rx) = bounded::<()>(1);
        let mut kinds: Vec<JobFilter> = handlers
            .jobs
            .iter()
            .map(|(kind, h)| JobFilter::new(kind.clone(), h.max_scheme()))
            .collect();
        kinds.sort_by(|a, b| a.kind.cmp(&b.kind));
        let worker = Arc::new(Worker {
            store: store.clone(),
            handlers,
            kinds,
            config: config.clone(),
            registry: registry.clone(),
            hooks,
            acked,
        });
        let threads = (0..config.workers.max(1))
            .filter_map(|i| {
                let (worker, wake_rx, stop_rx) = (worker.clone(), wake_rx.clone(), stop_rx.clone());
                std::thread::Builder::new()
                    .name(format!("mediadex-worker-{i}"))
                    .spawn(move || worker.run(&wake_rx, &stop_rx))
                    .map_err(|e| tracing::error!(error = %e, "could not start a worker thread"))
                    .ok()
            })
            .collect();
        WorkerPool {
            registry,
            store: store.clone(),
            wake,
            acked: acked_rx,
            stop: Some(stop),
            threads,
        }
    }

    /// Receives a message after a worker of this pool acked a claim (the ack committed, or
    /// refused by its fence): a caller waiting for work to end checks at once instead of at
    /// its next poll. Signals coalesce; one pending message stands for any number of acks.
    pub fn acked(&self) -> &Receiver<()> {
        &self.acked
    }

    /// Tells idle workers to look for work now (after an enqueue or a reclaim).
    pub fn wake(&self) {
        for _ in 0..self.threads.len() {
            let _ = self.wake.send(());
        }
    }

    /// Cancels a row: in the database (its generation moves on, so nothing of the current
    /// holder lands) and, if this process is working on it, locally at once. A scan run is
    /// cancelled as `Store::cancel_scan_run` does (its library's waiting and running runs,
    /// the successor reclaim made of it included), and each of them is tripped here.
    pub fn cancel(&self, target: Target, id: i64) -> Result<bool, StoreError> {
        if target == Target::ScanRun {
            let cancelled = self.store.cancel_scan_run(id)?;
            self.trip_runs(&cancelled);
            return Ok(!cancelled.is_empty());
        }
        let cancelled = self.store.cancel(target, id)?;
        self.registry.trip(target, id, CancelReason::Cancelled);
        Ok(cancelled)
    }

    /// Cancels a library's waiting and running runs in one write (`Store::cancel_scans`),
    /// then stops at once the ones this process is working on.
    pub fn cancel_scans(&self, library_id: i64) -> Result<Vec<ScanRun>, StoreError> {
        let cancelled = self.store.cancel_scans(library_id)?;
        self.trip_runs(&cancelled);
        Ok(cancelled)
    }

    fn trip_runs(&self, runs: &[ScanRun]) {
        for run in runs {
            self.registry
                .trip(Target::ScanRun, run.id, CancelReason::Cancelled);
        }
    }

    /// Work this process holds leases on right now.
    pub fn busy(&self) -> usize {
        self.registry.len()
    }

    /// Stops claiming, tells running work to stop, waits for the workers to hand their
    /// leases back.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        drop(self.stop.take());
        self.registry.close(CancelReason::Shutdown);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

impl Worker {
    fn run(&self, wake: &Receiver<()>, stop: &Receiver<()>) {
        loop {
            if stop_requested(stop) {
                return;
            }
            match self.claim() {
                Ok(Some(claimed)) => self.work(claimed),
                Ok(None) => select! {
                    recv(stop) -> _ => return,
                    recv(wake) -> _ => {},
                    default(self.config.poll_every) => {},
                },
                Err(e) => {
                    tracing::warn!(error = %e, "could not claim work; retrying");
                    if stop
                        .recv_timeout(self.config.poll_every)
                        .is_err_and(|e| e.is_disconnected())
                    {
                        return;
                    }
                }
            }
        }
    }

    fn claim(&self) -> Result<Option<Claimed>, StoreError> {
        let ttl = self.config.ttl;
        if self.handlers.scan.is_some()
            && let Some((lease, run)) = self.store.claim_scan_run(ttl)?
        {
            return Ok(Some(Claimed::Scan(lease, run)));
        }
        if self.kinds.is_empty() {
            return Ok(None);
        }
        Ok(self
            .store
            .claim_jobs(&self.kinds, ttl)?
            .map(|(lease, job)| Claimed::Job(lease, job)))
    }

    fn guard(&self, lease: Lease) -> Option<LeaseGuard> {
        let guard = LeaseGuard::register(&self.store, lease, self.config.ttl, &self.registry);
        match guard.begin(self.config.heartbeat_every, self.hooks.as_ref()) {
            Ok(()) => Some(guard),
            Err(e) => {
                tracing::info!(error = %e, "work stopped before it started");
                self.hand_back_if_shutdown(&guard);
                None
            }
        }
    }

    fn work(&self, claimed: Claimed) {
        match claimed {
            Claimed::Job(lease, job) => {
                let Some(handler) = self.handlers.jobs.get(&job.kind).cloned() else {
                    return;
                };
                let Some(guard) = self.guard(lease) else {
                    return;
                };
                let result = catch(|| handler.run(&guard, &job));
                self.ack_job(&guard, result);
            }
            Claimed::Scan(lease, run) => {
                let Some(handler) = self.handlers.scan.clone() else {
                    return;
                };
                let Some(guard) = self.guard(lease) else {
                    return;
                };
                let result = catch(|| handler.run(&guard, &run));
                self.ack_scan(&guard, result);
            }
        }
    }

    fn ack_job(&self, guard: &LeaseGuard, result: Result<JobDone, WorkError>) {
        guard.stop_heartbeat();
        self.hooks.before_ack(guard.lease());
        let acked = match decide(guard.token().reason(), self.paused(result, "this job")) {
            Ack::Finish(JobDone::Done) => guard.ack(|s, l| s.complete_job(l)),
            Ack::Finish(JobDone::Then(next)) => guard
                .ack(|s, l| s.complete_job_and_enqueue(l, next))
                .map(drop),
            Ack::Finish(JobDone::Committed) => Ok(()),
            Ack::Fail(msg) => guard.ack(|s, l| s.fail_job(l, &msg)).map(drop),
            Ack::Retry(msg) => {
                tracing::warn!(job = guard.lease().id, "{msg}; retrying after a backoff");
                guard.ack(|s, l| s.retry_job(l, &msg))
            }
            Ack::Pause(msg) => {
                tracing::warn!(job = guard.lease().id, "{msg}");
                guard.ack(|s, l| s.defer_job(l, &msg))
            }
            Ack::HandBack => guard.ack(|s, l| s.release(l)),
            Ack::Abandon => return,
        };
        self.done(guard, acked);
    }

    fn ack_scan(&self, guard: &LeaseGuard, result: Result<ScanDone, WorkError>) {
        guard.stop_heartbeat();
        self.hooks.before_ack(guard.lease());
        let acked = match decide(guard.token().reason(), self.paused(result, "this scan")) {
            Ack::Finish(ScanDone::Complete { outcome, reason }) => {
                guard.ack(|s, l| s.complete_scan(l, outcome, reason.as_deref()))
            }
            Ack::Finish(ScanDone::Committed) => Ok(()),
            Ack::Fail(msg) => guard.ack(|s, l| s.fail_scan(l, &msg)),
            Ack::Retry(msg) => {
                tracing::warn!(run = guard.lease().id, "{msg}; a successor retries");
                guard.ack(|s, l| s.retry_scan(l, &msg))
            }
            Ack::Pause(msg) => {
                tracing::warn!(run = guard.lease().id, "{msg}");
                guard.ack(|s, l| s.pause_scan(l, &msg))
            }
            Ack::HandBack => guard.ack(|s, l| s.release(l)),
            Ack::Abandon => return,
        };
        self.done(guard, acked);
    }

    /// A full disk the handler did not name itself still pauses the work.
    fn paused<T>(&self, result: Result<T, WorkError>, what: &str) -> Result<T, WorkError> {
        match result {
            Err(
                WorkError::Guard(GuardError::Store(StoreError::DiskFull))
                | WorkError::Failed(Failure::Store(StoreError::DiskFull)),
            ) => Err(WorkError::Paused(disk_full(&self.store, what))),
            other => other,
        }
    }

    fn done(&self, guard: &LeaseGuard, acked: Result<(), GuardError>) {
        log_ack(guard, acked);
        // Full means a signal is already pending: nothing is lost by dropping this one.
        let _ = self.acked.try_send(());
    }

    /// A claim stopped by shutdown before it started is still ours: give it back so the
    /// next process resumes at once instead of waiting for the expiry.
    fn hand_back_if_shutdown(&self, guard: &LeaseGuard) {
        if guard.token().reason() == Some(CancelReason::Shutdown) {
            log_ack(guard, guard.ack(|s, l| s.release(l)));
        }
    }
}

/// What the end of a claim writes.
enum Ack<T> {
    Finish(T),
    /// A permanent failure: a job spends an attempt (retried with backoff until they are
    /// used up), a scan run ends failed.
    Fail(String),
    /// A transient failure: a job waits a growing backoff without spending an attempt, a
    /// scan run ends failed with a successor.
    Retry(String),
    /// A full disk: the work waits and carries on by itself (`WorkError::Paused`).
    Pause(String),
    /// Shutdown interrupted the work: the lease goes back without using an attempt.
    HandBack,
    /// The lease is not ours any more (lost, or the row was cancelled): write nothing.
    Abandon,
}

fn decide<T>(stopped: Option<CancelReason>, result: Result<T, WorkError>) -> Ack<T> {
    match (stopped, result) {
        (Some(CancelReason::LeaseLost | CancelReason::Cancelled), _) => Ack::Abandon,
        // Work that finished while the process was stopping is kept, not redone.
        (_, Ok(done)) => Ack::Finish(done),
        (Some(CancelReason::Shutdown), Err(_)) => Ack::HandBack,
        (None, Err(WorkError::Paused(msg))) => Ack::Pause(msg),
        (None, Err(e)) if e.retry() == Some(Retry::Transient) => Ack::Retry(e.to_string()),
        (None, Err(e)) => Ack::Fail(e.to_string()),
    }
}

fn log_ack(guard: &LeaseGuard, acked: Result<(), GuardError>) {
    let lease = guard.lease();
    match acked {
        Ok(()) => {}
        // Expected after a reclaim or a cancel; counted as a fence rejection.
        Err(GuardError::LeaseLost(..)) => {
            tracing::info!(id = lease.id, target = ?lease.target, "stale ack not written")
        }
        Err(e) => {
            tracing::warn!(id = lease.id, target = ?lease.target, error = %e, "ack not written")
        }
    }
}

/// A panicking handler fails its attempt instead of taking the worker thread down.
fn catch<T>(run: impl FnOnce() -> Result<T, WorkError>) -> Result<T, WorkError> {
    catch_unwind(AssertUnwindSafe(run))
        .unwrap_or_else(|_| Err(Failure::Bug("the handler panicked".into()).into()))
}

fn stop_requested(stop: &Receiver<()>) -> bool {
    matches!(
        stop.try_recv(),
        Err(crossbeam_channel::TryRecvError::Disconnected)
    )
}
