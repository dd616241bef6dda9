//! The worker side of the lease protocol: the guard (cancellation before the first
//! heartbeat, heartbeats, local expiry), the pool's acks and graceful shutdown, and the
//! recurring maintenance loop. Races are staged by pausing a worker on a channel at a hook
//! or inside its handler, and by stepping a fake clock; never by sleeping.

use crate::support;

use crossbeam_channel::{Receiver, Sender, bounded, unbounded};
use mediadex::model::{
    Counter, Job, JobState, Lease, NewJob, RunOutcome, RunState, ScanRun, Target,
};
use mediadex::queue::{
    CancelReason, CancelToken, GuardError, Handlers, Hooks, JobDone, JobHandler, LeaseGuard,
    Maintenance, MaintenanceConfig, NoHooks, PoolConfig, Registry, ScanDone, ScanHandler,
    WorkContext, WorkError, WorkerPool,
};
use mediadex::scan::job::{ScanConfig, ScanJob};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::{TTL, env};

const PATIENCE: Duration = Duration::from_secs(10);

fn config(heartbeat_every: Duration) -> PoolConfig {
    PoolConfig {
        workers: 1,
        ttl: TTL,
        heartbeat_every,
        poll_every: Duration::from_millis(5),
    }
}

/// Heartbeats that never fire on their own during a test: the test drives time.
fn quiet() -> PoolConfig {
    config(Duration::from_secs(3600))
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < PATIENCE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Pauses the first lease to reach the first heartbeat until the test says go.
struct PauseBeforeFirstHeartbeat {
    arrived: Sender<(Lease, CancelToken)>,
    go: Receiver<()>,
    once: AtomicBool,
}

impl Hooks for PauseBeforeFirstHeartbeat {
    fn before_first_heartbeat(&self, lease: &Lease, token: &CancelToken) {
        if !self.once.swap(true, Ordering::SeqCst) {
            let _ = self.arrived.send((lease.clone(), token.clone()));
            let _ = self.go.recv();
        }
    }
}

type Arrivals = Receiver<(Lease, CancelToken)>;

fn pause_before_first_heartbeat() -> (Arc<PauseBeforeFirstHeartbeat>, Arrivals, Sender<()>) {
    let (arrived, arrived_rx) = unbounded();
    let (go_tx, go) = unbounded();
    let hooks = PauseBeforeFirstHeartbeat {
        arrived,
        go,
        once: AtomicBool::new(false),
    };
    (Arc::new(hooks), arrived_rx, go_tx)
}

/// A queued "walk" job and a one-worker pool that will pause on it before the first
/// heartbeat: (job id, pool, arrivals, go, handler runs).
fn walk_pool_paused_before_first_heartbeat(
    env: &support::Env,
) -> (i64, WorkerPool, Arrivals, Sender<()>, Arc<AtomicUsize>) {
    let id = env.store.enqueue(NewJob::new("walk", "{}")).unwrap().id;
    let (hooks, arrived, go) = pause_before_first_heartbeat();
    let (handler, runs) = scripted(|_, _| Ok(JobDone::Done));
    let handlers = Handlers::default().job("walk", handler);
    let pool = WorkerPool::start_with_hooks(&env.store, handlers, quiet(), hooks);
    (id, pool, arrived, go, runs)
}

/// A handler driven by a closure, counting its runs.
struct Scripted<F>(F, Arc<AtomicUsize>);

impl<F> JobHandler for Scripted<F>
where
    F: Fn(&WorkContext, usize) -> Result<JobDone, WorkError> + Send + Sync + 'static,
{
    fn run(&self, ctx: &WorkContext, _job: &Job) -> Result<JobDone, WorkError> {
        let n = self.1.fetch_add(1, Ordering::SeqCst);
        (self.0)(ctx, n)
    }
}

impl<F> ScanHandler for Scripted<F>
where
    F: Fn(&WorkContext, usize) -> Result<JobDone, WorkError> + Send + Sync + 'static,
{
    fn run(&self, ctx: &WorkContext, _run: &ScanRun) -> Result<ScanDone, WorkError> {
        let n = self.1.fetch_add(1, Ordering::SeqCst);
        (self.0)(ctx, n).map(|_| ScanDone::Complete {
            outcome: RunOutcome::Completed,
            reason: None,
        })
    }
}

fn scripted<F>(f: F) -> (Scripted<F>, Arc<AtomicUsize>)
where
    F: Fn(&WorkContext, usize) -> Result<JobDone, WorkError> + Send + Sync + 'static,
{
    let runs = Arc::new(AtomicUsize::new(0));
    (Scripted(f, runs.clone()), runs)
}

/// Waits inside the handler until the test says go, reporting what it then observed.
fn pausing_handler(
    started: Sender<Lease>,
    go: Receiver<()>,
    report: Sender<(Result<(), String>, Option<CancelReason>)>,
) -> impl Fn(&WorkContext, usize) -> Result<JobDone, WorkError> + Send + Sync + 'static {
    move |ctx, _| {
        let _ = started.send(ctx.lease().clone());
        let _ = go.recv();
        let wrote = ctx.guarded(|s, l| match l.target {
            Target::Job => s.checkpoint_job(l, "late"),
            Target::ScanRun => s.checkpoint_scan(l, "{\"late\":true}"),
        });
        let _ = report.send((wrote.map_err(|e| e.to_string()), ctx.token().reason()));
        Ok(JobDone::Done)
    }
}

