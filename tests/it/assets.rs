//! Files, assets, provenance, missing files and the circuit breaker, trash and the sweep,
//! and keyed admission (DESIGN.md sections 5 and 6), each staged at the store level with a
//! fake clock on a real database file.

use crate::support;

use mediadex::model::{
    Begun, Claim, FileReason, FileStamp, Finish, IngestItem, Lease, LibraryIdentity, MediaFacts,
    MediaKind, Move, MoveOutcome, Provenance, RunState, ScanEnd, ScanRequest, Settle, TrashAction,
    TrashReason, Trigger, Unseen, trash_path,
};
use mediadex::store::{Admission, AdmissionOptions, StoreError};
use support::{Env, TTL, env};

fn stamp(size: u64, inode: u64) -> FileStamp {
    FileStamp {
        size,
        mtime_ns: 1_000,
        dev: 7,
        inode,
    }
}

fn item(path: &str, content: u8, reason: FileReason) -> IngestItem {
    IngestItem {
        rel_path: path.as_bytes().to_vec(),
        rel_path_text: path.to_string(),
        stamp: stamp(100 + u64::from(content), u64::from(content)),
        reason,
        checksum: Some([content; 32]),
        content_hash: None,
        facts: Some(MediaFacts {
            kind: Some(MediaKind::Image),
            mime: Some("image/jpeg".into()),
            width: Some(4000),
            height: Some(3000),
            ..MediaFacts::default()
        }),
        error: None,
        namesake: true,
    }
}

/// Requests and claims a scan of `scope`: the lease a scan worker would hold.
fn start_scan(env: &Env, lib: i64, scope: &str) -> Lease {
    env.store
        .request_scan(env.scan_request(lib, scope))
        .unwrap();
    env.store.claim_scan_run(TTL).unwrap().unwrap().0
}

fn reasons(env: &Env, run: i64) -> Vec<(Provenance, i64)> {
    env.store.run_reasons(run).unwrap()
}

/// The ids of the known files at `paths`, as a walk that did not see them reports them.
fn unseen(env: &Env, lib: i64, paths: &[&str]) -> Unseen {
    let known = env.store.known_files(lib, "").unwrap();
    let files = paths
        .iter()
        .map(|p| {
            known
                .iter()
                .find(|k| k.rel_path == p.as_bytes())
                .unwrap_or_else(|| panic!("{p} is not known"))
                .id
        })
        .collect();
    Unseen {
        files,
        dirs: Vec::new(),
    }
}

fn live_assets(env: &Env) -> usize {
    env.store.assets(false).unwrap().len()
}

#[test]
fn two_byte_identical_files_are_one_asset_with_two_files_reported_duplicate() {
    let env = env();
    let lib = env.library("photos");
    let lease = start_scan(&env, lib, "");
    let report = env
        .store
        .ingest_batch(
            &lease,
            lib,
            vec![
                item("a/IMG_1.JPG", 1, FileReason::New),
                item("b/copy of IMG_1.JPG", 1, FileReason::New),
            ],
            "{\"files\":2}",
        )
        .unwrap();
    let claims: Vec<Claim> = report.items.iter().map(|i| i.claim).collect();
    assert_eq!(claims, [Claim::Created, Claim::Duplicate]);
    assert_eq!(report.items[0].asset_id, report.items[1].asset_id);
    assert!(
        env.store.assets(false).unwrap().is_empty(),
        "a new asset is visible only once its run completed"
    );
    env.store
        .finish_full_scan(&lease, lib, ScanEnd::breaker(1.0, true))
        .unwrap();

    let assets = env.store.assets(false).unwrap();
    assert_eq!(assets.len(), 1);
    assert_eq!(assets[0].checksum, [1; 32]);
    assert_eq!(assets[0].facts.width, Some(4000));
    assert_eq!(assets[0].paths.len(), 2);
    let dups = env.store.duplicates().unwrap();
    assert_eq!(dups.len(), 1);
    assert_eq!(dups[0].files.len(), 2);
    assert_eq!(
        reasons(&env, lease.id),
        [(Provenance::Duplicate, 1), (Provenance::New, 2)]
    );
    let run = env.store.scan_run(lease.id).unwrap().unwrap();
    assert_eq!(run.progress.as_deref(), Some("{\"files\":2}"));
}

#[test]
fn known_files_give_the_stamps_under_a_scope_with_non_utf8_names_kept_exactly() {
    let env = env();
    let lib = env.library("photos");
    let lease = start_scan(&env, lib, "");
    let mut odd = item("2024/x", 3, FileReason::New);
    odd.rel_path = b"2024/caf\xe9.jpg".to_vec();
    odd.rel_path_text = "2024/caf\u{fffd}.jpg".into();
    env.store
        .ingest_batch(
            &lease,
            lib,
            vec![
                item("2024/a.jpg", 1, FileReason::New),
                item("2024b/b.jpg", 2, FileReason::New),
                odd,
            ],
            "",
        )
        .unwrap();
    let all = env.store.known_files(lib, "").unwrap();
    assert_eq!(all.len(), 3);
    let mut scoped: Vec<Vec<u8>> = env
        .store
        .known_files(lib, "2024")
        .unwrap()
        .into_iter()
        .map(|k| k.rel_path)
        .collect();
    scoped.sort();
    assert_eq!(
        scoped,
        [b"2024/a.jpg".to_vec(), b"2024/caf\xe9.jpg".to_vec()]
    );
    let a = all.iter().find(|k| k.rel_path == b"2024/a.jpg").unwrap();
    assert_eq!(a.stamp, stamp(101, 1));
    assert!(a.asset_id.is_some() && !a.has_error);
}

