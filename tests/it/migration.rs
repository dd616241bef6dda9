//! The migration guard (DESIGN.md section 4): no upgrade while another process holds a live
//! lease on the database, and the refusal names that process; the upgrade proceeds once the
//! lease is gone (drained or expired). A database newer than the binary is refused and left
//! as it was.
//!
//! Whether a migration ran is told through the store alone: the migration one past this
//! binary's creates a table and fails if the table already exists, and the one after it
//! inserts into it and fails if it does not.

use crate::support;

use mediadex::clock::{FakeClock, SharedClock};
use mediadex::model::{JobState, NewJob, RunOutcome, RunState, ScanRequest, Trigger};
use mediadex::store::{MIGRATIONS, Migration, StartCheck, Store, StoreError, StoreOptions};
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

// ---- A damaged index (issue 13, part 4): each kind is found when the store opens, as a
// typed error, and the refused open leaves the file as it found it (moving it aside is the
// caller's decision, see `a_damaged_index_is_moved_aside_under_one_name`).

/// An index in use: a library and enough jobs that it spans a few dozen pages, closed
/// cleanly (no WAL left).
fn used_index(path: &Path, clock: &Arc<FakeClock>) {
    let store = open(path, clock, "maker:1:0001", MIGRATIONS).expect("a sound index");
    store.add_library("photos", "/photos").expect("library");
    for i in 0..200 {
        store
            .enqueue(NewJob::new(
                "walk",
                format!("{{\"pad\":\"{}\"}}", "x".repeat(i * 10)),
            ))
            .expect("job");
    }
    drop(store);
    assert!(!wal(path).exists(), "a clean close leaves no WAL");
}

fn wal(path: &Path) -> std::path::PathBuf {
    support::sibling(path, "-wal")
}

/// A page (1-based, as `support::zero_page` counts) in the middle of the jobs' rows: the
/// data a command's start does not read unless it reads every page. A page picked by
/// position alone may be a table's root, which any open reads, and moves as tables are added.
fn a_middle_page_of_rows(path: &Path) -> u64 {
    let bytes = std::fs::read(path).expect("db");
    let rows: Vec<u64> = bytes
        .chunks(support::PAGE as usize)
        .enumerate()
        .filter(|(_, page)| page.windows(40).any(|w| w.iter().all(|b| *b == b'x')))
        .map(|(i, _)| i as u64 + 1)
        .collect();
    assert!(rows.len() > 4, "the padded jobs fill pages: {rows:?}");
    rows[rows.len() / 2]
}

fn pages(path: &Path) -> u64 {
    std::fs::metadata(path).expect("size").len() / support::PAGE
}

/// Opens the damaged file, expects `Damaged` naming it, and checks the refusal changed no
/// byte of the file (and of its WAL, if one was planted).
fn assert_refused_as_damaged(path: &Path, clock: &Arc<FakeClock>, needle: &str) {
    let before = support::digest(path);
    let wal_before = support::digest(&wal(path));
    let err = open(path, clock, "victim:1:0002", MIGRATIONS)
        .err()
        .expect("a damaged index must be refused");
    match &err {
        StoreError::Damaged { path: named, .. } => {
            assert_eq!(named, &path.display().to_string())
        }
        other => panic!("expected Damaged, got {other:?}"),
    }
    assert!(err.to_string().contains(needle), "{err} lacks {needle:?}");
    assert!(
        support::digest(path) == before,
        "the refusal wrote to the file"
    );
    // SQLite's read of a WAL-mode file creates an empty WAL where there was none.
    let created_empty =
        wal_before.is_none() && support::digest(&wal(path)).is_none_or(|(len, _)| len == 0);
    assert!(
        support::digest(&wal(path)) == wal_before || created_empty,
        "the refusal touched the WAL"
    );
}

#[test]
fn a_truncated_index_is_refused_as_damaged() {
    let (_dir, path, clock) = setup();
    used_index(&path, &clock);
    let half = pages(&path) / 2 * support::PAGE;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|f| f.set_len(half))
        .expect("truncate");
    assert_refused_as_damaged(&path, &clock, "malformed");
}

#[test]
fn an_index_cut_inside_a_page_is_refused_as_damaged() {
    let (_dir, path, clock) = setup();
    used_index(&path, &clock);
    let cut = (pages(&path) - 1) * support::PAGE + 100;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|f| f.set_len(cut))
        .expect("truncate");
    assert_refused_as_damaged(&path, &clock, "malformed");
}