#[test]
fn worker_paused_before_its_first_write_writes_nothing_once_a_successor_is_claimed() {
    let env = env();
    let lib = env.library("photos");
    let (run, _) = env.store.request_scan(env.scan_request(lib, "")).unwrap();
    let (hooks, arrived, go) = pause_before_first_heartbeat();
    let (handler, runs) = scripted(|_, _| Ok(JobDone::Done));
    let pool = WorkerPool::start_with_hooks(
        &env.store,
        Handlers::default().scan(handler),
        quiet(),
        hooks,
    );

    let (a, _) = arrived.recv_timeout(PATIENCE).expect("worker A claimed");
    assert_eq!(a.id, run.id);
    env.clock.advance(TTL);
    env.store.reclaim_stale().unwrap();
    env.clock.advance(60_000);
    let other = env.other_process("host-b:2:bbbb");
    let (b, _) = other
        .claim_scan_run(TTL)
        .unwrap()
        .expect("B claims the successor");
    let successor_before = env.store.scan_run(b.id).unwrap().unwrap();
    go.send(()).unwrap();
    wait_until("A's rejected heartbeat", || {
        env.counter(Counter::FenceRejections) == 1
    });
    pool.shutdown();

    assert_eq!(runs.load(Ordering::SeqCst), 0, "A's local work never ran");
    let old = env.store.scan_run(run.id).unwrap().unwrap();
    assert_eq!(
        (old.state, old.reason.as_deref()),
        (RunState::Failed, Some("lease_expired"))
    );
    assert_eq!(env.store.scan_run(b.id).unwrap().unwrap(), successor_before);
    other
        .complete_scan(&b, RunOutcome::Completed, None)
        .unwrap();
}

#[test]
fn worker_paused_mid_work_is_cancelled_and_its_late_writes_and_ack_are_rejected() {
    let env = env();
    let lib = env.library("photos");
    let (run, _) = env.store.request_scan(env.scan_request(lib, "")).unwrap();
    let (started_tx, started) = unbounded();
    let (go_tx, go) = unbounded();
    let (report_tx, report) = unbounded();
    let (handler, _) = scripted(pausing_handler(started_tx, go, report_tx));
    let pool = WorkerPool::start(&env.store, Handlers::default().scan(handler), quiet());

    started.recv_timeout(PATIENCE).expect("A started");
    env.clock.advance(TTL);
    env.store.reclaim_stale().unwrap();
    env.clock.advance(60_000);
    let other = env.other_process("host-b:2:bbbb");
    let (b, _) = other
        .claim_scan_run(TTL)
        .unwrap()
        .expect("B claims the successor");
    go_tx.send(()).unwrap();
    let (wrote, reason) = report.recv_timeout(PATIENCE).unwrap();
    pool.shutdown();

    assert!(wrote.is_err(), "the late checkpoint was refused");
    assert_eq!(
        reason,
        Some(CancelReason::LeaseLost),
        "A's local work is cancelled"
    );
    let old = env.store.scan_run(run.id).unwrap().unwrap();
    assert_eq!((old.state, old.progress), (RunState::Failed, None));
    let succ = env.store.scan_run(b.id).unwrap().unwrap();
    assert_eq!(
        (succ.state, succ.generation, succ.progress),
        (RunState::Running, b.generation, None)
    );
}