#[test]
fn a_replaced_file_relinks_and_its_old_asset_goes_to_the_trash() {
    let env = env();
    let lib = env.library("photos");
    let lease = start_scan(&env, lib, "");
    let first = env
        .store
        .ingest_batch(&lease, lib, vec![item("a.jpg", 1, FileReason::New)], "")
        .unwrap();
    let old = first.items[0].asset_id.unwrap();
    let again = env
        .store
        .ingest_batch(&lease, lib, vec![item("a.jpg", 2, FileReason::Size)], "")
        .unwrap();
    assert_eq!(again.items[0].claim, Claim::Created);
    let new = again.items[0].asset_id.unwrap();
    assert_ne!(new, old);
    assert_eq!(again.items[0].file_id, first.items[0].file_id);
    // The same content again: the file's own asset, not a duplicate.
    let same = env
        .store
        .ingest_batch(&lease, lib, vec![item("a.jpg", 2, FileReason::Forced)], "")
        .unwrap();
    assert_eq!(same.items[0].claim, Claim::Kept);
    env.store
        .finish_full_scan(&lease, lib, ScanEnd::breaker(1.0, true))
        .unwrap();
    let trashed = env.store.assets(true).unwrap();
    assert_eq!(trashed.len(), 1);
    assert_eq!(trashed[0].id, old);
    assert!(trashed[0].paths.is_empty());
}

#[test]
fn an_unreadable_file_is_recorded_with_its_error_and_keeps_its_link() {
    let env = env();
    let lib = env.library("photos");
    let lease = start_scan(&env, lib, "");
    let first = env
        .store
        .ingest_batch(&lease, lib, vec![item("a.jpg", 1, FileReason::New)], "")
        .unwrap();
    let mut broken = item("a.jpg", 1, FileReason::Error);
    broken.checksum = None;
    broken.error = Some("permission denied".into());
    let report = env
        .store
        .ingest_batch(&lease, lib, vec![broken], "")
        .unwrap();
    assert_eq!(report.items[0].claim, Claim::Unreadable);
    assert_eq!(report.items[0].asset_id, first.items[0].asset_id);
    assert!(env.store.known_files(lib, "").unwrap()[0].has_error);
    assert!(reasons(&env, lease.id).contains(&(Provenance::Error, 1)));
}

#[test]
fn a_file_whose_asset_was_trashed_comes_back_restored_by_id() {
    let env = env();
    let lib = env.library("photos");
    let lease = start_scan(&env, lib, "");
    let first = env
        .store
        .ingest_batch(&lease, lib, vec![item("a.jpg", 1, FileReason::New)], "")
        .unwrap();
    let asset = first.items[0].asset_id.unwrap();
    let done = env
        .store
        .finish_full_scan(&lease, lib, ScanEnd::breaker(0.2, true))
        .unwrap();
    assert_eq!(done.state, RunState::Completed);

    // The next full scan does not see it: missing, and its asset trashed.
    let lease = start_scan(&env, lib, "");
    let end = ScanEnd::breaker(1.0, true).unseen(unseen(&env, lib, &["a.jpg"]));
    let report = env.store.finish_full_scan(&lease, lib, end).unwrap();
    assert_eq!((report.missing_files, report.trashed_assets), (1, 1));
    assert_eq!(live_assets(&env), 0);
    assert!(env.store.known_files(lib, "").unwrap().is_empty());

    // It comes back (elsewhere): the same asset id, restored.
    let lease = start_scan(&env, lib, "");
    let back = env
        .store
        .ingest_batch(
            &lease,
            lib,
            vec![item("moved/a.jpg", 1, FileReason::New)],
            "",
        )
        .unwrap();
    assert_eq!(back.items[0].claim, Claim::Restored);
    assert_eq!(back.items[0].asset_id, Some(asset));
    assert_eq!(live_assets(&env), 1);
}

#[test]
fn a_normal_full_scan_marks_unseen_files_missing_and_trashes_the_orphaned_asset() {
    let env = env();
    let lib = env.library("photos");
    let lease = start_scan(&env, lib, "");
    let items: Vec<_> = (1..=10)
        .map(|i| item(&format!("f{i}.jpg"), i, FileReason::New))
        .chain([item("copy-of-f1.jpg", 1, FileReason::New)])
        .collect();
    env.store.ingest_batch(&lease, lib, items, "").unwrap();
    env.store
        .finish_full_scan(&lease, lib, ScanEnd::breaker(0.2, true))
        .unwrap();

    // Rescan: f2 and the copy of f1 are gone, the rest unchanged.
    let lease = start_scan(&env, lib, "");
    env.store
        .scan_progress(&lease, lib, "{\"seen\":9}", 9)
        .unwrap();
    let gone = unseen(&env, lib, &["f2.jpg", "copy-of-f1.jpg"]);
    let end = ScanEnd::breaker(0.2, true).unseen(gone);
    let report = env.store.finish_full_scan(&lease, lib, end).unwrap();
    assert_eq!(report.state, RunState::Completed);
    assert_eq!((report.missing_files, report.trashed_assets), (2, 1));
    let trashed = env.store.assets(true).unwrap();
    assert_eq!(trashed.len(), 1);
    assert_eq!(trashed[0].checksum, [2; 32]);
    assert_eq!(live_assets(&env), 9, "f1 still has a present file");
    assert_eq!(
        reasons(&env, lease.id),
        [(Provenance::Missing, 2), (Provenance::Unchanged, 9)]
    );
    let run = env.store.scan_run(lease.id).unwrap().unwrap();
    assert_eq!(run.state, RunState::Completed);
}