#[test]
fn a_zeroed_page_in_the_middle_is_found_at_open() {
    let (_dir, path, clock) = setup();
    used_index(&path, &clock);
    support::zero_page(&path, pages(&path) / 2);
    assert_refused_as_damaged(&path, &clock, "malformed");
}

#[test]
fn a_zeroed_first_page_is_refused_as_damaged() {
    let (_dir, path, clock) = setup();
    used_index(&path, &clock);
    support::zero_page(&path, 1);
    assert_refused_as_damaged(&path, &clock, "not an SQLite database");
}

#[test]
fn a_garbage_header_is_refused_as_damaged() {
    let (_dir, path, clock) = setup();
    used_index(&path, &clock);
    let mut bytes = std::fs::read(&path).expect("db");
    for (i, b) in bytes[..100].iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(37).wrapping_add(11);
    }
    std::fs::write(&path, &bytes).expect("garbage header");
    assert_refused_as_damaged(&path, &clock, "not an SQLite database");
}

/// Puts the WAL of `from` beside `victim`, as a crash would leave one. Called while a
/// connection on `from` is open: a clean close would checkpoint and delete it.
fn plant_wal(from: &Path, victim: &Path) {
    std::fs::copy(wal(from), wal(victim)).expect("copy the foreign WAL");
}

#[test]
fn a_wal_from_another_sqlite_database_is_refused_as_foreign() {
    let (dir, path, clock) = setup();
    used_index(&path, &clock);
    let other_path = dir.path().join("other.db");
    let other = raw(&other_path);
    other
        .execute_batch(
            "PRAGMA page_size = 16384; PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
             CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);
             INSERT INTO notes (body) VALUES ('not an index');",
        )
        .expect("another database");
    plant_wal(&other_path, &path);
    assert_refused_as_damaged(&path, &clock, "another database");
}

#[test]
fn a_wal_from_another_mediadex_index_is_refused_as_foreign() {
    let (dir, path, clock) = setup();
    used_index(&path, &clock);
    // Another index in use (created and closed earlier), whose service crashed mid-scan:
    // its WAL holds the pages a growing index writes, not its creation.
    let other_path = dir.path().join("other.db");
    used_index(&other_path, &clock);
    let other = open(&other_path, &clock, "other:1:0003", MIGRATIONS).expect("other index");
    other.add_library("theirs", "/theirs").expect("library");
    for _ in 0..50 {
        other
            .enqueue(NewJob::new(
                "walk",
                format!("{{\"pad\":\"{}\"}}", "y".repeat(3000)),
            ))
            .expect("job");
    }
    plant_wal(&other_path, &path);
    assert_refused_as_damaged(&path, &clock, "another database");
    drop(other);
}

/// Issue 13: a newer database is left untouched, byte for byte, WAL included. A refused
/// open must not checkpoint the WAL into the file or delete it, as closing the last
/// read-write connection does.
#[test]
fn a_newer_database_with_a_wal_is_refused_and_keeps_every_byte() {
    let (dir, newer_path, clock) = setup();
    let newer = open(&newer_path, &clock, "newer:1:0001", next()).expect("a newer index");
    newer.add_library("photos", "/photos").expect("library");
    // The newer binary's state as its crash leaves it: the file and its WAL.
    let path = dir.path().join("crashed.db");
    std::fs::copy(&newer_path, &path).expect("copy db");
    plant_wal(&newer_path, &path);
    drop(newer);
    let db_before = support::digest(&path);
    let wal_before = support::digest(&wal(&path));
    assert!(
        wal_before.is_some_and(|(len, _)| len > 0),
        "the WAL holds the newer writes"
    );

    let err = open(&path, &clock, "older:1:0002", MIGRATIONS)
        .err()
        .expect("an older binary must refuse a newer database");
    assert!(matches!(err, StoreError::NewerSchema { .. }), "{err:?}");
    assert!(support::digest(&path) == db_before, "the file changed");
    assert!(
        support::digest(&wal(&path)) == wal_before,
        "the WAL changed or was deleted"
    );
}