#[test]
fn cancellation_registered_before_the_first_heartbeat_is_honoured() {
    let env = env();
    let (id, pool, arrived, go, runs) = walk_pool_paused_before_first_heartbeat(&env);

    arrived.recv_timeout(PATIENCE).expect("claimed");
    assert!(pool.cancel(Target::Job, id).unwrap());
    go.send(()).unwrap();
    wait_until("the worker to let go", || pool.busy() == 0);
    pool.shutdown();

    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(
        env.store.job(id).unwrap().unwrap().state,
        JobState::Cancelled
    );
    assert_eq!(
        env.counter(Counter::FenceRejections),
        0,
        "the local token stopped it before any heartbeat was sent"
    );
}

#[test]
fn a_cancel_from_another_process_before_the_first_heartbeat_stops_the_work() {
    let env = env();
    let (id, pool, arrived, go, runs) = walk_pool_paused_before_first_heartbeat(&env);

    arrived.recv_timeout(PATIENCE).expect("claimed");
    assert!(
        env.other_process("cli:9:cccc")
            .cancel(Target::Job, id)
            .unwrap()
    );
    go.send(()).unwrap();
    wait_until("the rejected first heartbeat", || {
        env.counter(Counter::FenceRejections) == 1
    });
    pool.shutdown();

    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(
        env.store.job(id).unwrap().unwrap().state,
        JobState::Cancelled
    );
}

#[test]
fn a_slept_worker_treats_its_lease_as_lost_before_writing_anything() {
    let env = env();
    let id = env.store.enqueue(NewJob::new("walk", "{}")).unwrap().id;
    let (started_tx, started) = unbounded();
    let (go_tx, go) = unbounded();
    let (report_tx, report) = unbounded();
    let (handler, _) = scripted(pausing_handler(started_tx, go, report_tx));
    let pool = WorkerPool::start(
        &env.store,
        Handlers::default().job("walk", handler),
        quiet(),
    );

    let lease = started.recv_timeout(PATIENCE).expect("started");
    env.clock.advance(TTL); // the laptop slept through every heartbeat; nobody reclaimed yet
    go_tx.send(()).unwrap();
    let (wrote, reason) = report.recv_timeout(PATIENCE).unwrap();
    wait_until("the worker to let go", || pool.busy() == 0);
    pool.shutdown();

    assert!(wrote.unwrap_err().contains("lease"));
    assert_eq!(reason, Some(CancelReason::LeaseLost));
    let row = env.store.job(id).unwrap().unwrap();
    assert_eq!(row.state, JobState::Running, "no completion was written");
    assert_eq!((row.generation, row.checkpoint), (lease.generation, None));
}

#[test]
fn the_guard_refuses_locally_once_the_ttl_has_passed_without_a_renew() {
    let env = env();
    env.store.enqueue(NewJob::new("walk", "{}")).unwrap();
    let (lease, _) = env.store.claim_job(&["walk"], TTL).unwrap().unwrap();
    let registry = Arc::new(mediadex::queue::Registry::default());
    let guard = mediadex::queue::LeaseGuard::register(&env.store, lease, TTL, &registry);
    guard
        .begin(Duration::from_secs(3600), &mediadex::queue::NoHooks)
        .unwrap();
    guard.ensure_live().unwrap();
    env.clock.advance(TTL - 1);
    guard.ensure_live().unwrap();
    env.clock.advance(1);
    assert!(matches!(
        guard.ensure_live(),
        Err(GuardError::LeaseLost(..))
    ));
    assert!(guard.token().is_cancelled());
    assert_eq!(registry.len(), 1);
    drop(guard);
    assert!(
        registry.is_empty(),
        "a finished guard unregisters its token"
    );
}