#[test]
fn the_circuit_breaker_holds_on_mass_missing_and_on_a_changed_identity() {
    let env = env();
    let lib = env.library("photos");
    let lease = start_scan(&env, lib, "");
    let items: Vec<_> = (1..=10)
        .map(|i| item(&format!("f{i}.jpg"), i, FileReason::New))
        .collect();
    env.store.ingest_batch(&lease, lib, items, "").unwrap();
    env.store
        .finish_full_scan(&lease, lib, ScanEnd::breaker(0.2, true))
        .unwrap();

    // A scan that saw only 7 of 10: 30% would go missing, over the 20% allowed.
    let lease = start_scan(&env, lib, "");
    env.store.scan_progress(&lease, lib, "", 7).unwrap();
    let gone = unseen(&env, lib, &["f8.jpg", "f9.jpg", "f10.jpg"]);
    let end = ScanEnd::breaker(0.2, true).unseen(gone);
    let report = env.store.finish_full_scan(&lease, lib, end).unwrap();
    assert_eq!(report.state, RunState::Suspect);
    assert!(report.reason.as_deref().unwrap().contains("3 of 10"));
    assert_eq!((report.missing_files, report.trashed_assets), (0, 0));
    let run = env.store.scan_run(lease.id).unwrap().unwrap();
    assert_eq!(run.state, RunState::Suspect);
    assert_eq!(run.reason, report.reason);
    assert_eq!(env.store.known_files(lib, "").unwrap().len(), 10);
    assert_eq!(live_assets(&env), 10);

    // A remounted root (identity changed) that saw nothing at all: nothing marked.
    let lease = start_scan(&env, lib, "");
    let all: Vec<String> = (1..=10).map(|i| format!("f{i}.jpg")).collect();
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    let end = ScanEnd::breaker(1.0, false).unseen(unseen(&env, lib, &all));
    let report = env.store.finish_full_scan(&lease, lib, end).unwrap();
    assert_eq!(report.state, RunState::Suspect);
    assert!(report.reason.as_deref().unwrap().contains("identity"));
    assert_eq!(env.store.known_files(lib, "").unwrap().len(), 10);
    assert_eq!(live_assets(&env), 10);
}

#[test]
fn a_scoped_scan_marks_nothing_missing() {
    let env = env();
    let lib = env.library("photos");
    let lease = start_scan(&env, lib, "");
    env.store
        .ingest_batch(
            &lease,
            lib,
            vec![
                item("2024/a.jpg", 1, FileReason::New),
                item("2025/b.jpg", 2, FileReason::New),
            ],
            "",
        )
        .unwrap();
    env.store
        .finish_full_scan(&lease, lib, ScanEnd::breaker(0.2, true))
        .unwrap();
    let lease = start_scan(&env, lib, "2024");
    let report = env
        .store
        .finish_full_scan(&lease, lib, ScanEnd::breaker(0.0, true))
        .unwrap();
    assert_eq!(report.state, RunState::Completed);
    assert_eq!(report.missing_files, 0);
    assert_eq!(env.store.known_files(lib, "").unwrap().len(), 2);
}

#[test]
fn a_stale_scan_worker_lands_none_of_its_later_batches() {
    let env = env();
    let lib = env.library("photos");
    let stale = start_scan(&env, lib, "");
    env.store
        .ingest_batch(&stale, lib, vec![item("a.jpg", 1, FileReason::New)], "1")
        .unwrap();
    // The lease is lost mid-ingest (a slept laptop): reclaim retires the run.
    env.clock.advance(TTL + 1);
    env.store.reclaim_stale().unwrap();
    let before_files = env.store.known_files(lib, "").unwrap();
    let before_reasons = reasons(&env, stale.id);

    let late = env.store.ingest_batch(
        &stale,
        lib,
        vec![
            item("b.jpg", 2, FileReason::New),
            item("a.jpg", 3, FileReason::Size),
        ],
        "2",
    );
    assert!(
        matches!(late, Err(StoreError::LeaseLost { .. })),
        "{late:?}"
    );
    let progress = env.store.scan_progress(&stale, lib, "3", 1);
    assert!(progress.unwrap_err().is_lease_lost());
    let finish = env
        .store
        .finish_full_scan(&stale, lib, ScanEnd::breaker(0.2, true));
    assert!(finish.unwrap_err().is_lease_lost());

    assert_eq!(env.store.known_files(lib, "").unwrap(), before_files);
    assert_eq!(reasons(&env, stale.id), before_reasons);
    assert_eq!(
        live_assets(&env),
        0,
        "the retired run's asset waits for a completion"
    );
    assert!(env.store.assets(true).unwrap().is_empty());
    let run = env.store.scan_run(stale.id).unwrap().unwrap();
    assert_eq!(run.progress.as_deref(), Some("1"));
    assert_eq!(run.state, RunState::Failed);

    // The successor finds a.jpg unchanged; its completion publishes what the first run made.
    env.clock.advance(60_000);
    let (successor, _) = env.store.claim_scan_run(TTL).unwrap().unwrap();
    env.store.scan_progress(&successor, lib, "s", 1).unwrap();
    env.store
        .finish_full_scan(&successor, lib, ScanEnd::breaker(0.2, true))
        .unwrap();
    assert_eq!(live_assets(&env), 1);
}

#[test]
fn a_batch_for_another_library_is_refused_whole() {
    let env = env();
    let lib = env.library("photos");
    let other = env.library("videos");
    let lease = start_scan(&env, lib, "");
    let err = env
        .store
        .ingest_batch(&lease, other, vec![item("a.jpg", 1, FileReason::New)], "x")
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict(_)), "{err:?}");
    assert!(env.store.known_files(other, "").unwrap().is_empty());
    assert_eq!(
        env.store.scan_run(lease.id).unwrap().unwrap().progress,
        None
    );
}

