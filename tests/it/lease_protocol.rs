//! The rules of DESIGN.md section 4 at the store level, each staged deterministically with a
//! fake clock and explicit interleavings on a real database file.

use crate::support;

use mediadex::model::{
    Counter, JobState, Lease, NewJob, RunOutcome, RunState, ScanRequest, Target, Trigger,
};
use mediadex::store::{Admission, StoreError};
use support::{T0, TTL, env};

fn assert_lost<T: std::fmt::Debug>(result: Result<T, StoreError>) {
    match result {
        Err(StoreError::LeaseLost { .. }) => {}
        other => panic!("expected LeaseLost, got {other:?}"),
    }
}

#[test]
fn stale_job_writes_from_a_reclaimed_lease_are_counted_noops_and_spare_the_successor() {
    let env = env();
    let id = env.store.enqueue(NewJob::new("walk", "{}")).unwrap().id;
    let (a, _) = env.store.claim_job(&["walk"], TTL).unwrap().unwrap();
    env.clock.advance(TTL);
    assert_eq!(env.store.reclaim_stale().unwrap().jobs_requeued, 1);
    env.clock.advance(1_000); // the first retry's backoff
    let (b, _) = env.store.claim_job(&["walk"], TTL).unwrap().unwrap();
    assert_eq!(b.id, id);
    env.store.checkpoint_job(&b, "b:1").unwrap();
    let before = env.store.job(id).unwrap().unwrap();

    assert_lost(env.store.renew(&a, TTL));
    assert_lost(env.store.checkpoint_job(&a, "a:stale"));
    assert_lost(env.store.complete_job(&a));
    assert_lost(env.store.fail_job(&a, "stale failure"));
    assert_lost(env.store.release(&a));
    assert_lost(
        env.store
            .complete_job_and_enqueue(&a, NewJob::new("walk", "{\"next\":1}")),
    );

    assert_eq!(env.store.job(id).unwrap().unwrap(), before);
    assert_eq!(
        env.store.jobs(100).unwrap().len(),
        1,
        "the stale chain step enqueued nothing"
    );
    assert_eq!(env.counter(Counter::FenceRejections), 6);
    env.store.complete_job(&b).unwrap();
    assert_eq!(env.store.job(id).unwrap().unwrap().state, JobState::Done);
}

#[test]
fn stale_scan_writes_from_a_retired_run_are_counted_noops_and_spare_the_successor() {
    let env = env();
    let lib = env.library("photos");
    let (run, _) = env.store.request_scan(env.scan_request(lib, "")).unwrap();
    let (a, _) = env.store.claim_scan_run(TTL).unwrap().unwrap();
    env.clock.advance(TTL + 1);
    let report = env.store.reclaim_stale().unwrap();
    assert_eq!((report.runs_retired, report.run_successors), (1, 1));
    env.clock.advance(1_000);
    let (b, successor) = env.store.claim_scan_run(TTL).unwrap().unwrap();
    assert_ne!(b.id, run.id, "a retry is a new run id");
    env.store.checkpoint_scan(&b, "{\"files\":3}").unwrap();
    let successor_before = env.store.scan_run(b.id).unwrap().unwrap();

    assert_lost(env.store.renew(&a, TTL));
    assert_lost(env.store.checkpoint_scan(&a, "{\"files\":999}"));
    assert_lost(env.store.complete_scan(&a, RunOutcome::Completed, None));
    assert_lost(env.store.fail_scan(&a, "stale"));
    assert_lost(env.store.release(&a));

    assert_eq!(env.store.scan_run(b.id).unwrap().unwrap(), successor_before);
    assert_eq!(successor.predecessor_id, Some(run.id));
    let old = env.store.scan_run(run.id).unwrap().unwrap();
    assert_eq!(
        (old.state, old.reason.as_deref()),
        (RunState::Failed, Some("lease_expired"))
    );
    assert_eq!(old.progress, None);
    assert_eq!(env.counter(Counter::FenceRejections), 5);
}