/// The file, its WAL and its shared memory go under one timestamped name, never deleted,
/// never over an earlier one.
#[test]
fn a_damaged_index_is_moved_aside_under_one_name() {
    let (_dir, path, _clock) = setup();
    let at = chrono::DateTime::parse_from_rfc3339("2026-12-01T11:22:33Z")
        .expect("time")
        .with_timezone(&chrono::Utc);
    for round in 0..2u8 {
        for (suffix, byte) in [("", 1u8), ("-wal", 2), ("-shm", 3)] {
            std::fs::write(support::sibling(&path, suffix), [byte, round]).expect("plant");
        }
        let moved = mediadex::store::move_aside(&path, at).expect("moved aside");
        let expected = if round == 0 {
            "mediadex.db.damaged-20261201T112233"
        } else {
            "mediadex.db.damaged-20261201T112233-2"
        };
        assert_eq!(moved, support::sibling(&path, &expected[11..]));
        for (suffix, byte) in [("", 1u8), ("-wal", 2), ("-shm", 3)] {
            assert!(
                !support::sibling(&path, suffix).exists(),
                "{suffix} left in place"
            );
            assert_eq!(
                std::fs::read(support::sibling(&moved, suffix)).expect("moved file"),
                [byte, round]
            );
        }
    }
}

/// What a fresh index needs from a damaged one: its libraries, read straight from the file
/// (its WAL ignored) wherever their page is sound; nothing when it is not a database.
#[test]
fn the_libraries_of_a_damaged_index_are_read_back_where_their_page_is_sound() {
    let (_dir, path, clock) = setup();
    used_index(&path, &clock);
    // The index's handle was this data dir's host: its roots are the ones read back.
    let host = mediadex::host::load_or_create(path.parent().expect("dir")).expect("host id");
    support::zero_page(&path, pages(&path) / 2);
    assert_eq!(
        mediadex::store::salvage_libraries(&path, &host),
        vec![("photos".to_string(), "/photos".to_string())]
    );
    support::zero_page(&path, 1);
    assert_eq!(mediadex::store::salvage_libraries(&path, &host), vec![]);
}

/// A command reads every page only while that is cheap (store/vet.rs has the figures): the
/// zeroed page is found within the budget and not above it, where the service's start
/// finds it.
#[test]
fn a_command_start_reads_every_page_only_within_its_budget() {
    let (_dir, path, clock) = setup();
    used_index(&path, &clock);
    support::zero_page(&path, a_middle_page_of_rows(&path));
    let len = std::fs::metadata(&path).expect("db").len();
    let with = |check| {
        let clock: SharedClock = clock.clone();
        Store::open(
            &path,
            clock,
            StoreOptions {
                check,
                ..Default::default()
            },
        )
    };
    assert!(matches!(
        with(StartCheck::FullUpTo(len)),
        Err(StoreError::Damaged { .. })
    ));
    let quick = with(StartCheck::FullUpTo(len - 1));
    assert!(quick.is_ok(), "{:?}", quick.err());
    assert!(matches!(
        with(StartCheck::Full),
        Err(StoreError::Damaged { .. })
    ));
}

/// Migration 12 adds where each date came from: an asset indexed before it keeps its date and
/// says no source (nothing is guessed), the column refuses a source that is not one of the
/// chain's, and inserting an asset still builds no temporary table.
#[test]
fn an_asset_indexed_before_taken_at_source_keeps_its_date_and_names_no_source() {
    let (_dir, path, clock) = setup();
    drop(
        open(&path, &clock, "old:1:0001", support::schema_up_to(11, ""))
            .expect("a version-11 database"),
    );
    raw(&path)
        .execute(
            "INSERT INTO assets (id, checksum, size, kind, taken_local, created_at)
                  VALUES (7, zeroblob(32), 1, 'image', '2019-03-05T13:14:57', 1)",
            [],
        )
        .expect("an old asset");

    let store = open(&path, &clock, "new:1:0002", MIGRATIONS).expect("the upgrade");
    let old = store.asset(7).expect("read").expect("the old asset");
    assert_eq!(
        old.facts.taken_local.as_deref(),
        Some("2019-03-05T13:14:57")
    );
    assert_eq!(old.facts.taken_at_source, None);
    drop(store);

    let conn = raw(&path);
    let err = conn
        .execute(
            "UPDATE assets SET taken_at_source = 'guess' WHERE id = 7",
            [],
        )
        .expect_err("an unknown source")
        .to_string();
    assert!(err.contains("CHECK constraint failed"), "{err}");
    for source in mediadex::model::TakenAtSource::ALL {
        conn.execute(
            "UPDATE assets SET taken_at_source = ?1 WHERE id = 7",
            [source.as_str()],
        )
        .unwrap_or_else(|e| panic!("{source}: {e}"));
    }
    assert!(!asset_insert_is_ephemeral(&conn), "the CHECK is no IN list");
}

