//! Libraries, jobs, scan runs and their requests, reclaim reports and counters. Plain data (see
//! the parent module); must not depend on any other module of the crate.

use super::*;

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
    /// How long after its insert the row is first due (0: now).
    pub delay: Millis,
}

impl NewJob {
    pub fn new(kind: impl Into<String>, payload: impl Into<String>) -> Self {
        NewJob {
            kind: kind.into(),
            unique_key: None,
            payload: payload.into(),
            max_attempts: 5,
            delay: 0,
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

    /// First due `ms` after its insert (`Store::enqueue_now` of its key makes it due now).
    pub fn delayed(mut self, ms: Millis) -> Self {
        self.delay = ms.max(0);
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

/// Named persistent counters (exported by /metrics and `mediadex status`).
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