#[test]
fn successor_keeps_scope_trigger_watch_event_and_original_request_time() {
    let env = env();
    let lib = env.library("photos");
    let request = ScanRequest {
        library_id: lib,
        scope: "2024/trip".into(),
        trigger: Trigger::Watch,
        watch_event: Some("create 2024/trip/IMG_0001.JPG".into()),
    };
    let (pred, admission) = env.store.request_scan(request).unwrap();
    assert_eq!(admission, Admission::Accepted);
    env.clock.advance(5_000);
    env.store.claim_scan_run(TTL).unwrap().unwrap();
    env.clock.advance(TTL);
    env.store.reclaim_stale().unwrap();

    let runs = env.store.scan_runs(Some(lib), 10).unwrap();
    assert_eq!(runs.len(), 2);
    let (succ, old) = (&runs[0], &runs[1]);
    assert_eq!(old.id, pred.id);
    assert_eq!(old.state, RunState::Failed);
    assert_eq!(old.reason.as_deref(), Some("lease_expired"));
    assert_eq!(old.lease_owner, None);
    assert_ne!(succ.id, pred.id);
    assert_eq!(succ.state, RunState::Accepted);
    assert_eq!(succ.predecessor_id, Some(pred.id));
    assert_eq!(succ.scope, "2024/trip");
    assert_eq!(succ.trigger, Trigger::Watch);
    assert_eq!(
        succ.watch_event.as_deref(),
        Some("create 2024/trip/IMG_0001.JPG")
    );
    assert_eq!(succ.requested_at, T0);
    assert_eq!(succ.attempt, 2);
    assert_eq!(env.counter(Counter::ReclaimedRunsRetired), 1);
    assert_eq!(env.counter(Counter::ReclaimSuccessors), 1);
}

#[test]
fn expired_run_folds_into_the_waiting_run_instead_of_a_second_waiting_row() {
    let env = env();
    let lib = env.library("photos");
    let (first, _) = env
        .store
        .request_scan(env.scan_request(lib, "2023"))
        .unwrap();
    env.store.claim_scan_run(TTL).unwrap().unwrap();
    env.clock.advance(10);
    let (waiting, _) = env
        .store
        .request_scan(env.scan_request(lib, "2024"))
        .unwrap();
    env.clock.advance(TTL);
    env.store.reclaim_stale().unwrap();

    let merged = env.store.scan_run(waiting.id).unwrap().unwrap();
    assert_eq!(merged.state, RunState::Accepted);
    assert_eq!(merged.scope, "", "2023 and 2024 widen to the whole library");
    assert_eq!(merged.predecessor_id, Some(first.id));
    assert_eq!(merged.requested_at, T0, "the earliest request time is kept");
    assert_eq!(env.store.scan_runs(Some(lib), 10).unwrap().len(), 2);
}

#[test]
fn expiry_exactly_at_the_completion_boundary_leaves_the_work_retryable() {
    let env = env();
    let lib = env.library("photos");
    env.store.request_scan(env.scan_request(lib, "")).unwrap();
    let (run_lease, run) = env.store.claim_scan_run(TTL).unwrap().unwrap();
    let job = env.store.enqueue(NewJob::new("walk", "{}")).unwrap().id;
    let (job_lease, _) = env.store.claim_job(&["walk"], TTL).unwrap().unwrap();
    assert_eq!(run_lease.expires_at, job_lease.expires_at);

    env.clock.set(run_lease.expires_at);
    assert_lost(
        env.store
            .complete_scan(&run_lease, RunOutcome::Completed, None),
    );
    assert_lost(env.store.complete_job(&job_lease));
    env.store.reclaim_stale().unwrap();

    let old = env.store.scan_run(run.id).unwrap().unwrap();
    assert_eq!(
        old.state,
        RunState::Failed,
        "never completed by a dead worker"
    );
    let runs = env.store.scan_runs(Some(lib), 10).unwrap();
    assert_eq!(runs[0].state, RunState::Accepted, "a successor is waiting");
    let job = env.store.job(job).unwrap().unwrap();
    assert_eq!((job.state, job.attempts), (JobState::Queued, 1));
}

#[test]
fn one_millisecond_before_expiry_the_holder_still_completes() {
    let env = env();
    let id = env.store.enqueue(NewJob::new("walk", "{}")).unwrap().id;
    let (lease, _) = env.store.claim_job(&["walk"], TTL).unwrap().unwrap();
    env.clock.set(lease.expires_at - 1);
    env.store.complete_job(&lease).unwrap();
    assert_eq!(env.store.job(id).unwrap().unwrap().state, JobState::Done);
}

