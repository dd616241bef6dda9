//! The migration guard (DESIGN.md section 4): no upgrade while another process holds a live
//! lease on the database, and the refusal names that process; the upgrade proceeds once the
//! lease is gone (drained or expired). A database newer than the binary is refused and left
//! as it was.
//!
//! Whether a migration ran is told through the store alone: a version-2 migration that
//! creates a table fails if the table already exists, and a version-3 migration that inserts
//! into it fails if it does not.

use mediadex::clock::{FakeClock, SharedClock};
use mediadex::model::{JobState, NewJob, RunOutcome, RunState, ScanRequest, Trigger};
use mediadex::store::{MIGRATIONS, Migration, Store, StoreError, StoreOptions};
use std::path::Path;
use std::sync::Arc;

const FOREIGN: &str = "otherhost:4242:abcd";
const TTL: i64 = 60_000;

static V2: &[Migration] = &[
    Migration {
        version: 1,
        name: "init",
        sql: include_str!("../schema/0001_init.sql"),
    },
    Migration {
        version: 2,
        name: "extra",
        sql: "CREATE TABLE extra (x INTEGER) STRICT;",
    },
];

/// Version 3 inserts into the table version 2 made: it applies only if `extra` exists.
static V3: &[Migration] = &[
    Migration {
        version: 1,
        name: "init",
        sql: include_str!("../schema/0001_init.sql"),
    },
    Migration {
        version: 2,
        name: "extra",
        sql: "CREATE TABLE extra (x INTEGER) STRICT;",
    },
    Migration {
        version: 3,
        name: "fill extra",
        sql: "INSERT INTO extra (x) VALUES (1);",
    },
];

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

/// The database is still at version 1: this binary's own list opens it, and version 2 has
/// not created its table (a later open with V2 would fail on CREATE TABLE otherwise).
fn assert_still_version_1(path: &Path, clock: &Arc<FakeClock>) {
    open(path, clock, "inspector:1:0000", MIGRATIONS)
        .expect("version 1 still opens with the version-1 list");
}

#[test]
fn migration_is_refused_while_a_foreign_job_lease_is_live_and_names_the_holder() {
    let (_dir, path, clock) = setup();
    let ours = open(&path, &clock, "ourhost:1:0001", MIGRATIONS).unwrap();
    let id = ours.enqueue(NewJob::new("walk", "{}")).unwrap().id;
    let foreign = open(&path, &clock, FOREIGN, MIGRATIONS).unwrap();
    let (lease, _) = foreign.claim_job(&["walk"], TTL).unwrap().unwrap();
    clock.advance(1_000);

    let err = open(&path, &clock, "ourhost:1:0001", V2)
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

    // Nothing changed: still version 1, the foreign lease is intact and still works.
    assert_still_version_1(&path, &clock);
    let job = ours.job(id).unwrap().unwrap();
    assert_eq!(job.state, JobState::Running);
    assert_eq!(job.lease_owner.as_deref(), Some(FOREIGN));
    assert_eq!(job.generation, lease.generation);

    // The foreign process drains (completes its work): the same upgrade proceeds.
    foreign.complete_job(&lease).unwrap();
    drop(foreign);
    drop(ours);
    let upgraded =
        open(&path, &clock, "ourhost:1:0001", V2).expect("the upgrade proceeds after the drain");
    assert_eq!(upgraded.job(id).unwrap().unwrap().state, JobState::Done);
    drop(upgraded);
    // The table exists: version 3 can insert into it.
    open(&path, &clock, "ourhost:1:0001", V3).expect("extra exists after the upgrade");
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
    match open(&path, &clock, "ourhost:1:0001", V2).err() {
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
    assert_still_version_1(&path, &clock);

    // At the expiry instant the lease is dead (fences use `expires_at > now`): the upgrade
    // proceeds even though the foreign process never released.
    clock.advance(1);
    let upgraded =
        open(&path, &clock, "ourhost:1:0001", V2).expect("an expired lease does not block");
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
    open(&path, &clock, "ourhost:1:0001", V3).expect("extra exists after the upgrade");
}

#[test]
fn this_process_own_live_leases_do_not_block_its_migration() {
    let (_dir, path, clock) = setup();
    let ours = open(&path, &clock, "ourhost:1:0001", MIGRATIONS).unwrap();
    ours.enqueue(NewJob::new("walk", "{}")).unwrap();
    ours.claim_job(&["walk"], TTL).unwrap().unwrap();
    open(&path, &clock, "ourhost:1:0001", V2).expect("own leases do not block");
}

#[test]
fn a_database_newer_than_the_binary_is_refused_and_left_unchanged() {
    let (_dir, path, clock) = setup();
    let newer = open(&path, &clock, "newer:1:0001", V2).unwrap();
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
            StoreError::NewerSchema {
                found: 2,
                supported: 1
            }
        ),
        "expected NewerSchema, got {err:?}"
    );
    assert!(err.to_string().contains("newer"), "{err}");

    // Unchanged: the newer binary still opens it at version 2 with its row as it was, and
    // its table is still there.
    let again = open(&path, &clock, "newer:1:0001", V2).expect("still version 2");
    assert_eq!(again.job(id).unwrap().unwrap(), before);
    drop(again);
    open(&path, &clock, "newer:1:0001", V3).expect("extra still exists");
}
