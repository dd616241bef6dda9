//! The index heals itself, both ways (DESIGN.md section 6; issue 25 item 2 and defects 5
//! and 10): a completed full scan trashes a live asset that no present file shows (or
//! finds its file elsewhere), brings back a trashed asset whose file is back in the
//! library, and reads again a file that came back from the trash, so that its stack is
//! what the folder implies; a file read before a concurrent trash moved it is not written
//! back as present.

use crate::support::{self, Env, env};
use mediadex::model::{
    Asset, Begun, FileState, Provenance, RunState, ScanEnd, Settle, TrashReason,
};
use mediadex::scan::job::ScanConfig;
use mediadex::scan::pipeline::{CommitHook, Settings};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

struct Lib<'a> {
    env: &'a Env,
    id: i64,
    root: PathBuf,
}

/// `a.png` .. `f.png` in a new library (six, so one file going stays under the breaker).
fn library(env: &Env) -> Lib<'_> {
    let root = env.dir.path().join("photos");
    for (i, name) in ["a", "b", "c", "d", "e", "f"].iter().enumerate() {
        support::photo(&root.join(format!("{name}.png")), i as u8 + 1);
    }
    let root = std::fs::canonicalize(&root).expect("canonical");
    let lib =
        mediadex::app::add_library(&env.store, "photos", &root.to_string_lossy()).expect("add");
    Lib {
        env,
        id: lib.id,
        root,
    }
}

impl Lib<'_> {
    fn scan(&self) -> mediadex::model::ScanRun {
        let run = support::scan_now(self.env, self.id, "");
        assert_eq!(run.state, RunState::Completed, "{:?}", run.reason);
        run
    }

    /// The asset shown by `rel` (live or trashed).
    fn at(&self, rel: &str) -> Asset {
        let all = [
            self.env.store.assets(false).expect("live"),
            self.env.store.assets(true).expect("trash"),
        ]
        .concat();
        all.into_iter()
            .find(|a| a.paths.iter().any(|p| p.rel_path_text == rel))
            .unwrap_or_else(|| panic!("no asset at {rel}"))
    }

    fn asset(&self, id: i64) -> Asset {
        self.env.store.asset(id).expect("read").expect("row")
    }

    /// What a move that broke half way leaves: the file gone from `rel` and its row missing,
    /// while its asset still shows live.
    fn break_move(&self, rel: &str, to: &Path) {
        std::fs::rename(self.root.join(rel), to).expect("move away");
        let n = self
            .env
            .sql()
            .execute(
                "UPDATE files SET state = 'missing', missing_since = 1
                  WHERE rel_path = CAST(?1 AS BLOB)",
                &[rel.into()],
            )
            .expect("plant");
        assert_eq!(n, 1);
    }
}

#[test]
fn a_live_asset_whose_file_is_gone_goes_to_the_trash_at_the_next_full_scan() {
    let env = env();
    let lib = library(&env);
    lib.scan();
    let d = lib.at("d.png").id;
    lib.break_move("d.png", &env.dir.path().join("elsewhere.png"));
    assert_eq!(lib.asset(d).trashed_at, None, "the broken state");
    lib.scan();
    let asset = lib.asset(d);
    assert!(asset.trashed_at.is_some(), "no live asset without a file");
    assert_eq!(asset.trash_reason, Some(TrashReason::Missing));
    assert_eq!(asset.paths[0].state, FileState::Missing);
    // And it stays settled: the next scan has nothing to do.
    lib.scan();
    assert!(lib.asset(d).trashed_at.is_some());
}