/// `a.jpg` indexed by one full scan, then missing from the next: its lone asset trashed.
fn a_jpg_indexed_then_trashed(env: &Env, lib: i64) {
    let lease = start_scan(env, lib, "");
    env.store
        .ingest_batch(&lease, lib, vec![item("a.jpg", 1, FileReason::New)], "")
        .unwrap();
    env.store
        .finish_full_scan(&lease, lib, ScanEnd::breaker(1.0, true))
        .unwrap();
    let lease = start_scan(env, lib, "");
    let end = ScanEnd::breaker(1.0, true).unseen(unseen(env, lib, &["a.jpg"]));
    env.store.finish_full_scan(&lease, lib, end).unwrap();
}

#[test]
fn the_sweep_deletes_only_assets_trashed_past_the_retention() {
    let env = env();
    let lib = env.library("photos");
    a_jpg_indexed_then_trashed(&env, lib);
    assert_eq!(env.store.assets(true).unwrap().len(), 1);

    const DAY: i64 = 86_400_000;
    env.clock.advance(DAY);
    assert_eq!(env.store.sweep_trash(30 * DAY).unwrap(), 0);
    env.clock.advance(30 * DAY);
    assert_eq!(env.store.sweep_trash(30 * DAY).unwrap(), 1);
    assert!(env.store.assets(true).unwrap().is_empty());

    // The file comes back after the sweep: stored afresh, never a unique-key error.
    let lease = start_scan(&env, lib, "");
    let back = env
        .store
        .ingest_batch(&lease, lib, vec![item("a.jpg", 1, FileReason::New)], "")
        .unwrap();
    assert_eq!(back.items[0].claim, Claim::Created);
}

/// `trash_retention_days` is what the service's maintenance sweeps by: an asset trashed 3
/// days ago stays under the default 30 days and goes under a setting of 2.
#[test]
fn the_trash_retention_setting_decides_what_the_sweep_deletes() {
    use mediadex::config::{Config, Settings};
    use mediadex::queue::maintenance::run_round;
    let env = env();
    let lib = env.library("photos");
    a_jpg_indexed_then_trashed(&env, lib);
    env.clock.advance(3 * 86_400_000);
    let sweep_with = |days: Option<u64>| {
        let settings = Settings {
            data_dir: Some(env.dir.path().join("data")),
            trash_retention_days: days,
            ..Settings::default()
        };
        let config = Config::from_settings(&settings, |_| None).unwrap();
        let maintenance = mediadex::app::maintenance_config(&config);
        run_round(&env.store, &maintenance, 0, &|_| {}, &|_| {});
        env.store.assets(true).unwrap().len()
    };
    assert_eq!(sweep_with(None), 1, "30 days by default: kept");
    assert_eq!(sweep_with(Some(4)), 1, "trashed 3 days ago: kept under 4");
    assert_eq!(sweep_with(Some(2)), 0, "past 2 days: swept");
}

fn keyed(key: &str, limit: Option<u32>) -> AdmissionOptions {
    AdmissionOptions {
        idempotency_key: Some(key.to_string()),
        hourly_limit: limit,
        forced: false,
    }
}

#[test]
fn an_idempotency_key_replays_the_same_request_and_refuses_a_different_one() {
    let env = env();
    let lib = env.library("photos");
    let req = env.scan_request(lib, "2024");
    let (run, admission) = env
        .store
        .request_scan_keyed(req.clone(), keyed("k1", None))
        .unwrap();
    assert_eq!(admission, Admission::Accepted);
    let (again, admission) = env
        .store
        .request_scan_keyed(req.clone(), keyed("k1", None))
        .unwrap();
    assert_eq!((again.id, admission), (run.id, Admission::Replayed));

    let different = ScanRequest {
        trigger: Trigger::Api,
        ..req.clone()
    };
    let err = env
        .store
        .request_scan_keyed(different, keyed("k1", None))
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict(_)), "{err:?}");
    let err = env
        .store
        .request_scan_keyed(env.scan_request(lib, "2025"), keyed("k1", None))
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict(_)), "{err:?}");

    // A new key while a run waits is coalesced as usual, and remembered.
    let (widened, admission) = env
        .store
        .request_scan_keyed(env.scan_request(lib, "2025"), keyed("k2", None))
        .unwrap();
    assert_eq!((widened.id, admission), (run.id, Admission::Coalesced));
    assert_eq!(widened.scope, "");
    assert_eq!(env.store.scan_runs(Some(lib), 10).unwrap().len(), 1);
}

#[test]
fn the_hourly_limit_refuses_new_runs_until_the_hour_has_passed() {
    let env = env();
    let lib = env.library("photos");
    let limit = Some(2);
    let opts = || AdmissionOptions {
        idempotency_key: None,
        hourly_limit: limit,
        forced: false,
    };
    for _ in 0..2 {
        env.store
            .request_scan_keyed(env.scan_request(lib, ""), opts())
            .unwrap();
        let (lease, _) = env.store.claim_scan_run(TTL).unwrap().unwrap();
        env.store
            .finish_full_scan(&lease, lib, ScanEnd::breaker(1.0, true))
            .unwrap();
        env.clock.advance(60_000);
    }
    let err = env
        .store
        .request_scan_keyed(env.scan_request(lib, ""), opts())
        .unwrap_err();
    match &err {
        StoreError::RateLimited {
            limit: 2,
            retry_after_ms,
            ..
        } => assert_eq!(*retry_after_ms, 3_600_000 - 120_000),
        other => panic!("expected RateLimited, got {other:?}"),
    }
    assert!(err.to_string().contains("in the last hour"), "{err}");
    // Without a limit (or another library) admission is unaffected.
    env.store.request_scan(env.scan_request(lib, "")).unwrap();
    // A request coalesced into the waiting run creates nothing, so it is allowed.
    let (_, admission) = env
        .store
        .request_scan_keyed(env.scan_request(lib, "x"), opts())
        .unwrap();
    assert_eq!(admission, Admission::Coalesced);
    env.clock.advance(3_600_000);
    let (lease, _) = env.store.claim_scan_run(TTL).unwrap().unwrap();
    env.store
        .finish_full_scan(&lease, lib, ScanEnd::breaker(1.0, true))
        .unwrap();
    env.store
        .request_scan_keyed(env.scan_request(lib, ""), opts())
        .expect("the window moved on");
}

