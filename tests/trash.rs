//! The trash journal's moves (DESIGN.md section 6) told apart by their move id, not by the
//! time they began: a clock that answers the same millisecond for two moves of one asset
//! (the fake clock here never moves unless told) must not let a failed trash pass for an
//! earlier, committed one, nor a restore bring back the files of two trashes. And a
//! database written before the move id (schema 0004) upgrades with its journal intact:
//! its pending intents replay and its last trash is restored whole.

mod support;

use mediadex::clock::FakeClock;
use mediadex::model::{
    FileReason, FileStamp, IngestItem, MediaFacts, MediaKind, MoveOutcome, ScanEnd, TrashAction,
    trash_path,
};
use mediadex::store::{MIGRATIONS, Migration, Store, StoreOptions};
use std::sync::Arc;
use support::{Env, TTL, env};

fn item(path: &str, content: u8) -> IngestItem {
    IngestItem {
        rel_path: path.as_bytes().to_vec(),
        rel_path_text: path.to_string(),
        stamp: FileStamp {
            size: 100,
            mtime_ns: 1_000,
            dev: 7,
            inode: u64::from(content) * 10 + path.len() as u64,
        },
        reason: FileReason::New,
        checksum: Some([content; 32]),
        content_hash: None,
        facts: Some(MediaFacts {
            kind: Some(MediaKind::Image),
            mime: Some("image/jpeg".into()),
            ..MediaFacts::default()
        }),
        error: None,
    }
}

/// Writes `files` (path, content byte) into a new library and indexes them through a scan
/// lease, as a scan would. Returns the library root, its id and the asset id of each file.
fn indexed(store: &Store, env: &Env, files: &[(&str, u8)]) -> (std::path::PathBuf, i64, Vec<i64>) {
    let root = env.dir.path().join("photos");
    for (path, content) in files {
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(&file, [*content; 16]).expect("write");
    }
    let lib = store
        .add_library("photos", &root.to_string_lossy())
        .expect("add library")
        .id;
    store
        .request_scan(env.scan_request(lib, ""))
        .expect("request");
    let (lease, _) = store.claim_scan_run(TTL).expect("claim").expect("run");
    let items = files.iter().map(|(p, c)| item(p, *c)).collect();
    let report = store.ingest_batch(&lease, lib, items, "").expect("ingest");
    store
        .finish_full_scan(&lease, lib, ScanEnd::breaker(0.2, true))
        .expect("finish");
    let ids = report
        .items
        .iter()
        .map(|i| i.asset_id.expect("asset"))
        .collect();
    (root, lib, ids)
}

fn trashed(store: &Store, asset: i64) -> bool {
    store
        .asset(asset)
        .expect("asset")
        .expect("row")
        .trashed_at
        .is_some()
}

#[test]
fn a_failed_trash_in_the_same_millisecond_as_an_earlier_one_leaves_the_asset_live() {
    let env = env();
    let (root, _, ids) = indexed(&env.store, &env, &[("a.jpg", 1)]);
    let a = ids[0];
    mediadex::trash::trash(&env.store, a).expect("first trash");
    mediadex::trash::restore(&env.store, a).expect("restore");
    assert!(!trashed(&env.store, a));
    // The same millisecond still: the next trash cannot move the file (the destination is
    // taken), so the move is aborted and the asset must stay live where its file is.
    let squatter = root.join(String::from_utf8(trash_path(a, b"a.jpg")).expect("utf8"));
    std::fs::write(&squatter, b"squatter").expect("squat");
    let failed = mediadex::trash::trash(&env.store, a);
    assert!(failed.is_err(), "{failed:?}");
    assert!(root.join("a.jpg").exists(), "the file did not move");
    assert!(
        !trashed(&env.store, a),
        "an aborted move was taken for the earlier committed one"
    );
    assert_eq!(env.store.assets(false).expect("live").len(), 1);
}

#[test]
fn an_aborted_move_in_the_same_millisecond_flips_nothing_at_the_store() {
    let env = env();
    let (_, _, ids) = indexed(&env.store, &env, &[("a.jpg", 1)]);
    let a = ids[0];
    for i in env.store.begin_trash(a).expect("trash") {
        env.store.commit_intent(i.id).expect("commit");
    }
    for i in env.store.begin_restore(a).expect("restore") {
        env.store.commit_intent(i.id).expect("commit");
    }
    let again = env.store.begin_trash(a).expect("trash again");
    assert_eq!(again.len(), 1);
    assert_eq!(env.store.abort_intent(again[0].id).expect("abort"), None);
    assert!(!trashed(&env.store, a));
}

#[test]
fn a_restore_brings_back_the_last_trash_only_even_within_one_millisecond() {
    let env = env();
    let (root, _, ids) = indexed(&env.store, &env, &[("a.jpg", 1), ("b/a.jpg", 1)]);
    let a = ids[0];
    assert_eq!(ids[1], a, "byte copies are one asset");
    for _ in 0..2 {
        mediadex::trash::trash(&env.store, a).expect("trash");
        assert!(trashed(&env.store, a));
        let back = env.store.begin_restore(a).expect("begin restore");
        let mut paths: Vec<Vec<u8>> = back.iter().map(|i| i.to_path.clone()).collect();
        paths.sort();
        assert_eq!(
            paths,
            vec![b"a.jpg".to_vec(), b"b/a.jpg".to_vec()],
            "one intent per file of the last trash, no file twice"
        );
        assert!(back.iter().all(|i| i.move_id == back[0].move_id));
        for i in &back {
            let (from, to) = (
                root.join(String::from_utf8(i.from_path.clone()).expect("utf8")),
                root.join(String::from_utf8(i.to_path.clone()).expect("utf8")),
            );
            std::fs::rename(from, to).expect("move back");
            env.store.commit_intent(i.id).expect("commit");
        }
        assert!(!trashed(&env.store, a));
    }
    assert!(root.join("a.jpg").exists() && root.join("b/a.jpg").exists());
}