/// Finding 18: what the restore of a photo with no file row left made before its fix (and
/// what a database written then may hold): a live photo that no file row shows at all, its
/// only path read since as another photo. It has no missing row for the heal to start
/// from; a completed full scan finds it all the same and puts it in the trash as missing.
#[test]
fn a_live_asset_with_no_file_row_at_all_goes_to_the_trash_at_the_next_full_scan() {
    let env = env();
    let lib = library(&env);
    lib.scan();
    let d = lib.at("d.png").id;
    std::fs::remove_file(lib.root.join("d.png")).expect("rm");
    lib.scan();
    support::photo(&lib.root.join("d.png"), 40);
    lib.scan();
    assert_ne!(lib.at("d.png").id, d, "the path shows another photo");
    let n = (env.sql())
        .execute(
            "UPDATE assets SET trashed_at = NULL, trash_reason = NULL WHERE id = ?1",
            &[d.into()],
        )
        .expect("plant");
    assert_eq!(n, 1);
    assert!(lib.asset(d).paths.is_empty(), "no file row");
    lib.scan();
    let asset = lib.asset(d);
    assert!(asset.trashed_at.is_some(), "a live photo with no file");
    assert_eq!(asset.trash_reason, Some(TrashReason::Missing));
    lib.scan();
    assert!(lib.asset(d).trashed_at.is_some());
    assert_eq!(env.store.assets(false).expect("live").len(), 6);
}

#[test]
fn a_live_asset_whose_file_moved_within_the_library_is_relinked_not_trashed() {
    let env = env();
    let lib = library(&env);
    lib.scan();
    let d = lib.at("d.png").id;
    std::fs::create_dir_all(lib.root.join("moved")).expect("mkdir");
    lib.break_move("d.png", &lib.root.join("moved/d.png"));
    lib.scan();
    let asset = lib.asset(d);
    assert_eq!(asset.trashed_at, None, "its file is in the library");
    let present: Vec<&str> = (asset.paths.iter())
        .filter(|p| p.state == FileState::Present)
        .map(|p| p.rel_path_text.as_str())
        .collect();
    assert_eq!(present, ["moved/d.png"]);
}

#[test]
fn a_trashed_asset_whose_file_the_user_put_back_is_live_again() {
    let env = env();
    let lib = library(&env);
    lib.scan();
    let d = lib.at("d.png").id;
    mediadex::trash::trash(&env.store, d).expect("trash");
    let in_trash = support::trashed_to(&env.store, &lib.root, d, "d.png");
    std::fs::rename(&in_trash, lib.root.join("d.png")).expect("put back by hand");
    lib.scan();
    let asset = lib.asset(d);
    assert_eq!(asset.trashed_at, None, "live again");
    assert_eq!(asset.paths[0].state, FileState::Present);
}

#[test]
fn a_jpeg_back_from_the_trash_is_read_again_and_stacks_with_its_raw_once_more() {
    let env = env();
    let lib = library(&env);
    crate::stacks::write_pair(&lib.root);
    lib.scan();
    let jpeg = lib.at("RawPair/DSC_0001.JPG");
    assert_eq!(jpeg.stack.len(), 2, "a stack at first");
    // The JPEG's trash, as a settled intent leaves it: its file in the trash folder, its
    // row missing, its asset trashed.
    let aside = env.dir.path().join("DSC_0001.JPG");
    lib.break_move("RawPair/DSC_0001.JPG", &aside);
    (env.sql())
        .execute(
            "UPDATE assets SET trashed_at = 1, trash_reason = 'user' WHERE id = ?1",
            &[jpeg.id.into()],
        )
        .expect("trash");
    // The RAW is read again while the JPEG is away: it stacks with nothing.
    let raw = lib.root.join("RawPair/DSC_0001.DNG");
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
    (std::fs::File::options().write(true).open(&raw))
        .and_then(|f| f.set_modified(when))
        .expect("touch");
    lib.scan();
    // The restore, as a settled intent leaves it: the file back, its row present.
    std::fs::rename(&aside, lib.root.join("RawPair/DSC_0001.JPG")).expect("back");
    (env.sql())
        .execute(
            "UPDATE files SET state = 'present', missing_since = NULL
              WHERE rel_path = CAST('RawPair/DSC_0001.JPG' AS BLOB)",
            &[],
        )
        .expect("present");
    let run = lib.scan();
    let reasons = env.store.run_reasons(run.id).expect("reasons");
    assert!(reasons.contains(&(Provenance::Back, 1)), "{reasons:?}");
    let back = lib.asset(jpeg.id);
    assert_eq!(back.trashed_at, None, "live again");
    let members: Vec<&str> = back
        .stack
        .iter()
        .map(|m| m.rel_path_text.as_str())
        .collect();
    assert_eq!(
        members,
        ["RawPair/DSC_0001.JPG", "RawPair/DSC_0001.DNG"],
        "the stack is what the folder implies"
    );
}