fn generation(env: &support::Env, id: i64) -> i64 {
    env.store.job(id).unwrap().unwrap().generation
}

#[test]
fn job_generation_strictly_increases_across_claim_release_force_cancel_and_reclaim() {
    let env = env();
    let id = env.store.enqueue(NewJob::new("walk", "{}")).unwrap().id;
    let mut seen = vec![generation(&env, id)];
    let claim = |env: &support::Env| env.store.claim_job(&["walk"], TTL).unwrap().unwrap().0;

    let lease = claim(&env);
    seen.push(generation(&env, id));
    env.store.release(&lease).unwrap();
    seen.push(generation(&env, id));

    let held = claim(&env);
    seen.push(generation(&env, id));
    assert!(env.store.release_unowned(Target::Job, id).unwrap());
    seen.push(generation(&env, id));
    assert_lost(env.store.complete_job(&held));
    assert_lost(env.store.renew(&held, TTL));

    claim(&env);
    seen.push(generation(&env, id));
    env.clock.advance(TTL);
    env.store.reclaim_stale().unwrap();
    seen.push(generation(&env, id));

    env.clock.advance(60_000);
    let last = claim(&env);
    seen.push(generation(&env, id));
    assert!(env.store.cancel(Target::Job, id).unwrap());
    seen.push(generation(&env, id));
    assert_lost(env.store.complete_job(&last));

    assert!(seen.windows(2).all(|w| w[0] < w[1]), "generations {seen:?}");
    assert_eq!(
        env.store.job(id).unwrap().unwrap().state,
        JobState::Cancelled
    );
}

#[test]
fn run_generation_strictly_increases_and_force_release_voids_the_holders_ack() {
    let env = env();
    let lib = env.library("photos");
    let (run, _) = env.store.request_scan(env.scan_request(lib, "")).unwrap();
    let gen_of = |id: i64| env.store.scan_run(id).unwrap().unwrap().generation;
    let mut seen = vec![gen_of(run.id)];

    let (lease, _) = env.store.claim_scan_run(TTL).unwrap().unwrap();
    seen.push(gen_of(run.id));
    env.store.release(&lease).unwrap();
    seen.push(gen_of(run.id));
    assert_eq!(
        env.store.scan_run(run.id).unwrap().unwrap().state,
        RunState::Accepted
    );

    let (held, _) = env.store.claim_scan_run(TTL).unwrap().unwrap();
    seen.push(gen_of(run.id));
    assert!(env.store.release_unowned(Target::ScanRun, run.id).unwrap());
    seen.push(gen_of(run.id));
    assert_lost(env.store.complete_scan(&held, RunOutcome::Completed, None));

    env.store.claim_scan_run(TTL).unwrap().unwrap();
    seen.push(gen_of(run.id));
    assert!(env.store.cancel(Target::ScanRun, run.id).unwrap());
    seen.push(gen_of(run.id));

    assert!(seen.windows(2).all(|w| w[0] < w[1]), "generations {seen:?}");
    assert_eq!(
        env.store.scan_run(run.id).unwrap().unwrap().state,
        RunState::Cancelled
    );
    assert!(
        !env.store.cancel(Target::ScanRun, run.id).unwrap(),
        "finished rows stay finished"
    );
}

#[test]
fn renew_from_a_dead_lease_is_a_noop() {
    let env = env();
    let id = env.store.enqueue(NewJob::new("walk", "{}")).unwrap().id;
    let (lease, _) = env.store.claim_job(&["walk"], TTL).unwrap().unwrap();
    env.clock.advance(TTL);
    // Expired but not yet reclaimed: the renew must not resurrect it.
    assert_lost(env.store.renew(&lease, TTL));
    let row = env.store.job(id).unwrap().unwrap();
    assert_eq!(row.lease_expires_at, Some(lease.expires_at));
    env.store.reclaim_stale().unwrap();
    assert_lost(env.store.renew(&lease, TTL));
    let row = env.store.job(id).unwrap().unwrap();
    assert_eq!((row.state, row.lease_expires_at), (JobState::Queued, None));
}

