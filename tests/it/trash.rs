//! Trash and restore as leased work (DESIGN.md sections 4 and 6), on real files scanned by
//! the real pipeline: an asset is trashed only when every present file of it moved, a move
//! that fails part-way is put back, no move replaces a file, only the lease holder acts on
//! a move, and a move whose holder died (SIGKILL, in a child process) is carried on by
//! whoever reclaims its expired lease. Moves are told apart by their move id, never by the
//! time they began, and a journal written before moves were leased upgrades intact. A move
//! is tied to what it saw (issue 25): it never moves a file re-saved or re-indexed since it
//! began, never renames once its lease is lost, refuses while its library is away, and a
//! restore that put nothing back is rolled back; asset ids are never issued twice, across
//! the sweep and the upgrade that brought AUTOINCREMENT.

use crate::support;

use mediadex::clock::FakeClock;
use mediadex::model::{
    Begun, FileReason, IngestItem, IntentState, JobState, Lease, MOVE_JOB_KIND, MediaFacts,
    MediaKind, Move, MoveOutcome, ScanEnd, Settle, TRASH_DIR, TrashAction, TrashIntent, trash_path,
    trash_place,
};
use mediadex::store::{MIGRATIONS, Migration, Store, StoreError, StoreOptions};
use mediadex::trash::{MoveConfig, MoveHooks, NoMoveHooks, TrashError};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::{Env, T0, TTL, env, photo, scan_now};

const DAY: i64 = 86_400_000;

struct Lib {
    id: i64,
    root: PathBuf,
}

/// A library of real PNGs, scanned: files of one shade are byte copies, one asset.
fn library(env: &Env, files: &[(&str, u8)]) -> Lib {
    let root = env.dir.path().join("photos");
    for (path, shade) in files {
        photo(&root.join(path), *shade);
    }
    let root = std::fs::canonicalize(&root).expect("canon");
    let id = mediadex::app::add_library(&env.store, "photos", &root.to_string_lossy())
        .expect("add")
        .id;
    let lib = Lib { id, root };
    scan_now(env, lib.id, "");
    lib
}

impl Lib {
    fn asset(&self, store: &Store, path: &str) -> i64 {
        store
            .known_files(self.id, "")
            .expect("files")
            .into_iter()
            .find(|f| f.rel_path == path.as_bytes())
            .and_then(|f| f.asset_id)
            .expect("an indexed file")
    }

    fn present(&self, store: &Store) -> Vec<String> {
        let mut paths: Vec<String> = store
            .known_files(self.id, "")
            .expect("files")
            .into_iter()
            .map(|f| String::from_utf8_lossy(&f.rel_path).into_owned())
            .collect();
        paths.sort();
        paths
    }

    fn path(&self, rel: &[u8]) -> PathBuf {
        self.root.join(String::from_utf8_lossy(rel).as_ref())
    }

    /// Where `rel` of `asset` is in the trash folder: in whichever of the asset's trash
    /// folders (one per move, `model::trash_place`) holds it, or a path in none of them
    /// (move 0 is never issued) when none does.
    fn in_trash(&self, asset: i64, rel: &str) -> PathBuf {
        let folders = std::fs::read_dir(self.root.join(TRASH_DIR))
            .into_iter()
            .flatten();
        let held = (folders.flatten())
            .map(|e| format!("{TRASH_DIR}/{}/{rel}", e.file_name().to_string_lossy()))
            .filter(|p| trash_place(p.as_bytes()).is_some_and(|t| t.asset_id == asset))
            .map(|p| self.root.join(p))
            .find(|p| p.exists());
        held.unwrap_or_else(|| self.path(&trash_path(asset, 0, rel.as_bytes())))
    }
}

fn trashed(store: &Store, asset: i64) -> bool {
    store
        .asset(asset)
        .expect("asset")
        .expect("row")
        .trashed_at
        .is_some()
}

fn move_job(store: &Store, asset: i64) -> Option<mediadex::model::Job> {
    store
        .live_job(&format!("{MOVE_JOB_KIND}:{asset}"))
        .expect("job")
}

fn held(begun: Begun) -> (Lease, Move) {
    match begun {
        Begun::Held(lease, held) => (lease, held),
        Begun::Settled(o) => panic!("nothing to move: {o:?}"),
    }
}

/// Runs `f` on the mover's thread just before its `n`th rename (0-based).
struct BeforeRename<F: Fn(&Path, &Path) + Send + Sync> {
    n: usize,
    seen: AtomicUsize,
    f: F,
}

impl<F: Fn(&Path, &Path) + Send + Sync> MoveHooks for BeforeRename<F> {
    fn before_rename(&self, from: &Path, to: &Path) {
        if self.seen.fetch_add(1, Ordering::SeqCst) == self.n {
            (self.f)(from, to)
        }
    }
}

fn before_rename<F: Fn(&Path, &Path) + Send + Sync>(n: usize, f: F) -> BeforeRename<F> {
    BeforeRename {
        n,
        seen: AtomicUsize::new(0),
        f,
    }
}

// ---- defect 1: a photo never leaves the index while its file is in the library ---------

#[test]
fn a_trash_whose_second_move_fails_leaves_the_asset_live_with_both_files_for_good() {
    let env = env();
    let lib = library(&env, &[("a.png", 1), ("b/a.png", 1)]);
    let a = lib.asset(&env.store, "a.png");
    assert_eq!(
        lib.asset(&env.store, "b/a.png"),
        a,
        "byte copies are one asset"
    );
    // Where the first move of this index puts it.
    let squatter = lib.path(&trash_path(a, 1, b"b/a.png"));
    std::fs::create_dir_all(squatter.parent().expect("parent")).expect("mkdir");
    std::fs::write(&squatter, b"squatter").expect("squat");

    let err = mediadex::trash::trash(&env.store, a).expect_err("the second move cannot happen");
    assert!(matches!(err, TrashError::Move { .. }), "{err:?}");
    assert!(err.to_string().contains("b/a.png"), "names the file: {err}");
    assert!(lib.root.join("a.png").exists() && lib.root.join("b/a.png").exists());
    assert!(
        !lib.in_trash(a, "a.png").exists(),
        "the moved copy was put back"
    );
    assert_eq!(std::fs::read(&squatter).expect("squatter"), b"squatter");
    assert!(!trashed(&env.store, a));
    assert_eq!(lib.present(&env.store), ["a.png", "b/a.png"]);
    assert!(env.store.pending_intents().expect("pending").is_empty());
    assert!(move_job(&env.store, a).is_none(), "the move ended");

    // For good: a full scan, the retention, the sweep and another scan keep the photo.
    scan_now(&env, lib.id, "");
    env.clock.advance(31 * DAY);
    assert_eq!(env.store.sweep_trash(30 * DAY).expect("sweep"), 0);
    scan_now(&env, lib.id, "");
    assert!(!trashed(&env.store, a));
    assert_eq!(lib.present(&env.store), ["a.png", "b/a.png"]);
    assert_eq!(lib.asset(&env.store, "b/a.png"), a);
}

#[test]
fn a_copy_linked_by_a_scan_while_the_trash_runs_keeps_the_asset_live() {
    let env = env();
    let lib = library(&env, &[("a.png", 1)]);
    let a = lib.asset(&env.store, "a.png");
    let copy = lib.root.join("copies/c.png");
    // Between the move of a.png and the commit, a scan finds a byte copy of it.
    let hooks = AfterFirstRename(|intent: &TrashIntent| {
        std::fs::create_dir_all(copy.parent().expect("parent")).expect("mkdir");
        std::fs::copy(lib.path(&intent.to_path), &copy).expect("copy");
        scan_now(&env, lib.id, "copies");
    });
    let err = mediadex::trash::trash_with(&env.store, a, &MoveConfig::default(), &hooks)
        .expect_err("a copy appeared");
    assert!(matches!(err, TrashError::Linked { .. }), "{err:?}");
    assert!(err.to_string().contains("copies/c.png"), "{err}");
    assert!(!trashed(&env.store, a));
    assert!(lib.root.join("a.png").exists(), "the moved file is back");
    assert!(!lib.in_trash(a, "a.png").exists());
    assert_eq!(lib.present(&env.store), ["a.png", "copies/c.png"]);
    assert_eq!(lib.asset(&env.store, "copies/c.png"), a);
    assert!(env.store.pending_intents().expect("pending").is_empty());
}

struct AfterFirstRename<F: Fn(&TrashIntent) + Send + Sync>(F);

impl<F: Fn(&TrashIntent) + Send + Sync> MoveHooks for AfterFirstRename<F> {
    fn after_rename(&self, intent: &TrashIntent) {
        (self.0)(intent)
    }
}

#[test]
fn a_restore_that_fails_part_way_leaves_the_asset_in_the_trash_whole() {
    let env = env();
    let lib = library(&env, &[("a.png", 1), ("b/a.png", 1)]);
    let a = lib.asset(&env.store, "a.png");
    assert_eq!(
        mediadex::trash::trash(&env.store, a).expect("trash"),
        MoveOutcome::Trashed
    );
    // The user put another picture where the second copy was.
    photo(&lib.root.join("b/a.png"), 9);
    let other = std::fs::read(lib.root.join("b/a.png")).expect("other");
    let err = mediadex::trash::restore(&env.store, a).expect_err("b/a.png is taken");
    assert!(err.to_string().contains("b/a.png"), "{err}");
    assert!(trashed(&env.store, a));
    assert!(lib.in_trash(a, "a.png").exists() && lib.in_trash(a, "b/a.png").exists());
    assert!(
        !lib.root.join("a.png").exists(),
        "the restored copy went back"
    );
    assert_eq!(
        std::fs::read(lib.root.join("b/a.png")).expect("other"),
        other
    );

    std::fs::remove_file(lib.root.join("b/a.png")).expect("rm");
    assert_eq!(
        mediadex::trash::restore(&env.store, a).expect("restore"),
        MoveOutcome::Restored
    );
    assert!(lib.root.join("a.png").exists() && lib.root.join("b/a.png").exists());
    assert_eq!(lib.present(&env.store), ["a.png", "b/a.png"]);
}

