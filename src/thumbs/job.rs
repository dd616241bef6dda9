//! The `thumbs` job (issue 5, "generated on first request and by scans for new images"):
//! the pictures and videos a scan run's fenced completion published get their thumbnails
//! made in the background, through the queue, so a crash or a restart resumes the work. A
//! row is one batch: the assets after its cursor, made on rayon, then ONE fenced write that
//! completes the row and enqueues the next one with the cursor moved on; a worker that lost
//! its lease advances nothing. It writes only cache files, through `Thumbs` (the function
//! and cache key the first request uses), and skips what is cached, so a re-run costs a
//! `stat` per asset. A file that is gone, changed, unreadable or undecodable is counted and
//! skipped (it gets the placeholder, as on request); it never fails the job. A decode that
//! ran to its deadline is remembered for the file's stamp in the row's fenced commit, and an
//! asset the index remembers so is not decoded again. Below the
//! cache's reserve of free space the row waits (paused, no attempt spent) and is made once
//! space is back. No SQL here.

use super::{Ensured, Source, Thumbs};
use crate::model::{DecodeTimeout, Job, ThumbAsset, ThumbsPayload, hex};
use crate::queue::{Failure, JobDone, JobHandler, WorkContext, WorkError};
use crate::store::Store;
use rayon::prelude::*;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

/// Assets per row: a few seconds of decoding on a small machine, so a shutdown or a lost
/// lease costs little, and each row's commit is one small transaction.
pub const BATCH: usize = 32;

/// What became of one asset's thumbnail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Cached already (by a request, an earlier run, or this job before a crash).
    Cached,
    Made,
    /// Cannot be made here (undecodable, a HEIF without heif-dec or whose decode timed out
    /// before, as the index remembers, a video without ffmpeg): the placeholder.
    Placeholder,
    /// Its decode ran to its deadline now: the placeholder, and the fact the batch's commit
    /// remembers for the file's stamp.
    TimedOut(DecodeTimeout),
    /// No file of the asset still holds the bytes the scan indexed.
    NoFile,
    /// The file could not be read, or the decoder failed outright.
    Failed(String),
    /// The work stopped (shutdown, lease lost, cancel) before this asset.
    Stopped,
    /// The disk holding the data dir is down to its reserve (the message says so): the
    /// batch waits for space.
    Paused(String),
}

/// Makes one asset's thumbnail. `Thumbs` is the real one; tests wrap it to stage a race in
/// the middle of a batch.
pub trait MakeThumb: Send + Sync + 'static {
    fn make(&self, asset: &ThumbAsset) -> Outcome;
}

impl MakeThumb for Thumbs {
    fn make(&self, a: &ThumbAsset) -> Outcome {
        let sum = hex(&a.asset.checksum);
        let src = Source {
            checksum_hex: &sum,
            kind: Some(a.kind),
            mime: a.mime.as_deref(),
            orientation: a.orientation,
            pixels: a
                .width
                .zip(a.height)
                .map(|(w, h)| u64::from(w) * u64::from(h)),
        };
        // Cheap answers first: no file is looked for when there is nothing to make.
        if self.cache_path(&sum).is_file() {
            return Outcome::Cached;
        }
        if !self.makes(&src) || a.asset.timed_out.is_some() {
            return Outcome::Placeholder;
        }
        // Only a file whose stamp is the one the scan recorded holds these bytes: a
        // thumbnail cached under the checksum must be of exactly them.
        let Ok(file) = crate::locate::locate_candidate(&a.asset) else {
            return Outcome::NoFile;
        };
        match self.ensure(&src, &file.path) {
            Ok(Ensured::Cached) => Outcome::Cached,
            Ok(Ensured::Made) => Outcome::Made,
            Ok(Ensured::Placeholder) => Outcome::Placeholder,
            Ok(Ensured::TimedOut(seconds)) => Outcome::TimedOut(DecodeTimeout {
                asset_id: a.asset.id,
                size: file.stamp.size,
                mtime_ns: file.stamp.mtime_ns,
                seconds,
            }),
            Err(super::ThumbError::NoRoom(full)) => Outcome::Paused(full.to_string()),
            Err(e) => Outcome::Failed(e.to_string()),
        }
    }
}

/// The job handler: one batch per claimed row.
pub struct ThumbsJob {
    pub store: Store,
    pub maker: Arc<dyn MakeThumb>,
    pub batch: usize,
}