/// One asset shown by two files, both present.
fn two_copies(env: &Env) -> (i64, i64) {
    let lib = env.library("photos");
    let lease = start_scan(env, lib, "");
    let report = env
        .store
        .ingest_batch(
            &lease,
            lib,
            vec![
                item("a.jpg", 1, FileReason::New),
                item("b/a.jpg", 1, FileReason::New),
            ],
            "",
        )
        .unwrap();
    env.store
        .finish_full_scan(&lease, lib, ScanEnd::breaker(0.2, true))
        .unwrap();
    (lib, report.items[0].asset_id.unwrap())
}

fn held(begun: Begun) -> (Lease, Move) {
    match begun {
        Begun::Held(lease, held) => (lease, held),
        Begun::Settled(o) => panic!("nothing to move: {o:?}"),
    }
}

/// Settles every intent of a held move as done and finishes it (the files' moves are the
/// caller's; none happen here).
fn settle_all(env: &Env, (lease, held): (Lease, Move)) -> Finish {
    for i in &held.intents {
        env.store.settle_intent(&lease, i.id, Settle::Done).unwrap();
    }
    env.store.finish_move(&lease, None).unwrap()
}

#[test]
fn a_user_trash_is_journaled_intent_then_commit_and_a_restore_moves_the_files_back() {
    let env = env();
    let (lib, asset) = two_copies(&env);
    let (lease, moving) = held(env.store.begin_trash(asset, TTL).unwrap());
    let intents = moving.intents.clone();
    assert_eq!(intents.len(), 2);
    assert_eq!(intents[0].action, TrashAction::Trash);
    assert_eq!(intents[0].from_path, b"a.jpg");
    assert_eq!(
        intents[0].to_path,
        trash_path(asset, moving.move_id, b"a.jpg")
    );
    assert_eq!(
        intents[0].to_path,
        format!(".mediadex-trash/{asset}-{}/a.jpg", moving.move_id).into_bytes()
    );
    // Until settled, nothing is trashed and the move is held.
    assert_eq!(env.store.pending_intents().unwrap(), intents);
    assert_eq!(live_assets(&env), 1);
    assert!(
        env.store.begin_trash(asset, TTL).is_err(),
        "one move at a time"
    );
    assert_eq!(
        settle_all(&env, (lease, moving)),
        Finish::Flipped(MoveOutcome::Trashed)
    );
    assert!(env.store.pending_intents().unwrap().is_empty());
    let trashed = env.store.assets(true).unwrap();
    assert_eq!(trashed[0].trash_reason, Some(TrashReason::User));
    assert!(env.store.known_files(lib, "").unwrap().is_empty());

    let (lease, back) = held(env.store.begin_restore(asset, TTL, None).unwrap());
    assert_eq!(back.intents.len(), 2);
    assert_eq!(
        back.intents[1].from_path,
        trash_path(asset, intents[1].move_id, b"b/a.jpg")
    );
    assert_eq!(back.intents[1].to_path, b"b/a.jpg");
    assert_eq!(env.store.pending_intents().unwrap(), back.intents);
    assert_eq!(
        settle_all(&env, (lease, back)),
        Finish::Flipped(MoveOutcome::Restored)
    );
    assert_eq!(live_assets(&env), 1);
    assert_eq!(env.store.known_files(lib, "").unwrap().len(), 2);
}

#[test]
fn sweep_and_restore_in_either_order_end_restored_or_gone_never_an_error() {
    const DAY: i64 = 86_400_000;
    // Restore first: the sweep finds nothing to delete.
    let env = env();
    let (_, asset) = two_copies(&env);
    settle_all(&env, held(env.store.begin_trash(asset, TTL).unwrap()));
    env.clock.advance(31 * DAY);
    let back = held(env.store.begin_restore(asset, TTL, None).unwrap());
    // A pending restore holds the sweep off.
    assert_eq!(env.store.sweep_trash(30 * DAY).unwrap(), 0);
    settle_all(&env, back);
    assert_eq!(env.store.sweep_trash(30 * DAY).unwrap(), 0);
    assert_eq!(env.store.asset(asset).unwrap().unwrap().trashed_at, None);

    // Sweep first: the restore answers that the asset is gone.
    let env = support::env();
    let (_, asset) = two_copies(&env);
    settle_all(&env, held(env.store.begin_trash(asset, TTL).unwrap()));
    env.clock.advance(31 * DAY);
    assert_eq!(env.store.sweep_trash(30 * DAY).unwrap(), 1);
    assert!(env.store.asset(asset).unwrap().is_none());
    assert!(matches!(
        env.store.begin_restore(asset, TTL, None),
        Err(StoreError::NotFound(_))
    ));
}

