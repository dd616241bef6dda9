//! The migration guard (DESIGN.md section 4): no upgrade while another process holds a live
//! lease on the database, and the refusal names that process; the upgrade proceeds once the
//! lease is gone (drained or expired). A database newer than the binary is refused and left
//! as it was.
//!
//! Whether a migration ran is told through the store alone: the migration one past this
//! binary's creates a table and fails if the table already exists, and the one after it
//! inserts into it and fails if it does not.

use mediadex::clock::{FakeClock, SharedClock};
use mediadex::model::{JobState, NewJob, RunOutcome, RunState, ScanRequest, Trigger};
use mediadex::store::{MIGRATIONS, Migration, Store, StoreError, StoreOptions};
use std::path::Path;
use std::sync::Arc;

const FOREIGN: &str = "otherhost:4242:abcd";
const TTL: i64 = 60_000;

/// The version this binary carries.
fn current() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// This binary's migrations followed by `extra`, numbered on from the current version.
fn plus(extra: &[(&'static str, &'static str)]) -> &'static [Migration] {
    let mut all: Vec<Migration> = MIGRATIONS
        .iter()
        .map(|m| Migration {
            version: m.version,
            name: m.name,
            sql: m.sql,
        })
        .collect();
    for (i, &(name, sql)) in extra.iter().enumerate() {
        all.push(Migration {
            version: current() + 1 + i as i64,
            name,
            sql,
        });
    }
    Box::leak(all.into_boxed_slice())
}

/// One version past this binary: creates a table.
fn next() -> &'static [Migration] {
    plus(&[("extra", "CREATE TABLE extra (x INTEGER) STRICT;")])
}

/// Two versions past: inserts into the table `next` made, so it applies only if `extra`
/// exists.
fn after_next() -> &'static [Migration] {
    plus(&[
        ("extra", "CREATE TABLE extra (x INTEGER) STRICT;"),
        ("fill extra", "INSERT INTO extra (x) VALUES (1);"),
    ])
}

fn open(
    path: &Path,
    clock: &Arc<FakeClock>,
    owner: &str,
    migrations: &'static [Migration],
) -> Result<Store, StoreError> {
    let clock: SharedClock = clock.clone();
    Store::open(
        path,
        clock,
        StoreOptions {
            owner: owner.to_string(),
            migrations,
            ..Default::default()
        },
    )
}

fn setup() -> (tempfile::TempDir, std::path::PathBuf, Arc<FakeClock>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mediadex.db");
    (dir, path, FakeClock::new(1_700_000_000_000))
}

/// The database is still at this binary's version: its own list opens it, and the next
/// version has not created its table (a later open with `next()` would fail otherwise).
fn assert_still_current(path: &Path, clock: &Arc<FakeClock>) {
    open(path, clock, "inspector:1:0000", MIGRATIONS).expect("still opens with this binary list");
}

#[test]
fn migration_is_refused_while_a_foreign_job_lease_is_live_and_names_the_holder() {
    let (_dir, path, clock) = setup();
    let ours = open(&path, &clock, "ourhost:1:0001", MIGRATIONS).unwrap();
    let id = ours.enqueue(NewJob::new("walk", "{}")).unwrap().id;
    let foreign = open(&path, &clock, FOREIGN, MIGRATIONS).unwrap();
    let (lease, _) = foreign.claim_job(&["walk"], TTL).unwrap().unwrap();
    clock.advance(1_000);

    let err = open(&path, &clock, "ourhost:1:0001", next())
        .err()
        .expect("the upgrade must be refused");
    match &err {
        StoreError::MigrationBlocked {
            owner,
            what,
            id: row,
            remaining_ms,
        } => {
            assert_eq!(owner, FOREIGN);
            assert_eq!(*what, "job");
            assert_eq!(*row, id);
            assert_eq!(*remaining_ms, TTL - 1_000);
        }
        other => panic!("expected MigrationBlocked, got {other:?}"),
    }
    assert!(
        err.to_string().contains(FOREIGN),
        "the message names the process: {err}"
    );

    // Nothing changed: still the current version, the foreign lease is intact and still works.
    assert_still_current(&path, &clock);
    let job = ours.job(id).unwrap().unwrap();
    assert_eq!(job.state, JobState::Running);
    assert_eq!(job.lease_owner.as_deref(), Some(FOREIGN));
    assert_eq!(job.generation, lease.generation);

    // The foreign process drains (completes its work): the same upgrade proceeds.
    foreign.complete_job(&lease).unwrap();
    drop(foreign);
    drop(ours);
    let upgraded = open(&path, &clock, "ourhost:1:0001", next())
        .expect("the upgrade proceeds after the drain");
    assert_eq!(upgraded.job(id).unwrap().unwrap().state, JobState::Done);
    drop(upgraded);
    // The table exists: version 3 can insert into it.
    open(&path, &clock, "ourhost:1:0001", after_next()).expect("extra exists after the upgrade");
}