// ---- defect 3: no move replaces a file ---------------------------------------------------

#[test]
fn a_move_never_replaces_a_file_created_at_its_destination_meanwhile() {
    let env = env();
    let lib = library(&env, &[("a.png", 1)]);
    let a = lib.asset(&env.store, "a.png");
    let hooks = before_rename(0, |_: &Path, to: &Path| {
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        std::fs::write(to, b"created in between").expect("squat");
    });
    let err = mediadex::trash::trash_with(&env.store, a, &MoveConfig::default(), &hooks)
        .expect_err("the destination was taken");
    assert!(err.to_string().contains("exists already"), "{err}");
    assert_eq!(
        std::fs::read(lib.in_trash(a, "a.png")).expect("squatter"),
        b"created in between"
    );
    assert!(lib.root.join("a.png").exists());
    assert!(!trashed(&env.store, a));
}

// ---- read-only libraries -------------------------------------------------------------------

#[test]
fn a_read_only_library_is_refused_before_anything_moves() {
    let env = env();
    let lib = library(&env, &[("a.png", 1), ("ro/a.png", 1)]);
    let a = lib.asset(&env.store, "a.png");
    let guard = support::ReadOnly::make(&lib.root.join("ro"));
    let err = mediadex::trash::trash(&env.store, a).expect_err("ro/ cannot be written");
    drop(guard);
    assert!(matches!(err, TrashError::ReadOnly { .. }), "{err:?}");
    assert!(err.to_string().contains("ro"), "{err}");
    assert!(lib.root.join("a.png").exists() && lib.root.join("ro/a.png").exists());
    assert!(!lib.root.join(".mediadex-trash").exists(), "nothing moved");
    assert!(!trashed(&env.store, a));
}

// ---- defect 2: only the lease holder acts on a move ----------------------------------------

#[test]
fn a_process_that_starts_while_a_move_is_held_touches_nothing() {
    let env = env();
    let lib = library(&env, &[("a.png", 1), ("b/a.png", 1)]);
    let a = lib.asset(&env.store, "a.png");
    let before = move_job(&env.store, a);
    assert!(before.is_none());
    let hooks = before_rename(1, |_: &Path, _: &Path| {
        // Store 1 holds the move, one file moved. Store 2 starts and does what a start does.
        let two = env.other_process("two:2:start");
        let job = move_job(&two, a).expect("the held move");
        let pending = two.pending_intents().expect("pending");
        assert_eq!(
            mediadex::trash::finish_abandoned(&two, &MoveConfig::default()).expect("start"),
            0
        );
        assert_eq!(
            move_job(&two, a).expect("held still"),
            job,
            "store 2 took nothing"
        );
        assert_eq!(two.pending_intents().expect("pending"), pending);
        assert!(lib.in_trash(a, "a.png").exists() && lib.root.join("b/a.png").exists());
    });
    let outcome = mediadex::trash::trash_with(&env.store, a, &MoveConfig::default(), &hooks);
    assert_eq!(outcome.expect("the holder finishes"), MoveOutcome::Trashed);
    assert!(lib.in_trash(a, "a.png").exists() && lib.in_trash(a, "b/a.png").exists());
    assert!(trashed(&env.store, a));
}

#[test]
fn every_write_of_a_move_is_fenced_on_its_lease() {
    let env = env();
    let lib = library(&env, &[("a.png", 1)]);
    let a = lib.asset(&env.store, "a.png");
    let (lease, held) = held(env.store.begin_trash(a, TTL).expect("begin"));
    env.clock.advance(TTL);
    env.store.reclaim_stale().expect("reclaim");
    let id = held.intents[0].id;
    let lost = |r: Result<(), StoreError>| assert!(matches!(r, Err(e) if e.is_lease_lost()));
    lost(env.store.settle_intent(&lease, id, Settle::Done));
    lost(env.store.start_rollback(&lease, "why"));
    lost(env.store.end_rolled_back(&lease));
    assert!(matches!(env.store.finish_move(&lease, None), Err(e) if e.is_lease_lost()));
    assert_eq!(env.store.pending_intents().expect("pending")[0].id, id);
    assert!(!trashed(&env.store, a));
    assert!(lib.root.join("a.png").exists());
}

// ---- a holder killed mid-move ----------------------------------------------------------

const CHILD_DB: &str = "MEDIADEX_TRASH_CHILD_DB";
const CHILD_ASSET: &str = "MEDIADEX_TRASH_CHILD_ASSET";
const CHILD_MARK: &str = "MEDIADEX_TRASH_CHILD_MARK";
/// The parent's PostgreSQL schema, when the suite runs there (else unset: the file).
const CHILD_PG: &str = "MEDIADEX_TRASH_CHILD_PG";

/// The child of `a_mover_killed_after_its_first_rename_is_carried_on_by_the_reclaimer`:
/// trashes the asset and, right after its first rename, says so and waits to be killed.
#[test]
#[ignore = "the child process of a_mover_killed_after_its_first_rename_is_carried_on_by_the_reclaimer"]
fn child_trashing_until_killed() {
    let var = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} is not set"));
    let options = StoreOptions {
        owner: format!("child:{}:trash", std::process::id()),
        database: std::env::var(CHILD_PG).ok(),
        ..support::options()
    };
    let store =
        Store::open(Path::new(&var(CHILD_DB)), FakeClock::new(T0), options).expect("open store");
    let asset: i64 = var(CHILD_ASSET).parse().expect("asset id");
    let mark = PathBuf::from(var(CHILD_MARK));
    struct Hang(PathBuf);
    impl MoveHooks for Hang {
        fn after_rename(&self, _: &TrashIntent) {
            std::fs::write(&self.0, b"renamed").expect("mark");
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }
    let config = MoveConfig {
        ttl: TTL,
        ..MoveConfig::default()
    };
    let _ = mediadex::trash::trash_with(&store, asset, &config, &Hang(mark));
    panic!("the move ended instead of waiting to be killed");
}

