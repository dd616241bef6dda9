//! The walk chains' moves across families, a composition (DESIGN.md section 7): a walk
//! request (the record's `seen` raised, the chain's row queued: `walks`, `jobs`), a batch's
//! selection (`walks::batch_heads` with each asset's files, remembered timed-out decode and
//! other assets of the same pixels: `pixels`),
//! and the ONE fenced transaction that commits a batch: the job row's completion under its
//! lease (`jobs`), the results (content hashes: `walks`; faces: `faces` and `people`;
//! perceptual hashes: `similar`; face descriptors: `people`; timed-out decodes:
//! `decode_timeouts`), then either the chain's next row or, after the last batch, the walk
//! record raise, unless an asset made live behind the cursor takes the chain back to it
//! (`advance`). A one-off redetection replaces an asset's faces the same way
//! (`replace_faces`), and a replacement asks the embedding chain for the new faces'
//! descriptors (`faces_replaced`). No SQL of its own.

use super::db::Db;
use super::jobs::{self, Enqueued};
use super::{Store, StoreError, decode_timeouts, faces, people, pixels, similar, walks};
use crate::model::{
    DetectedFace, Lease, Millis, WalkAsset, WalkCommit, WalkFile, WalkKindId, WalkRequest,
    WalkResults, WalkVisit,
};
use std::collections::HashMap;

/// The files and remembered timed-out decode of a batch's assets: one range of each table
/// when the batch's ids are dense (a walk's or the thumbnail job's batch usually is), else
/// a lookup per asset (a batch spread thin over a big library would read every row of the
/// range between). The lookups per asset were most of a content-hash batch's selection.
pub(super) enum Parts {
    Ranged {
        files: HashMap<i64, Vec<WalkFile>>,
        timed_out: HashMap<i64, u64>,
    },
    Each,
}

impl Parts {
    /// For the assets `ids`, in ascending order.
    pub(super) fn of(
        db: &Db<'_>,
        host: &str,
        ids: impl Iterator<Item = i64> + Clone,
    ) -> Result<Parts, StoreError> {
        let (count, first, last) = ids
            .clone()
            .fold((0i64, i64::MAX, i64::MIN), |(n, lo, hi), id| {
                (n + 1, lo.min(id), hi.max(id))
            });
        if count == 0 || last - first >= 4 * count {
            return Ok(Parts::Each);
        }
        Ok(Parts::Ranged {
            files: walks::files_in(db, host, first - 1, last)?,
            timed_out: decode_timeouts::timed_out_in(db, first - 1, last)?,
        })
    }

    /// Asset `id`'s files (present first) and timed-out decode.
    pub(super) fn take(
        &mut self,
        db: &Db<'_>,
        host: &str,
        id: i64,
    ) -> Result<(Vec<WalkFile>, Option<u64>), StoreError> {
        Ok(match self {
            Parts::Ranged { files, timed_out } => {
                (files.remove(&id).unwrap_or_default(), timed_out.remove(&id))
            }
            Parts::Each => (
                walks::files_of(db, host, id)?,
                decode_timeouts::timed_out(db, id)?,
            ),
        })
    }
}

/// A completion's walk request, in the completion's transaction: `seen` raised (never the
/// record's `scheme`), the chain enqueued unless one is live (`Store::raise_walk_seen` and
/// `Store::enqueue`, as `walks::request` makes them, in one write).
pub(super) fn request_in(
    db: &Db<'_>,
    req: &WalkRequest,
    now: Millis,
) -> Result<Enqueued, StoreError> {
    walks::raise_seen(db, req.kind, req.scheme, now)?;
    let enqueued = jobs::insert(db, &req.job, now)?;
    for also in &req.with {
        request_in(db, also, now)?;
    }
    Ok(enqueued)
}

/// Asset `id`'s faces were just detected anew (a face walk's batch, a one-off redetection):
/// their descriptors follow in the same transaction. The live embedding chain is marked to go
/// back for it (`REVISIT`), and without one a chain is queued. That one carries no scheme (the
/// binary that claims it walks under its own embedder) but the cursor just before `id` and the
/// scheme the walk record says was walked to the end (`since`): a claimer of that scheme
/// starts at `id`, since every asset without the stamp either queued or marked a live chain
/// after that end; any other starts from the beginning. Without the cursor, each batch of a
/// face walk restarted the embedding walk from the first asset, whose visit grew with the
/// library.
pub(super) fn faces_replaced(db: &Db<'_>, id: i64, now: Millis) -> Result<(), StoreError> {
    let kind = WalkKindId::Embeddings.job_kind();
    walks::revisit(db, kind, id)?;
    let since = walks::walked_scheme(db, WalkKindId::Embeddings)?;
    let payload = serde_json::json!({ "after": id - 1, "since": since }).to_string();
    let chain = crate::model::NewJob::new(kind, payload)
        .unique(kind)
        .max_attempts(10);
    jobs::insert(db, &chain, now)?;
    Ok(())
}

/// Replaces the faces of `asset_id` for `version` and stamps the asset (`faces`): the
/// faces of other versions leave their people, a face found again keeps who it is and the
/// user's word on it (`people`), and the new ones' descriptors are asked for
/// (`faces_replaced`). Returns false (and writes nothing) when the asset is gone (the sweep
/// deleted it meanwhile) or, unless `over_newer`, stamped by a newer detector (a newer
/// binary on the same database).
pub(super) fn replace_faces(
    db: &Db<'_>,
    asset_id: i64,
    (version, over_newer): (i64, bool),
    found: &[DetectedFace],
    now: Millis,
) -> Result<bool, StoreError> {
    if !faces::stamp(db, asset_id, version, over_newer)? {
        return Ok(false);
    }
    let said = people::word_on(db, asset_id)?;
    let found = faces::put(db, asset_id, version, found)?;
    people::forget_old_faces(db, asset_id, version)?;
    people::carry_word(db, asset_id, &said, &found)?;
    faces_replaced(db, asset_id, now)?;
    Ok(true)
}