#[test]
fn heartbeats_keep_a_long_job_alive_across_many_ttls() {
    let env = env();
    let id = env.store.enqueue(NewJob::new("walk", "{}")).unwrap().id;
    let (started_tx, started) = unbounded();
    let (go_tx, go) = bounded::<()>(1);
    let (handler, _) = scripted(move |ctx: &WorkContext, _| {
        let _ = started_tx.send(ctx.lease().clone());
        let _ = go.recv();
        Ok(JobDone::Done)
    });
    let pool = WorkerPool::start(
        &env.store,
        Handlers::default().job("walk", handler),
        config(Duration::from_millis(5)),
    );
    started.recv_timeout(PATIENCE).unwrap();
    for _ in 0..5 {
        let before = env
            .store
            .job(id)
            .unwrap()
            .unwrap()
            .lease_expires_at
            .unwrap();
        env.clock.advance(TTL / 2);
        wait_until("a renew", || {
            env.store
                .job(id)
                .unwrap()
                .unwrap()
                .lease_expires_at
                .unwrap()
                > before
        });
        env.store.reclaim_stale().unwrap();
    }
    go_tx.send(()).unwrap();
    wait_until("completion", || {
        env.store.job(id).unwrap().unwrap().state == JobState::Done
    });
    pool.shutdown();
    assert_eq!(
        env.store.job(id).unwrap().unwrap().attempts,
        0,
        "never reclaimed"
    );
}

#[test]
fn a_heartbeat_that_finds_the_lease_gone_cancels_the_local_work() {
    let env = env();
    let id = env.store.enqueue(NewJob::new("walk", "{}")).unwrap().id;
    let (lost_tx, lost) = unbounded();
    let (started_tx, started) = unbounded();
    let (handler, _) = scripted(move |ctx: &WorkContext, n| {
        if n > 0 {
            return Ok(JobDone::Done);
        }
        let _ = started_tx.send(());
        while ctx.ensure_live().is_ok() {
            std::thread::sleep(Duration::from_millis(1));
        }
        let _ = lost_tx.send(ctx.token().reason());
        Ok(JobDone::Done)
    });
    let pool = WorkerPool::start(
        &env.store,
        Handlers::default().job("walk", handler),
        config(Duration::from_millis(5)),
    );
    started.recv_timeout(PATIENCE).expect("the handler started");
    let forced_at = env.store.job(id).unwrap().unwrap().generation;
    assert!(
        env.other_process("operator:1:oooo")
            .release_unowned(Target::Job, id)
            .unwrap()
    );

    assert_eq!(
        lost.recv_timeout(PATIENCE).unwrap(),
        Some(CancelReason::LeaseLost)
    );
    wait_until("the re-run", || {
        env.store.job(id).unwrap().unwrap().state == JobState::Done
    });
    pool.shutdown();
    let row = env.store.job(id).unwrap().unwrap();
    assert!(
        row.generation > forced_at + 1,
        "done by a later claim, not the forced-out one"
    );
}

#[test]
fn graceful_shutdown_hands_leases_back_without_using_an_attempt() {
    let env = env();
    let lib = env.library("photos");
    let (run, _) = env.store.request_scan(env.scan_request(lib, "")).unwrap();
    let id = env.store.enqueue(NewJob::new("walk", "{}")).unwrap().id;
    let (started_tx, started) = unbounded();
    let busy = move |ctx: &WorkContext, _: usize| -> Result<JobDone, WorkError> {
        let _ = started_tx.send(());
        while ctx.ensure_live().is_ok() {
            std::thread::sleep(Duration::from_millis(1));
        }
        Err(WorkError::Guard(GuardError::Cancelled(
            ctx.lease().target,
            ctx.lease().id,
            CancelReason::Shutdown,
        )))
    };
    let (job_handler, _) = scripted(busy.clone());
    let (scan_handler, _) = scripted(busy);
    let handlers = Handlers::default()
        .job("walk", job_handler)
        .scan(scan_handler);
    let pool = WorkerPool::start(
        &env.store,
        handlers,
        PoolConfig {
            workers: 2,
            ..quiet()
        },
    );
    started.recv_timeout(PATIENCE).unwrap();
    started.recv_timeout(PATIENCE).unwrap();
    pool.shutdown();

    let job = env.store.job(id).unwrap().unwrap();
    assert_eq!(
        (job.state, job.attempts, job.generation),
        (JobState::Queued, 0, 2)
    );
    let run = env.store.scan_run(run.id).unwrap().unwrap();
    assert_eq!(
        (run.state, run.generation, run.lease_owner),
        (RunState::Accepted, 2, None)
    );
}