#[test]
fn a_mover_killed_after_its_first_rename_is_carried_on_by_the_reclaimer() {
    let env = env();
    let lib = library(&env, &[("a.png", 1), ("b/a.png", 1), ("c/a.png", 1)]);
    let a = lib.asset(&env.store, "a.png");
    let mark = env.dir.path().join("renamed");
    let mut child = Command::new(std::env::current_exe().expect("exe"));
    child.env_remove(CHILD_PG);
    if let Some(pg) = &env.pg {
        child.env(CHILD_PG, &pg.url);
    }
    let mut child = child
        .args([
            "--exact",
            "trash::child_trashing_until_killed",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_DB, env.dir.path().join("mediadex.db"))
        .env(CHILD_ASSET, a.to_string())
        .env(CHILD_MARK, &mark)
        .spawn()
        .expect("spawn the child");
    let start = Instant::now();
    while !mark.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the child never renamed"
        );
        if let Some(status) = child.try_wait().expect("wait") {
            panic!("the child ended first: {status}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");

    // Its lease is live until the ttl: nobody touches the move before.
    let cfg = MoveConfig::default();
    assert_eq!(
        mediadex::trash::finish_abandoned(&env.store, &cfg).expect("early"),
        0
    );
    // Killed between its first rename and that intent's settle: all three still pending.
    assert_eq!(env.store.pending_intents().expect("pending").len(), 3);
    assert!(lib.in_trash(a, "a.png").exists() && !lib.root.join("a.png").exists());
    // Past the ttl and the retry backoff, the reclaimer carries it on.
    env.clock.advance(TTL + 1);
    env.store.reclaim_stale().expect("reclaim");
    env.clock.advance(60_000);
    assert_eq!(
        mediadex::trash::finish_abandoned(&env.store, &cfg).expect("carry on"),
        1
    );

    for p in ["a.png", "b/a.png", "c/a.png"] {
        let (here, there) = (lib.root.join(p).exists(), lib.in_trash(a, p).exists());
        assert!(here != there, "{p} is in exactly one place");
        assert_eq!(
            there,
            trashed(&env.store, a),
            "{p} agrees with the asset's state"
        );
    }
    assert!(env.store.pending_intents().expect("pending").is_empty());
    assert!(move_job(&env.store, a).is_none());
}

// ---- move ids --------------------------------------------------------------------------

#[test]
fn a_failed_trash_in_the_same_millisecond_as_an_earlier_one_leaves_the_asset_live() {
    let env = env();
    let lib = library(&env, &[("a.png", 1)]);
    let a = lib.asset(&env.store, "a.png");
    mediadex::trash::trash(&env.store, a).expect("first trash");
    mediadex::trash::restore(&env.store, a).expect("restore");
    assert!(!trashed(&env.store, a));
    // The same millisecond still: the next trash (move 3, after the trash and the restore)
    // cannot move the file (the destination is taken), so the move is rolled back and the
    // asset must stay live where its file is.
    let squatter = lib.path(&trash_path(a, 3, b"a.png"));
    std::fs::create_dir_all(squatter.parent().expect("parent")).expect("mkdir");
    std::fs::write(squatter, b"squatter").expect("squat");
    assert!(mediadex::trash::trash(&env.store, a).is_err());
    assert!(lib.root.join("a.png").exists(), "the file did not move");
    assert!(
        !trashed(&env.store, a),
        "a rolled-back move was taken for the earlier committed one"
    );
    // And a restore finds no trash to undo: the last trash that moved files is the first.
    assert_eq!(env.store.assets(false).expect("live").len(), 1);
}

#[test]
fn a_restore_brings_back_the_last_trash_only_even_within_one_millisecond() {
    let env = env();
    let lib = library(&env, &[("a.png", 1), ("b/a.png", 1)]);
    let a = lib.asset(&env.store, "a.png");
    for _ in 0..2 {
        mediadex::trash::trash(&env.store, a).expect("trash");
        assert!(trashed(&env.store, a));
        let begun = env
            .store
            .begin_restore(a, TTL, None)
            .expect("begin restore");
        let (_, back) = match &begun {
            Begun::Held(lease, held) => (lease, held),
            Begun::Settled(o) => panic!("{o:?}"),
        };
        let mut paths: Vec<Vec<u8>> = back.intents.iter().map(|i| i.to_path.clone()).collect();
        paths.sort();
        assert_eq!(
            paths,
            vec![b"a.png".to_vec(), b"b/a.png".to_vec()],
            "one intent per file of the last trash, no file twice"
        );
        let outcome = mediadex::trash::run(&env.store, begun, &MoveConfig::default(), &NoMoveHooks);
        assert_eq!(outcome.expect("restore"), MoveOutcome::Restored);
    }
    assert!(lib.root.join("a.png").exists() && lib.root.join("b/a.png").exists());
}

#[test]
fn each_begin_call_gets_its_own_move_id_shared_by_its_intents_and_one_move_per_asset() {
    let env = env();
    let lib = library(&env, &[("a.png", 1), ("b/a.png", 1), ("c.png", 2)]);
    let (a, c) = (
        lib.asset(&env.store, "a.png"),
        lib.asset(&env.store, "c.png"),
    );
    let (_, first) = held(env.store.begin_trash(a, TTL).expect("trash a"));
    let (_, other) = held(env.store.begin_trash(c, TTL).expect("trash c"));
    assert_eq!(first.intents.len(), 2);
    assert!(first.intents.iter().all(|i| i.move_id == first.move_id));
    assert!(other.move_id > first.move_id, "{other:?} {first:?}");
    assert_ne!(first.job_id, other.job_id);
    let again = env.other_process("two:2:again").begin_trash(a, TTL);
    assert!(
        matches!(&again, Err(StoreError::Conflict(m)) if m.contains("being moved")),
        "one move per asset, across processes: {again:?}"
    );
}

#[test]
fn a_rolled_back_move_flips_nothing_and_ends_failed_with_its_reason() {
    let env = env();
    let lib = library(&env, &[("a.png", 1)]);
    let a = lib.asset(&env.store, "a.png");
    let (lease, mv) = held(env.store.begin_trash(a, TTL).expect("begin"));
    let id = mv.intents[0].id;
    env.store
        .settle_intent(&lease, id, Settle::Done)
        .expect("done");
    assert!(
        lib.present(&env.store).is_empty(),
        "a moved file's row is missing"
    );
    env.store
        .start_rollback(&lease, "the user changed their mind")
        .expect("rollback");
    assert!(matches!(
        env.store.end_rolled_back(&lease),
        Err(StoreError::Conflict(_))
    ));
    env.store
        .settle_intent(&lease, id, Settle::Back)
        .expect("back");
    assert_eq!(
        lib.present(&env.store),
        ["a.png"],
        "the row follows the file back"
    );
    env.store.end_rolled_back(&lease).expect("end");
    let job = env.store.job(mv.job_id).expect("job").expect("row");
    assert_eq!(job.state, JobState::Failed);
    assert_eq!(
        job.last_error.as_deref(),
        Some("the user changed their mind")
    );
    assert!(!trashed(&env.store, a));
    let intent = env.store.held_move(mv.job_id).expect("move").intents[0].clone();
    assert_eq!(intent.state, IntentState::Aborted);
    assert!(matches!(
        env.store.finish_move(&lease, None),
        Err(e) if e.is_lease_lost()
    ));
}

// ---- upgrade from a database written before moves were leased ---------------------------

fn open(dir: &Path, clock: &Arc<FakeClock>, migrations: &'static [Migration]) -> Store {
    Store::open(
        &dir.join("mediadex.db"),
        clock.clone(),
        StoreOptions {
            migrations,
            ..support::options()
        },
    )
    .expect("open")
}

/// A journal row as schema 0004 held it: no move id; one move = one (asset, action, time).
fn old_intent(
    (library, asset): (i64, i64),
    action: &str,
    from: &str,
    to: &str,
    state: &str,
    created_at: i64,
) -> String {
    let finished = if state == "pending" {
        "NULL".to_string()
    } else {
        (created_at + 1).to_string()
    };
    format!(
        "INSERT INTO trash_intents (asset_id, library_id, action, from_path, to_path, state,
                                    created_at, finished_at)
         VALUES ({asset}, {library}, '{action}', CAST('{from}' AS BLOB), CAST('{to}' AS BLOB), '{state}',
                 {created_at}, {finished});"
    )
}

/// The scan's item for a file written at `root/path`, with its real stamp (a move checks
/// that the file is still the one the index knows).
fn item(root: &Path, path: &str, content: u8) -> IngestItem {
    let meta = std::fs::symlink_metadata(root.join(path)).expect("stat");
    IngestItem {
        rel_path: path.as_bytes().to_vec(),
        rel_path_text: path.to_string(),
        stamp: mediadex::model::FileStamp::of(&meta),
        reason: FileReason::New,
        checksum: Some([content; 32]),
        content_hash: None,
        facts: Some(MediaFacts {
            kind: Some(MediaKind::Image),
            mime: Some("image/png".into()),
            ..MediaFacts::default()
        }),
        error: None,
        namesake: true,
    }
}

/// What migrations 12, 13, 14, 21, 22 and 29 add to `assets`, `files` and `libraries`,
/// which the store's statements write and read.
const LATER_ASSET_COLUMN: &str = "ALTER TABLE assets ADD COLUMN taken_at_source TEXT;
    ALTER TABLE assets ADD COLUMN rating INTEGER;
    ALTER TABLE assets ADD COLUMN title TEXT;
    ALTER TABLE assets ADD COLUMN description TEXT;
    CREATE TABLE asset_tags (asset_id INTEGER NOT NULL, tag TEXT NOT NULL COLLATE NOCASE,
                             PRIMARY KEY (asset_id, tag));
    ALTER TABLE assets ADD COLUMN content_identifier TEXT;
    ALTER TABLE assets ADD COLUMN motion_offset INTEGER;
    ALTER TABLE assets ADD COLUMN motion_length INTEGER;
    ALTER TABLE assets ADD COLUMN live_video_id INTEGER;
    ALTER TABLE files ADD COLUMN read_again TEXT;
    ALTER TABLE files ADD COLUMN beside TEXT;
    CREATE TABLE unshown_assets (asset_id INTEGER PRIMARY KEY);
    CREATE TABLE library_roots (library_id INTEGER NOT NULL, host TEXT NOT NULL,
                                root TEXT NOT NULL, root_dev INTEGER,
                                PRIMARY KEY (library_id, host), UNIQUE (host, root));";
/// `LATER_ASSET_COLUMN` undone, before the upgrade adds them for real.
const DROP_LATER_ASSET_COLUMN: &str = "ALTER TABLE assets DROP COLUMN taken_at_source;
    ALTER TABLE assets DROP COLUMN rating;
    ALTER TABLE assets DROP COLUMN title;
    ALTER TABLE assets DROP COLUMN description;
    DROP TABLE asset_tags;
    ALTER TABLE assets DROP COLUMN content_identifier;
    ALTER TABLE assets DROP COLUMN motion_offset;
    ALTER TABLE assets DROP COLUMN motion_length;
    ALTER TABLE assets DROP COLUMN live_video_id;
    ALTER TABLE files DROP COLUMN read_again;
    ALTER TABLE files DROP COLUMN beside;
    DROP TABLE unshown_assets;
    DROP TABLE library_roots;";

/// The files written and indexed through a scan lease with the statements of the store, as
/// an old schema allows (the pipeline needs the current one).
fn indexed_at_schema_3(env: &Env, files: &[(&str, u8)]) -> Lib {
    let root = env.dir.path().join("photos");
    for (path, content) in files {
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(&file, [*content; 16]).expect("write");
    }
    let id = env
        .store
        .add_library("photos", &root.to_string_lossy())
        .expect("add library")
        .id;
    env.store
        .request_scan(env.scan_request(id, ""))
        .expect("request");
    let (lease, _) = env.store.claim_scan_run(TTL).expect("claim").expect("run");
    let items = files.iter().map(|(p, c)| item(&root, p, *c)).collect();
    env.store
        .ingest_batch(&lease, id, items, "")
        .expect("ingest");
    env.store
        .finish_full_scan(&lease, id, ScanEnd::breaker(0.2, true))
        .expect("finish");
    Lib { id, root }
}

