//! Pending assets never lose their owner (DESIGN.md section 6): a new asset waits for a
//! completion, and ANY completion of a library that shows it (a present file of that library
//! links to it) publishes it; removing the library whose run created it, or pruning that
//! run, never leaves it pending with nobody to publish it; `Store::publish_stranded` (what
//! `mediadex check --repair` calls) publishes what an older binary stranded.

use crate::support;

use mediadex::model::{Lease, RunOutcome, ScanEnd};
use support::Env;
use support::synthetic::{facts, item};

const DAY: i64 = 24 * 3600 * 1000;

/// Ingests one synthetic file `path` of content `seed` under `lease`; returns its asset.
fn ingest(env: &Env, lease: &Lease, lib: i64, path: &str, seed: u64) -> i64 {
    let report = env
        .store
        .ingest_batch(lease, lib, vec![item(path, seed, facts(seed))], "{}")
        .expect("ingest");
    report.items[0].asset_id.expect("an asset")
}

/// Whether `id` is listed (published and live).
fn shown(env: &Env, id: i64) -> bool {
    env.store
        .assets(false)
        .expect("assets")
        .iter()
        .any(|a| a.id == id)
}

fn pending_run(env: &Env, id: i64) -> Option<i64> {
    (env.sql()).int("SELECT pending_run FROM assets WHERE id = ?1", &[id.into()])
}

/// Library A's run creates asset X for `a/x.jpg` and is cancelled, X still pending; library
/// B's run links its byte-identical `b/x.jpg` to X. Returns (A, B, B's lease, X).
fn a_cancelled_and_b_linked(env: &Env) -> (i64, i64, Lease, i64) {
    let (a, b) = (env.library("a"), env.library("b"));
    let lease_a = env.claimed_scan(a, "");
    let x = ingest(env, &lease_a, a, "x.jpg", 7);
    env.store.cancel_scans(a).expect("cancel A");
    let lease_b = env.claimed_scan(b, "");
    assert_eq!(
        ingest(env, &lease_b, b, "x.jpg", 7),
        x,
        "B's copy links to X"
    );
    assert!(!shown(env, x), "X is pending");
    (a, b, lease_b, x)
}

#[test]
fn a_completion_publishes_another_librarys_pending_asset_that_it_shows() {
    let env = support::env();
    let (_, b, lease_b, x) = a_cancelled_and_b_linked(&env);
    env.store
        .finish_full_scan(&lease_b, b, ScanEnd::breaker(1.0, true))
        .expect("B completes");
    assert!(shown(&env, x), "B's completion publishes the photo B shows");
}

#[test]
fn removing_the_library_whose_run_made_a_pending_asset_publishes_it_for_the_one_that_shows_it() {
    let env = support::env();
    let (a, b, _, x) = a_cancelled_and_b_linked(&env);
    env.store.cancel_scans(b).expect("cancel B too");
    assert_eq!(env.store.remove_library(a).expect("remove A"), 0);
    assert!(shown(&env, x), "B's present file shows X: it is published");
}

#[test]
fn after_the_creating_library_is_gone_the_showing_librarys_forced_scan_publishes_it() {
    let env = support::env();
    let (a, b, _, x) = a_cancelled_and_b_linked(&env);
    env.store.cancel_scans(b).expect("cancel B");
    // What an older binary left: A removed while X stayed pending on A's (gone) run.
    (env.sql())
        .batch("PRAGMA foreign_keys = ON; DELETE FROM libraries WHERE name = 'a';")
        .expect("remove A as an older binary did");
    assert!(env.store.library(a).unwrap().is_none());
    assert!(!shown(&env, x));
    let lease = env.claimed_scan(b, "");
    env.store
        .complete_scan(&lease, RunOutcome::Completed, None)
        .expect("B completes");
    assert!(shown(&env, x), "any completion of B publishes what B shows");
}

#[test]
fn removing_a_library_deletes_its_pending_asset_that_no_other_file_shows() {
    let env = support::env();
    let a = env.library("a");
    let lease = env.claimed_scan(a, "");
    let x = ingest(&env, &lease, a, "x.jpg", 7);
    env.store.cancel_scans(a).expect("cancel");
    assert_eq!(env.store.remove_library(a).expect("remove"), 1);
    assert!(env.store.asset(x).unwrap().is_none());
}

/// B's file of X went missing before A was removed: X is published into the trash (as any
/// asset whose last file went missing), where B's returning file restores it by id.
#[test]
fn removing_a_library_trashes_its_pending_asset_that_only_a_missing_file_shows() {
    let env = support::env();
    let (a, b, lease_b, x) = a_cancelled_and_b_linked(&env);
    let file = env
        .store
        .asset(x)
        .unwrap()
        .expect("X")
        .paths
        .iter()
        .find(|p| p.library_id == b)
        .expect("B's file")
        .file_id;
    let gone = mediadex::model::Unseen {
        files: vec![file],
        dirs: Vec::new(),
    };
    env.store
        .finish_full_scan(&lease_b, b, ScanEnd::breaker(1.0, true).unseen(gone))
        .expect("B completes with its copy gone");
    assert_eq!(env.store.remove_library(a).expect("remove A"), 0);
    let asset = env.store.asset(x).unwrap().expect("X is kept");
    assert!(asset.trashed_at.is_some(), "in the trash, not live");
    assert_eq!(pending_run(&env, x), None, "and owned by nobody's run");
}

#[test]
fn pruning_a_failed_run_keeps_the_owner_of_its_pending_assets() {
    let env = support::env();
    let a = env.library("a");
    let first = env.claimed_scan(a, "");
    let x = ingest(&env, &first, a, "x.jpg", 7);
    env.store.fail_scan(&first, "crashed").expect("fail");
    // Later runs that fail too: the first is no longer the newest finished run.
    for _ in 0..2 {
        let lease = env.claimed_scan(a, "other");
        env.store.fail_scan(&lease, "again").expect("fail");
    }
    env.clock.advance(91 * DAY);
    env.store.prune(DAY, 90 * DAY).expect("prune");
    let lease = env.claimed_scan(a, "other");
    env.store
        .complete_scan(&lease, RunOutcome::Completed, None)
        .expect("a later completion");
    assert!(
        shown(&env, x),
        "A's completion still publishes what A's run made"
    );
}

#[test]
fn publish_stranded_publishes_pending_assets_of_gone_or_ended_runs_that_a_file_shows() {
    let env = support::env();
    let a = env.library("a");
    let lease = env.claimed_scan(a, "");
    let stranded = ingest(&env, &lease, a, "x.jpg", 7);
    let unshown = ingest(&env, &lease, a, "y.jpg", 8);
    env.store.fail_scan(&lease, "crashed").expect("fail");
    let running = env.claimed_scan(a, "");
    let in_flight = ingest(&env, &running, a, "z.jpg", 9);
    // What an older binary left: the run that made them pruned, one file gone from the row.
    (env.sql())
        .execute("DELETE FROM files WHERE asset_id = ?1", &[unshown.into()])
        .expect("unlink");
    (env.sql())
        .execute("DELETE FROM scan_runs WHERE id = ?1", &[lease.id.into()])
        .expect("prune as an older binary did");
    assert_eq!(env.store.publish_stranded().expect("publish"), 1);
    assert!(shown(&env, stranded));
    assert!(
        !shown(&env, unshown),
        "no file shows it: nothing to publish"
    );
    assert_eq!(
        pending_run(&env, in_flight),
        Some(running.id),
        "its run will"
    );
    assert_eq!(env.store.publish_stranded().expect("again"), 0);
}
