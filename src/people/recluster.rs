//! The "recluster all" job (`mediadex people recluster`, and the embedding walk's end): every
//! face of a live picture with a vector of the current embedder is grouped anew by
//! `cluster::recluster`, with what the user said on top, and the answer replaces the
//! clustering's rows in one fenced commit with the job's completion. The user's word is
//! never replaced: a confirmed face stays where the user put it, and a recluster read before
//! the user's latest change writes nothing and runs again (`Store::commit_recluster`).
//! Owns the translation between the store's rows and the rule's types; must not hold the
//! rule itself.

use super::cluster::{self, Face, Outcome, Params, Said, Who};
use crate::model::{FaceVector, Job, PeopleState, Reclustered, Regrouping};
use crate::queue::{JobDone, JobHandler, WorkContext, WorkError};
use crate::store::Store;
use std::collections::HashMap;

/// The job handler: one recluster per claimed row.
pub struct ReclusterJob {
    pub store: Store,
    /// The embedder version whose vectors are grouped (this binary's).
    pub scheme: i64,
    pub params: Params,
}

impl ReclusterJob {
    pub fn new(store: &Store, scheme: i64) -> ReclusterJob {
        ReclusterJob {
            store: store.clone(),
            scheme,
            params: super::PARAMS,
        }
    }
}

impl JobHandler for ReclusterJob {
    fn run(&self, ctx: &WorkContext, _job: &Job) -> Result<JobDone, WorkError> {
        ctx.ensure_live()?;
        // The user's word first: a change after this read makes the commit run again.
        let state = self.store.people_state()?;
        let faces = self.store.face_vectors(self.scheme)?;
        let regrouping = regroup(&faces, &state, self.params);
        ctx.ensure_live()?;
        ctx.stop_heartbeat();
        match ctx.ack(|s, l| s.commit_recluster(l, regrouping))? {
            Reclustered::Done { placed, created } => {
                tracing::info!(faces = faces.len(), placed, created, "people regrouped")
            }
            Reclustered::Again => {
                tracing::info!("people changed by the user meanwhile: regrouping again")
            }
        }
        Ok(JobDone::Committed)
    }
}

/// What the rule makes of `faces` and `state`, as rows to commit.
pub fn regroup(faces: &[FaceVector], state: &PeopleState, params: Params) -> Regrouping {
    let rule: Vec<Face> = faces
        .iter()
        .map(|f| Face {
            id: f.id,
            photo: f.asset_id,
            key: f.key,
            vector: f.vector.clone(),
        })
        .collect();
    let known: std::collections::HashSet<i64> = faces.iter().map(|f| f.id).collect();
    let said = Said {
        // Only faces the rule sees: one without a vector keeps its row untouched.
        confirmed: (state.confirmed.iter())
            .filter(|(f, _)| known.contains(f))
            .copied()
            .collect(),
        rejected: state.rejected.iter().copied().collect(),
    };
    let before: HashMap<i64, i64> = state.assigned.iter().copied().collect();
    let outcome = cluster::recluster(&rule, &said, &before, params);
    rows(outcome, faces, state)
}

fn rows(outcome: Outcome, faces: &[FaceVector], state: &PeopleState) -> Regrouping {
    let mut r = Regrouping {
        considered: faces.iter().map(|f| f.id).collect(),
        said_at: state.said_at,
        ..Regrouping::default()
    };
    for (who, ids) in outcome.people {
        match who {
            // A person deleted since the read gets none: its faces wait.
            Who::Known(p) if state.people.contains(&p) => r.known.push((p, ids)),
            Who::Known(_) => {}
            Who::New(_) => r.new.push(ids),
        }
    }
    r
}