#[test]
fn an_old_journal_upgrades_its_pending_moves_to_leased_work_and_keeps_its_last_trash() {
    support::sqlite_only(
        "trash::an_old_journal_upgrades_its_pending_moves_to_leased_work_and_keeps_its_last_trash",
    );
    // The store's asset statements name the columns migrations 12 and 15 add, and the heal
    // the table of 26: schema 3 gets them for the indexing, and loses them again (below)
    // before the upgrade adds them for real.
    let env = support::env_with(StoreOptions {
        migrations: support::schema_up_to(3, LATER_ASSET_COLUMN),
        ..support::options()
    });
    // Two assets, each shown by two files, indexed at schema 3 (as a scan then wrote them).
    let lib = indexed_at_schema_3(
        &env,
        &[("x.png", 1), ("xx/x.png", 1), ("y.png", 2), ("yy/y.png", 2)],
    );
    let (x, y) = (
        lib.asset(&env.store, "x.png"),
        lib.asset(&env.store, "y.png"),
    );
    let (lx, ly) = ((lib.id, x), (lib.id, y));
    let Env {
        dir: tmp,
        clock,
        store,
        ..
    } = env;
    drop(store);
    let dir = tmp.path();
    let t = T0 - 60_000;
    // The trash folder layout of those days: `<asset id>/<path>`, no move in it.
    let tx = |p: &str| format!("{TRASH_DIR}/{x}/{p}");
    let ty = |p: &str| format!("{TRASH_DIR}/{y}/{p}");
    // Asset x: trashed and restored (both files) a minute ago, and a trash of it begun now
    // that crashed before any file moved. Asset y: a trash begun now that crashed after
    // its files moved, before the commit.
    let seed = [
        old_intent(lx, "trash", "x.png", &tx("x.png"), "done", t),
        old_intent(lx, "trash", "xx/x.png", &tx("xx/x.png"), "done", t),
        old_intent(lx, "restore", &tx("x.png"), "x.png", "done", t + 5),
        old_intent(lx, "restore", &tx("xx/x.png"), "xx/x.png", "done", t + 5),
        old_intent(lx, "trash", "x.png", &tx("x.png"), "pending", t + 9),
        old_intent(lx, "trash", "xx/x.png", &tx("xx/x.png"), "pending", t + 9),
        old_intent(ly, "trash", "y.png", &ty("y.png"), "pending", t + 9),
        old_intent(ly, "trash", "yy/y.png", &ty("yy/y.png"), "pending", t + 9),
    ]
    .concat();
    let seed = format!("{seed}\n{DROP_LATER_ASSET_COLUMN}");
    drop(open(dir, &clock, support::schema_up_to(4, &seed)));
    for p in ["y.png", "yy/y.png"] {
        let to = lib.root.join(ty(p));
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        std::fs::rename(lib.root.join(p), to).expect("move y");
    }

    // The upgrade: every old move keeps its intents together under one move id, and each
    // pending move is a queued move job, carried out by the next worker that claims it.
    let store = open(dir, &clock, MIGRATIONS);
    let pending = store.pending_intents().expect("pending");
    assert_eq!(pending.len(), 4);
    let moves: Vec<i64> = pending.iter().map(|i| i.move_id).collect();
    assert_eq!(moves[0], moves[1], "{pending:?}");
    assert_eq!(moves[2], moves[3], "{pending:?}");
    assert_ne!(moves[0], moves[2], "{pending:?}");
    for asset in [x, y] {
        let job = move_job(&store, asset).expect("a move job");
        assert_eq!(job.state, JobState::Queued);
    }
    let cfg = MoveConfig::default();
    assert_eq!(
        mediadex::trash::finish_abandoned(&store, &cfg).expect("carry on"),
        2
    );
    assert!(store.pending_intents().expect("pending").is_empty());
    assert!(trashed(&store, x) && trashed(&store, y));
    for p in ["x.png", "xx/x.png"] {
        assert!(
            lib.root.join(tx(p)).exists() && !lib.root.join(p).exists(),
            "{p}"
        );
    }

    // The restore undoes the carried-on trash: each file once, nothing of the older move.
    let (_, back) = held(store.begin_restore(x, TTL, None).expect("begin restore"));
    let mut paths: Vec<&[u8]> = back.intents.iter().map(|i| i.to_path.as_slice()).collect();
    paths.sort();
    assert_eq!(paths, vec![&b"x.png"[..], &b"xx/x.png"[..]]);
    assert!(
        back.intents
            .iter()
            .all(|i| i.action == TrashAction::Restore)
    );
    assert!(back.move_id > moves[0], "a new move id above every old one");
    assert_eq!(
        mediadex::trash::restore(&store, y).expect("restore y"),
        MoveOutcome::Restored
    );
    assert!(lib.root.join("y.png").exists() && lib.root.join("yy/y.png").exists());
    assert!(!trashed(&store, y));
}

#[test]
fn a_move_carried_on_after_a_crash_leaves_other_bytes_written_at_the_path_since() {
    let env = env();
    let lib = library(&env, &[("a.png", 1), ("b.png", 2)]);
    let a = lib.asset(&env.store, "a.png");
    // The holder dies before its rename; then another picture is saved as a.png.
    held(env.store.begin_trash(a, TTL).expect("begin"));
    photo(&lib.root.join("a.png"), 7);
    let other = std::fs::read(lib.root.join("a.png")).expect("other");
    env.clock.advance(TTL);
    env.store.reclaim_stale().expect("reclaim");
    env.clock.advance(60_000);
    let cfg = MoveConfig::default();
    assert_eq!(
        mediadex::trash::finish_abandoned(&env.store, &cfg).expect("carry on"),
        1
    );
    assert_eq!(std::fs::read(lib.root.join("a.png")).expect("kept"), other);
    assert!(
        !lib.in_trash(a, "a.png").exists(),
        "other bytes are not the asset's file"
    );
    assert!(
        trashed(&env.store, a),
        "the asset's own file is gone from a.png"
    );
    scan_now(&env, lib.id, "");
    let now = lib.asset(&env.store, "a.png");
    assert_ne!(now, a, "the new picture is its own asset");
    assert!(!trashed(&env.store, now));
}

#[test]
fn a_move_reclaimed_again_and_again_is_never_given_up() {
    let env = env();
    let lib = library(&env, &[("a.png", 1)]);
    let a = lib.asset(&env.store, "a.png");
    held(env.store.begin_trash(a, TTL).expect("begin"));
    // Each holder dies: the lease expires, reclaim requeues, the next one claims it.
    for _ in 0..8 {
        env.clock.advance(TTL);
        env.store.reclaim_stale().expect("reclaim");
        env.clock.advance(10 * 60_000);
        let claimed = env.store.claim_job(&[MOVE_JOB_KIND], TTL).expect("claim");
        assert!(claimed.is_some(), "the move is still there to carry on");
    }
    let job = move_job(&env.store, a).expect("a live move");
    assert_eq!(job.state, JobState::Running);
    env.clock.advance(TTL);
    env.store.reclaim_stale().expect("reclaim");
    env.clock.advance(10 * 60_000);
    let cfg = MoveConfig::default();
    assert_eq!(
        mediadex::trash::finish_abandoned(&env.store, &cfg).expect("carry on"),
        1
    );
    assert!(trashed(&env.store, a) && lib.in_trash(a, "a.png").exists());
}

/// The library's disk as the mover sees it: `free` bytes free.
struct FullDisk {
    free: std::sync::atomic::AtomicU64,
}

impl MoveHooks for FullDisk {
    fn free_bytes(&self, _dir: &Path) -> Option<u64> {
        Some(self.free.load(Ordering::SeqCst))
    }
}