/// Migration 13 adds what a sidecar says: an old asset has no rating and no tags, a rating
/// outside -1..5 is refused, a tag is one per asset without ASCII case, and every file
/// reason (`sidecar` now too) passes the edited CHECKs of `files` and `scan_run_reasons`,
/// which still build no temporary table on an insert.
#[test]
fn migration_13_adds_ratings_and_tags_and_the_reason_sidecar() {
    let (_dir, path, clock) = setup();
    drop(
        open(&path, &clock, "old:1:0001", support::schema_up_to(12, ""))
            .expect("a version-12 database"),
    );
    raw(&path)
        .execute(
            "INSERT INTO assets (id, checksum, size, kind, created_at)
                  VALUES (7, zeroblob(32), 1, 'image', 1)",
            [],
        )
        .expect("an old asset");
    let store = open(&path, &clock, "new:1:0002", MIGRATIONS).expect("the upgrade");
    let old = store.asset(7).expect("read").expect("the old asset");
    assert_eq!(old.facts.notes, mediadex::model::Notes::default());
    drop(store);

    let conn = raw(&path);
    let rate = |r: i64| conn.execute("UPDATE assets SET rating = ?1 WHERE id = 7", [r]);
    assert!(rate(6).is_err() && rate(-2).is_err(), "outside -1..5");
    assert!(rate(-1).is_ok() && rate(5).is_ok());
    let tag = |t: &str| {
        conn.execute(
            "INSERT INTO asset_tags (asset_id, tag) VALUES (7, ?1) ON CONFLICT DO NOTHING",
            [t],
        )
    };
    assert_eq!((tag("Paris").unwrap(), tag("PARIS").unwrap()), (1, 0));
    conn.execute(
        "INSERT INTO libraries (id, name, root, created_at) VALUES (1, 'l', '/l', 1)",
        [],
    )
    .expect("library");
    for (i, reason) in mediadex::model::FileReason::ALL.iter().enumerate() {
        conn.execute(
            "INSERT INTO files (library_id, rel_path, rel_path_text, size, mtime_ns, dev, inode,
                                last_reason, first_seen_run, last_seen_run)
                  VALUES (1, ?1, 'x', 1, 1, 1, 1, ?2, 1, 1)",
            rusqlite::params![vec![i as u8], reason.as_str()],
        )
        .unwrap_or_else(|e| panic!("files: {reason}: {e}"));
    }
    let err = conn
        .execute(
            "UPDATE files SET last_reason = 'guess' WHERE rel_path = x'00'",
            [],
        )
        .expect_err("an unknown reason")
        .to_string();
    assert!(err.contains("CHECK constraint failed"), "{err}");
    let sql: String = conn
        .query_row(
            "SELECT sql FROM sqlite_schema WHERE name = 'scan_run_reasons'",
            [],
            |r| r.get(0),
        )
        .expect("schema");
    for p in mediadex::model::Provenance::ALL {
        assert!(
            sql.contains(&format!("'{}'", p.as_str())),
            "{p} not in {sql}"
        );
    }
    assert!(!asset_insert_is_ephemeral(&conn));
}

/// Migration 16: a HEIF an older binary could not decode was stamped "no faces" under the
/// face scheme this binary still uses, so the walk would never look at it again. Its stamp
/// goes; a HEIF with faces, and any other picture, keeps its own.
#[test]
fn migration_16_lets_the_walk_look_again_at_heif_pictures_stamped_without_faces() {
    let (_dir, path, clock) = setup();
    drop(
        open(&path, &clock, "old:1:0001", support::schema_up_to(15, ""))
            .expect("a version-15 database"),
    );
    let conn = raw(&path);
    for (id, mime) in [
        (1, "image/heic"),
        (2, "image/avif"),
        (3, "image/heif"),
        (4, "image/heic"),
        (5, "image/jpeg"),
    ] {
        conn.execute(
            "INSERT INTO assets (id, checksum, size, kind, mime, created_at, faces_scheme)
                  VALUES (?1, randomblob(32), 1, 'image', ?2, 1, 1)",
            rusqlite::params![id, mime],
        )
        .expect("an old asset");
    }
    conn.execute(
        "INSERT INTO faces (asset_id, detector_version, x, y, w, h, score) VALUES (4, 1, 0, 0, 9, 9, 0.9)",
        [],
    )
    .expect("a face");
    drop(conn);
    let store = open(&path, &clock, "new:1:0002", MIGRATIONS).expect("the upgrade");
    let scheme = |id: i64| store.asset(id).expect("read").expect("asset").faces_scheme;
    assert_eq!(
        [1, 2, 3, 4, 5].map(scheme),
        [None, None, None, Some(1), Some(1)],
        "HEIC, AVIF, HEIF without faces unstamped; a HEIC with faces and a JPEG kept"
    );
}

