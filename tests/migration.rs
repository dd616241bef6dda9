//! The migration guard (DESIGN.md section 4): no upgrade while another process holds a live
//! lease on the database, and the refusal names that process; the upgrade proceeds once the
//! lease is gone (drained or expired). A database newer than the binary is refused and left
//! as it was.
//!
//! Whether a migration ran is told through the store alone: the migration one past this
//! binary's creates a table and fails if the table already exists, and the one after it
//! inserts into it and fails if it does not.

mod support;

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

fn raw(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).expect("raw connection")
}

/// Whether inserting an asset builds a temporary table (a CHECK with an IN list does).
fn asset_insert_is_ephemeral(conn: &rusqlite::Connection) -> bool {
    let sql = "EXPLAIN INSERT INTO assets (checksum, size, kind, created_at) VALUES (?1, 1, ?2, 1)";
    let mut stmt = conn.prepare(sql).expect("explain");
    let mut rows = stmt.raw_query();
    let mut found = false;
    while let Some(r) = rows.next().expect("row") {
        found |= r.get::<_, String>(1).expect("opcode") == "OpenEphemeral";
    }
    found
}

/// Migration 6 rewrites CHECK constraints in place (sqlite_schema): an old database keeps
/// its rows, the CHECKs still refuse what they refused, and a connection that was open
/// across the upgrade (another process) reloads the new schema.
#[test]
fn the_check_list_edit_keeps_rows_and_constraints_and_other_connections_see_it() {
    let (_dir, path, clock) = setup();
    drop(
        open(&path, &clock, "old:1:0001", support::schema_up_to(5, ""))
            .expect("a version-5 database"),
    );
    let other = raw(&path);
    other
        .execute_batch(
            "INSERT INTO libraries (id, name, root, created_at) VALUES (1, 'l', '/l', 1);
             INSERT INTO assets (id, checksum, size, kind, created_at, trashed_at, trash_reason)
                  VALUES (7, zeroblob(32), 1, 'image', 1, 2, 'user');
             INSERT INTO files (library_id, rel_path, rel_path_text, size, mtime_ns, dev, inode,
                                asset_id, last_reason, first_seen_run, last_seen_run)
                  VALUES (1, CAST('a.jpg' AS BLOB), 'a.jpg', 1, 1, 1, 1, 7, 'inode', 1, 1);",
        )
        .expect("old rows");
    assert!(
        asset_insert_is_ephemeral(&other),
        "version 5 has the IN lists"
    );

    drop(open(&path, &clock, "new:1:0002", MIGRATIONS).expect("the upgrade"));

    // A statement that runs (EXPLAIN alone does not) checks the schema cookie and reloads.
    let count = |sql: &str| other.query_row(sql, [], |r| r.get::<_, i64>(0)).expect(sql);
    assert_eq!(
        count("SELECT count(*) FROM assets WHERE trash_reason = 'user'"),
        1
    );
    assert!(
        !asset_insert_is_ephemeral(&other),
        "the open connection reloaded the schema"
    );
    assert_eq!(
        count("SELECT count(*) FROM files WHERE last_reason = 'inode'"),
        1
    );
    let check = |sql: &str| {
        let err = other.execute(sql, []).expect_err(sql).to_string();
        assert!(err.contains("CHECK constraint failed"), "{sql}: {err}");
    };
    check(
        "INSERT INTO assets (checksum, size, kind, created_at) VALUES (randomblob(32), 1, 'x', 1)",
    );
    check("UPDATE assets SET trash_reason = 'x' WHERE id = 7");
    check("UPDATE files SET last_reason = 'x'");
    other
        .execute(
            "INSERT INTO assets (checksum, size, created_at) VALUES (randomblob(32), 1, 1)",
            [],
        )
        .expect("a NULL kind passes, as with the IN list");
    let ok: String = other
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("check");
    assert_eq!(ok, "ok");
}

fn page_size(path: &Path) -> i64 {
    raw(path)
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .expect("page size")
}

/// A new database gets 16 KiB pages; one created before keeps its 4 KiB pages and works.
#[test]
fn a_new_database_has_16_kib_pages_and_an_old_one_keeps_its_own() {
    let (_dir, path, clock) = setup();
    drop(open(&path, &clock, "new:1:0001", MIGRATIONS).expect("a new database"));
    assert_eq!(page_size(&path), 16384);

    let (_old_dir, old, clock) = setup();
    raw(&old)
        .execute_batch("PRAGMA page_size = 4096; CREATE TABLE before_us (x); DROP TABLE before_us;")
        .expect("a file with 4 KiB pages");
    let store = open(&old, &clock, "new:1:0001", MIGRATIONS).expect("opens");
    store.add_library("l", "/l").expect("writes");
    drop(store);
    assert_eq!(page_size(&old), 4096);
}