#[test]
fn a_trash_on_a_full_library_disk_moves_nothing_and_works_once_space_is_freed() {
    let env = env();
    let lib = library(&env, &[("a.png", 1), ("b/a.png", 1)]);
    let a = lib.asset(&env.store, "a.png");
    let disk = FullDisk { free: 0.into() };
    let config = mediadex::trash::MoveConfig::default();
    let err = mediadex::trash::trash_with(&env.store, a, &config, &disk)
        .expect_err("no room for the trash folder");
    assert!(matches!(err, TrashError::NoRoom(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "the disk holding {} is full (0 bytes free): every file stays where it was; \
             trash or restore it again once space is freed",
            lib.root.display()
        )
    );
    assert!(lib.root.join("a.png").exists() && lib.root.join("b/a.png").exists());
    assert!(!lib.root.join(".mediadex-trash").exists(), "nothing moved");
    assert!(!trashed(&env.store, a));
    assert!(env.store.pending_intents().expect("pending").is_empty());
    assert!(move_job(&env.store, a).is_none(), "the move ended");

    disk.free.store(1 << 30, Ordering::SeqCst);
    mediadex::trash::trash_with(&env.store, a, &config, &disk).expect("trash once freed");
    assert!(trashed(&env.store, a));
    assert!(lib.in_trash(a, "a.png").exists() && lib.in_trash(a, "b/a.png").exists());
}

/// The restore use case with its face follow-up, as the CLI and the API run it.
fn restore_with_faces(env: &Env, asset: i64) -> Result<(), mediadex::ops::Error> {
    let config =
        mediadex::config::Config::resolve(Some(env.dir.path().to_path_buf())).expect("config");
    let services = mediadex::app::command_services(&config, env.store.clone(), false);
    mediadex::ops::trash::restore(&services, asset).map(|_| ())
}

#[test]
fn a_restore_and_its_face_walk_are_one_transaction_moved_or_settled_at_once() {
    let env = env();
    let files: Vec<(String, u8)> = (1..=6).map(|i| (format!("{i}.png"), i)).collect();
    let files: Vec<(&str, u8)> = files.iter().map(|(p, s)| (p.as_str(), *s)).collect();
    let lib = library(&env, &files);
    let moved = lib.asset(&env.store, "1.png");
    let missing = lib.asset(&env.store, "2.png");
    mediadex::trash::trash(&env.store, moved).expect("trash");
    // A file gone from the disk: the full scan trashes its asset without moving anything,
    // so its restore is settled at once, in the write that begins it.
    std::fs::remove_file(lib.root.join("2.png")).expect("rm");
    scan_now(&env, lib.id, "");
    let trashed = |id| {
        env.store
            .asset(id)
            .expect("asset")
            .expect("row")
            .trashed_at
            .is_some()
    };
    assert!(trashed(moved) && trashed(missing));
    assert!(!support::face_walk_queued(&env));
    env.refuse_face_walks();
    for id in [moved, missing] {
        let restored = restore_with_faces(&env, id);
        assert!(
            trashed(id) || support::face_walk_queued(&env),
            "asset {id} was restored ({restored:?}) and its face walk lost"
        );
        assert!(
            restored.is_err(),
            "the restore was refused whole: {restored:?}"
        );
    }
}

// ---- issue 25: a move is tied to what it saw -------------------------------------------

/// The user re-saves a picture as editors do: a new file renamed over the old name.
fn resave(path: &Path, shade: u8) {
    let tmp = path.with_extension("saving.png");
    photo(&tmp, shade);
    std::fs::rename(&tmp, path).expect("rename over");
}

/// Past the move's lease and its retry backoff: the next trash, restore or worker claims it.
fn abandon(env: &Env) {
    env.clock.advance(TTL);
    env.store.reclaim_stale().expect("reclaim");
    env.clock.advance(60_000);
}

#[test]
fn a_carried_on_trash_never_moves_a_file_resaved_and_indexed_as_another_asset() {
    let env = env();
    let lib = library(&env, &[("a.png", 1), ("b.png", 2)]);
    let x = lib.asset(&env.store, "a.png");
    // `mediadex trash X` dies before its first rename: the move is begun, nothing moved.
    held(env.store.begin_trash(x, TTL).expect("begin"));
    // The user re-saves the photo under the same name; a scan indexes it as asset Y.
    resave(&lib.root.join("a.png"), 7);
    let saved = std::fs::read(lib.root.join("a.png")).expect("saved");
    scan_now(&env, lib.id, "");
    let y = lib.asset(&env.store, "a.png");
    assert_ne!(y, x, "the re-saved picture is its own asset");

    abandon(&env);
    let cfg = MoveConfig::default();
    assert_eq!(
        mediadex::trash::finish_abandoned(&env.store, &cfg).expect("carry on"),
        1
    );
    assert_eq!(
        std::fs::read(lib.root.join("a.png")).ok(),
        Some(saved),
        "Y's file was moved by X's old move"
    );
    assert!(
        !lib.in_trash(x, "a.png").exists(),
        "Y's file is in X's trash"
    );
    assert!(!trashed(&env.store, y), "Y stays live");
    assert_eq!(
        lib.present(&env.store),
        ["a.png", "b.png"],
        "Y's row stays present"
    );
    assert_eq!(lib.asset(&env.store, "a.png"), y);
    // Y is the user's photo like any other: it trashes and restores.
    mediadex::trash::trash(&env.store, y).expect("trash y");
    mediadex::trash::restore(&env.store, y).expect("restore y");
    assert!(!trashed(&env.store, y) && lib.root.join("a.png").exists());
}

#[test]
fn a_carried_on_restore_never_takes_a_file_saved_at_its_destination_for_its_own() {
    let env = env();
    let lib = library(&env, &[("a.png", 1), ("b.png", 2)]);
    let x = lib.asset(&env.store, "a.png");
    mediadex::trash::trash(&env.store, x).expect("trash");
    // The restore dies after its rename, before the settle; then the user empties the
    // trash folder and saves a new picture as a.png, and a scan indexes it as Y.
    let hooks = AfterFirstRename(|_: &TrashIntent| {
        std::fs::remove_file(lib.root.join("a.png")).expect("rm");
        photo(&lib.root.join("a.png"), 7);
        panic!("killed after the rename");
    });
    assert!(restore_dies(&env, x, &hooks));
    scan_now(&env, lib.id, "");
    let y = lib.asset(&env.store, "a.png");
    assert_ne!(y, x);
    abandon(&env);
    let cfg = MoveConfig::default();
    assert_eq!(
        mediadex::trash::finish_abandoned(&env.store, &cfg).expect("carry on"),
        1
    );
    assert!(trashed(&env.store, x), "X was restored onto Y's file");
    assert!(!trashed(&env.store, y));
    assert_eq!(lib.asset(&env.store, "a.png"), y);
}

/// Finding 20 (library_sim seed 76 step 402): a restore dies after its first rename is
/// settled (that file back in the library, its row present, the asset still trashed); the
/// user saves another picture at its second destination; a full scan meets the first file
/// present and unchanged. The scan leaves the asset to its move (DESIGN.md section 6: the
/// move's holder, or whoever carries it on, ends it): the carried-on restore finds its
/// destination taken and rolls back whole, so the asset stays trashed with both its files
/// in the trash folder, and the next full scan leaves it so.
#[test]
fn a_scan_during_a_held_restore_leaves_the_asset_to_the_move_and_its_rollback_loses_nothing() {
    let env = env();
    let lib = library(&env, &[("a.png", 1), ("c.png", 1), ("b.png", 2)]);
    let x = lib.asset(&env.store, "a.png");
    mediadex::trash::trash(&env.store, x).expect("trash");
    let second = std::sync::Mutex::new(None);
    let hooks = before_rename(1, |_: &Path, to: &Path| {
        *second.lock().expect("lock") = Some(to.to_path_buf());
        panic!("killed before the second rename");
    });
    assert!(restore_dies(&env, x, &hooks), "the restore was killed");
    let taken = second
        .lock()
        .expect("lock")
        .clone()
        .expect("a second rename");
    let first = ["a.png", "c.png"]
        .map(|p| lib.root.join(p))
        .into_iter()
        .find(|p| *p != taken)
        .expect("the first destination");
    assert!(first.exists(), "the first file is back in the library");
    photo(&taken, 7);

    // The first scan reads the file that came back; the second meets it unchanged.
    for scan in ["first", "second"] {
        scan_now(&env, lib.id, "");
        assert!(
            trashed(&env.store, x),
            "the {scan} scan restored an asset whose move is in flight"
        );
    }
    abandon(&env);
    assert_eq!(
        mediadex::trash::finish_abandoned(&env.store, &MoveConfig::default()).expect("carry on"),
        1
    );
    assert!(env.store.pending_intents().expect("pending").is_empty());
    assert!(
        trashed(&env.store, x),
        "the rolled-back restore left the asset live with its files in the trash folder"
    );
    for rel in ["a.png", "c.png"] {
        assert!(
            lib.in_trash(x, rel).exists(),
            "{rel} of the trashed asset is not in its trash folder"
        );
    }
    assert!(
        !first.exists(),
        "the rolled-back file was left in the library"
    );
    assert!(taken.exists(), "the user's new picture was moved");
    scan_now(&env, lib.id, "");
    assert!(
        trashed(&env.store, x),
        "a live asset whose files are in the trash"
    );
    agrees(&env);
}
/// A holder that pauses (a laptop lid, SIGSTOP) right before its rename, past its ttl.
struct PausedPastTtl<'a>(&'a Env);

impl MoveHooks for PausedPastTtl<'_> {
    fn before_rename(&self, _: &Path, _: &Path) {
        self.0.clock.advance(TTL + 1);
    }
}

#[test]
fn a_holder_paused_past_its_ttl_before_its_rename_does_not_rename() {
    let env = env();
    let lib = library(&env, &[("a.png", 1)]);
    let a = lib.asset(&env.store, "a.png");
    let config = MoveConfig {
        ttl: TTL,
        ..MoveConfig::default()
    };
    let err = mediadex::trash::trash_with(&env.store, a, &config, &PausedPastTtl(&env))
        .expect_err("the lease was lost before the rename");
    assert!(matches!(err, TrashError::Guard(_)), "{err:?}");
    assert!(lib.root.join("a.png").exists(), "the paused holder renamed");
    assert!(!lib.in_trash(a, "a.png").exists());
    // Its reclaimer carries the move on.
    abandon(&env);
    let cfg = MoveConfig::default();
    assert_eq!(
        mediadex::trash::finish_abandoned(&env.store, &cfg).expect("carry on"),
        1
    );
    assert!(trashed(&env.store, a) && lib.in_trash(a, "a.png").exists());
}

/// The library's root as an unmounted share leaves it: the folder is not there.
fn unmount(lib: &Lib) -> PathBuf {
    let away = lib.root.with_file_name("photos-unmounted");
    std::fs::rename(&lib.root, &away).expect("unmount");
    away
}

fn remount(lib: &Lib, away: &Path) {
    std::fs::rename(away, &lib.root).expect("remount");
}