impl ThumbsJob {
    pub fn new(store: &Store, thumbs: Arc<Thumbs>) -> Self {
        ThumbsJob {
            store: store.clone(),
            maker: thumbs,
            batch: BATCH,
        }
    }

    /// Makes the batch on rayon. Each asset first checks that the work may go on; a decoder
    /// that panics costs its asset only.
    fn make_all(&self, ctx: &WorkContext, batch: &[ThumbAsset]) -> Vec<Outcome> {
        batch
            .par_iter()
            .map(|a| {
                if ctx.ensure_live().is_err() {
                    return Outcome::Stopped;
                }
                catch_unwind(AssertUnwindSafe(|| self.maker.make(a)))
                    .unwrap_or_else(|_| Outcome::Failed("the decoder panicked".to_string()))
            })
            .collect()
    }
}

/// How many assets of a batch got each outcome, for the log.
#[derive(Debug, Default)]
struct Tally {
    made: u64,
    cached: u64,
    placeholder: u64,
    no_file: u64,
    failed: u64,
}

fn tally(batch: &[ThumbAsset], outcomes: &[Outcome]) -> Tally {
    let mut t = Tally::default();
    for (a, o) in batch.iter().zip(outcomes) {
        match o {
            Outcome::Made => t.made += 1,
            Outcome::Cached => t.cached += 1,
            Outcome::Placeholder | Outcome::TimedOut(_) => t.placeholder += 1,
            Outcome::NoFile => t.no_file += 1,
            Outcome::Failed(why) => {
                t.failed += 1;
                tracing::debug!(asset = a.asset.id, %why, "no thumbnail made");
            }
            Outcome::Stopped | Outcome::Paused(_) => {}
        }
    }
    t
}

/// The batch's decodes that ran to their deadline, for its commit to remember.
fn timeouts(outcomes: &[Outcome]) -> Vec<DecodeTimeout> {
    outcomes
        .iter()
        .filter_map(|o| match o {
            Outcome::TimedOut(t) => Some(*t),
            _ => None,
        })
        .collect()
}

impl JobHandler for ThumbsJob {
    fn run(&self, ctx: &WorkContext, job: &Job) -> Result<JobDone, WorkError> {
        let Some(payload) = ThumbsPayload::parse(&job.payload) else {
            tracing::warn!(
                job = job.id,
                "thumbs job with an unreadable payload; skipped"
            );
            return Ok(JobDone::Done);
        };
        ctx.ensure_live()?;
        let batch = self
            .store
            .thumbs_batch(payload.after, payload.last, self.batch)?;
        let outcomes = self.make_all(ctx, &batch);
        if outcomes.contains(&Outcome::Stopped) {
            // Not all of the batch was done: the row is not advanced (what was made stays
            // cached and is skipped by the next attempt).
            ctx.ensure_live()?;
            return Err(Failure::Interrupted("the batch was interrupted".to_string()).into());
        }
        if let Some(why) = outcomes.iter().find_map(|o| match o {
            Outcome::Paused(why) => Some(why.clone()),
            _ => None,
        }) {
            // What was made stays cached; the row waits for space without spending an
            // attempt, and the next try skips what is cached.
            return Err(WorkError::Paused(why));
        }
        let t = tally(&batch, &outcomes);
        tracing::debug!(
            run = payload.run,
            after = payload.after,
            made = t.made,
            cached = t.cached,
            placeholder = t.placeholder,
            no_file = t.no_file,
            failed = t.failed,
            "thumbnail batch"
        );
        let next = ThumbsPayload {
            after: batch.last().map_or(payload.last, |a| a.asset.id),
            visited: payload.visited + batch.len() as u64,
            ..payload.clone()
        };
        let last_row = batch.len() < self.batch || next.after >= payload.last;
        let timed_out = timeouts(&outcomes);
        // The commit completes this row: no heartbeat may follow it.
        ctx.stop_heartbeat();
        let follow = (!last_row).then(|| next.job());
        ctx.ack(move |s, l| s.complete_thumbs_batch(l, timed_out, follow))?;
        if last_row {
            tracing::info!(
                run = payload.run,
                visited = next.visited,
                "thumbnails of the scan's new assets done"
            );
        }
        Ok(JobDone::Committed)
    }
}