/// Migration 27 (issue 29): `assets` rebuilt without `UNIQUE (owner, checksum)`, its two
/// checksum indexes keyed by the hashes' first 8 bytes. An index of version 24 keeps every
/// asset with its id, content hash and trash state, and the AUTOINCREMENT counter (an id
/// swept before is not issued again); the claim finds an old asset through the prefix index,
/// so a copy of its bytes joins it instead of making a second asset of one checksum.
#[test]
fn migration_27_keys_the_checksum_indexes_by_a_prefix_and_keeps_every_asset() {
    let (_dir, path, clock) = setup();
    drop(
        open(&path, &clock, "old:1:0001", support::schema_up_to(24, ""))
            .expect("a version-24 database"),
    );
    raw(&path)
        .execute_batch(
            "INSERT INTO assets (id, checksum, size, kind, created_at, content_hash,
                                 content_hash_scheme)
                  VALUES (3, zeroblob(32), 1, 'image', 1, randomblob(32), 1);
             INSERT INTO assets (id, checksum, size, kind, created_at, trashed_at, trash_reason)
                  VALUES (5, randomblob(32), 1, 'image', 1, 9, 'user');
             UPDATE sqlite_sequence SET seq = 40 WHERE name = 'assets';",
        )
        .expect("old assets");
    let store = open(&path, &clock, "new:1:0002", MIGRATIONS).expect("the upgrade");
    let old = store.asset(3).expect("read").expect("asset 3");
    assert_eq!(old.checksum, [0; 32]);
    assert!(old.content_hash.is_some());
    assert!(
        store
            .asset(5)
            .expect("read")
            .expect("asset 5")
            .trashed_at
            .is_some()
    );

    let root = path.with_file_name("lib");
    std::fs::create_dir_all(&root).expect("library dir");
    let lib = store
        .add_library("lib", &root.to_string_lossy())
        .expect("library")
        .id;
    store
        .request_scan(ScanRequest {
            library_id: lib,
            scope: String::new(),
            trigger: Trigger::Manual,
            watch_event: None,
        })
        .expect("request");
    let (lease, _) = store.claim_scan_run(TTL).expect("claim").expect("a run");
    let copy = mediadex::model::IngestItem {
        rel_path: b"copy.jpg".to_vec(),
        rel_path_text: "copy.jpg".into(),
        stamp: mediadex::model::FileStamp {
            size: 1,
            mtime_ns: 1,
            dev: 1,
            inode: 1,
        },
        reason: mediadex::model::FileReason::New,
        checksum: Some([0; 32]),
        content_hash: None,
        facts: Some(mediadex::model::MediaFacts::default()),
        error: None,
        namesake: false,
    };
    let report = store
        .ingest_batch(&lease, lib, vec![copy], "")
        .expect("ingest");
    assert_eq!(report.items[0].asset_id, Some(3), "{report:?}");
    assert_eq!(report.items[0].claim, mediadex::model::Claim::Duplicate);
    drop(store);

    let conn = raw(&path);
    let indexes: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'assets'")
        .expect("indexes")
        .query_map([], |r| r.get(0))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("names");
    assert!(
        indexes.iter().any(|n| n == "assets_checksum"),
        "{indexes:?}"
    );
    assert!(
        indexes.iter().any(|n| n == "assets_content_hash"),
        "{indexes:?}"
    );
    assert!(
        !indexes
            .iter()
            .any(|n| n.starts_with("sqlite_autoindex_assets")),
        "the full-width unique index is still there: {indexes:?}"
    );
    let seq: i64 = conn
        .query_row(
            "SELECT seq FROM sqlite_sequence WHERE name = 'assets'",
            [],
            |r| r.get(0),
        )
        .expect("sequence");
    assert_eq!(seq, 40, "the counter of ids ever issued went back");
    let plan: String = conn
        .query_row(
            "EXPLAIN QUERY PLAN SELECT id FROM assets
              WHERE substr(checksum, 1, 8) = substr(?1, 1, 8) AND checksum = ?1",
            [vec![0u8; 32]],
            |r| r.get(3),
        )
        .expect("plan");
    assert!(plan.contains("assets_checksum"), "{plan}");
    assert!(!asset_insert_is_ephemeral(&conn));
}