#[test]
fn a_trash_while_the_library_is_away_is_refused_and_marks_nothing() {
    let env = env();
    let lib = library(&env, &[("a.png", 1)]);
    let a = lib.asset(&env.store, "a.png");
    let away = unmount(&lib);
    let err = mediadex::trash::trash(&env.store, a).expect_err("the library is away");
    assert!(matches!(err, TrashError::LibraryAway { .. }), "{err:?}");
    assert!(err.to_string().contains("not there"), "{err}");
    assert!(!trashed(&env.store, a), "trashed while nothing moved");
    remount(&lib, &away);
    assert_eq!(lib.present(&env.store), ["a.png"]);
    assert!(env.store.pending_intents().expect("pending").is_empty());
    mediadex::trash::trash(&env.store, a).expect("trash once back");
    assert!(trashed(&env.store, a) && lib.in_trash(a, "a.png").exists());
}

#[test]
fn a_restore_while_the_library_is_away_is_refused_and_works_once_it_is_back() {
    let env = env();
    let lib = library(&env, &[("a.png", 1)]);
    let a = lib.asset(&env.store, "a.png");
    mediadex::trash::trash(&env.store, a).expect("trash");
    let away = unmount(&lib);
    let err = mediadex::trash::restore(&env.store, a).expect_err("the library is away");
    assert!(matches!(err, TrashError::LibraryAway { .. }), "{err:?}");
    assert!(trashed(&env.store, a), "restored while nothing moved");
    remount(&lib, &away);
    assert_eq!(
        mediadex::trash::restore(&env.store, a).expect("restore once back"),
        MoveOutcome::Restored
    );
    assert!(lib.root.join("a.png").exists() && !trashed(&env.store, a));
}

#[test]
fn a_trash_of_another_disk_mounted_at_the_library_path_is_refused() {
    let env = env();
    let lib = library(&env, &[("a.png", 1)]);
    let a = lib.asset(&env.store, "a.png");
    // Another folder in its place, with the same picture but not the library's marker.
    let away = unmount(&lib);
    photo(&lib.root.join("a.png"), 1);
    let err = mediadex::trash::trash(&env.store, a).expect_err("not the library");
    assert!(matches!(err, TrashError::LibraryAway { .. }), "{err:?}");
    assert!(lib.root.join("a.png").exists() && !trashed(&env.store, a));
    drop(away);
}

#[test]
fn a_restore_that_put_no_file_back_is_rolled_back_and_says_why() {
    let env = env();
    let lib = library(&env, &[("a.png", 1)]);
    let a = lib.asset(&env.store, "a.png");
    mediadex::trash::trash(&env.store, a).expect("trash");
    // The trashed file is gone from the trash folder (emptied by hand).
    std::fs::remove_file(lib.in_trash(a, "a.png")).expect("rm");
    let err = mediadex::trash::restore(&env.store, a).expect_err("nothing to put back");
    assert!(matches!(err, TrashError::RolledBack { .. }), "{err:?}");
    assert!(err.to_string().contains("no file"), "{err}");
    assert!(trashed(&env.store, a), "restored with no file back");
    assert!(env.store.pending_intents().expect("pending").is_empty());
}

/// Finding 19 (library_sim seed 10 step 849): a JPEG trashed with its stack's RAW, then its
/// own file gone from the trash folder (the user emptied part of it). Its restore would
/// put back the RAW alone: a restore flips the photo live only when a file of its own is
/// back, so it is rolled back whole, the RAW's file back in the trash folder where the
/// RAW's own restore finds it.
#[test]
fn a_restore_whose_own_files_are_gone_from_the_trash_folder_is_rolled_back_with_its_raw() {
    let env = env();
    let lib = library(&env, &[("a.png", 1), ("b.png", 2), ("c.png", 3)]);
    crate::stacks::write_pair(&lib.root);
    scan_now(&env, lib.id, "");
    let jpeg = lib.asset(&env.store, "RawPair/DSC_0001.JPG");
    let raw = lib.asset(&env.store, "RawPair/DSC_0001.DNG");
    mediadex::trash::trash(&env.store, jpeg).expect("trash");
    assert!(
        trashed(&env.store, jpeg) && trashed(&env.store, raw),
        "the RAW follows"
    );
    std::fs::remove_file(lib.in_trash(jpeg, "RawPair/DSC_0001.JPG")).expect("rm");
    let raw_in_trash = lib.in_trash(raw, "RawPair/DSC_0001.DNG");
    let raw_bytes = support::digest(&raw_in_trash);

    let err = mediadex::trash::restore(&env.store, jpeg).expect_err("none of its own files");
    assert!(matches!(err, TrashError::RolledBack { .. }), "{err:?}");
    assert!(err.to_string().contains("of its own"), "{err}");
    assert!(trashed(&env.store, jpeg), "flipped live without a file");
    assert!(trashed(&env.store, raw), "the RAW stays with its photo");
    assert_eq!(
        support::digest(&raw_in_trash),
        raw_bytes,
        "put back in the trash"
    );
    assert!(!lib.root.join("RawPair/DSC_0001.DNG").exists());
    assert!(env.store.pending_intents().expect("pending").is_empty());

    // The RAW comes back on its own, and a full scan keeps what the folder shows.
    let outcome = mediadex::trash::restore(&env.store, raw).expect("restore the RAW");
    assert_eq!(outcome, MoveOutcome::Restored);
    assert_eq!(
        support::digest(&lib.root.join("RawPair/DSC_0001.DNG")),
        raw_bytes
    );
    scan_now(&env, lib.id, "");
    assert!(!trashed(&env.store, raw) && trashed(&env.store, jpeg));
}

/// Finding 18 (library_sim seed 80 step 300): a photo trashed as missing whose path was
/// read since as another photo has no file row left: nothing of it is in a library or a
/// trash folder. Its restore is refused, saying so, and it stays in the trash (a live
/// photo with no file would hide a Live clip from the grid for good).
#[test]
fn a_restore_of_a_photo_with_no_file_left_is_refused_and_it_stays_in_the_trash() {
    // Six, so that one file going stays under the circuit breaker's share.
    let files = [("a", 1), ("b", 2), ("c", 3), ("d", 4), ("e", 5), ("f", 6)]
        .map(|(stem, shade)| (format!("{stem}.png"), shade));
    let files: Vec<(&str, u8)> = files.iter().map(|(p, s)| (p.as_str(), *s)).collect();
    let env = env();
    let lib = library(&env, &files);
    let d = lib.asset(&env.store, "d.png");
    std::fs::remove_file(lib.root.join("d.png")).expect("rm");
    scan_now(&env, lib.id, "");
    assert!(trashed(&env.store, d), "trashed as missing");
    photo(&lib.root.join("d.png"), 40);
    scan_now(&env, lib.id, "");
    let y = lib.asset(&env.store, "d.png");
    assert_ne!(y, d, "the path shows another photo now");

    let err = mediadex::trash::restore(&env.store, d).expect_err("nothing to restore");
    assert!(
        matches!(err, TrashError::Store(StoreError::Conflict(_))),
        "{err:?}"
    );
    assert!(err.to_string().contains("no file"), "{err}");
    assert!(trashed(&env.store, d), "live with no file");
    assert!(!trashed(&env.store, y));
    assert!(move_job(&env.store, d).is_none());
}

// ---- issue 25: a trash path is unique per move -------------------------------------------

/// Trash, restore, trash again: a file the first move's folder still holds (here a copy of
/// another version of the photo, put there by the user after the restore) neither stands in
/// the way of the second trash nor is taken for its file, and the second restore puts the
/// photo's own bytes back.
#[test]
fn a_second_trash_never_meets_a_file_left_in_the_first_trash_folder() {
    let env = env();
    let lib = library(&env, &[("a.png", 1)]);
    let a = lib.asset(&env.store, "a.png");
    let original = support::digest(&lib.root.join("a.png"));
    mediadex::trash::trash(&env.store, a).expect("trash");
    let first = support::trashed_to(&env.store, &lib.root, a, "a.png");
    mediadex::trash::restore(&env.store, a).expect("restore");
    photo(&first, 2);
    let left = support::digest(&first);

    assert_eq!(
        mediadex::trash::trash(&env.store, a).expect("trash again"),
        MoveOutcome::Trashed
    );
    let second = support::trashed_to(&env.store, &lib.root, a, "a.png");
    assert_ne!(first, second, "two moves, one trash path");
    assert_eq!(support::digest(&second), original);
    assert_eq!(
        mediadex::trash::restore(&env.store, a).expect("restore again"),
        MoveOutcome::Restored
    );
    assert_eq!(support::digest(&lib.root.join("a.png")), original);
    assert_eq!(
        support::digest(&first),
        left,
        "the left file is never touched"
    );
}

// ---- issue 25: asset ids are never reused ----------------------------------------------

#[test]
fn a_swept_asset_id_is_never_issued_again_and_the_new_photo_trashes() {
    let env = env();
    let lib = library(&env, &[("a.png", 1)]);
    let x = lib.asset(&env.store, "a.png");
    mediadex::trash::trash(&env.store, x).expect("trash");
    env.clock.advance(31 * DAY);
    assert_eq!(env.store.sweep_trash(30 * DAY).expect("sweep"), 1);
    assert!(env.store.asset(x).expect("asset").is_none(), "swept");
    // The user saves a new picture under the old name; the swept one's file is still in
    // the trash folder (the sweep deletes rows, never a file).
    photo(&lib.root.join("a.png"), 2);
    scan_now(&env, lib.id, "");
    let y = lib.asset(&env.store, "a.png");
    assert!(y > x, "asset id {x} was issued again");
    let swept = std::fs::read(lib.in_trash(x, "a.png")).expect("the swept file");
    assert_eq!(
        mediadex::trash::trash(&env.store, y).expect("the new photo trashes"),
        MoveOutcome::Trashed
    );
    assert_eq!(
        mediadex::trash::restore(&env.store, y).expect("and restores"),
        MoveOutcome::Restored
    );
    assert!(lib.root.join("a.png").exists() && !trashed(&env.store, y));
    assert_eq!(
        std::fs::read(lib.in_trash(x, "a.png")).expect("kept"),
        swept,
        "the swept photo's file is never touched"
    );
}