#[test]
fn a_library_root_identity_is_recorded_for_the_circuit_breaker() {
    let env = env();
    let lib = env.library("photos");
    assert_eq!(
        env.store.library_identity(lib).unwrap(),
        Some(LibraryIdentity::default())
    );
    let id = LibraryIdentity {
        root_dev: Some(u64::MAX - 1),
        marker_id: Some("0191-marker".into()),
    };
    env.store.set_library_identity(lib, id.clone()).unwrap();
    assert_eq!(env.store.library_identity(lib).unwrap(), Some(id));
    assert_eq!(env.store.library_identity(999).unwrap(), None);
}

#[test]
fn a_vanished_folder_marks_everything_below_it_missing_and_nothing_beside_it() {
    let env = env();
    let lib = env.library("photos");
    let lease = start_scan(&env, lib, "");
    let batch = (1..=10)
        .map(|i| item(&format!("keep/f{i}.jpg"), i, FileReason::New))
        .chain([
            item("2024/a.jpg", 11, FileReason::New),
            item("2024/trip/b.jpg", 12, FileReason::New),
            item("2024-old/c.jpg", 13, FileReason::New),
            item("2024.jpg", 14, FileReason::New),
        ])
        .collect();
    env.store.ingest_batch(&lease, lib, batch, "").unwrap();
    env.store
        .finish_full_scan(&lease, lib, ScanEnd::breaker(0.2, true))
        .unwrap();

    let lease = start_scan(&env, lib, "");
    let gone = Unseen {
        files: Vec::new(),
        dirs: vec![b"2024".to_vec()],
    };
    let end = ScanEnd::breaker(0.2, true).unseen(gone);
    let report = env.store.finish_full_scan(&lease, lib, end).unwrap();
    assert_eq!(report.state, RunState::Completed);
    assert_eq!((report.missing_files, report.trashed_assets), (2, 2));
    let mut present: Vec<String> = env
        .store
        .known_files(lib, "")
        .unwrap()
        .into_iter()
        .map(|k| String::from_utf8_lossy(&k.rel_path).into_owned())
        .filter(|p| !p.starts_with("keep/"))
        .collect();
    present.sort();
    assert_eq!(present, vec!["2024-old/c.jpg", "2024.jpg"]);
    assert_eq!(reasons(&env, lease.id), [(Provenance::Missing, 2)]);

    // The breaker counts what is below a vanished folder too: 10 of 12 is too many.
    let lease = start_scan(&env, lib, "");
    let gone = Unseen {
        files: Vec::new(),
        dirs: vec![b"keep".to_vec()],
    };
    let end = ScanEnd::breaker(0.2, true).unseen(gone);
    let report = env.store.finish_full_scan(&lease, lib, end).unwrap();
    assert_eq!(report.state, RunState::Suspect);
    assert!(report.reason.as_deref().unwrap().contains("10 of 12"));
    assert_eq!(env.store.known_files(lib, "").unwrap().len(), 12);
}

#[test]
fn known_in_dir_lists_only_the_direct_children_of_a_directory() {
    let env = env();
    let lib = env.library("photos");
    let lease = start_scan(&env, lib, "");
    let batch = vec![
        item("top.jpg", 1, FileReason::New),
        item("2024/a.jpg", 2, FileReason::New),
        item("2024/trip/b.jpg", 3, FileReason::New),
        item("2024-old/c.jpg", 4, FileReason::New),
    ];
    env.store.ingest_batch(&lease, lib, batch, "{}").unwrap();
    let names = |dir: &str| -> (Vec<String>, Vec<String>) {
        let listing = env.store.known_dir(lib, dir.as_bytes()).unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let mut files: Vec<String> = listing.files.iter().map(|k| text(&k.rel_path)).collect();
        files.sort();
        let mut subdirs: Vec<String> = listing.subdirs.iter().map(|d| text(d)).collect();
        subdirs.sort();
        (files, subdirs)
    };
    assert_eq!(
        names(""),
        (
            vec!["top.jpg".into()],
            vec!["2024".into(), "2024-old".into()]
        )
    );
    assert_eq!(
        names("2024"),
        (vec!["2024/a.jpg".into()], vec!["trip".into()])
    );
    assert_eq!(names("2024/trip"), (vec!["2024/trip/b.jpg".into()], vec![]));
    assert_eq!(names("2023"), (vec![], vec![]));
    // A missing file is not known; its folder still is (it has rows).
    let gone = Unseen {
        files: Vec::new(),
        dirs: vec![b"2024/trip".to_vec()],
    };
    let end = ScanEnd::breaker(1.0, true).unseen(gone);
    env.store.finish_full_scan(&lease, lib, end).unwrap();
    assert_eq!(
        names("2024"),
        (vec!["2024/a.jpg".into()], vec!["trip".into()])
    );
    assert_eq!(names("2024/trip"), (vec![], vec![]));
}

#[test]
fn a_forced_request_stays_forced_through_coalescing_and_retries() {
    let env = env();
    let lib = env.library("photos");
    let forced = AdmissionOptions {
        forced: true,
        ..AdmissionOptions::default()
    };
    let (run, _) = env
        .store
        .request_scan_keyed(env.scan_request(lib, "a"), forced.clone())
        .unwrap();
    assert!(run.forced);
    let (same, admission) = env.store.request_scan(env.scan_request(lib, "b")).unwrap();
    assert_eq!(
        (same.id, admission, same.forced),
        (run.id, Admission::Coalesced, true)
    );
    env.store.claim_scan_run(TTL).unwrap().unwrap();
    env.clock.advance(TTL);
    env.store.reclaim_stale().unwrap();
    let successor = &env.store.scan_runs(Some(lib), 1).unwrap()[0];
    assert_eq!(
        (successor.predecessor_id, successor.forced),
        (Some(run.id), true)
    );
}

const DAY: i64 = 86_400_000;