#[test]
fn a_live_renew_extends_the_lease_from_now() {
    let env = env();
    env.store.enqueue(NewJob::new("walk", "{}")).unwrap();
    let (lease, _) = env.store.claim_job(&["walk"], TTL).unwrap().unwrap();
    env.clock.advance(TTL - 1);
    let renewed = env.store.renew(&lease, TTL).unwrap();
    assert_eq!(renewed.expires_at, T0 + TTL - 1 + TTL);
    env.clock.advance(TTL - 1);
    env.store.complete_job(&renewed).unwrap();
}

#[test]
fn failed_attempts_back_off_exponentially_then_fail_for_good() {
    let env = env();
    let id = env
        .store
        .enqueue(NewJob::new("walk", "{}").max_attempts(3))
        .unwrap()
        .id;
    let mut delays = vec![];
    for attempt in 1..=3 {
        let (lease, _) = env.store.claim_job(&["walk"], TTL).unwrap().unwrap();
        let state = env
            .store
            .fail_job(&lease, &format!("boom {attempt}"))
            .unwrap();
        let row = env.store.job(id).unwrap().unwrap();
        assert_eq!(row.attempts, attempt);
        if attempt < 3 {
            assert_eq!(state, JobState::Queued);
            let delay = row.run_at - env.store.now();
            assert!(
                env.store.claim_job(&["walk"], TTL).unwrap().is_none(),
                "not due yet"
            );
            delays.push(delay);
            env.clock.advance(delay);
        } else {
            assert_eq!(state, JobState::Failed);
            assert_eq!(row.last_error.as_deref(), Some("boom 3"));
        }
    }
    assert_eq!(delays, vec![1_000, 2_000]);
    assert_eq!(env.counter(Counter::JobRetries), 2);
}

#[test]
fn expired_jobs_use_up_attempts_and_fail_after_the_last() {
    let env = env();
    let id = env
        .store
        .enqueue(NewJob::new("walk", "{}").max_attempts(2))
        .unwrap()
        .id;
    for _ in 0..2 {
        env.clock.advance(60_000); // past any retry backoff
        env.store.claim_job(&["walk"], TTL).unwrap().unwrap();
        env.clock.advance(TTL);
        env.store.reclaim_stale().unwrap();
    }
    let row = env.store.job(id).unwrap().unwrap();
    assert_eq!((row.state, row.attempts), (JobState::Failed, 2));
    assert!(row.last_error.unwrap().contains("lease expired"));
    assert_eq!(env.counter(Counter::ReclaimedJobsRequeued), 1);
    assert_eq!(env.counter(Counter::ReclaimedJobsFailed), 1);
}

#[test]
fn a_crash_looping_scan_stops_getting_successors_after_its_attempts() {
    let env = env(); // scan_max_attempts = 3
    let lib = env.library("photos");
    env.store.request_scan(env.scan_request(lib, "")).unwrap();
    for _ in 0..3 {
        env.clock.advance(60_000);
        env.store.claim_scan_run(TTL).unwrap().unwrap();
        env.clock.advance(TTL);
        env.store.reclaim_stale().unwrap();
    }
    let runs = env.store.scan_runs(Some(lib), 10).unwrap();
    assert_eq!(runs.len(), 3);
    assert!(runs.iter().all(|r| r.state == RunState::Failed));
    assert_eq!(runs[0].attempt, 3);
}

#[test]
fn the_stale_half_of_a_chain_step_rolls_back_whole() {
    let env = env();
    let first = env
        .store
        .enqueue_unique("walk", "walk:hash", "{\"after\":0}")
        .unwrap();
    let (lease, _) = env.store.claim_job(&["walk"], TTL).unwrap().unwrap();
    env.store.release_unowned(Target::Job, first.id).unwrap();
    let next = NewJob::new("walk", "{\"after\":100}").unique("walk:hash");
    assert_lost(env.store.complete_job_and_enqueue(&lease, next.clone()));
    let jobs = env.store.jobs(10).unwrap();
    assert_eq!(
        jobs.len(),
        1,
        "neither the completion nor the next step landed"
    );
    assert_eq!(jobs[0].state, JobState::Queued);

    let (lease, _) = env.store.claim_job(&["walk"], TTL).unwrap().unwrap();
    let advanced = env.store.complete_job_and_enqueue(&lease, next).unwrap();
    assert!(advanced.created);
    assert_eq!(
        env.store.job(first.id).unwrap().unwrap().state,
        JobState::Done
    );
}