/// The names of the indexes and triggers of the schema, and the SQL of each.
fn schema_objects(conn: &rusqlite::Connection) -> Vec<(String, String)> {
    let mut stmt = conn
        .prepare(
            "SELECT name, sql FROM sqlite_schema WHERE type IN ('index', 'trigger', 'view')
               AND sql IS NOT NULL ORDER BY name",
        )
        .expect("schema");
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("objects")
}

#[test]
fn the_upgrade_to_autoincrement_keeps_every_row_index_trigger_and_key_and_skips_swept_ids() {
    support::sqlite_only(
        "trash::the_upgrade_to_autoincrement_keeps_every_row_index_trigger_and_key_and_skips_swept_ids",
    );
    // A version-19 index: assets 1 to 3 (3 trashed), a file of each, a face of asset 2, and
    // the journal of asset 9, swept before the upgrade (its id is above every row's).
    let seed = "
        INSERT INTO libraries (id, name, root, created_at) VALUES (1, 'l', '/l', 1);
        INSERT INTO assets (id, checksum, size, kind, created_at) VALUES
            (1, randomblob(32), 1, 'image', 1), (2, randomblob(32), 1, 'video', 1);
        INSERT INTO assets (id, checksum, size, kind, created_at, trashed_at, trash_reason)
            VALUES (3, randomblob(32), 1, 'image', 1, 2, 'user');
        UPDATE assets SET live_video_id = 2 WHERE id = 1;
        INSERT INTO files (library_id, rel_path, rel_path_text, size, mtime_ns, dev, inode,
                           asset_id, last_reason, first_seen_run, last_seen_run)
            VALUES (1, CAST('a.jpg' AS BLOB), 'a.jpg', 1, 1, 1, 1, 1, 'new', 1, 1),
                   (1, CAST('b.mov' AS BLOB), 'b.mov', 1, 1, 1, 2, 2, 'new', 1, 1);
        INSERT INTO trash_intents (asset_id, library_id, action, from_path, to_path, state,
                                   created_at, finished_at, move_id)
            VALUES (9, 1, 'trash', CAST('z.jpg' AS BLOB), CAST('.mediadex-trash/9/z.jpg' AS BLOB),
                    'done', 1, 2, 1);";
    let env = support::env_with(StoreOptions {
        migrations: support::schema_up_to(19, seed),
        ..support::options()
    });
    let raw = env.raw();
    let objects = schema_objects(&raw);
    let kinds = |c: &rusqlite::Connection| -> Vec<(String, i64)> {
        let mut s = c
            .prepare("SELECT kind, n FROM live_kinds ORDER BY kind")
            .expect("kinds");
        s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("kinds")
    };
    let live_kinds = kinds(&raw);
    let Env {
        dir, clock, store, ..
    } = env;
    drop(store);
    drop(raw);

    // Up to 0020 exactly: later migrations add objects of their own.
    let store = open(dir.path(), &clock, support::schema_up_to(20, ""));
    let raw = rusqlite::Connection::open(dir.path().join("mediadex.db")).expect("raw");
    raw.execute_batch("PRAGMA foreign_keys = ON").expect("fk");
    let autoincrement: String = raw
        .query_row(
            "SELECT sql FROM sqlite_schema WHERE name = 'assets'",
            [],
            |r| r.get(0),
        )
        .expect("assets");
    assert!(autoincrement.contains("AUTOINCREMENT"), "{autoincrement}");
    assert_eq!(
        schema_objects(&raw),
        objects,
        "every index and trigger is back as it was"
    );
    assert_eq!(kinds(&raw), live_kinds);
    let count = |sql: &str| raw.query_row(sql, [], |r| r.get::<_, i64>(0)).expect(sql);
    assert_eq!(count("SELECT count(*) FROM assets"), 3);
    assert_eq!(count("SELECT live_video_id FROM assets WHERE id = 1"), 2);
    assert_eq!(count("SELECT count(*) FROM pragma_foreign_key_check"), 0);
    let ok: String = raw
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("check");
    assert_eq!(ok, "ok");
    // The next asset skips the swept 9; the foreign keys of files still act.
    raw.execute(
        "INSERT INTO assets (checksum, size, kind, created_at) VALUES (randomblob(32), 1, 'image', 1)",
        [],
    )
    .expect("insert");
    assert_eq!(raw.last_insert_rowid(), 10, "a swept id was issued again");
    raw.execute("DELETE FROM assets WHERE id = 1", [])
        .expect("delete");
    assert_eq!(
        count("SELECT count(*) FROM files WHERE asset_id IS NULL"),
        1
    );
    let images = "SELECT coalesce(sum(n), 0) FROM live_kinds WHERE kind = 'image'";
    let before = count(images);
    raw.execute(
        "UPDATE assets SET trashed_at = NULL, trash_reason = NULL WHERE id = 3",
        [],
    )
    .expect("restore 3");
    assert_eq!(count(images), before + 1, "the triggers count again");
    drop(store);
}

#[test]
fn a_carried_on_trash_of_a_file_touched_and_rescanned_since_leaves_the_photo_live() {
    let env = env();
    let lib = library(&env, &[("a.png", 1), ("b.png", 2)]);
    let x = lib.asset(&env.store, "a.png");
    held(env.store.begin_trash(x, TTL).expect("begin"));
    // The same bytes written again (a new stamp); a scan re-reads them: still asset X.
    let bytes = std::fs::read(lib.root.join("a.png")).expect("read");
    std::fs::remove_file(lib.root.join("a.png")).expect("rm");
    std::fs::write(lib.root.join("a.png"), &bytes).expect("write again");
    scan_now(&env, lib.id, "");
    assert_eq!(lib.asset(&env.store, "a.png"), x);

    abandon(&env);
    let cfg = MoveConfig::default();
    assert_eq!(
        mediadex::trash::finish_abandoned(&env.store, &cfg).expect("carry on"),
        1
    );
    assert!(lib.root.join("a.png").exists() && !lib.in_trash(x, "a.png").exists());
    assert!(
        !trashed(&env.store, x),
        "trashed while its file is in the library"
    );
    assert_eq!(lib.present(&env.store), ["a.png", "b.png"]);
}

#[test]
fn a_move_carried_on_while_its_library_is_away_waits_and_marks_nothing() {
    let env = env();
    let lib = library(&env, &[("a.png", 1)]);
    let a = lib.asset(&env.store, "a.png");
    // The holder dies before its rename; the share is unmounted before anyone carries on.
    held(env.store.begin_trash(a, TTL).expect("begin"));
    let away = unmount(&lib);
    abandon(&env);
    let cfg = MoveConfig::default();
    mediadex::trash::finish_abandoned(&env.store, &cfg).expect("carry on");
    assert!(
        !trashed(&env.store, a),
        "trashed while its library was away"
    );
    assert_eq!(
        env.store.pending_intents().expect("pending").len(),
        1,
        "it waits"
    );
    assert!(
        move_job(&env.store, a).is_some(),
        "the move is still to carry on"
    );
    remount(&lib, &away);
    assert_eq!(
        lib.present(&env.store),
        ["a.png"],
        "its row never went missing"
    );
    // Back: the next holder, past the backoff, finishes it.
    env.clock.advance(10 * 60_000);
    assert_eq!(
        mediadex::trash::finish_abandoned(&env.store, &cfg).expect("carry on"),
        1
    );
    assert!(trashed(&env.store, a) && lib.in_trash(a, "a.png").exists());
}

// ---- issue 27: keep one of a group, trash the others ---------------------------------

/// Keeping one asset trashes the others through the leased trash: each other's files end in
/// its trash folder, the kept one's stay; a move that a crashed keep left held is carried on
/// like any move once its lease expired, and the same keep repeated finishes the rest.
#[test]
fn keep_trashes_the_others_under_the_lease_and_carries_on_after_a_crash() {
    let env = env();
    let lib = library(&env, &[("a.png", 1), ("b.png", 2), ("c.png", 3)]);
    let [a, b, c] = ["a.png", "b.png", "c.png"].map(|p| lib.asset(&env.store, p));
    // The process that began b's move died before its first rename.
    let _abandoned = held(env.store.begin_trash(b, TTL).expect("begin"));
    let s = mediadex::ops::Services::new(env.store.clone());
    let early = mediadex::ops::trash::keep(&s, a, &[b, c]);
    assert!(early.is_err(), "b's move is held: {early:?}");
    assert!(lib.path(b"b.png").exists() && !trashed(&env.store, b));
    // Past the ttl and the retry backoff, the next keep carries the move on.
    env.clock.advance(TTL + 1);
    env.store.reclaim_stale().expect("reclaim");
    env.clock.advance(60_000);
    let kept = mediadex::ops::trash::keep(&s, a, &[b, c]).expect("keep");
    assert_eq!(kept.kept.id, a);
    assert!(kept.kept.trashed_at.is_none());
    assert!(kept.trashed.iter().all(|t| t.trashed_at.is_some()));
    for (id, rel) in [(b, "b.png"), (c, "c.png")] {
        assert!(trashed(&env.store, id), "{rel}");
        assert!(!lib.path(rel.as_bytes()).exists(), "{rel}");
        assert!(lib.in_trash(id, rel).exists(), "{rel}");
        assert!(move_job(&env.store, id).is_none(), "{rel}");
    }
    assert!(lib.path(b"a.png").exists() && !trashed(&env.store, a));
    let refused = mediadex::ops::trash::keep(&s, b, &[a]);
    assert!(
        matches!(refused, Err(mediadex::ops::Error::KeepTrashed(id)) if id == b),
        "{refused:?}"
    );
    assert!(lib.path(b"a.png").exists());
}