/// Trashes `assets` behind the scan's back, as the half-finished trash moves of older
/// versions left some assets: trashed while one of their files is still present.
fn trash_behind_the_scans_back(env: &Env, assets: &[i64]) {
    let mut db = env.sql();
    db.batch("BEGIN").unwrap();
    for &asset in assets {
        let changed = db
            .execute(
                "UPDATE assets SET trashed_at = ?2, trash_reason = 'user' WHERE id = ?1",
                &[asset.into(), env.store.now().into()],
            )
            .unwrap();
        assert_eq!(changed, 1);
    }
    db.batch("COMMIT").unwrap();
}

#[test]
fn the_sweep_keeps_a_trashed_asset_that_still_has_a_present_file() {
    let env = env();
    let (lib, asset) = two_copies(&env);
    let lease = start_scan(&env, lib, "");
    let end = ScanEnd::breaker(1.0, true).unseen(unseen(&env, lib, &["a.jpg"]));
    env.store.finish_full_scan(&lease, lib, end).unwrap();
    assert_eq!(live_assets(&env), 1, "b/a.jpg still shows it");
    trash_behind_the_scans_back(&env, &[asset]);

    env.clock.advance(31 * DAY);
    assert_eq!(env.store.sweep_trash(30 * DAY).unwrap(), 0);
    assert!(env.store.asset(asset).unwrap().is_some(), "not deleted");
    let known = env.store.known_files(lib, "").unwrap();
    let copy = known
        .iter()
        .find(|k| k.rel_path == b"b/a.jpg")
        .expect("b/a.jpg");
    assert_eq!(
        copy.asset_id,
        Some(asset),
        "the present file keeps its asset"
    );
}

#[test]
fn a_full_batch_of_trashed_assets_with_present_files_does_not_keep_the_sweep_going() {
    let env = env();
    let lib = env.library("photos");
    let lease = start_scan(&env, lib, "");
    let items: Vec<IngestItem> = (0..600u32)
        .map(|i| {
            let mut it = item(&format!("{i}.jpg"), 0, FileReason::New);
            it.checksum = Some(blake3::hash(&i.to_le_bytes()).into());
            it.stamp = stamp(100, u64::from(i));
            it
        })
        .collect();
    let report = env.store.ingest_batch(&lease, lib, items, "").unwrap();
    env.store
        .finish_full_scan(&lease, lib, ScanEnd::breaker(1.0, true))
        .unwrap();
    let assets: Vec<i64> = report.items.iter().map(|o| o.asset_id.unwrap()).collect();
    trash_behind_the_scans_back(&env, &assets);
    env.clock.advance(31 * DAY);
    // More unsweepable candidates than one batch: if the batch query offered them, the
    // sweep would see a full batch, delete nothing and ask again for ever.
    let (done_tx, done) = crossbeam_channel::bounded(1);
    let store = env.store.clone();
    std::thread::spawn(move || {
        let _ = done_tx.send(store.sweep_trash(30 * DAY));
    });
    let swept = done
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the sweep ends");
    assert_eq!(swept.unwrap(), 0);
}

#[test]
fn the_sweep_removes_every_cached_thumbnail_and_the_faces_of_the_assets_it_deletes() {
    use mediadex::model::{DetectedFace, hex};
    use mediadex::queue::{MaintenanceConfig, maintenance::run_round};
    use mediadex::thumbs::Thumbs;

    let env = env();
    let lib = env.library("photos");
    let lease = start_scan(&env, lib, "");
    let report = env
        .store
        .ingest_batch(
            &lease,
            lib,
            vec![
                item("gone.jpg", 1, FileReason::New),
                item("kept.jpg", 2, FileReason::New),
            ],
            "",
        )
        .unwrap();
    env.store
        .finish_full_scan(&lease, lib, ScanEnd::breaker(1.0, true))
        .unwrap();
    let (gone, kept) = (
        report.items[0].asset_id.unwrap(),
        report.items[1].asset_id.unwrap(),
    );
    let face = DetectedFace {
        x: 0.1,
        y: 0.1,
        w: 0.2,
        h: 0.2,
        score: 0.9,
        landmarks: [(0.15, 0.15); 5],
    };
    for id in [gone, kept] {
        assert!(env.store.store_faces(id, 1, vec![face]).unwrap());
    }
    // Every size this or an older version cached, for both assets.
    let thumbs = Thumbs::with_ffmpeg(&env.dir.path().join("data"), None);
    let cached = |content: u8| {
        let current = thumbs.cache_path(&hex(&[content; 32]));
        let older = current.with_file_name(format!("{}-v0.jpg", hex(&[content; 32])));
        vec![current, older]
    };
    for path in cached(1).iter().chain(&cached(2)) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"jpeg").unwrap();
    }
    let lease = start_scan(&env, lib, "");
    let end = ScanEnd::breaker(1.0, true).unseen(unseen(&env, lib, &["gone.jpg"]));
    env.store.finish_full_scan(&lease, lib, end).unwrap();

    env.clock.advance(31 * DAY);
    let config = MaintenanceConfig::default();
    run_round(&env.store, &config, 0, &|_| {}, &|sums| thumbs.forget(sums));
    assert!(env.store.asset(gone).unwrap().is_none(), "swept");
    for path in cached(1) {
        assert!(!path.exists(), "{} is still cached", path.display());
    }
    assert!(
        env.store.faces(gone, 1).unwrap().is_empty(),
        "its faces went with it"
    );
    for path in cached(2) {
        assert!(path.exists(), "the live asset's {} stays", path.display());
    }
    assert_eq!(env.store.faces(kept, 1).unwrap().len(), 1);
}