#[test]
fn a_failing_or_panicking_handler_is_retried_with_backoff_then_failed() {
    let env = env();
    let failing = env
        .store
        .enqueue(NewJob::new("walk", "{}").max_attempts(2))
        .unwrap()
        .id;
    let (handler, runs) = scripted(|_, n| {
        if n == 0 {
            Err(WorkError::bad_data("corrupt input"))
        } else {
            panic!("a bug in the handler")
        }
    });
    let pool = WorkerPool::start(
        &env.store,
        Handlers::default().job("walk", handler),
        quiet(),
    );
    wait_until("the first failure", || {
        env.store.job(failing).unwrap().unwrap().attempts == 1
    });
    assert_eq!(
        env.store.job(failing).unwrap().unwrap().state,
        JobState::Queued
    );
    env.clock.advance(1_000);
    pool.wake();
    wait_until("the final failure", || {
        env.store.job(failing).unwrap().unwrap().state == JobState::Failed
    });
    pool.shutdown();
    let row = env.store.job(failing).unwrap().unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(row.last_error.as_deref(), Some("the handler panicked"));
}

#[test]
fn a_job_that_meets_a_full_disk_waits_without_spending_an_attempt_then_runs() {
    let env = env();
    let id = env
        .store
        .enqueue(NewJob::new("walk", "{}").max_attempts(1))
        .unwrap()
        .id;
    // The handler names no full disk itself: its store write failed with SQLITE_FULL.
    let (handler, runs) = scripted(|_, n| match n {
        0 => Err(WorkError::Guard(GuardError::Store(
            mediadex::store::StoreError::DiskFull,
        ))),
        _ => Ok(JobDone::Done),
    });
    let pool = WorkerPool::start(
        &env.store,
        Handlers::default().job("walk", handler),
        quiet(),
    );
    wait_until("the pause", || runs.load(Ordering::SeqCst) == 1);
    wait_until("the row back in the queue", || {
        env.store.job(id).unwrap().unwrap().last_error.is_some()
    });
    let paused = env.store.job(id).unwrap().unwrap();
    assert_eq!(
        paused.state,
        JobState::Queued,
        "one attempt would have failed it"
    );
    assert_eq!(paused.attempts, 0);
    let why = paused.last_error.unwrap_or_default();
    let disk = format!("the disk holding {} is full (", env.store.dir().display());
    assert!(why.starts_with(&disk), "{why}");
    assert!(why.contains("paused this job and will carry on"), "{why}");
    env.clock.advance(mediadex::store::PAUSED_RETRY);
    pool.wake();
    wait_until("the job once space is back", || {
        env.store.job(id).unwrap().unwrap().state == JobState::Done
    });
    pool.shutdown();
}

#[test]
fn a_chain_advances_itself_one_live_step_at_a_time() {
    let env = env();
    env.store
        .enqueue_unique("walk", "walk:content_hash", "0")
        .unwrap();
    let (handler, runs) = scripted(|_, n| {
        Ok(if n < 4 {
            JobDone::Then(NewJob::new("walk", (n + 1).to_string()).unique("walk:content_hash"))
        } else {
            JobDone::Done
        })
    });
    let pool = WorkerPool::start(
        &env.store,
        Handlers::default().job("walk", handler),
        quiet(),
    );
    wait_until("the chain's end", || {
        runs.load(Ordering::SeqCst) == 5 && {
            let jobs = env.store.jobs(100).unwrap();
            jobs.len() == 5 && jobs.iter().all(|j| j.state == JobState::Done)
        }
    });
    pool.shutdown();
}