#[test]
fn migration_proceeds_once_a_foreign_scan_lease_has_expired() {
    let (_dir, path, clock) = setup();
    let ours = open(&path, &clock, "ourhost:1:0001", MIGRATIONS).unwrap();
    let lib = ours.add_library("photos", "/photos").unwrap();
    ours.request_scan(ScanRequest {
        library_id: lib.id,
        scope: String::new(),
        trigger: Trigger::Manual,
        watch_event: None,
    })
    .unwrap();
    let foreign = open(&path, &clock, FOREIGN, MIGRATIONS).unwrap();
    let (lease, run) = foreign.claim_scan_run(TTL).unwrap().unwrap();

    // One millisecond before expiry the lease is live: refused, naming the scan run.
    clock.advance(TTL - 1);
    match open(&path, &clock, "ourhost:1:0001", next()).err() {
        Some(StoreError::MigrationBlocked {
            owner,
            what,
            id,
            remaining_ms,
        }) => {
            assert_eq!(owner, FOREIGN);
            assert_eq!(what, "scan run");
            assert_eq!(id, run.id);
            assert_eq!(remaining_ms, 1);
        }
        other => panic!("expected MigrationBlocked, got {other:?}"),
    }
    assert_still_current(&path, &clock);

    // At the expiry instant the lease is dead (fences use `expires_at > now`): the upgrade
    // proceeds even though the foreign process never released.
    clock.advance(1);
    let upgraded =
        open(&path, &clock, "ourhost:1:0001", next()).expect("an expired lease does not block");
    // The stale holder's writes are no-ops after the upgrade too.
    assert!(
        foreign
            .complete_scan(&lease, RunOutcome::Completed, None)
            .unwrap_err()
            .is_lease_lost()
    );
    assert_eq!(
        upgraded.scan_run(run.id).unwrap().unwrap().state,
        RunState::Running
    );
    drop(upgraded);
    open(&path, &clock, "ourhost:1:0001", after_next()).expect("extra exists after the upgrade");
}

#[test]
fn this_process_own_live_leases_do_not_block_its_migration() {
    let (_dir, path, clock) = setup();
    let ours = open(&path, &clock, "ourhost:1:0001", MIGRATIONS).unwrap();
    ours.enqueue(NewJob::new("walk", "{}")).unwrap();
    ours.claim_job(&["walk"], TTL).unwrap().unwrap();
    open(&path, &clock, "ourhost:1:0001", next()).expect("own leases do not block");
}

#[test]
fn a_database_newer_than_the_binary_is_refused_and_left_unchanged() {
    let (_dir, path, clock) = setup();
    let newer = open(&path, &clock, "newer:1:0001", next()).unwrap();
    let id = newer
        .enqueue(NewJob::new("walk", "{\"keep\":true}"))
        .unwrap()
        .id;
    let before = newer.job(id).unwrap().unwrap();
    drop(newer);

    let err = open(&path, &clock, "older:1:0002", MIGRATIONS)
        .err()
        .expect("an older binary must refuse a newer database");
    assert!(
        matches!(
            err,
            StoreError::NewerSchema { found, supported }
                if found == current() + 1 && supported == current()
        ),
        "expected NewerSchema, got {err:?}"
    );
    assert!(err.to_string().contains("newer"), "{err}");

    // Unchanged: the newer binary still opens it at its version with its row as it was, and
    // its table is still there.
    let again = open(&path, &clock, "newer:1:0001", next()).expect("still the newer version");
    assert_eq!(again.job(id).unwrap().unwrap(), before);
    drop(again);
    open(&path, &clock, "newer:1:0001", after_next()).expect("extra still exists");
}