/// Writes a batch's results. An asset swept since it was selected is skipped, and so is one
/// a newer scheme stamped meanwhile unless `rollback`.
fn write_results(
    db: &Db<'_>,
    results: &WalkResults,
    (rollback, now): (bool, Millis),
) -> Result<(), StoreError> {
    match results {
        WalkResults::ContentHashes(hashes) => {
            walks::stamp_content_hashes(db, hashes, rollback)?;
        }
        WalkResults::Faces {
            version,
            found,
            timed_out,
        } => {
            for (id, list) in found {
                replace_faces(db, *id, (*version, rollback), list, now)?;
            }
            decode_timeouts::record(db, timed_out, now)?;
        }
        WalkResults::Similar {
            scheme,
            hashes,
            timed_out,
        } => {
            similar::stamp(db, *scheme, hashes, rollback)?;
            decode_timeouts::record(db, timed_out, now)?;
        }
        WalkResults::Embeddings {
            version,
            found,
            assigned,
            timed_out,
        } => {
            people::store_vectors(db, *version, found, rollback)?;
            people::join_people(db, assigned)?;
            decode_timeouts::record(db, timed_out, now)?;
        }
    }
    Ok(())
}

/// The chain's advance after a batch of row `row_id` (just completed in this transaction):
/// `next` when the walk goes on; after the last batch the record's raise, unless an asset
/// was made live behind the cursor while the row was live, in which case the chain goes on
/// from there and the record waits (it must never say "walked to the end" while a live
/// asset lacks the stamp).
fn advance(
    db: &Db<'_>,
    row_id: i64,
    commit: &WalkCommit,
    now: Millis,
) -> Result<Option<Enqueued>, StoreError> {
    let revisit = walks::revisit_of(db, row_id)?;
    match (revisit, commit.complete_scheme) {
        (None, Some(scheme)) => {
            walks::raise_record(db, commit.kind, scheme, now)?;
            if let Some(then) = &commit.then {
                jobs::insert(db, then, now)?;
            }
            Ok(None)
        }
        (None, None) => Ok(Some(jobs::insert(db, &commit.next, now)?)),
        (Some(asset), _) => {
            let payload = walks::back_to(db, &commit.next.payload, asset)?;
            let next = crate::model::NewJob {
                payload,
                ..commit.next.clone()
            };
            Ok(Some(jobs::insert(db, &next, now)?))
        }
    }
}

impl Store {
    /// Stores the faces a detector found in one asset (a one-off detection, not a walk):
    /// replaces that version's rows and stamps `faces_scheme`. False if the asset is gone.
    pub fn store_faces(
        &self,
        asset_id: i64,
        version: i64,
        faces: Vec<DetectedFace>,
    ) -> Result<bool, StoreError> {
        self.write(move |db, now| replace_faces(db, asset_id, (version, true), &faces, now))
    }

    /// Up to `limit` assets after `after` in id order that a walk of `kind` must visit, each
    /// with its files (present first).
    pub fn walk_batch(
        &self,
        kind: WalkKindId,
        visit: WalkVisit,
        after: i64,
        limit: usize,
    ) -> Result<Vec<WalkAsset>, StoreError> {
        let host = self.host();
        self.read_snapshot(|db| {
            let heads = walks::batch_heads(db, kind, visit, after, limit)?;
            let mut parts = Parts::of(db, host, heads.iter().map(|((id, ..), _)| *id))?;
            let mut seen = pixels::Seen::default();
            heads
                .into_iter()
                .map(|((id, checksum, trashed), look)| {
                    let (same_pixels, known) = seen.of(db, kind, visit, id, look)?;
                    let (files, timed_out) = parts.take(db, host, id)?;
                    Ok(WalkAsset {
                        id,
                        checksum,
                        trashed,
                        files,
                        timed_out,
                        same_pixels,
                        known,
                    })
                })
                .collect()
        })
    }

    /// Another process walking `kind` under another scheme than `scheme` (only a higher one
    /// when `higher_only`) that is live now: the newest chain row of another scheme runs
    /// under a live lease, was handed off less than `grace` ago, or was enqueued by a process
    /// that holds a live lease. Returns its scheme and lease owner.
    pub fn walk_peer(
        &self,
        kind: WalkKindId,
        scheme: i64,
        higher_only: bool,
        grace: Millis,
    ) -> Result<Option<(i64, String)>, StoreError> {
        let now = self.now();
        self.read(|db| {
            jobs::walk_peer(
                db,
                kind.job_kind(),
                scheme,
                higher_only,
                (now, grace),
                self.owner(),
            )
        })
    }

    /// Commits one walk batch in ONE fenced transaction under the chain row's lease: the
    /// row's completion first (a stale lease stops everything here, nothing lands), then the
    /// results, then the chain's next row or, after the last batch, the walk record raise
    /// (`advance`: a restore behind the cursor takes the chain back instead). Returns the
    /// next row when one was enqueued.
    pub fn commit_walk_batch(
        &self,
        lease: &Lease,
        commit: WalkCommit,
    ) -> Result<Option<Enqueued>, StoreError> {
        let lease = lease.clone();
        self.write(move |db, now| {
            jobs::complete(db, &lease, now)?;
            write_results(db, &commit.results, (commit.rollback, now))?;
            advance(db, lease.id, &commit, now)
        })
    }
}