#[test]
fn each_begin_call_gets_its_own_move_id_shared_by_its_intents() {
    let env = env();
    let (_, _, ids) = indexed(
        &env.store,
        &env,
        &[("a.jpg", 1), ("b/a.jpg", 1), ("c.jpg", 2)],
    );
    let (a, c) = (ids[0], ids[2]);
    let first = env.store.begin_trash(a).expect("trash a");
    let other = env.store.begin_trash(c).expect("trash c");
    assert_eq!(first.len(), 2);
    assert_eq!(first[0].move_id, first[1].move_id);
    assert!(other[0].move_id > first[0].move_id, "{other:?} {first:?}");
}

// ---- upgrade from a database written before the move id -------------------------------

fn open(dir: &std::path::Path, clock: &Arc<FakeClock>, migrations: &'static [Migration]) -> Store {
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

#[test]
fn a_database_from_before_the_move_id_upgrades_replays_and_restores_its_last_trash_whole() {
    let env = support::env_with(StoreOptions {
        migrations: support::schema_up_to(3, ""),
        ..support::options()
    });
    // Two assets, each shown by two files, indexed at schema 3.
    let (root, lib, ids) = indexed(
        &env.store,
        &env,
        &[("x.jpg", 1), ("xx/x.jpg", 1), ("y.jpg", 2), ("yy/y.jpg", 2)],
    );
    let (x, y) = (ids[0], ids[2]);
    let (lx, ly) = ((lib, x), (lib, y));
    let Env {
        dir: tmp,
        clock,
        store,
    } = env;
    drop(store);
    let dir = tmp.path();
    let t = support::T0 - 60_000;
    let tx = |p: &str| String::from_utf8(trash_path(x, p.as_bytes())).expect("utf8");
    let ty = |p: &str| String::from_utf8(trash_path(y, p.as_bytes())).expect("utf8");
    // Asset x: trashed and restored (both files) a minute ago, and a trash of it begun now
    // that crashed before any file moved. Asset y: a trash begun now that crashed after
    // its files moved, before the commit.
    let seed = [
        old_intent(lx, "trash", "x.jpg", &tx("x.jpg"), "done", t),
        old_intent(lx, "trash", "xx/x.jpg", &tx("xx/x.jpg"), "done", t),
        old_intent(lx, "restore", &tx("x.jpg"), "x.jpg", "done", t + 5),
        old_intent(lx, "restore", &tx("xx/x.jpg"), "xx/x.jpg", "done", t + 5),
        old_intent(lx, "trash", "x.jpg", &tx("x.jpg"), "pending", t + 9),
        old_intent(lx, "trash", "xx/x.jpg", &tx("xx/x.jpg"), "pending", t + 9),
        old_intent(ly, "trash", "y.jpg", &ty("y.jpg"), "pending", t + 9),
        old_intent(ly, "trash", "yy/y.jpg", &ty("yy/y.jpg"), "pending", t + 9),
    ]
    .concat();
    let old = open(dir, &clock, support::schema_up_to(4, &seed));
    drop(old);
    for p in ["y.jpg", "yy/y.jpg"] {
        let to = root.join(ty(p));
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        std::fs::rename(root.join(p), to).expect("move y");
    }

    // The upgrade: every old move keeps its intents together under one move id.
    let store = open(dir, &clock, MIGRATIONS);
    let pending = store.pending_intents().expect("pending");
    assert_eq!(pending.len(), 4);
    let moves: Vec<i64> = pending.iter().map(|i| i.move_id).collect();
    assert_eq!(moves[0], moves[1], "{pending:?}");
    assert_eq!(moves[2], moves[3], "{pending:?}");
    assert_ne!(moves[0], moves[2], "{pending:?}");

    assert_eq!(mediadex::trash::replay(&store).expect("replay"), 4);
    assert!(store.pending_intents().expect("pending").is_empty());
    assert!(trashed(&store, x) && trashed(&store, y));
    for p in ["x.jpg", "xx/x.jpg"] {
        assert!(root.join(tx(p)).exists() && !root.join(p).exists(), "{p}");
    }

    // The restore undoes the replayed trash: each file once, nothing of the older move.
    let back = store.begin_restore(x).expect("begin restore");
    let mut paths: Vec<&[u8]> = back.iter().map(|i| i.to_path.as_slice()).collect();
    paths.sort();
    assert_eq!(paths, vec![&b"x.jpg"[..], &b"xx/x.jpg"[..]]);
    assert!(back.iter().all(|i| i.action == TrashAction::Restore));
    assert!(
        back[0].move_id > moves[0],
        "a new move id above every old one"
    );
    for i in &back {
        store.abort_intent(i.id).expect("abort");
    }
    assert_eq!(
        mediadex::trash::restore(&store, y).expect("restore y"),
        vec![MoveOutcome::Restored]
    );
    assert!(root.join("y.jpg").exists() && root.join("yy/y.jpg").exists());
    assert!(!trashed(&store, y));
}