/// `scan --wait` and `walk --wait` wake on this instead of their next poll: the signal
/// comes once the ack is committed, so what the waiter then reads is the finished row.
#[test]
fn the_pool_signals_each_ack_after_it_is_committed() {
    let env = env();
    let job = env.store.enqueue(NewJob::new("once", "")).unwrap().id;
    let (handler, _) = scripted(|_, _| Ok(JobDone::Done));
    let pool = WorkerPool::start(
        &env.store,
        Handlers::default().job("once", handler),
        quiet(),
    );
    pool.acked()
        .recv_timeout(Duration::from_secs(30))
        .expect("an ack signal");
    let jobs = env.store.jobs(10).unwrap();
    let row = jobs.iter().find(|j| j.id == job).expect("the job");
    assert_eq!(row.state, JobState::Done);
    pool.shutdown();
}

#[test]
fn the_maintenance_loop_reclaims_for_the_life_of_the_process() {
    let env = env();
    let id = env.store.enqueue(NewJob::new("walk", "{}")).unwrap().id;
    let config = MaintenanceConfig {
        every: Duration::from_millis(2),
        ..MaintenanceConfig::default()
    };
    let woken = Arc::new(AtomicUsize::new(0));
    let w = woken.clone();
    let maintenance = Maintenance::start(
        &env.store,
        config,
        move |_| {
            w.fetch_add(1, Ordering::SeqCst);
        },
        |_| {},
    )
    .unwrap();
    for round in 1..=3 {
        env.clock.advance(120_000); // past any backoff
        let (_dead, _) = env.store.claim_job(&["walk"], TTL).unwrap().expect("claim");
        env.clock.advance(TTL);
        wait_until("a reclaim", || {
            env.store.job(id).unwrap().unwrap().attempts == round
        });
    }
    maintenance.shutdown();
    assert_eq!(woken.load(Ordering::SeqCst), 3);
    assert_eq!(env.counter(Counter::ReclaimedJobsRequeued), 3);
}

#[test]
fn work_claimed_while_the_process_stops_never_starts_and_is_handed_back() {
    let env = env();
    let (id, pool, arrived, go, runs) = walk_pool_paused_before_first_heartbeat(&env);
    let (_, token) = arrived.recv_timeout(PATIENCE).expect("claimed");
    let stopping = std::thread::spawn(move || pool.shutdown());
    wait_until("the shutdown to reach the token", || token.is_cancelled());
    go.send(()).unwrap();
    stopping.join().unwrap();

    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let job = env.store.job(id).unwrap().unwrap();
    assert_eq!(
        (job.state, job.attempts, job.generation),
        (JobState::Queued, 0, 2)
    );
    assert_eq!(env.counter(Counter::FenceRejections), 0);
}