#[test]
fn a_file_read_before_a_concurrent_trash_moved_it_is_not_written_back_as_present() {
    let env = env();
    let lib = library(&env);
    lib.scan();
    let d = lib.at("d.png").id;
    // Its last read failed: the next scan reads it though its stamp is unchanged, so the
    // trash below finds the bytes the index knows and moves them.
    (env.sql())
        .execute(
            "UPDATE files SET last_reason = 'error' WHERE rel_path = CAST('d.png' AS BLOB)",
            &[],
        )
        .expect("plant");
    let store = env.store.clone();
    let once = AtomicBool::new(false);
    let hook = move |batch: &mediadex::scan::pipeline::Batch| {
        let read = batch.changed.iter().any(|o| o.rel == Path::new("d.png"));
        if read && !once.swap(true, Ordering::SeqCst) {
            // Read, not yet written: the user's trash moves it now.
            mediadex::trash::trash(&store, d).expect("trash");
        }
    };
    let config = ScanConfig {
        pipeline: Settings {
            commit_hook: Some(CommitHook(Arc::new(hook))),
            ..Settings::default()
        },
        ..ScanConfig::default()
    };
    let run = support::scan_now_with(&env, lib.id, "", config);
    assert_eq!(run.state, RunState::Completed, "{:?}", run.reason);
    assert!(support::trashed_to(&env.store, &lib.root, d, "d.png").exists());
    let asset = lib.asset(d);
    assert!(asset.trashed_at.is_some(), "the trash holds");
    assert_eq!(asset.trash_reason, Some(TrashReason::User));
    assert_eq!(asset.paths.len(), 1);
    assert_eq!(asset.paths[0].state, FileState::Missing, "not written back");
    assert_eq!(
        env.store.assets(false).expect("live").len(),
        5,
        "no phantom"
    );
}

/// Finding 17 (library_sim seed 76 step 94): the user re-saved a photo (a new file renamed
/// over its name) and trashes it while a full scan reads the new bytes. The trash finds
/// bytes it never saw at the path and moves nothing (the old picture is gone, so its asset
/// goes to the trash); the scan's read of the new bytes is the library's, and is written:
/// the photo in the folder is shown by a live asset when the scan completes.
#[test]
fn a_photo_resaved_and_trashed_unmoved_while_a_scan_reads_it_is_indexed_by_that_scan() {
    let env = env();
    let lib = library(&env);
    lib.scan();
    let d = lib.at("d.png").id;
    let path = lib.root.join("d.png");
    let saving = lib.root.join("d.saving");
    support::photo(&saving.with_extension("png"), 99);
    std::fs::rename(saving.with_extension("png"), &path).expect("re-save over");
    let saved = support::digest(&path);
    let store = env.store.clone();
    let once = AtomicBool::new(false);
    let hook = move |batch: &mediadex::scan::pipeline::Batch| {
        let read = batch.changed.iter().any(|o| o.rel == Path::new("d.png"));
        if read && !once.swap(true, Ordering::SeqCst) {
            // Read, not yet written: the user's trash of the photo they saw.
            let outcome = mediadex::trash::trash(&store, d).expect("trash");
            assert_eq!(outcome, mediadex::model::MoveOutcome::Trashed);
        }
    };
    let config = ScanConfig {
        pipeline: Settings {
            commit_hook: Some(CommitHook(Arc::new(hook))),
            ..Settings::default()
        },
        ..ScanConfig::default()
    };
    let run = support::scan_now_with(&env, lib.id, "", config);
    assert_eq!(run.state, RunState::Completed, "{:?}", run.reason);
    assert_eq!(support::digest(&path), saved, "the trash moved nothing");
    assert!(lib.asset(d).trashed_at.is_some(), "the old picture is gone");
    let live = env.store.assets(false).expect("live");
    let shown: Vec<&Asset> = (live.iter())
        .filter(|a| {
            (a.paths.iter()).any(|p| p.rel_path_text == "d.png" && p.state == FileState::Present)
        })
        .collect();
    assert_eq!(
        shown.len(),
        1,
        "the re-saved photo is not in the index: {live:#?}"
    );
    assert_ne!(shown[0].id, d);
    assert_eq!(live.len(), 6, "a..f, d as re-saved");
}

