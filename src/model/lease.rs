//! Leases and the life states of jobs and scan runs. Plain data (see the parent module); must
//! not depend on any other module of the crate.

use super::*;

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