#[test]
fn work_that_finishes_while_the_process_stops_is_completed_not_redone() {
    let env = env();
    let id = env.store.enqueue(NewJob::new("walk", "{}")).unwrap().id;
    let (started_tx, started) = unbounded();
    let (handler, _) = scripted(move |ctx: &WorkContext, _| {
        let _ = started_tx.send(());
        while !ctx.token().is_cancelled() {
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(JobDone::Done) // the last file was already indexed: the work is complete
    });
    let pool = WorkerPool::start(
        &env.store,
        Handlers::default().job("walk", handler),
        quiet(),
    );
    started.recv_timeout(PATIENCE).unwrap();
    pool.shutdown();
    let job = env.store.job(id).unwrap().unwrap();
    assert_eq!((job.state, job.attempts), (JobState::Done, 0));
}

#[test]
fn a_scan_stops_its_heartbeat_before_its_completion_commits() {
    let env = env();
    let lib = env.library("photos");
    std::fs::write(env.dir.path().join("photos/notes.txt"), b"not a picture").unwrap();
    env.store.request_scan(env.scan_request(lib, "")).unwrap();
    let (lease, run) = env.store.claim_scan_run(TTL).unwrap().unwrap();
    let registry = Arc::new(Registry::default());
    let guard = LeaseGuard::register(&env.store, lease, TTL, &registry);
    guard
        .begin(Duration::from_millis(1), &NoHooks)
        .expect("first heartbeat");
    let job = ScanJob {
        store: env.store.clone(),
        config: ScanConfig::default(),
        extract: mediadex::media::extract_from,
    };
    // Another connection holds the write lock while the scan runs to its completion, so
    // renewals queue up behind it with the scan's own writes. How long it is held does not
    // decide the outcome: nothing may renew once the completion is sent.
    let raw = rusqlite::Connection::open(env.dir.path().join("mediadex.db")).unwrap();
    raw.execute_batch("BEGIN IMMEDIATE").unwrap();
    let done = std::thread::scope(|s| {
        let scan = s.spawn(|| job.run(&guard, &run));
        std::thread::sleep(Duration::from_millis(20));
        raw.execute_batch("COMMIT").unwrap();
        scan.join().expect("scan thread")
    });
    assert!(matches!(done, Ok(ScanDone::Committed)), "{done:?}");
    assert!(
        !guard.stop_heartbeat(),
        "the heartbeat was still running after the completion committed"
    );
    assert_eq!(env.counter(Counter::FenceRejections), 0);
    assert_eq!(guard.token().reason(), None, "no lease lost");
    let row = env.store.scan_run(run.id).unwrap().unwrap();
    assert_eq!(row.state, RunState::Completed);
}

#[test]
fn cancelling_a_library_stops_its_scan_running_here_at_once() {
    let env = env();
    let lib = env.library("photos");
    let (started_tx, started) = unbounded();
    let (stopped_tx, stopped) = unbounded();
    let (handler, runs) = scripted(move |ctx: &WorkContext, _| {
        let _ = started_tx.send(());
        // Only the local token can stop it: the heartbeat is quiet and the clock stands.
        while !ctx.token().is_cancelled() {
            std::thread::sleep(Duration::from_millis(1));
        }
        let _ = stopped_tx.send(ctx.token().reason());
        Err(WorkError::bad_data("stopped"))
    });
    let pool = WorkerPool::start(&env.store, Handlers::default().scan(handler), quiet());
    let (running, _) = env.store.request_scan(env.scan_request(lib, "")).unwrap();
    pool.wake();
    started.recv_timeout(PATIENCE).expect("the scan started");
    let (waiting, _) = env.store.request_scan(env.scan_request(lib, "a")).unwrap();

    let cancelled = pool.cancel_scans(lib).unwrap();
    assert_eq!(
        cancelled.iter().map(|r| r.id).collect::<Vec<_>>(),
        [running.id, waiting.id]
    );
    assert_eq!(
        stopped.recv_timeout(PATIENCE).expect("stopped"),
        Some(CancelReason::Cancelled)
    );
    pool.shutdown();
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the waiting run never started"
    );
    for id in [running.id, waiting.id] {
        let row = env.store.scan_run(id).unwrap().unwrap();
        assert_eq!(
            (row.state, row.reason.as_deref()),
            (RunState::Cancelled, Some("cancelled"))
        );
    }
}

#[test]
fn a_job_whose_store_was_locked_waits_a_growing_backoff_without_spending_an_attempt() {
    let env = env();
    let id = env
        .store
        .enqueue(NewJob::new("walk", "{}").max_attempts(1))
        .unwrap()
        .id;
    // The handler's fenced write met another process's write lock for longer than the
    // busy timeout: the cause passes by itself, and one attempt would have failed the row.
    let (handler, runs) = scripted(|_, n| match n {
        0 | 1 => Err(WorkError::Guard(GuardError::Store(
            mediadex::store::StoreError::Locked,
        ))),
        _ => Ok(JobDone::Done),
    });
    let pool = WorkerPool::start(
        &env.store,
        Handlers::default().job("walk", handler),
        quiet(),
    );
    let retried = |n: usize| {
        wait_until("the retry", || {
            let row = env.store.job(id).unwrap().unwrap();
            runs.load(Ordering::SeqCst) == n
                && row.state == JobState::Queued
                && row.generation == 2 * n as i64
        });
        env.store.job(id).unwrap().unwrap()
    };
    let first = retried(1);
    assert_eq!(first.attempts, 0, "a transient failure spends no attempt");
    assert_eq!(
        first.run_at,
        support::T0 + 1_000,
        "the policy's first backoff"
    );
    let why = first.last_error.unwrap_or_default();
    assert!(why.contains("locked"), "{why}");
    env.clock.advance(1_000);
    pool.wake();
    let second = retried(2);
    assert_eq!(second.attempts, 0);
    assert_eq!(
        second.run_at,
        support::T0 + 1_000 + 2_000,
        "each transient retry waits twice as long"
    );
    env.clock.advance(2_000);
    pool.wake();
    wait_until("the job once the lock is gone", || {
        env.store.job(id).unwrap().unwrap().state == JobState::Done
    });
    pool.shutdown();
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}