#[test]
fn the_sweep_keeps_a_thumbnail_that_another_owners_asset_of_the_same_bytes_shows() {
    use mediadex::model::hex;
    use mediadex::queue::{MaintenanceConfig, maintenance::run_round};
    use mediadex::thumbs::Thumbs;

    let env = env();
    let lib = env.library("photos");
    let lease = start_scan(&env, lib, "");
    let report = env
        .store
        .ingest_batch(&lease, lib, vec![item("a.jpg", 3, FileReason::New)], "")
        .unwrap();
    env.store
        .finish_full_scan(&lease, lib, ScanEnd::breaker(1.0, true))
        .unwrap();
    let asset = report.items[0].asset_id.unwrap();
    (env.sql())
        .execute(
            "INSERT INTO assets (owner, checksum, size, created_at)
             SELECT 'household', checksum, size, created_at FROM assets WHERE id = ?1",
            &[asset.into()],
        )
        .unwrap();
    let thumbs = Thumbs::with_ffmpeg(&env.dir.path().join("data"), None);
    let cached = thumbs.cache_path(&hex(&[3; 32]));
    std::fs::create_dir_all(cached.parent().unwrap()).unwrap();
    std::fs::write(&cached, b"jpeg").unwrap();
    let lease = start_scan(&env, lib, "");
    let end = ScanEnd::breaker(1.0, true).unseen(unseen(&env, lib, &["a.jpg"]));
    env.store.finish_full_scan(&lease, lib, end).unwrap();

    env.clock.advance(31 * DAY);
    let config = MaintenanceConfig::default();
    run_round(&env.store, &config, 0, &|_| {}, &|sums| thumbs.forget(sums));
    assert!(env.store.asset(asset).unwrap().is_none(), "swept");
    assert!(cached.exists(), "the other owner's asset still shows it");
}

/// A store whose scan batches share a transaction until `weight` files (the age bound an
/// hour away, so only the weight, another write or a seal decides).
fn grouped_env(weight: u64) -> Env {
    support::env_with(mediadex::store::StoreOptions {
        group_limits: mediadex::store::GroupLimits {
            weight,
            age: std::time::Duration::from_secs(3600),
        },
        ..support::options()
    })
}

fn grouped(
    env: &Env,
    lease: &Lease,
    lib: i64,
    items: Vec<IngestItem>,
) -> Result<mediadex::store::Committed, StoreError> {
    let batch = mediadex::model::IngestBatch {
        items,
        ..Default::default()
    };
    let (_, committed) = env.store.ingest_batch_grouped(lease, lib, batch, "p")?;
    Ok(committed)
}

#[test]
fn a_runs_batches_commit_together_at_the_group_bound_and_each_lands_whole() {
    support::sqlite_only(
        "assets::a_runs_batches_commit_together_at_the_group_bound_and_each_lands_whole",
    );
    let env = grouped_env(4);
    let lib = env.library("photos");
    let lease = start_scan(&env, lib, "");
    let one = vec![
        item("a.jpg", 1, FileReason::New),
        item("b.jpg", 2, FileReason::New),
    ];
    let first = grouped(&env, &lease, lib, one).unwrap();
    assert!(
        env.store.known_files(lib, "").unwrap().is_empty(),
        "a batch below the group's bound is not on disk yet"
    );
    assert!(first.settled().is_none());
    let two = vec![
        item("c.jpg", 3, FileReason::New),
        item("d.jpg", 4, FileReason::New),
    ];
    let second = grouped(&env, &lease, lib, two).unwrap();
    second.wait().unwrap();
    first.wait().unwrap();
    assert_eq!(env.store.known_files(lib, "").unwrap().len(), 4);
    assert_eq!(reasons(&env, lease.id), vec![(Provenance::New, 4)]);
}

#[test]
fn a_group_whose_lease_expired_before_its_commit_lands_none_of_its_batches() {
    support::sqlite_only(
        "assets::a_group_whose_lease_expired_before_its_commit_lands_none_of_its_batches",
    );
    let env = grouped_env(1_000);
    let lib = env.library("photos");
    let lease = start_scan(&env, lib, "");
    let first = grouped(&env, &lease, lib, vec![item("a.jpg", 1, FileReason::New)]).unwrap();
    let second = grouped(&env, &lease, lib, vec![item("b.jpg", 2, FileReason::New)]).unwrap();
    // The laptop slept with the group open: the seal sees the lease expired at the commit.
    env.clock.advance(TTL + 1);
    env.store.settle().unwrap();
    assert!(first.wait().unwrap_err().is_lease_lost());
    assert!(second.wait().unwrap_err().is_lease_lost());
    assert!(env.store.known_files(lib, "").unwrap().is_empty());
    assert!(reasons(&env, lease.id).is_empty());
    assert_eq!(env.counter(mediadex::model::Counter::FenceRejections), 1);
}

#[test]
fn a_stale_batch_takes_its_groups_earlier_batches_back_with_it() {
    support::sqlite_only("assets::a_stale_batch_takes_its_groups_earlier_batches_back_with_it");
    let env = grouped_env(1_000);
    let lib = env.library("photos");
    let lease = start_scan(&env, lib, "");
    let first = grouped(&env, &lease, lib, vec![item("a.jpg", 1, FileReason::New)]).unwrap();
    env.clock.advance(TTL + 1);
    let late = grouped(&env, &lease, lib, vec![item("b.jpg", 2, FileReason::New)]);
    assert!(late.unwrap_err().is_lease_lost());
    assert!(first.wait().unwrap_err().is_lease_lost());
    assert!(env.store.known_files(lib, "").unwrap().is_empty());
    let run = env.store.scan_run(lease.id).unwrap().unwrap();
    assert_eq!(run.progress, None, "no progress of the group landed");
}
