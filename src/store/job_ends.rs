//! A job's fenced end with what it brings in another family, a composition: a failed or
//! transient attempt (`jobs::fail`, `jobs::retry`) counted as a retry when the job goes back
//! to the queue (`counters`), and a recluster's commit (the job's completion, then the
//! people's regrouping, or a new recluster job when the user said something since:
//! `people`). Each in the one transaction of its fence. No SQL of its own.

use super::{Store, StoreError, counters, jobs, people};
use crate::model::{Counter, JobState, Lease, Reclustered, Regrouping};

impl Store {
    /// Records a failed attempt (fenced): requeued after a backoff, or `failed` once the
    /// job has used its attempts. Returns the state the job is left in.
    pub fn fail_job(&self, lease: &Lease, error: &str) -> Result<JobState, StoreError> {
        let (lease, error) = (lease.clone(), error.to_string());
        let policy = self.inner.policy.clone();
        self.write(move |db, now| {
            let state = jobs::fail(db, &lease, &error, &policy, now)?;
            if state == JobState::Queued {
                counters::bump(db, Counter::JobRetries, 1)?;
            }
            Ok(state)
        })
    }

    /// Records a transient failure (fenced): the job goes back to the queue without spending
    /// an attempt, after the backoff of its transient retries so far (doubling up to the
    /// policy's cap), its error kept for the status. A cause that passes by itself must not
    /// fail the job for good however long it lasts; the growing wait keeps a lasting one
    /// (or one misjudged transient) from costing more than a try per capped backoff.
    pub fn retry_job(&self, lease: &Lease, error: &str) -> Result<(), StoreError> {
        let (lease, error) = (lease.clone(), error.to_string());
        let policy = self.inner.policy.clone();
        self.write(move |db, now| {
            jobs::retry(db, &lease, &error, &policy, now)?;
            counters::bump(db, Counter::JobRetries, 1)
        })
    }

    /// Commits a recluster under its job's lease, in one fenced transaction with the job's
    /// completion. If the user changed something since `r.said_at`, nothing of it is
    /// written: the job completes and a new one is queued, to run on what the user said.
    pub fn commit_recluster(
        &self,
        lease: &Lease,
        r: Regrouping,
    ) -> Result<Reclustered, StoreError> {
        let lease = lease.clone();
        self.write(move |db, now| {
            jobs::complete(db, &lease, now)?;
            if people::said_at(db)? != r.said_at {
                jobs::insert(db, &people::recluster_job(), now)?;
                return Ok(Reclustered::Again);
            }
            people::regroup(db, &r, now)
        })
    }
}