/// Another connection's write transaction, taken when the walker first enters a folder and
/// committed when the worker is about to ack: every write of the scan in between (its batch
/// commit) meets a locked database; the ack itself does not.
struct LockedUntilAck {
    db: std::path::PathBuf,
    taken: AtomicBool,
    held: std::sync::Mutex<Option<rusqlite::Connection>>,
}

impl LockedUntilAck {
    fn take_once(&self) {
        if self.taken.swap(true, Ordering::SeqCst) {
            return;
        }
        let raw = rusqlite::Connection::open(&self.db).unwrap();
        raw.execute_batch("BEGIN IMMEDIATE").unwrap();
        *self.held.lock().unwrap() = Some(raw);
    }
}

impl Hooks for LockedUntilAck {
    fn before_ack(&self, _lease: &Lease) {
        if let Some(raw) = self.held.lock().unwrap().take() {
            raw.execute_batch("COMMIT").unwrap();
        }
    }
}

#[test]
fn a_scan_whose_batch_meets_a_locked_database_fails_with_a_successor_that_carries_on() {
    support::sqlite_only(
        "workers::a_scan_whose_batch_meets_a_locked_database_fails_with_a_successor_that_carries_on",
    );
    let env = support::env_with(mediadex::store::StoreOptions {
        busy_timeout: Duration::from_millis(10),
        ..support::options()
    });
    let lib = env.library("photos");
    let root = env.dir.path().join("photos");
    support::photo(&root.join("a.png"), 1);
    let lock = Arc::new(LockedUntilAck {
        db: env.dir.path().join("mediadex.db"),
        taken: AtomicBool::new(false),
        held: std::sync::Mutex::new(None),
    });
    let at_walk = lock.clone();
    let mut config = ScanConfig::default();
    config.pipeline.walk_hook = Some(mediadex::scan::walk::WalkHook(Arc::new(move |_| {
        at_walk.take_once()
    })));
    let job = ScanJob {
        store: env.store.clone(),
        config,
        extract: mediadex::media::extract_from,
    };
    let (run, _) = env.store.request_scan(env.scan_request(lib, "")).unwrap();
    let pool = WorkerPool::start_with_hooks(
        &env.store,
        Handlers::default().scan(job),
        quiet(),
        lock.clone(),
    );
    let failed = support::run_ended(&env, run.id);
    assert_eq!(failed.state, RunState::Failed);
    let why = failed.reason.clone().unwrap_or_default();
    assert!(
        why.contains("locked"),
        "the reason is kept for the user: {why}"
    );
    let next = env
        .store
        .scan_runs(Some(lib), 10)
        .unwrap()
        .into_iter()
        .find(|r| r.predecessor_id == Some(run.id))
        .expect("a transient failure gives the run a successor");
    assert_eq!(next.state, RunState::Accepted);
    assert_eq!(
        next.run_at,
        failed.finished_at.unwrap() + 1_000,
        "the successor waits the policy's backoff"
    );
    env.clock.advance(1_000);
    pool.wake();
    let done = support::run_ended(&env, next.id);
    pool.shutdown();
    assert_eq!(done.state, RunState::Completed, "{:?}", done.reason);
    assert_eq!(env.store.assets(false).unwrap().len(), 1, "a.png indexed");
}

#[test]
fn a_scan_that_fails_for_good_ends_failed_with_its_reason_and_no_successor() {
    let env = env();
    let lib = env.library("photos");
    let (run, _) = env.store.request_scan(env.scan_request(lib, "")).unwrap();
    let (handler, _) = scripted(|_, _| Err(WorkError::bad_data("the scope is not a folder")));
    let pool = WorkerPool::start(&env.store, Handlers::default().scan(handler), quiet());
    let failed = support::run_ended(&env, run.id);
    pool.shutdown();
    assert_eq!(failed.state, RunState::Failed);
    assert_eq!(failed.reason.as_deref(), Some("the scope is not a folder"));
    let runs = env.store.scan_runs(Some(lib), 10).unwrap();
    assert_eq!(runs.len(), 1, "no successor: {runs:?}");
}