#[test]
fn migration_21_keeps_the_rows_and_marks_a_row_another_writer_brought_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mediadex.db");
    let open = |migrations| {
        let options = mediadex::store::StoreOptions {
            migrations,
            ..support::options()
        };
        let clock = mediadex::clock::FakeClock::new(support::T0);
        mediadex::store::Store::open(&path, clock, options)
    };
    let seed = "INSERT INTO libraries (id, name, root, created_at) VALUES (1, 'l', '/l', 1);
        INSERT INTO files (id, library_id, rel_path, rel_path_text, size, mtime_ns, dev, inode,
                           state, missing_since, last_reason, first_seen_run, last_seen_run)
             VALUES (1, 1, CAST('a.png' AS BLOB), 'a.png', 1, 1, 1, 1, 'missing', 5, 'new', 3, 3),
                    (2, 1, CAST('b.png' AS BLOB), 'b.png', 1, 1, 1, 2, 'missing', 5, 'new', 3, 3);";
    drop(open(support::schema_up_to(19, seed)).expect("a version-19 database"));
    drop(open(mediadex::store::MIGRATIONS).expect("the upgrade"));
    let conn = rusqlite::Connection::open(&path).expect("raw");
    // A restore brings a.png back without reading it; a scan's read of b.png brings it back
    // with the run that read it.
    conn.execute_batch(
        "UPDATE files SET state = 'present', missing_since = NULL WHERE id = 1;
         UPDATE files SET state = 'present', missing_since = NULL, last_seen_run = 4,
                          last_reason = 'back' WHERE id = 2;",
    )
    .expect("bring back");
    let marks: Vec<Option<String>> = conn
        .prepare("SELECT read_again FROM files ORDER BY id")
        .expect("prepare")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(marks, [Some("back".to_string()), None]);
    let bad = conn.execute("UPDATE files SET read_again = 'guess' WHERE id = 1", []);
    assert!(bad.is_err(), "read_again is checked");
}

/// Migration 26 lists what an earlier version left (finding 18's restore made such an asset
/// live): every asset that no file row names, for the next full scan's heal; and from then
/// on, the trigger lists an asset when a relink takes its last row.
#[test]
fn migration_26_lists_the_assets_no_file_row_names_and_a_relink_that_takes_the_last_row() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mediadex.db");
    let open = |migrations| {
        let options = mediadex::store::StoreOptions {
            migrations,
            ..support::options()
        };
        let clock = mediadex::clock::FakeClock::new(support::T0);
        mediadex::store::Store::open(&path, clock, options)
    };
    let seed = "INSERT INTO libraries (id, name, root, created_at) VALUES (1, 'l', '/l', 1);
        INSERT INTO assets (id, checksum, size, created_at)
             VALUES (1, zeroblob(32), 1, 1), (2, randomblob(32), 1, 1), (3, randomblob(32), 1, 1);
        INSERT INTO files (id, library_id, rel_path, rel_path_text, size, mtime_ns, dev, inode,
                           asset_id, state, last_reason, first_seen_run, last_seen_run)
             VALUES (1, 1, CAST('a.png' AS BLOB), 'a.png', 1, 1, 1, 1, 1, 'present', 'new', 3, 3),
                    (2, 1, CAST('b.png' AS BLOB), 'b.png', 1, 1, 1, 2, 2, 'present', 'new', 3, 3);";
    drop(open(support::schema_up_to(24, seed)).expect("a version-24 database"));
    drop(open(mediadex::store::MIGRATIONS).expect("the upgrade"));
    let conn = rusqlite::Connection::open(&path).expect("raw");
    let listed = |conn: &rusqlite::Connection| -> Vec<i64> {
        (conn.prepare("SELECT asset_id FROM unshown_assets ORDER BY asset_id"))
            .expect("prepare")
            .query_map([], |r| r.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows")
    };
    assert_eq!(listed(&conn), [3], "the asset no row names");
    // b.png read as asset 1 (a copy of a.png now): asset 2 lost its last row.
    conn.execute("UPDATE files SET asset_id = 1 WHERE id = 2", [])
        .expect("relink");
    assert_eq!(listed(&conn), [2, 3]);
    // A row rewritten with its own asset lists nothing.
    conn.execute("UPDATE files SET asset_id = 1, size = 2 WHERE id = 1", [])
        .expect("rewrite");
    assert_eq!(listed(&conn), [2, 3]);
}