// ---- issue 25: a move number is never issued twice ---------------------------------------

/// A library's removal takes its journal rows with it; a move number must not come back with
/// them. Here the photo's trash folder in the removed library's root (`<asset>-<move>/`) is
/// still on disk when the folder is added again and the photo found there by a scan of that
/// file alone (a watcher's; a full scan would adopt the trash folder): the next trash of the
/// photo gets a fresh number and moves both copies, instead of meeting that folder's file.
#[test]
fn a_move_after_a_library_was_removed_gets_a_fresh_number_and_trashes() {
    let env = env();
    let b = library(&env, &[("b.png", 1)]);
    let x = b.asset(&env.store, "b.png");
    let original = support::digest(&b.root.join("b.png"));
    mediadex::trash::trash(&env.store, x).expect("trash");
    let first = support::trashed_to(&env.store, &b.root, x, "b.png");
    // The user saves the photo in a second library: its scan brings the asset back.
    let other = env.dir.path().join("other");
    photo(&other.join("a.png"), 1);
    let a = std::fs::canonicalize(&other).expect("canon");
    let a_id = mediadex::app::add_library(&env.store, "other", &a.to_string_lossy())
        .expect("add")
        .id;
    scan_now(&env, a_id, "");
    assert!(!trashed(&env.store, x), "the copy brought it back");

    env.store.remove_library(b.id).expect("remove");
    let again = mediadex::app::add_library(&env.store, "photos", &b.root.to_string_lossy())
        .expect("add again")
        .id;
    std::fs::copy(&first, b.root.join("b.png")).expect("copy back");
    scan_now(&env, again, "b.png");

    assert_eq!(
        mediadex::trash::trash(&env.store, x).expect("the next trash"),
        MoveOutcome::Trashed
    );
    let second = support::trashed_to(&env.store, &b.root, x, "b.png");
    assert_ne!(first, second, "a move number was issued twice");
    assert_eq!(support::digest(&second), original);
    assert_eq!(support::digest(&first), original, "never touched");
}

// ---- issue 27 deliverable 3: keep one file of a byte-identical group ---------------------

/// The library invariant as `mediadex check` tells it: no disagreement between the index and
/// the disk (a file in a trash folder that no move explains, a live photo without a file, a
/// file gone or changed, ...).
fn agrees(env: &Env) {
    let check = mediadex::ops::check::check(&mediadex::ops::Services::new(env.store.clone()))
        .expect("check");
    assert!(check.findings.is_empty(), "{:#?}", check.findings);
}

/// The live asset `a.png` shows, with the library paths of its present files.
fn shown_by(env: &Env, lib: &Lib, rel: &str) -> (i64, Vec<String>) {
    let asset = lib.asset(&env.store, rel);
    let row = env.store.asset(asset).expect("asset").expect("row");
    assert!(row.trashed_at.is_none(), "{rel}'s asset is live");
    let present = (row.paths.iter())
        .filter(|p| p.state == mediadex::model::FileState::Present)
        .map(|p| p.rel_path_text.clone())
        .collect();
    (asset, present)
}

/// "Keep this copy, trash the others" on one asset shown by three byte-identical files: the
/// other two files go to the trash folder under the leased move (a holder that died between
/// writing the intents and its first rename is carried on by whoever reclaims the move), the
/// asset stays live with the kept file, the next full scan neither re-adds the copies nor
/// calls anything missing (the library invariant holds), and the asset's restore puts both
/// copies back where they were.
#[test]
fn keep_one_file_of_identical_copies_trashes_the_others_and_restore_puts_them_back() {
    let env = env();
    let lib = library(
        &env,
        &[("a.png", 1), ("b.png", 1), ("trip/c.png", 1), ("d.png", 2)],
    );
    let (asset, present) = shown_by(&env, &lib, "a.png");
    assert_eq!(present, ["a.png", "b.png", "trip/c.png"]);
    // The process that began the move died before its first rename.
    let (_, begun) = held(
        env.store
            .begin_trash_copies(asset, (lib.id, b"a.png".to_vec()), TTL)
            .expect("begin"),
    );
    let moved: Vec<&[u8]> = begun.intents.iter().map(|i| &i.from_path[..]).collect();
    assert_eq!(
        moved,
        [&b"b.png"[..], b"trip/c.png"],
        "the journal names each file"
    );
    assert!(lib.path(b"b.png").exists(), "nothing moved yet");
    env.clock.advance(TTL + 1);
    env.store.reclaim_stale().expect("reclaim");
    env.clock.advance(60_000);
    let ended = mediadex::trash::finish_abandoned(&env.store, &MoveConfig::default());
    assert_eq!(ended.expect("carried on"), 1);
    assert!(move_job(&env.store, asset).is_none());
    assert_eq!(shown_by(&env, &lib, "a.png"), (asset, vec!["a.png".into()]));
    for rel in ["b.png", "trip/c.png"] {
        assert!(!lib.path(rel.as_bytes()).exists(), "{rel} left the library");
        assert!(
            lib.in_trash(asset, rel).exists(),
            "{rel} is in the trash folder"
        );
    }
    assert!(env.store.duplicates().expect("dups").is_empty());

    let run = scan_now(&env, lib.id, "");
    assert_eq!(run.state, mediadex::model::RunState::Completed, "{run:?}");
    assert_eq!(shown_by(&env, &lib, "a.png"), (asset, vec!["a.png".into()]));
    assert_eq!(
        env.store.assets(false).expect("live").len(),
        2,
        "no copy re-added"
    );
    assert!(env.store.assets(true).expect("trash").is_empty());
    agrees(&env);

    let s = mediadex::ops::Services::new(env.store.clone());
    let back = mediadex::ops::trash::restore(&s, asset).expect("restore");
    assert!(back.trashed_at.is_none());
    assert_eq!(
        shown_by(&env, &lib, "a.png").1,
        ["a.png", "b.png", "trip/c.png"]
    );
    for rel in ["b.png", "trip/c.png"] {
        assert!(lib.path(rel.as_bytes()).exists(), "{rel} is back");
    }
    scan_now(&env, lib.id, "");
    assert_eq!(env.store.duplicates().expect("dups").len(), 1);
    agrees(&env);
}

/// The same through the use case the CLI and the API call: the file to keep is named by its
/// path; one that is not a present file of the asset, or a trashed asset, is refused with
/// nothing moved; a move of copies whose kept file vanished meanwhile is rolled back.
#[test]
fn keep_file_names_the_copy_by_path_and_refuses_what_it_cannot_keep() {
    let env = env();
    // Five other photos keep one file gone under the scan's breaker.
    let files = [
        ("a.png", 1),
        ("b.png", 1),
        ("d.png", 2),
        ("e.png", 3),
        ("f.png", 4),
    ];
    let lib = library(
        &env,
        &[files.as_slice(), &[("g.png", 5), ("h.png", 6)]].concat(),
    );
    let (asset, _) = shown_by(&env, &lib, "a.png");
    let s = mediadex::ops::Services::new(env.store.clone());
    let wrong = mediadex::ops::trash::keep_file(&s, asset, None, "nope.png");
    assert!(
        matches!(wrong, Err(mediadex::ops::Error::KeepFile { found: 0, .. })),
        "{wrong:?}"
    );
    assert!(lib.path(b"b.png").exists());
    // The kept file goes before the move ends: every copy stays.
    let hooks = before_rename(0, |_, _| {
        std::fs::remove_file(lib.path(b"a.png")).expect("rm a");
        scan_now(&env, lib.id, "");
    });
    let gone = mediadex::trash::trash_copies(
        &env.store,
        asset,
        (lib.id, b"a.png".to_vec()),
        &MoveConfig::default(),
        &hooks,
    );
    assert!(
        matches!(gone, Err(TrashError::RolledBack { .. })),
        "{gone:?}"
    );
    assert!(lib.path(b"b.png").exists(), "b.png stays in the library");
    photo(&lib.root.join("a.png"), 1);
    scan_now(&env, lib.id, "");
    let kept = mediadex::ops::trash::keep_file(&s, asset, Some(lib.id), "b.png").expect("keep");
    assert!(kept.trashed_at.is_none());
    assert!(lib.path(b"b.png").exists() && !lib.path(b"a.png").exists());
    assert!(lib.in_trash(asset, "a.png").exists());
    agrees(&env);
}

/// Begins a restore of `asset` and runs it with `hooks`, which kill it (panic) at their
/// point: whether it died.
fn restore_dies(env: &support::Env, asset: i64, hooks: &dyn MoveHooks) -> bool {
    let begun = env.store.begin_restore(asset, TTL, None).expect("begin");
    let config = MoveConfig {
        ttl: TTL,
        ..MoveConfig::default()
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        mediadex::trash::run(&env.store, begun, &config, hooks)
    }))
    .is_err()
}