#[test]
fn a_released_run_with_a_waiting_run_is_interrupted_and_folded() {
    let env = env();
    let lib = env.library("photos");
    let (first, _) = env.store.request_scan(env.scan_request(lib, "a")).unwrap();
    let (lease, _) = env.store.claim_scan_run(TTL).unwrap().unwrap();
    let (waiting, admission) = env
        .store
        .request_scan(env.scan_request(lib, "a/b"))
        .unwrap();
    assert_eq!(admission, Admission::Accepted);
    let (again, admission) = env
        .store
        .request_scan(env.scan_request(lib, "a/c"))
        .unwrap();
    assert_eq!((again.id, admission), (waiting.id, Admission::Coalesced));
    env.store.release(&lease).unwrap();
    let old = env.store.scan_run(first.id).unwrap().unwrap();
    assert_eq!(
        (old.state, old.reason.as_deref()),
        (RunState::Interrupted, Some("released"))
    );
    let merged = env.store.scan_run(waiting.id).unwrap().unwrap();
    assert_eq!(
        (merged.scope.as_str(), merged.predecessor_id),
        ("a", Some(first.id))
    );
}

#[test]
fn prune_keeps_live_rows_and_each_librarys_latest_runs() {
    let env = env();
    let lib = env.library("photos");
    for _ in 0..3 {
        env.store.request_scan(env.scan_request(lib, "")).unwrap();
        let (lease, _) = env.store.claim_scan_run(TTL).unwrap().unwrap();
        env.store
            .complete_scan(&lease, RunOutcome::Completed, None)
            .unwrap();
    }
    let done = env.store.enqueue(NewJob::new("walk", "{}")).unwrap().id;
    let (lease, _) = env.store.claim_job(&["walk"], TTL).unwrap().unwrap();
    env.store.complete_job(&lease).unwrap();
    let live = env.store.enqueue(NewJob::new("walk", "{}")).unwrap().id;
    env.clock.advance(1_000_000);
    let pruned = env.store.prune(1_000, 1_000).unwrap();
    assert_eq!(pruned, 3, "two old runs and one finished job");
    assert!(env.store.job(done).unwrap().is_none());
    assert!(env.store.job(live).unwrap().is_some());
    assert_eq!(env.store.scan_runs(Some(lib), 10).unwrap().len(), 1);
}

#[test]
fn claims_respect_due_time_kinds_and_one_running_scan_per_library() {
    let env = env();
    let lib = env.library("photos");
    env.store.enqueue(NewJob::new("faces", "{}")).unwrap();
    assert!(env.store.claim_job(&["walk"], TTL).unwrap().is_none());
    env.store.request_scan(env.scan_request(lib, "")).unwrap();
    env.store.claim_scan_run(TTL).unwrap().unwrap();
    env.store.request_scan(env.scan_request(lib, "x")).unwrap();
    assert!(
        env.store.claim_scan_run(TTL).unwrap().is_none(),
        "a library never has two running scans"
    );
    let other: Lease = {
        let lib2 = env.library("other");
        env.store.request_scan(env.scan_request(lib2, "")).unwrap();
        env.store.claim_scan_run(TTL).unwrap().unwrap().0
    };
    assert_eq!(other.target, Target::ScanRun);
}

#[test]
fn a_run_forced_back_and_reclaimed_rejects_its_previous_holder() {
    let env = env();
    let lib = env.library("photos");
    let (run, _) = env.store.request_scan(env.scan_request(lib, "")).unwrap();
    let (a, _) = env.store.claim_scan_run(TTL).unwrap().unwrap();
    assert!(env.store.release_unowned(Target::ScanRun, run.id).unwrap());
    let other = env.other_process("host-b:2:bbbb");
    let (b, _) = other.claim_scan_run(TTL).unwrap().unwrap();
    assert_eq!(
        (b.id, b.generation),
        (a.id, a.generation + 2),
        "same row, later lease"
    );

    assert_lost(env.store.renew(&a, TTL));
    assert_lost(env.store.checkpoint_scan(&a, "{\"stale\":true}"));
    assert_lost(env.store.complete_scan(&a, RunOutcome::Completed, None));
    let row = env.store.scan_run(run.id).unwrap().unwrap();
    assert_eq!(
        (row.state, row.progress, row.lease_owner.as_deref()),
        (RunState::Running, None, Some("host-b:2:bbbb"))
    );
    other
        .complete_scan(&b, RunOutcome::Completed, None)
        .unwrap();
}

