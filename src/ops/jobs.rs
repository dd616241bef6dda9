//! The job queue on request: an operator's cancel or force-release of one job.

use super::error::Thing;
use super::{Error, Services};
use crate::model::{Job, Target};

fn job(s: &Services, id: i64) -> Result<Job, Error> {
    s.store.job(id)?.ok_or(Error::NotFound(Thing::Job, id))
}

/// Cancels a waiting or running job; answers it as it is now.
pub fn cancel(s: &Services, id: i64) -> Result<Job, Error> {
    job(s, id)?;
    if !s.store.cancel(Target::Job, id)? {
        return Err(Error::JobEnded { id, act: "cancel" });
    }
    (s.wake)();
    job(s, id)
}

/// Puts a running job back under a new generation (its holder's later writes land nothing).
pub fn release(s: &Services, id: i64) -> Result<Job, Error> {
    job(s, id)?;
    if !s.store.release_unowned(Target::Job, id)? {
        return Err(Error::JobEnded { id, act: "release" });
    }
    (s.wake)();
    job(s, id)
}