#[test]
fn a_trash_between_its_renames_and_its_flip_is_left_to_its_mover() {
    let env = env();
    let lib = library(&env);
    lib.scan();
    let d = lib.at("d.png").id;
    let Begun::Held(lease, held) = env.store.begin_trash(d, support::TTL).expect("begin") else {
        panic!("a held move");
    };
    // Its one file moved and settled: the row is missing, the asset not flipped yet.
    let to = lib
        .root
        .join(String::from_utf8_lossy(&held.intents[0].to_path).as_ref());
    std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
    std::fs::rename(lib.root.join("d.png"), &to).expect("rename");
    let intent = held.intents[0].id;
    (env.store.settle_intent(&lease, intent, Settle::Done)).expect("settle");
    let scan = env.claimed_scan(lib.id, "");
    let report = (env.store)
        .finish_full_scan(&scan, lib.id, ScanEnd::breaker(0.5, true))
        .expect("finish");
    assert_eq!(report.trashed_assets, 0, "the move's to flip");
    assert_eq!(lib.asset(d).trashed_at, None);
    env.store.finish_move(&lease, None).expect("flip");
    assert_eq!(lib.asset(d).trash_reason, Some(TrashReason::User));
}

/// DESIGN.md section 6: a completed full scan settles a file in a trash folder that no move
/// explains (the trash folder of an index that was set aside, a file put there by hand): it
/// is listed in the trash as the photo it is, where it lies, so that the user sees it and a
/// restore puts it back at the path its trash folder names. The scan moves no file, and the
/// next scan adopts nothing twice.
#[test]
fn a_photo_in_the_trash_folder_that_no_move_explains_is_in_the_trash_after_a_full_scan() {
    let env = env();
    let lib = library(&env);
    lib.scan();
    let stray = lib.root.join(".mediadex-trash/99/holidays/x.png");
    support::photo(&stray, 50);
    let bytes = support::digest(&stray);
    lib.scan();
    let trash = env.store.assets(true).expect("trash");
    assert_eq!(trash.len(), 1, "the stray photo is in the trash: {trash:?}");
    assert_eq!(trash[0].paths[0].rel_path_text, "holidays/x.png");
    assert_eq!(support::digest(&stray), bytes, "the scan moved no file");
    lib.scan();
    assert_eq!(
        env.store.assets(true).expect("trash").len(),
        1,
        "adopted once"
    );

    let id = trash[0].id;
    let outcome = mediadex::trash::restore(&env.store, id).expect("restore");
    assert_eq!(outcome, mediadex::model::MoveOutcome::Restored);
    assert_eq!(support::digest(&lib.root.join("holidays/x.png")), bytes);
    lib.scan();
    assert_eq!(lib.asset(id).trashed_at, None);
    assert_eq!(
        env.store.assets(false).expect("live").len(),
        7,
        "one asset, not two"
    );
}

/// A scan scoped to a folder, or one whose library may be away, adopts nothing: only a
/// completed full scan of a present library speaks for the trash folder.
#[test]
fn a_scoped_scan_adopts_nothing_from_the_trash_folder() {
    let env = env();
    let lib = library(&env);
    lib.scan();
    std::fs::create_dir_all(lib.root.join("sub")).expect("mkdir");
    support::photo(&lib.root.join(".mediadex-trash/99/x.png"), 50);
    let run = support::scan_now(lib.env, lib.id, "sub");
    assert_eq!(run.state, RunState::Completed, "{:?}", run.reason);
    assert!(env.store.assets(true).expect("trash").is_empty());
}