#[test]
fn a_new_request_makes_a_backing_off_successor_due_at_once() {
    let env = env();
    let lib = env.library("photos");
    env.store
        .request_scan(env.scan_request(lib, "2024"))
        .unwrap();
    env.store.claim_scan_run(TTL).unwrap().unwrap();
    env.clock.advance(TTL);
    env.store.reclaim_stale().unwrap();
    assert!(
        env.store.claim_scan_run(TTL).unwrap().is_none(),
        "the successor backs off"
    );
    let (run, admission) = env
        .store
        .request_scan(env.scan_request(lib, "2024/05"))
        .unwrap();
    assert_eq!(
        (admission, run.scope.as_str(), run.attempt),
        (Admission::Coalesced, "2024", 2)
    );
    let (_, claimed) = env.store.claim_scan_run(TTL).unwrap().expect("due now");
    assert_eq!(claimed.id, run.id);
}

/// Past any retry backoff of the test policy (base 1 s, cap 60 s).
const PAST_BACKOFF: i64 = 60_000;

#[test]
fn a_cancel_that_lands_just_after_reclaim_retired_the_run_cancels_its_successor_too() {
    let env = env();
    let lib = env.library("photos");
    let (run, _) = env.store.request_scan(env.scan_request(lib, "")).unwrap();
    let (held, _) = env.store.claim_scan_run(TTL).unwrap().unwrap();
    // The user saw the run live and asked to cancel it; meanwhile its lease expired and the
    // service's maintenance loop reached the writer first.
    env.clock.advance(TTL + 1);
    let service = env.other_process("nas:1:nnnn");
    let report = service.reclaim_stale().unwrap();
    assert_eq!((report.runs_retired, report.run_successors), (1, 1));
    assert!(
        env.store.cancel(Target::ScanRun, run.id).unwrap(),
        "the cancel found the run's work in its successor"
    );

    env.clock.advance(PAST_BACKOFF);
    assert!(
        service.claim_scan_run(TTL).unwrap().is_none(),
        "no successor runs"
    );
    let runs = env.store.scan_runs(Some(lib), 10).unwrap();
    assert_eq!(runs.len(), 2);
    let successor = &runs[0];
    assert_eq!(successor.predecessor_id, Some(run.id));
    assert_eq!(
        (successor.state, successor.reason.as_deref()),
        (RunState::Cancelled, Some("cancelled"))
    );
    assert_lost(env.store.complete_scan(&held, RunOutcome::Completed, None));
}

#[test]
fn cancel_then_reclaim_in_the_same_instant_leaves_nothing_to_run() {
    let env = env();
    let lib = env.library("photos");
    let (run, _) = env.store.request_scan(env.scan_request(lib, "")).unwrap();
    env.store.claim_scan_run(TTL).unwrap().unwrap();
    env.clock.advance(TTL + 1);
    let service = env.other_process("nas:1:nnnn");
    let cancelled = env.store.cancel_scans(lib).unwrap();
    assert_eq!(cancelled.iter().map(|r| r.id).collect::<Vec<_>>(), [run.id]);
    assert_eq!(cancelled[0].state, RunState::Cancelled);
    assert_eq!(service.reclaim_stale().unwrap().runs_retired, 0);
    env.clock.advance(PAST_BACKOFF);
    assert!(service.claim_scan_run(TTL).unwrap().is_none());
}

