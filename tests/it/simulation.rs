//! Deterministic simulation of the lease protocol (DESIGN.md section 4) on a real SQLite file.
//!
//! One test thread steps several simulated workers (actors, not OS threads) through a seeded
//! random schedule: enqueues (with colliding unique keys), scan requests, claims, heartbeats,
//! checkpoints, completions (chains advancing themselves), failures, releases, crashes,
//! pauses, clock jumps, cancels, forced releases and reclaims. An independent in-memory
//! oracle of the protocol predicts every call's outcome and every row; after every step the
//! database is compared with the oracle and the protocol's invariants are checked against
//! the database itself. On failure the seed and the last steps are printed.
//!
//! `MEDIADEX_SIM_SEEDS`, `MEDIADEX_SIM_STEPS`, `MEDIADEX_SIM_SEED_BASE` and
//! `MEDIADEX_SIM_THREADS` override the defaults; the ignored `soak` test runs a longer
//! schedule (`cargo test --release --test it simulation:: -- --ignored`). The schedules come from
//! `rand_chacha`'s ChaCha8, which gives the same stream for a seed on every platform and version.

use mediadex::clock::{Clock, FakeClock};
use mediadex::model::{
    Counter, Job, JobState, Lease, Millis, NewJob, ReclaimReport, RunOutcome, RunState,
    ScanRequest, ScanRun, Target, Trigger, widen_scope,
};
use mediadex::store::{Admission, Enqueued, LeasePolicy, Store, StoreError, StoreOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fmt::Debug;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

const START: Millis = 1_700_000_000_000;
const TTL: Millis = 10_000;
const KINDS: [&str; 2] = ["walk", "thumb"];
const KEYS: [&str; 4] = ["chain-a", "chain-b", "chain-c", "chain-d"];
const SCOPES: [&str; 5] = ["", "a", "a/b", "a/c", "d"];
const TRIGGERS: [Trigger; 5] = [
    Trigger::Manual,
    Trigger::Boot,
    Trigger::Watch,
    Trigger::Schedule,
    Trigger::Api,
];
const LIBRARIES: usize = 3;
const WORKERS: usize = 5;
const OWNERS: [&str; 2] = ["sim-host:1:aaaa", "sim-host:2:bbbb"];
const LOG_LINES: usize = 24;

fn policy() -> LeasePolicy {
    LeasePolicy {
        backoff_base: 500,
        backoff_cap: 8_000,
        scan_max_attempts: 3,
    }
}

/// The retry delay of DESIGN section 4: base * 2^attempts, capped.
fn backoff(p: &LeasePolicy, attempts: i64) -> Millis {
    let factor = 1i64 << attempts.clamp(0, 30);
    p.backoff_base.saturating_mul(factor).min(p.backoff_cap)
}

// ---------------------------------------------------------------------------------------
// The oracle: the protocol as a pure state machine over rows.

/// The oracle's "this write is fenced out".
#[derive(Debug, PartialEq, Eq)]
struct Lost;

fn live_job(s: JobState) -> bool {
    matches!(s, JobState::Queued | JobState::Running)
}

#[derive(Default)]
struct Oracle {
    /// Row `id` at index `id - 1` (rowids are handed out in order; nothing is deleted).
    jobs: Vec<Job>,
    runs: Vec<ScanRun>,
    libraries: Vec<i64>,
    fence_rejections: i64,
    requeued: i64,
    reclaim_failed: i64,
    retired: i64,
    successors: i64,
    retries: i64,
}

impl Oracle {
    fn policy(&self) -> LeasePolicy {
        policy()
    }

    fn lease_live(
        state_running: bool,
        gen_: i64,
        exp: Option<Millis>,
        l: &Lease,
        now: Millis,
    ) -> bool {
        state_running && gen_ == l.generation && exp.is_some_and(|e| e > now)
    }

    fn job_fence(&mut self, l: &Lease, now: Millis) -> Result<usize, Lost> {
        let idx = (l.id - 1) as usize;
        match self.jobs.get(idx) {
            Some(j)
                if Self::lease_live(
                    j.state == JobState::Running,
                    j.generation,
                    j.lease_expires_at,
                    l,
                    now,
                ) =>
            {
                Ok(idx)
            }
            _ => {
                self.fence_rejections += 1;
                Err(Lost)
            }
        }
    }

    fn run_fence(&mut self, l: &Lease, now: Millis) -> Result<usize, Lost> {
        let idx = (l.id - 1) as usize;
        match self.runs.get(idx) {
            Some(r)
                if Self::lease_live(
                    r.state == RunState::Running,
                    r.generation,
                    r.lease_expires_at,
                    l,
                    now,
                ) =>
            {
                Ok(idx)
            }
            _ => {
                self.fence_rejections += 1;
                Err(Lost)
            }
        }
    }

    // -- jobs --

    fn enqueue(&mut self, job: &NewJob, now: Millis) -> Enqueued {
        if let Some(key) = &job.unique_key
            && let Some(j) = self
                .jobs
                .iter()
                .find(|j| j.unique_key.as_ref() == Some(key) && live_job(j.state))
        {
            return Enqueued {
                id: j.id,
                created: false,
            };
        }
        let id = self.jobs.len() as i64 + 1;
        self.jobs.push(Job {
            id,
            kind: job.kind.clone(),
            unique_key: job.unique_key.clone(),
            payload: job.payload.clone(),
            state: JobState::Queued,
            generation: 0,
            attempts: 0,
            max_attempts: job.max_attempts,
            run_at: now,
            lease_owner: None,
            lease_expires_at: None,
            heartbeat_at: None,
            checkpoint: None,
            last_error: None,
            created_at: now,
            updated_at: now,
            finished_at: None,
        });
        Enqueued { id, created: true }
    }

    fn claim_job(
        &mut self,
        kinds: &[&str],
        ttl: Millis,
        owner: &str,
        now: Millis,
    ) -> Option<(Lease, Job)> {
        let j = self
            .jobs
            .iter_mut()
            .filter(|j| {
                j.state == JobState::Queued && j.run_at <= now && kinds.contains(&j.kind.as_str())
            })
            .min_by_key(|j| (j.run_at, j.id))?;
        j.state = JobState::Running;
        j.generation += 1;
        j.lease_owner = Some(owner.to_string());
        j.lease_expires_at = Some(now + ttl);
        j.heartbeat_at = Some(now);
        j.updated_at = now;
        let lease = Lease {
            target: Target::Job,
            id: j.id,
            generation: j.generation,
            owner: owner.to_string(),
            expires_at: now + ttl,
        };
        Some((lease, j.clone()))
    }

    fn renew(&mut self, l: &Lease, ttl: Millis, now: Millis) -> Result<Lease, Lost> {
        match l.target {
            Target::Job => {
                let i = self.job_fence(l, now)?;
                let j = &mut self.jobs[i];
                j.lease_expires_at = Some(now + ttl);
                j.heartbeat_at = Some(now);
                j.updated_at = now;
            }
            Target::ScanRun => {
                let i = self.run_fence(l, now)?;
                let r = &mut self.runs[i];
                r.lease_expires_at = Some(now + ttl);
                r.updated_at = now;
            }
        }
        Ok(Lease {
            expires_at: now + ttl,
            ..l.clone()
        })
    }

    fn checkpoint_job(&mut self, l: &Lease, text: &str, now: Millis) -> Result<(), Lost> {
        let i = self.job_fence(l, now)?;
        let j = &mut self.jobs[i];
        j.checkpoint = Some(text.to_string());
        j.updated_at = now;
        Ok(())
    }

    fn complete_job(&mut self, l: &Lease, now: Millis) -> Result<(), Lost> {
        let i = self.job_fence(l, now)?;
        let j = &mut self.jobs[i];
        j.state = JobState::Done;
        j.lease_owner = None;
        j.lease_expires_at = None;
        j.finished_at = Some(now);
        j.updated_at = now;
        Ok(())
    }

    fn complete_job_and_enqueue(
        &mut self,
        l: &Lease,
        next: &NewJob,
        now: Millis,
    ) -> Result<Enqueued, Lost> {
        self.complete_job(l, now)?;
        Ok(self.enqueue(next, now))
    }

    /// One used-up attempt (a failure or an expired lease): requeued after a backoff, or
    /// `failed` for good.
    fn use_attempt(&mut self, i: usize, error: String, now: Millis) -> JobState {
        let delay = backoff(&self.policy(), self.jobs[i].attempts);
        let j = &mut self.jobs[i];
        j.attempts += 1;
        j.generation += 1;
        let failed = j.attempts >= j.max_attempts;
        j.state = if failed {
            JobState::Failed
        } else {
            JobState::Queued
        };
        j.finished_at = failed.then_some(now);
        j.run_at = now + delay;
        j.last_error = Some(error);
        j.lease_owner = None;
        j.lease_expires_at = None;
        j.updated_at = now;
        j.state
    }

    fn fail_job(&mut self, l: &Lease, error: &str, now: Millis) -> Result<JobState, Lost> {
        let i = self.job_fence(l, now)?;
        let state = self.use_attempt(i, error.to_string(), now);
        if state == JobState::Queued {
            self.retries += 1;
        }
        Ok(state)
    }

    fn release(&mut self, l: &Lease, now: Millis) -> Result<(), Lost> {
        match l.target {
            Target::Job => {
                let i = self.job_fence(l, now)?;
                let j = &mut self.jobs[i];
                j.state = JobState::Queued;
                j.generation += 1;
                j.lease_owner = None;
                j.lease_expires_at = None;
                j.run_at = now;
                j.updated_at = now;
            }
            Target::ScanRun => {
                let i = self.run_fence(l, now)?;
                self.runs[i].updated_at = now;
                self.put_back(i, "released", now);
            }
        }
        Ok(())
    }

    fn release_unowned(&mut self, target: Target, id: i64, now: Millis) -> bool {
        let idx = (id - 1) as usize;
        match target {
            Target::Job => match self.jobs.get_mut(idx) {
                Some(j) if live_job(j.state) => {
                    j.generation += 1;
                    if j.state == JobState::Running {
                        j.run_at = now;
                    }
                    j.state = JobState::Queued;
                    j.lease_owner = None;
                    j.lease_expires_at = None;
                    j.updated_at = now;
                    true
                }
                _ => false,
            },
            Target::ScanRun => match self.runs.get(idx).map(|r| r.state) {
                Some(RunState::Running) => {
                    self.put_back(idx, "force_released", now);
                    true
                }
                Some(RunState::Accepted) => {
                    let r = &mut self.runs[idx];
                    r.generation += 1;
                    r.updated_at = now;
                    true
                }
                _ => false,
            },
        }
    }

    fn cancel(&mut self, target: Target, id: i64, now: Millis) -> bool {
        let idx = (id - 1) as usize;
        match target {
            Target::Job => match self.jobs.get_mut(idx) {
                Some(j) if live_job(j.state) => {
                    j.state = JobState::Cancelled;
                    j.generation += 1;
                    j.lease_owner = None;
                    j.lease_expires_at = None;
                    j.finished_at = Some(now);
                    j.updated_at = now;
                    true
                }
                _ => false,
            },
            Target::ScanRun => {
                // One write per library: while the run's work is still to do (it, or a
                // successor reclaim made of it, waits or runs), every waiting and running
                // run of its library ends.
                let Some(library_id) = self.runs.get(idx).map(|r| r.library_id) else {
                    return false;
                };
                if !self.chain_live(id) {
                    return false;
                }
                let mut any = false;
                for i in 0..self.runs.len() {
                    if self.runs[i].library_id == library_id {
                        any |= self.end_run(i, RunState::Cancelled, "cancelled", now);
                    }
                }
                any
            }
        }
    }

    /// Whether run `id` or a successor descended from it waits or runs.
    fn chain_live(&self, id: i64) -> bool {
        let mut chain = vec![id];
        let mut next = 0;
        while let Some(&c) = chain.get(next) {
            for r in &self.runs {
                if r.predecessor_id == Some(c) && !chain.contains(&r.id) {
                    chain.push(r.id);
                }
            }
            next += 1;
        }
        self.runs.iter().any(|r| {
            chain.contains(&r.id) && matches!(r.state, RunState::Accepted | RunState::Running)
        })
    }

    fn reclaim(&mut self, now: Millis) -> ReclaimReport {
        let mut report = ReclaimReport::default();
        for i in 0..self.jobs.len() {
            let j = &self.jobs[i];
            if j.state == JobState::Running && j.lease_expires_at.is_some_and(|e| e <= now) {
                let error = format!(
                    "lease expired (held by {})",
                    j.lease_owner.as_deref().unwrap_or("")
                );
                match self.use_attempt(i, error, now) {
                    JobState::Failed => report.jobs_failed += 1,
                    _ => report.jobs_requeued += 1,
                }
            }
        }
        let p = self.policy();
        for i in 0..self.runs.len() {
            let r = &self.runs[i];
            if r.state != RunState::Running || r.lease_expires_at.is_none_or(|e| e > now) {
                continue;
            }
            let pred = r.clone();
            self.end_run(i, RunState::Failed, "lease_expired", now);
            report.runs_retired += 1;
            if pred.attempt >= p.scan_max_attempts {
                continue;
            }
            let attempt = pred.attempt + 1;
            match self.waiting(pred.library_id) {
                Some(w) => self.fold(w, &pred, attempt, now),
                None => {
                    let id = self.runs.len() as i64 + 1;
                    self.runs.push(ScanRun {
                        id,
                        library_id: pred.library_id,
                        scope: pred.scope.clone(),
                        trigger: pred.trigger,
                        watch_event: pred.watch_event.clone(),
                        state: RunState::Accepted,
                        reason: None,
                        generation: 0,
                        attempt,
                        run_at: now + backoff(&p, pred.attempt - 1),
                        lease_owner: None,
                        lease_expires_at: None,
                        progress: None,
                        requested_at: pred.requested_at,
                        accepted_at: now,
                        started_at: None,
                        finished_at: None,
                        updated_at: now,
                        predecessor_id: Some(pred.id),
                        forced: false,
                    });
                }
            }
            report.run_successors += 1;
        }
        self.requeued += report.jobs_requeued as i64;
        self.reclaim_failed += report.jobs_failed as i64;
        self.retired += report.runs_retired as i64;
        self.successors += report.run_successors as i64;
        report
    }

    // -- scan runs --

    fn waiting(&self, library_id: i64) -> Option<usize> {
        self.runs
            .iter()
            .position(|r| r.library_id == library_id && r.state == RunState::Accepted)
    }

    fn end_run(&mut self, i: usize, state: RunState, reason: &str, now: Millis) -> bool {
        let r = &mut self.runs[i];
        if !matches!(r.state, RunState::Accepted | RunState::Running) {
            return false;
        }
        r.state = state;
        r.reason = Some(reason.to_string());
        r.generation += 1;
        r.lease_owner = None;
        r.lease_expires_at = None;
        r.finished_at = Some(now);
        r.updated_at = now;
        true
    }

    fn fold(&mut self, w: usize, pred: &ScanRun, attempt: i64, now: Millis) {
        let r = &mut self.runs[w];
        r.scope = widen_scope(&r.scope, &pred.scope);
        r.requested_at = r.requested_at.min(pred.requested_at);
        r.predecessor_id = r.predecessor_id.or(Some(pred.id));
        r.attempt = r.attempt.max(attempt);
        r.updated_at = now;
    }

    fn put_back(&mut self, i: usize, reason: &str, now: Millis) {
        let run = self.runs[i].clone();
        match self.waiting(run.library_id) {
            None => {
                let r = &mut self.runs[i];
                r.state = RunState::Accepted;
                r.generation += 1;
                r.lease_owner = None;
                r.lease_expires_at = None;
                r.run_at = now;
                r.updated_at = now;
            }
            Some(w) => {
                self.end_run(i, RunState::Interrupted, reason, now);
                let attempt = self.runs[w].attempt;
                self.fold(w, &run, attempt, now);
            }
        }
    }

    fn request_scan(&mut self, req: &ScanRequest, now: Millis) -> (ScanRun, Admission) {
        if let Some(w) = self.waiting(req.library_id) {
            let r = &mut self.runs[w];
            r.scope = widen_scope(&r.scope, &req.scope);
            r.updated_at = now;
            // A fresh request makes a retry that is backing off due at once.
            r.run_at = r.run_at.min(now);
            return (r.clone(), Admission::Coalesced);
        }
        let id = self.runs.len() as i64 + 1;
        let run = ScanRun {
            id,
            library_id: req.library_id,
            scope: req.scope.clone(),
            trigger: req.trigger,
            watch_event: req.watch_event.clone(),
            state: RunState::Accepted,
            reason: None,
            generation: 0,
            attempt: 1,
            run_at: now,
            lease_owner: None,
            lease_expires_at: None,
            progress: None,
            requested_at: now,
            accepted_at: now,
            started_at: None,
            finished_at: None,
            updated_at: now,
            predecessor_id: None,
            forced: false,
        };
        self.runs.push(run.clone());
        (run, Admission::Accepted)
    }

    fn claim_scan(&mut self, ttl: Millis, owner: &str, now: Millis) -> Option<(Lease, ScanRun)> {
        let busy: BTreeSet<i64> = self
            .runs
            .iter()
            .filter(|r| r.state == RunState::Running)
            .map(|r| r.library_id)
            .collect();
        let i = self
            .runs
            .iter()
            .filter(|r| {
                r.state == RunState::Accepted && r.run_at <= now && !busy.contains(&r.library_id)
            })
            .min_by_key(|r| (r.run_at, r.id))?
            .id as usize
            - 1;
        let r = &mut self.runs[i];
        r.state = RunState::Running;
        r.generation += 1;
        r.lease_owner = Some(owner.to_string());
        r.lease_expires_at = Some(now + ttl);
        r.started_at = Some(now);
        r.updated_at = now;
        let lease = Lease {
            target: Target::ScanRun,
            id: r.id,
            generation: r.generation,
            owner: owner.to_string(),
            expires_at: now + ttl,
        };
        Some((lease, r.clone()))
    }

    fn checkpoint_scan(&mut self, l: &Lease, text: &str, now: Millis) -> Result<(), Lost> {
        let i = self.run_fence(l, now)?;
        let r = &mut self.runs[i];
        r.progress = Some(text.to_string());
        r.updated_at = now;
        Ok(())
    }

    fn finish_scan(
        &mut self,
        l: &Lease,
        state: RunState,
        reason: Option<&str>,
        now: Millis,
    ) -> Result<(), Lost> {
        let i = self.run_fence(l, now)?;
        let r = &mut self.runs[i];
        r.state = state;
        r.reason = reason.map(str::to_string);
        r.lease_owner = None;
        r.lease_expires_at = None;
        r.finished_at = Some(now);
        r.updated_at = now;
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// The harness: actors, the schedule, the checks.

struct Worker {
    /// Which store handle (process) this worker belongs to.
    store: usize,
    lease: Option<Lease>,
    /// The claimed job, for chains (`complete_job_and_enqueue` reuses its key and kind).
    job: Option<Job>,
    /// Not stepped before this step: a paused (slept, stopped) worker keeps its old lease.
    paused_until: usize,
}

#[derive(Default, Clone, Debug)]
struct Stats {
    steps: u64,
    claims: u64,
    lease_lost: u64,
    jobs_done: u64,
    jobs_failed: u64,
    jobs_cancelled: u64,
    runs_completed: u64,
    runs_failed: u64,
    runs_interrupted: u64,
    runs_cancelled: u64,
    chains: u64,
    unique_collisions: u64,
    reclaimed: u64,
    pauses: u64,
    crashes: u64,
}

impl Stats {
    fn add(&mut self, o: &Stats) {
        self.steps += o.steps;
        self.claims += o.claims;
        self.lease_lost += o.lease_lost;
        self.jobs_done += o.jobs_done;
        self.jobs_failed += o.jobs_failed;
        self.jobs_cancelled += o.jobs_cancelled;
        self.runs_completed += o.runs_completed;
        self.runs_failed += o.runs_failed;
        self.runs_interrupted += o.runs_interrupted;
        self.runs_cancelled += o.runs_cancelled;
        self.chains += o.chains;
        self.unique_collisions += o.unique_collisions;
        self.reclaimed += o.reclaimed;
        self.pauses += o.pauses;
        self.crashes += o.crashes;
    }
}

type Key = (Target, i64);

struct Sim {
    rng: ChaCha8Rng,
    clock: Arc<FakeClock>,
    stores: Vec<Store>,
    oracle: Oracle,
    workers: Vec<Worker>,
    step: usize,
    log: VecDeque<String>,
    /// The database as read after the previous step.
    db_jobs: Vec<Job>,
    db_runs: Vec<ScanRun>,
    /// Set when the current step's store call answered `LeaseLost`: the database must then
    /// be exactly as before the step.
    rejected_this_step: bool,
    /// Rows the current step aimed at (they are re-read even when terminal).
    touched: Vec<Key>,
    /// Which tables (jobs, scan runs) the current step wrote to, and whether it may have
    /// moved a counter: only those are re-read, except on a full check.
    dirty: [bool; 2],
    counters_dirty: bool,
    /// First job id and first run id that were not terminal after the previous step.
    low: (i64, i64),
    /// Every this many steps all rows are re-read, not only the ones that may have changed.
    full_every: usize,
    /// Every checkpoint / progress text the store accepted, per row.
    landed: HashMap<Key, BTreeSet<String>>,
    /// First terminal state (and finish time) observed per row.
    terminal: HashMap<Key, (String, Option<Millis>)>,
    /// Highest generation observed per row.
    generations: HashMap<Key, i64>,
    lease_lost_seen: i64,
    stats: Stats,
    _dir: tempfile::TempDir,
}

fn is_lost<T>(r: &Result<T, StoreError>) -> bool {
    matches!(r, Err(e) if e.is_lease_lost())
}

impl Sim {
    fn new(seed: u64) -> Result<Sim, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let path = dir.path().join("sim.db");
        let clock = FakeClock::new(START);
        let stores = OWNERS
            .iter()
            .map(|owner| {
                Store::open(
                    &path,
                    clock.clone(),
                    StoreOptions {
                        durable: false,
                        policy: policy(),
                        owner: owner.to_string(),
                        ..Default::default()
                    },
                )
                .map_err(|e| format!("open: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut oracle = Oracle::default();
        for l in 0..LIBRARIES {
            let lib = stores[0]
                .add_library(&format!("lib{l}"), &format!("/sim/lib{l}"))
                .map_err(|e| format!("add_library: {e}"))?;
            if lib.id != l as i64 + 1 {
                return Err(format!("library id {} for lib{l}", lib.id));
            }
            oracle.libraries.push(lib.id);
        }
        let workers = (0..WORKERS)
            .map(|w| Worker {
                store: w % OWNERS.len(),
                lease: None,
                job: None,
                paused_until: 0,
            })
            .collect();
        Ok(Sim {
            rng: ChaCha8Rng::seed_from_u64(seed),
            clock,
            stores,
            oracle,
            workers,
            step: 0,
            log: VecDeque::new(),
            db_jobs: Vec::new(),
            db_runs: Vec::new(),
            rejected_this_step: false,
            touched: Vec::new(),
            dirty: [false; 2],
            counters_dirty: false,
            low: (1, 1),
            full_every: env_or("MEDIADEX_SIM_FULL_CHECK_EVERY", 25) as usize,
            landed: HashMap::new(),
            terminal: HashMap::new(),
            generations: HashMap::new(),
            lease_lost_seen: 0,
            stats: Stats::default(),
            _dir: dir,
        })
    }

    fn now(&self) -> Millis {
        self.clock.now()
    }

    fn note(&mut self, line: String) {
        if self.log.len() == LOG_LINES {
            self.log.pop_front();
        }
        let t = self.now() - START;
        self.log
            .push_back(format!("#{:<5} t={t:<8} {line}", self.step));
    }

    /// Compares a store answer with the oracle's. `Ok(None)` when both said `LeaseLost`.
    fn agree<T: PartialEq + Debug>(
        &mut self,
        what: &str,
        got: Result<T, StoreError>,
        want: Result<T, Lost>,
    ) -> Result<Option<T>, String> {
        let summary = match &got {
            Ok(v) => format!("Ok({v:?})"),
            Err(e) => format!("Err({e})"),
        };
        self.note(format!("{what} -> {summary}"));
        match (got, want) {
            (Ok(g), Ok(w)) if g == w => Ok(Some(g)),
            (Err(e), Err(Lost)) if e.is_lease_lost() => {
                self.lease_lost_seen += 1;
                self.stats.lease_lost += 1;
                self.rejected_this_step = true;
                Ok(None)
            }
            (got, want) => Err(format!(
                "{what}: store answered {:?}, oracle predicted {want:?}",
                got.map_err(|e| e.to_string())
            )),
        }
    }

    /// The row as the database showed it before this step: was this lease live then?
    fn was_live(&self, l: &Lease, now: Millis) -> bool {
        let idx = (l.id - 1) as usize;
        match l.target {
            Target::Job => self.db_jobs.get(idx).is_some_and(|j| {
                j.state == JobState::Running
                    && j.generation == l.generation
                    && j.lease_expires_at.is_some_and(|e| e > now)
            }),
            Target::ScanRun => self.db_runs.get(idx).is_some_and(|r| {
                r.state == RunState::Running
                    && r.generation == l.generation
                    && r.lease_expires_at.is_some_and(|e| e > now)
            }),
        }
    }

    /// A fenced write the store accepted must have come from the lease that was live in the
    /// database just before it.
    fn accepted_only_if_live<T>(
        &self,
        what: &str,
        l: &Lease,
        got: &Result<T, StoreError>,
        now: Millis,
    ) -> Result<(), String> {
        if got.is_ok() && !self.was_live(l, now) {
            return Err(format!(
                "{what}: accepted a write from a lease that was not live: {l:?}"
            ));
        }
        if is_lost(got) && self.was_live(l, now) {
            return Err(format!("{what}: rejected a write from a live lease: {l:?}"));
        }
        Ok(())
    }

    fn store_of(&self, w: usize) -> Store {
        self.stores[self.workers[w].store].clone()
    }

    // -- actions --

    /// Marks a row the current step aims at: it is re-read even when terminal.
    fn touch(&mut self, target: Target, id: i64) {
        self.touched.push((target, id));
        self.dirty[(target == Target::ScanRun) as usize] = true;
    }

    fn enqueue(&mut self) -> Result<(), String> {
        self.dirty[0] = true;
        let kind = KINDS[self.rng.random_range(0..KINDS.len())];
        let mut job =
            NewJob::new(kind, format!("p{}", self.step)).max_attempts(self.rng.random_range(1..=5));
        if self.rng.random_ratio(60, 100) {
            job = job.unique(KEYS[self.rng.random_range(0..KEYS.len())]);
        }
        let now = self.now();
        let store = self.stores[self.rng.random_range(0..2)].clone();
        let got = if job.unique_key.is_some() && job.max_attempts == 5 {
            store.enqueue_unique(
                &job.kind,
                job.unique_key.as_deref().unwrap_or(""),
                &job.payload,
            )
        } else {
            store.enqueue(job.clone())
        };
        let want = self.oracle.enqueue(&job, now);
        let what = format!(
            "enqueue {kind} key={:?} max={}",
            job.unique_key, job.max_attempts
        );
        if let Some(e) = self.agree(&what, got, Ok(want))?
            && !e.created
        {
            self.stats.unique_collisions += 1;
        }
        Ok(())
    }

    fn request_scan(&mut self) -> Result<(), String> {
        self.dirty[1] = true;
        let req = ScanRequest {
            library_id: self.rng.random_range(1..=LIBRARIES as i64),
            scope: SCOPES[self.rng.random_range(0..SCOPES.len())].to_string(),
            trigger: TRIGGERS[self.rng.random_range(0..TRIGGERS.len())],
            watch_event: self
                .rng
                .random_ratio(30, 100)
                .then(|| format!("ev{}", self.step)),
        };
        let now = self.now();
        let got = self.stores[0].request_scan(req.clone());
        let want = self.oracle.request_scan(&req, now);
        self.agree(
            &format!("request_scan lib{} {:?}", req.library_id, req.scope),
            got,
            Ok(want),
        )?;
        Ok(())
    }

    fn claim(&mut self, w: usize) -> Result<(), String> {
        let store = self.store_of(w);
        let owner = store.owner().to_string();
        let now = self.now();
        if self.rng.random_ratio(60, 100) {
            let kinds: &[&str] = match self.rng.random_range(0..3) {
                0 => &KINDS,
                1 => &KINDS[..1],
                _ => &KINDS[1..],
            };
            self.dirty[0] = true;
            let got = store.claim_job(kinds, TTL);
            let want = self.oracle.claim_job(kinds, TTL, &owner, now);
            if let Some(Some((lease, job))) =
                self.agree(&format!("w{w} claim_job {kinds:?}"), got, Ok(want))?
            {
                self.stats.claims += 1;
                self.workers[w].lease = Some(lease);
                self.workers[w].job = Some(job);
            }
        } else {
            self.dirty[1] = true;
            let got = store.claim_scan_run(TTL);
            let want = self.oracle.claim_scan(TTL, &owner, now);
            if let Some(Some((lease, _run))) =
                self.agree(&format!("w{w} claim_scan_run"), got, Ok(want))?
            {
                self.stats.claims += 1;
                self.workers[w].lease = Some(lease);
                self.workers[w].job = None;
            }
        }
        Ok(())
    }

    /// A worker with a lease does one thing with it. Any `LeaseLost` makes it drop the lease
    /// (its local work is cancelled), as a real worker does.
    fn work(&mut self, w: usize, lease: Lease) -> Result<(), String> {
        self.touch(lease.target, lease.id);
        let store = self.store_of(w);
        let now = self.now();
        let tag = format!("w{w}:g{}:s{}", lease.generation, self.step);
        let name = format!("w{w} {:?}#{}g{}", lease.target, lease.id, lease.generation);
        let roll = self.rng.random_range(0..100);
        let is_job = lease.target == Target::Job;
        let keep;
        if roll < 22 {
            let got = store.renew(&lease, TTL);
            self.accepted_only_if_live(&name, &lease, &got, now)?;
            let want = self.oracle.renew(&lease, TTL, now);
            match self.agree(&format!("{name} renew"), got, want)? {
                Some(l) => {
                    self.workers[w].lease = Some(l);
                    keep = true;
                }
                None => keep = false,
            }
        } else if roll < 47 {
            let got = if is_job {
                store.checkpoint_job(&lease, &tag)
            } else {
                store.checkpoint_scan(&lease, &tag)
            };
            self.accepted_only_if_live(&name, &lease, &got, now)?;
            let want = if is_job {
                self.oracle.checkpoint_job(&lease, &tag, now)
            } else {
                self.oracle.checkpoint_scan(&lease, &tag, now)
            };
            keep = self
                .agree(&format!("{name} checkpoint {tag}"), got, want)?
                .is_some();
            if keep {
                self.landed
                    .entry((lease.target, lease.id))
                    .or_default()
                    .insert(tag);
            }
        } else if roll < 62 {
            let (got, want) = if is_job {
                (
                    store.complete_job(&lease),
                    self.oracle.complete_job(&lease, now),
                )
            } else {
                let outcome = if self.rng.random_ratio(80, 100) {
                    RunOutcome::Completed
                } else {
                    RunOutcome::Suspect
                };
                let state = match outcome {
                    RunOutcome::Completed => RunState::Completed,
                    RunOutcome::Suspect => RunState::Suspect,
                };
                let reason = (outcome == RunOutcome::Suspect).then_some("breaker");
                (
                    store.complete_scan(&lease, outcome, reason),
                    self.oracle.finish_scan(&lease, state, reason, now),
                )
            };
            self.accepted_only_if_live(&name, &lease, &got, now)?;
            self.agree(&format!("{name} complete"), got, want)?;
            keep = false;
        } else if roll < 70 && is_job {
            // A chain advancing itself: done + the next link under the same key, one
            // fenced transaction.
            let job = self.workers[w]
                .job
                .clone()
                .ok_or("worker holds a job lease without its job")?;
            let mut next = NewJob::new(job.kind.clone(), format!("next-of-{}", job.id))
                .max_attempts(job.max_attempts);
            if let Some(k) = &job.unique_key {
                next = next.unique(k.clone());
            }
            let got = store.complete_job_and_enqueue(&lease, next.clone());
            self.accepted_only_if_live(&name, &lease, &got, now)?;
            let want = self.oracle.complete_job_and_enqueue(&lease, &next, now);
            if let Some(e) = self.agree(
                &format!("{name} complete+enqueue {:?}", next.unique_key),
                got,
                want,
            )? {
                self.stats.chains += 1;
                if next.unique_key.is_some() && !e.created {
                    return Err(format!(
                        "{name}: the chain's next link was not created: {e:?}"
                    ));
                }
            }
            keep = false;
        } else if roll < 80 {
            let error = format!("boom {tag}");
            if is_job {
                self.counters_dirty = true;
                let got = store.fail_job(&lease, &error);
                self.accepted_only_if_live(&name, &lease, &got, now)?;
                let want = self.oracle.fail_job(&lease, &error, now);
                self.agree(&format!("{name} fail"), got, want)?;
            } else {
                let got = store.fail_scan(&lease, &error);
                self.accepted_only_if_live(&name, &lease, &got, now)?;
                let want = self
                    .oracle
                    .finish_scan(&lease, RunState::Failed, Some(&error), now);
                self.agree(&format!("{name} fail"), got, want)?;
            }
            keep = false;
        } else if roll < 88 {
            let got = store.release(&lease);
            self.accepted_only_if_live(&name, &lease, &got, now)?;
            let want = self.oracle.release(&lease, now);
            self.agree(&format!("{name} release"), got, want)?;
            keep = false;
        } else if roll < 94 {
            self.note(format!("{name} crash (forgets its lease)"));
            self.stats.crashes += 1;
            keep = false;
        } else {
            let steps = self.rng.random_range(3..=60) as usize;
            self.workers[w].paused_until = self.step + steps;
            self.note(format!("{name} pauses for {steps} steps"));
            self.stats.pauses += 1;
            keep = true;
        }
        if !keep {
            self.workers[w].lease = None;
            self.workers[w].job = None;
        }
        Ok(())
    }

    fn random_target(&mut self) -> (Target, i64) {
        let (target, n) = if self.rng.random_ratio(60, 100) {
            (Target::Job, self.oracle.jobs.len())
        } else {
            (Target::ScanRun, self.oracle.runs.len())
        };
        // Now and then a row that does not exist.
        (target, self.rng.random_range(1..=n as i64 + 1))
    }

    /// Prefer rows a worker holds, so that forced releases and cancels race live leases.
    fn operator_target(&mut self) -> (Target, i64) {
        let held: Vec<(Target, i64)> = self
            .workers
            .iter()
            .filter_map(|w| w.lease.as_ref().map(|l| (l.target, l.id)))
            .collect();
        if !held.is_empty() && self.rng.random_ratio(50, 100) {
            held[self.rng.random_range(0..held.len())]
        } else {
            self.random_target()
        }
    }

    fn cancel(&mut self) -> Result<(), String> {
        let (target, id) = self.operator_target();
        self.touch(target, id);
        let now = self.now();
        let got = self.stores[self.rng.random_range(0..2)].cancel(target, id);
        let want = self.oracle.cancel(target, id, now);
        self.agree(&format!("operator cancel {target:?}#{id}"), got, Ok(want))?;
        Ok(())
    }

    fn release_unowned(&mut self) -> Result<(), String> {
        let (target, id) = self.operator_target();
        self.touch(target, id);
        let now = self.now();
        let got = self.stores[self.rng.random_range(0..2)].release_unowned(target, id);
        let want = self.oracle.release_unowned(target, id, now);
        self.agree(
            &format!("operator release_unowned {target:?}#{id}"),
            got,
            Ok(want),
        )?;
        Ok(())
    }

    fn reclaim(&mut self) -> Result<(), String> {
        self.dirty = [true; 2];
        self.counters_dirty = true;
        let now = self.now();
        let got = self.stores[self.rng.random_range(0..2)].reclaim_stale();
        let want = self.oracle.reclaim(now);
        if let Some(r) = self.agree("reclaim_stale", got, Ok(want))? {
            self.stats.reclaimed += r.jobs_requeued + r.jobs_failed + r.runs_retired;
        }
        Ok(())
    }

    fn advance(&mut self, by: Millis) {
        self.clock.advance(by);
        self.note(format!("clock +{by}"));
    }

    /// Moves the clock to just before, exactly at, or just after a held lease's expiry.
    fn jump_to_a_lease_boundary(&mut self) {
        let expiries: Vec<Millis> = self
            .workers
            .iter()
            .filter_map(|w| w.lease.as_ref().map(|l| l.expires_at))
            .collect();
        if expiries.is_empty() {
            return self.advance(1);
        }
        let at = expiries[self.rng.random_range(0..expiries.len())] + self.rng.random_range(-1..=1);
        if at > self.now() {
            self.clock.set(at);
            self.note(format!("clock set to a lease boundary {}", at - START));
        } else {
            self.advance(1);
        }
    }

    fn step_once(&mut self) -> Result<(), String> {
        self.rejected_this_step = false;
        let roll = self.rng.random_range(0..100);
        match roll {
            0..=11 => self.enqueue()?,
            12..=16 => self.request_scan()?,
            17..=66 => {
                let ready: Vec<usize> = (0..WORKERS)
                    .filter(|&w| self.workers[w].paused_until <= self.step)
                    .collect();
                if ready.is_empty() {
                    self.advance(500);
                } else {
                    let w = ready[self.rng.random_range(0..ready.len())];
                    match self.workers[w].lease.clone() {
                        Some(lease) => self.work(w, lease)?,
                        None => self.claim(w)?,
                    }
                }
            }
            67..=78 => {
                let by = self.rng.random_range(0..=2_500);
                self.advance(by)
            }
            79..=80 => {
                let by = self.rng.random_range(TTL..=3 * TTL);
                self.advance(by)
            }
            81..=83 => self.jump_to_a_lease_boundary(),
            84..=86 => self.cancel()?,
            87..=89 => self.release_unowned()?,
            _ => self.reclaim()?,
        }
        self.check()
    }

    // -- checks --

    /// Reads the rows that may have changed in this step (every row that was live before
    /// it, every row it aimed at, every new row; all rows on a full check), compares them
    /// with the oracle and checks the invariants.
    fn check(&mut self) -> Result<(), String> {
        let full = self.full_every <= 1 || self.step.is_multiple_of(self.full_every);
        self.check_rows(full)
    }

    /// The newest rows from `from` on (plus one older row, so that a row count that differs
    /// from the oracle's shows up as a shifted id).
    fn suffix_len(from: i64, len: usize) -> usize {
        ((len as i64 - from + 2).max(0) as usize).min(len)
    }

    fn check_rows(&mut self, full: bool) -> Result<(), String> {
        let touched = std::mem::take(&mut self.touched);
        let (mut from_job, mut from_run) = if full { (1, 1) } else { self.low };
        for (target, id) in touched {
            match target {
                Target::Job => from_job = from_job.min(id),
                Target::ScanRun => from_run = from_run.min(id),
            }
        }
        let from_job = from_job.max(1);
        let from_run = from_run.max(1);
        let dirty = std::mem::take(&mut self.dirty);
        let counters_dirty = std::mem::take(&mut self.counters_dirty);
        let k_jobs = if full || dirty[0] {
            Self::suffix_len(from_job, self.oracle.jobs.len())
        } else {
            0
        };
        let k_runs = if full || dirty[1] {
            Self::suffix_len(from_run, self.oracle.runs.len())
        } else {
            0
        };
        let store = &self.stores[0];
        let mut new_jobs = if full || dirty[0] {
            store
                .jobs(k_jobs.max(1) as i64)
                .map_err(|e| format!("jobs(): {e}"))?
        } else {
            Vec::new()
        };
        new_jobs.reverse();
        let mut new_runs = if full || dirty[1] {
            store
                .scan_runs(None, k_runs.max(1) as i64)
                .map_err(|e| format!("scan_runs(): {e}"))?
        } else {
            Vec::new()
        };
        new_runs.reverse();
        let counters = if full || counters_dirty || self.rejected_this_step {
            Some(store.counters().map_err(|e| format!("counters(): {e}"))?)
        } else {
            None
        };
        let now = self.now();
        let o_jobs = &self.oracle.jobs[self.oracle.jobs.len() - k_jobs..];
        let o_runs = &self.oracle.runs[self.oracle.runs.len() - k_runs..];

        // The database equals the oracle, row by row.
        if new_jobs.len() != o_jobs.len() || new_jobs.iter().zip(o_jobs).any(|(a, b)| a.id != b.id)
        {
            return Err(format!(
                "job rows in the database ({:?}) are not the oracle's ({:?})",
                new_jobs.iter().map(|j| j.id).collect::<Vec<_>>(),
                o_jobs.iter().map(|j| j.id).collect::<Vec<_>>()
            ));
        }
        if new_runs.len() != o_runs.len() || new_runs.iter().zip(o_runs).any(|(a, b)| a.id != b.id)
        {
            return Err(format!(
                "run rows in the database ({:?}) are not the oracle's ({:?})",
                new_runs.iter().map(|r| r.id).collect::<Vec<_>>(),
                o_runs.iter().map(|r| r.id).collect::<Vec<_>>()
            ));
        }
        for (db, or) in new_jobs.iter().zip(o_jobs) {
            if db != or {
                return Err(format!(
                    "job row differs from the oracle\n  db:     {db:?}\n  oracle: {or:?}"
                ));
            }
        }
        for (db, or) in new_runs.iter().zip(o_runs) {
            if db != or {
                return Err(format!(
                    "scan run row differs from the oracle\n  db:     {db:?}\n  oracle: {or:?}"
                ));
            }
        }

        // The whole database as of now: rows before the suffix are terminal rows this step
        // did not aim at (a full check re-reads them every `full_every` steps).
        let keep_jobs = self.oracle.jobs.len() - k_jobs;
        let keep_runs = self.oracle.runs.len() - k_runs;
        if keep_jobs > self.db_jobs.len() || keep_runs > self.db_runs.len() {
            return Err("rows appeared that were not read".into());
        }
        let mut jobs = std::mem::take(&mut self.db_jobs);
        let old_jobs = jobs.split_off(keep_jobs);
        jobs.extend(new_jobs.iter().cloned());
        let mut runs = std::mem::take(&mut self.db_runs);
        let old_runs = runs.split_off(keep_runs);
        runs.extend(new_runs.iter().cloned());

        // A rejected write leaves the database exactly as it was.
        if self.rejected_this_step && (old_jobs != new_jobs || old_runs != new_runs) {
            return Err("a write answered LeaseLost but the database changed".into());
        }

        // Generations never decrease; terminal rows never change; checkpoints come only from
        // writes the store accepted from the then-live generation.
        let rows = new_jobs
            .iter()
            .map(|j| {
                (
                    (Target::Job, j.id),
                    j.generation,
                    j.state
                        .is_terminal()
                        .then(|| (j.state.to_string(), j.finished_at)),
                    j.checkpoint.clone(),
                )
            })
            .chain(new_runs.iter().map(|r| {
                (
                    (Target::ScanRun, r.id),
                    r.generation,
                    r.state
                        .is_terminal()
                        .then(|| (r.state.to_string(), r.finished_at)),
                    r.progress.clone(),
                )
            }));
        for (key, generation, terminal, data) in rows {
            let seen = self.generations.entry(key).or_insert(generation);
            if generation < *seen {
                return Err(format!(
                    "{key:?}: generation went back from {seen} to {generation}"
                ));
            }
            *seen = generation;
            let first = self.terminal.get(&key).cloned();
            match (first, terminal) {
                (Some(first), now_) if now_.as_ref() != Some(&first) => {
                    return Err(format!("{key:?}: terminal {first:?} changed to {now_:?}"));
                }
                (None, Some(t)) => {
                    match (key.0, t.0.as_str()) {
                        (Target::Job, "done") => self.stats.jobs_done += 1,
                        (Target::Job, "failed") => self.stats.jobs_failed += 1,
                        (Target::Job, "cancelled") => self.stats.jobs_cancelled += 1,
                        (_, "completed" | "suspect") => self.stats.runs_completed += 1,
                        (_, "failed") => self.stats.runs_failed += 1,
                        (_, "interrupted") => self.stats.runs_interrupted += 1,
                        _ => self.stats.runs_cancelled += 1,
                    }
                    self.terminal.insert(key, t);
                }
                _ => {}
            }
            if let Some(text) = data {
                let ok = self.landed.get(&key).is_some_and(|s| s.contains(&text));
                let generation_ok = text
                    .split(':')
                    .nth(1)
                    .and_then(|g| g.strip_prefix('g'))
                    .and_then(|g| g.parse::<i64>().ok())
                    .is_some_and(|g| g <= generation);
                if !ok || !generation_ok {
                    return Err(format!(
                        "{key:?}: data {text:?} was never accepted from a live lease"
                    ));
                }
            }
        }

        // At most one live lease per row among the actors, and it names its holder.
        let mut holders: HashMap<Key, usize> = HashMap::new();
        for (w, worker) in self.workers.iter().enumerate() {
            let Some(l) = &worker.lease else { continue };
            let live = match l.target {
                Target::Job => jobs.get((l.id - 1) as usize).is_some_and(|j| {
                    j.state == JobState::Running
                        && j.generation == l.generation
                        && j.lease_expires_at.is_some_and(|e| e > now)
                        && j.lease_owner.as_deref() == Some(OWNERS[worker.store])
                }),
                Target::ScanRun => runs.get((l.id - 1) as usize).is_some_and(|r| {
                    r.state == RunState::Running
                        && r.generation == l.generation
                        && r.lease_expires_at.is_some_and(|e| e > now)
                        && r.lease_owner.as_deref() == Some(OWNERS[worker.store])
                }),
            };
            if live && let Some(other) = holders.insert((l.target, l.id), w) {
                return Err(format!(
                    "{:?}#{}: workers w{other} and w{w} both hold a live lease",
                    l.target, l.id
                ));
            }
        }

        // At most one live row per unique key.
        let mut live_keys = BTreeSet::new();
        for j in jobs.iter().filter(|j| live_job(j.state)) {
            if let Some(k) = &j.unique_key
                && !live_keys.insert(k.clone())
            {
                return Err(format!("two live jobs for unique key {k}"));
            }
        }

        // At most one running and one waiting run per library.
        let mut running = BTreeSet::new();
        let mut waiting = BTreeSet::new();
        for r in &runs {
            let fresh = match r.state {
                RunState::Running => running.insert(r.library_id),
                RunState::Accepted => waiting.insert(r.library_id),
                _ => true,
            };
            if !fresh {
                return Err(format!("library {} has two {} runs", r.library_id, r.state));
            }
        }

        // The counters: every LeaseLost an actor saw was counted, and nothing else was.
        let get = |c: Counter| {
            counters
                .iter()
                .flatten()
                .find(|(k, _)| *k == c)
                .map_or(0, |(_, v)| *v)
        };
        let o = &self.oracle;
        let expected = [
            (Counter::FenceRejections, self.lease_lost_seen),
            (Counter::ReclaimedJobsRequeued, o.requeued),
            (Counter::ReclaimedJobsFailed, o.reclaim_failed),
            (Counter::ReclaimedRunsRetired, o.retired),
            (Counter::ReclaimSuccessors, o.successors),
            (Counter::JobRetries, o.retries),
        ];
        for (c, want) in expected {
            if counters.is_some() && get(c) != want {
                return Err(format!(
                    "counter {} is {}, expected {want}",
                    c.name(),
                    get(c)
                ));
            }
        }
        if o.fence_rejections != self.lease_lost_seen {
            return Err("oracle and actors disagree on the number of rejections".into());
        }

        let first_live_job = jobs
            .iter()
            .find(|j| !j.state.is_terminal())
            .map_or(jobs.len() as i64 + 1, |j| j.id);
        let first_live_run = runs
            .iter()
            .find(|r| !r.state.is_terminal())
            .map_or(runs.len() as i64 + 1, |r| r.id);
        self.low = (first_live_job, first_live_run);
        self.db_jobs = jobs;
        self.db_runs = runs;
        Ok(())
    }

    /// The end of the schedule: every worker that still holds a lease wakes up and tries to
    /// finish; then time moves on, reclaim runs and everything claimable is run to its end,
    /// until every row is terminal.
    fn drain(&mut self) -> Result<(), String> {
        for w in 0..WORKERS {
            self.step += 1;
            self.rejected_this_step = false;
            self.workers[w].paused_until = 0;
            if let Some(lease) = self.workers[w].lease.take() {
                self.touch(lease.target, lease.id);
                let now = self.now();
                let store = self.store_of(w);
                let name = format!(
                    "drain w{w} {:?}#{}g{} complete",
                    lease.target, lease.id, lease.generation
                );
                let (got, want) = match lease.target {
                    Target::Job => (
                        store.complete_job(&lease),
                        self.oracle.complete_job(&lease, now),
                    ),
                    Target::ScanRun => (
                        store.complete_scan(&lease, RunOutcome::Completed, None),
                        self.oracle
                            .finish_scan(&lease, RunState::Completed, None, now),
                    ),
                };
                self.accepted_only_if_live(&name, &lease, &got, now)?;
                self.agree(&name, got, want)?;
                self.check_rows(true)?;
            }
        }
        for _round in 0..20 {
            self.step += 1;
            self.rejected_this_step = false;
            self.advance(TTL + policy().backoff_cap + 1);
            let now = self.now();
            let got = self.stores[0].reclaim_stale();
            let want = self.oracle.reclaim(now);
            self.agree("drain reclaim_stale", got, Ok(want))?;
            self.check_rows(true)?;
            loop {
                self.step += 1;
                let now = self.now();
                let got = self.stores[1].claim_job(&KINDS, TTL);
                let want = self.oracle.claim_job(&KINDS, TTL, OWNERS[1], now);
                let Some(Some((lease, _))) = self.agree("drain claim_job", got, Ok(want))? else {
                    break;
                };
                let got = self.stores[1].complete_job(&lease);
                let want = self.oracle.complete_job(&lease, now);
                self.agree("drain complete_job", got, want)?;
                self.check_rows(true)?;
            }
            loop {
                self.step += 1;
                let now = self.now();
                let got = self.stores[0].claim_scan_run(TTL);
                let want = self.oracle.claim_scan(TTL, OWNERS[0], now);
                let Some(Some((lease, _))) = self.agree("drain claim_scan_run", got, Ok(want))?
                else {
                    break;
                };
                let got = self.stores[0].complete_scan(&lease, RunOutcome::Completed, None);
                let want = self
                    .oracle
                    .finish_scan(&lease, RunState::Completed, None, now);
                self.agree("drain complete_scan", got, want)?;
                self.check_rows(true)?;
            }
            self.check_rows(true)?;
            if self.db_jobs.iter().all(|j| j.state.is_terminal())
                && self.db_runs.iter().all(|r| r.state.is_terminal())
            {
                // Every job ended exactly once: each row reached one terminal state, which
                // the checks above held fixed ever since.
                let terminal_jobs = self.terminal.keys().filter(|k| k.0 == Target::Job).count();
                if terminal_jobs != self.db_jobs.len() {
                    return Err(format!(
                        "{} jobs but {terminal_jobs} terminal records",
                        self.db_jobs.len()
                    ));
                }
                return Ok(());
            }
        }
        Err("the drain did not bring every row to a terminal state".into())
    }

    fn failure(&self, seed: u64, msg: &str) -> String {
        let mut out = format!(
            "simulation failed: seed {seed} (rerun with MEDIADEX_SIM_SEED_BASE={seed} MEDIADEX_SIM_SEEDS=1) at step {}: {msg}\nlast steps:\n",
            self.step
        );
        for line in &self.log {
            out.push_str("  ");
            out.push_str(line);
            out.push('\n');
        }
        out
    }
}

/// Runs one seed for `steps` steps plus the drain.
fn run_seed(seed: u64, steps: usize) -> Result<Stats, String> {
    let mut sim = Sim::new(seed)?;
    sim.check().map_err(|e| sim.failure(seed, &e))?;
    for step in 1..=steps {
        sim.step = step;
        sim.stats.steps += 1;
        sim.step_once().map_err(|e| sim.failure(seed, &e))?;
    }
    sim.drain().map_err(|e| sim.failure(seed, &e))?;
    Ok(sim.stats)
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs the seeds over a few threads (each seed its own database file and clock).
fn run_many(default_seeds: u64, default_steps: u64) {
    let seeds = env_or("MEDIADEX_SIM_SEEDS", default_seeds);
    let steps = env_or("MEDIADEX_SIM_STEPS", default_steps) as usize;
    let base = env_or("MEDIADEX_SIM_SEED_BASE", 0);
    let threads = env_or("MEDIADEX_SIM_THREADS", 2).max(1);
    let started = Instant::now();
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let failures = Mutex::new(Vec::new());
    let total = Mutex::new(Stats::default());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                while !stop.load(Ordering::SeqCst) {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= seeds {
                        break;
                    }
                    match run_seed(base + i, steps) {
                        Ok(stats) => total.lock().unwrap().add(&stats),
                        Err(report) => {
                            stop.store(true, Ordering::SeqCst);
                            failures.lock().unwrap().push(report);
                        }
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    if let Some(first) = failures.first() {
        panic!("{first}");
    }
    eprintln!(
        "simulation: {seeds} seeds x {steps} steps in {:.1?}: {:?}",
        started.elapsed(),
        total.into_inner().unwrap()
    );
}

#[test]
fn seeded_schedules_of_workers_keep_the_lease_protocol_on_a_real_database() {
    run_many(200, 1_000);
}

/// The long run for CI: `cargo test --release --test it simulation:: -- --ignored` (about seven
/// minutes on two cores; 2,000 seeds x 5,000 steps, set through the environment, take about
/// 36 minutes).
#[test]
#[ignore]
fn soak() {
    run_many(400, 5_000);
}

#[test]
fn one_seed_replays_the_same_schedule() {
    // Two runs of one seed make identical schedules: the simulation is deterministic.
    let a = run_seed(4242, 150).unwrap();
    let b = run_seed(4242, 150).unwrap();
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
    assert!(a.claims > 0 && a.steps == 150);
}