#[test]
fn cancelling_a_library_ends_its_running_and_waiting_runs_in_one_write() {
    let env = env();
    let lib = env.library("photos");
    let other = env.library("videos");
    let (running, _) = env.store.request_scan(env.scan_request(lib, "")).unwrap();
    let (held, _) = env.store.claim_scan_run(TTL).unwrap().unwrap();
    let (waiting, _) = env.store.request_scan(env.scan_request(lib, "a")).unwrap();
    let (elsewhere, _) = env.store.request_scan(env.scan_request(other, "")).unwrap();

    let cancelled = env.store.cancel_scans(lib).unwrap();
    let mut ids: Vec<i64> = cancelled.iter().map(|r| r.id).collect();
    ids.sort();
    assert_eq!(ids, [running.id, waiting.id]);
    assert!(cancelled.iter().all(|r| r.state == RunState::Cancelled));
    assert_lost(env.store.renew(&held, TTL));
    assert!(
        env.store.cancel_scans(lib).unwrap().is_empty(),
        "nothing left"
    );
    let (_, claimed) = env
        .store
        .claim_scan_run(TTL)
        .unwrap()
        .expect("the other library");
    assert_eq!(claimed.id, elsewhere.id, "other libraries are untouched");
    assert!(env.store.claim_scan_run(TTL).unwrap().is_none());
}

#[test]
fn transient_retries_are_fenced_spend_no_attempt_and_back_off_up_to_the_cap() {
    let env = env();
    let id = env
        .store
        .enqueue(NewJob::new("walk", "{}").max_attempts(1))
        .unwrap()
        .id;
    let mut delays = vec![];
    for _ in 0..8 {
        let (lease, _) = env.store.claim_job(&["walk"], TTL).unwrap().unwrap();
        env.store.retry_job(&lease, "database is locked").unwrap();
        assert_lost(env.store.retry_job(&lease, "stale retry"));
        let row = env.store.job(id).unwrap().unwrap();
        assert_eq!((row.state, row.attempts), (JobState::Queued, 0));
        assert_eq!(row.last_error.as_deref(), Some("database is locked"));
        let delay = row.run_at - env.store.now();
        assert!(
            env.store.claim_job(&["walk"], TTL).unwrap().is_none(),
            "not due yet"
        );
        delays.push(delay);
        env.clock.advance(delay);
    }
    // support::options(): base 1 s, cap 60 s.
    assert_eq!(
        delays,
        vec![1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000]
    );
    assert_eq!(env.counter(Counter::JobRetries), 8);
    assert_eq!(env.counter(Counter::FenceRejections), 8);
    // A permanent failure after them still spends the row's one attempt.
    let (lease, _) = env.store.claim_job(&["walk"], TTL).unwrap().unwrap();
    assert_eq!(
        env.store.fail_job(&lease, "bad data").unwrap(),
        JobState::Failed
    );
}

#[test]
fn a_transiently_failed_run_gets_a_backing_off_successor_and_its_stale_retry_is_a_noop() {
    let env = env();
    let lib = env.library("photos");
    let (run, _) = env
        .store
        .request_scan(env.scan_request(lib, "2024"))
        .unwrap();
    let (a, _) = env.store.claim_scan_run(TTL).unwrap().unwrap();
    env.store.retry_scan(&a, "database is locked").unwrap();
    assert_lost(env.store.retry_scan(&a, "stale"));
    let old = env.store.scan_run(run.id).unwrap().unwrap();
    assert_eq!(
        (old.state, old.reason.as_deref()),
        (RunState::Failed, Some("database is locked"))
    );
    let runs = env.store.scan_runs(Some(lib), 10).unwrap();
    assert_eq!(runs.len(), 2, "one successor, not one per retry: {runs:?}");
    let next = &runs[0];
    assert_eq!(next.predecessor_id, Some(run.id));
    assert_eq!((next.state, next.attempt), (RunState::Accepted, 2));
    assert_eq!(
        (next.scope.as_str(), next.requested_at),
        ("2024", run.requested_at)
    );
    assert_eq!(next.run_at, env.store.now() + 1_000, "the first backoff");
    assert!(
        env.store.claim_scan_run(TTL).unwrap().is_none(),
        "not due yet"
    );
    env.clock.advance(1_000);
    let (b, _) = env.store.claim_scan_run(TTL).unwrap().unwrap();
    assert_eq!(b.id, next.id);
    env.store.retry_scan(&b, "database is locked").unwrap();
    let third = &env.store.scan_runs(Some(lib), 10).unwrap()[0];
    assert_eq!(
        third.run_at,
        env.store.now() + 2_000,
        "the wait doubles per attempt"
    );
    assert_eq!(env.counter(Counter::FenceRejections), 1);
}
