//! `mediadex check` (issue 25, deliverable 3; defect 12): the index checked against the disk
//! on real temp libraries scanned by the real pipeline. Each kind of disagreement is found
//! and said in words; a library that is away is said once and skipped; `--repair` adopts
//! the trash folder of an index that was set aside (Trash lists the photo, restore puts it
//! back where it was), publishes stranded assets, requeues an orphaned move and asks for a
//! full scan, and never deletes or overwrites a file. The JSON of the CLI and the API.

use crate::support;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use mediadex::model::{Check, FindingKind, MOVE_JOB_KIND, RepairKind, Target};
use mediadex::ops::{self, Services};
use mediadex::store::Store;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use support::{Env, TTL, env, photo, scan_now};

struct Lib {
    id: i64,
    root: PathBuf,
}

/// A library of real PNGs (each its own shade: one asset each), scanned.
fn library(env: &Env, name: &str, files: &[(&str, u8)]) -> Lib {
    let root = env.dir.path().join(name);
    for (path, shade) in files {
        photo(&root.join(path), *shade);
    }
    let root = std::fs::canonicalize(&root).expect("canon");
    let id = mediadex::app::add_library(&env.store, name, &root.to_string_lossy())
        .expect("add")
        .id;
    scan_now(env, id, "");
    Lib { id, root }
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
}

fn services(env: &Env) -> Services {
    Services::new(env.store.clone())
}

fn check(env: &Env) -> Check {
    ops::check::check(&services(env)).expect("check")
}

/// The findings of one kind, as (asset, path text, message).
fn of_kind(check: &Check, kind: FindingKind) -> Vec<(Option<i64>, String, String)> {
    check
        .findings
        .iter()
        .filter(|f| f.kind == kind)
        .map(|f| {
            let path = f
                .path
                .as_ref()
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .unwrap_or_default();
            (f.asset_id, path, f.message.clone())
        })
        .collect()
}

fn kinds(check: &Check) -> Vec<FindingKind> {
    check.findings.iter().map(|f| f.kind).collect()
}

#[test]
fn a_library_that_agrees_with_its_index_has_no_findings() {
    let env = env();
    let lib = library(&env, "photos", &[("a.png", 10), ("2024/b.png", 20)]);
    mediadex::trash::trash(&env.store, lib.asset(&env.store, "a.png")).expect("trash");
    let found = check(&env);
    assert!(found.findings.is_empty(), "{:?}", found.findings);
    assert_eq!(found.libraries, 1);
}

#[test]
fn a_file_gone_from_disk_and_its_live_photo_without_a_file_are_found() {
    let env = env();
    let lib = library(&env, "photos", &[("holidays/a.png", 10), ("b.png", 20)]);
    let a = lib.asset(&env.store, "holidays/a.png");
    std::fs::remove_file(lib.root.join("holidays/a.png")).expect("rm");
    let found = check(&env);
    let gone = of_kind(&found, FindingKind::FileGone);
    assert_eq!(gone.len(), 1, "{:?}", found.findings);
    assert_eq!(gone[0].1, "holidays/a.png");
    assert!(gone[0].2.contains("holidays/a.png"), "{}", gone[0].2);
    let live = of_kind(&found, FindingKind::LiveWithoutFile);
    assert_eq!(live.len(), 1, "{:?}", found.findings);
    assert_eq!(live[0].0, Some(a));
    assert_eq!(
        live[0].2,
        format!(
            "photo {a} is shown as live but none of its files is on disk: \
             photos/holidays/a.png is missing"
        )
    );
}

#[test]
fn a_file_with_other_bytes_than_the_index_knows_is_found() {
    let env = env();
    let lib = library(&env, "photos", &[("a.png", 10)]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    photo(&lib.root.join("a.png"), 99);
    let found = check(&env);
    assert_eq!(kinds(&found), [FindingKind::FileChanged], "{found:?}");
    assert!(found.findings[0].message.contains("a.png"));
}

#[test]
fn a_trashed_photo_whose_trash_file_is_gone_or_back_in_the_library_is_found() {
    let env = env();
    let lib = library(&env, "photos", &[("a.png", 10), ("b.png", 20)]);
    let (a, b) = (
        lib.asset(&env.store, "a.png"),
        lib.asset(&env.store, "b.png"),
    );
    mediadex::trash::trash(&env.store, a).expect("trash a");
    mediadex::trash::trash(&env.store, b).expect("trash b");
    // The user emptied a's trash by hand and moved b back by hand.
    let in_trash = |asset: i64, rel: &str| support::trashed_to(&env.store, &lib.root, asset, rel);
    std::fs::remove_file(in_trash(a, "a.png")).expect("rm");
    std::fs::rename(in_trash(b, "b.png"), lib.root.join("b.png")).expect("mv back");
    let found = check(&env);
    let gone = of_kind(&found, FindingKind::TrashGone);
    assert_eq!(gone.len(), 1, "{:?}", found.findings);
    assert_eq!(gone[0].0, Some(a));
    let back = of_kind(&found, FindingKind::TrashBack);
    assert_eq!(back.len(), 1, "{:?}", found.findings);
    assert_eq!((back[0].0, back[0].1.as_str()), (Some(b), "b.png"));
    assert_eq!(found.findings.len(), 2, "{:?}", found.findings);
}

#[test]
fn a_pending_move_that_no_job_carries_on_is_found() {
    let env = env();
    let lib = library(&env, "photos", &[("a.png", 10)]);
    let a = lib.asset(&env.store, "a.png");
    // Begun and its job cancelled by hand: the intent stays pending with no one to carry it.
    let begun = env.store.begin_trash(a, TTL).expect("begin");
    let mediadex::model::Begun::Held(lease, _) = begun else {
        panic!("nothing to move")
    };
    assert!(env.store.cancel(Target::Job, lease.id).expect("cancel"));
    let found = check(&env);
    let orphan = of_kind(&found, FindingKind::MoveOrphaned);
    assert_eq!(orphan.len(), 1, "{:?}", found.findings);
    assert_eq!(orphan[0].0, Some(a));
    assert!(
        orphan[0].2.contains("no one is carrying it on"),
        "{}",
        orphan[0].2
    );
}

#[test]
fn a_file_in_a_trash_folder_that_nothing_explains_is_found() {
    let env = env();
    let lib = library(&env, "photos", &[("a.png", 10)]);
    photo(&lib.root.join(".mediadex-trash/7/holidays/x.png"), 50);
    let found = check(&env);
    let stray = of_kind(&found, FindingKind::TrashUnexplained);
    assert_eq!(stray.len(), 1, "{:?}", found.findings);
    assert_eq!(stray[0].1, ".mediadex-trash/7/holidays/x.png");
    assert_eq!(
        stray[0].2,
        "photos/.mediadex-trash/7/holidays/x.png is in the trash folder but the index knows \
         nothing of it"
    );
    assert_eq!(found.findings.len(), 1, "{:?}", found.findings);
}

#[test]
fn a_pending_asset_whose_run_no_longer_exists_is_found_as_stranded() {
    let env = env();
    let lib = library(&env, "photos", &[("a.png", 10)]);
    let a = lib.asset(&env.store, "a.png");
    // What a removed library's run or a pruned run leaves behind (defect 2).
    (env.sql())
        .execute(
            "UPDATE assets SET pending_run = 9999 WHERE id = ?1",
            &[a.into()],
        )
        .expect("plant");
    let found = check(&env);
    let stranded = of_kind(&found, FindingKind::Stranded);
    assert_eq!(stranded.len(), 1, "{:?}", found.findings);
    assert_eq!(
        stranded[0].2,
        format!("asset {a} is waiting to be published by a scan that no longer exists")
    );
}

#[test]
fn a_library_that_is_away_is_said_once_and_skipped() {
    let env = env();
    let lib = library(&env, "photos", &[("a.png", 10), ("b.png", 20)]);
    let away = lib.root.with_file_name("photos-unmounted");
    std::fs::rename(&lib.root, &away).expect("unmount");
    let found = check(&env);
    assert_eq!(kinds(&found), [FindingKind::LibraryAway], "{found:?}");
    assert!(
        found.findings[0].message.contains("is away"),
        "{}",
        found.findings[0].message
    );
    assert_eq!(found.findings[0].library_id, Some(lib.id));
}

/// Every file under `root` with its content (path -> digest).
fn tree(root: &Path) -> BTreeMap<PathBuf, support::Digest> {
    walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| (e.path().to_path_buf(), support::digest(e.path())))
        .collect()
}

/// Closes the store, sets its database aside (as `store::move_aside` does with a damaged one)
/// and starts a fresh index on the same path, with the library added again and not yet
/// scanned (a completed full scan adopts the trash folder too: `heal::`).
fn fresh_index(env: Env, name: &str, root: &Path) -> (Env, i64) {
    let Env {
        dir,
        clock,
        store,
        pg,
    } = env;
    drop(store);
    let db = dir.path().join("mediadex.db");
    for suffix in ["", "-wal", "-shm"] {
        let from = support::sibling(&db, suffix);
        if from.exists() {
            std::fs::rename(&from, support::sibling(&db, &format!(".damaged{suffix}")))
                .expect("set aside");
        }
    }
    let store = Store::open(&db, clock.clone(), support::options()).expect("fresh index");
    let env = Env {
        dir,
        clock,
        store,
        pg,
    };
    let id = mediadex::app::add_library(&env.store, name, &root.to_string_lossy())
        .expect("add again")
        .id;
    (env, id)
}

#[test]
fn repair_adopts_the_trash_folder_of_an_index_set_aside_and_restore_puts_the_photo_back() {
    let env = env();
    let lib = library(&env, "photos", &[("holidays/a.png", 10), ("b.png", 20)]);
    let a = lib.asset(&env.store, "holidays/a.png");
    mediadex::trash::trash(&env.store, a).expect("trash");
    let original = support::digest(&support::trashed_to(
        &env.store,
        &lib.root,
        a,
        "holidays/a.png",
    ));
    assert!(original.is_some());
    let (env, lib_id) = fresh_index(env, "photos", &lib.root);
    assert!(env.store.assets(true).expect("trash").is_empty());

    let found = check(&env);
    assert_eq!(kinds(&found), [FindingKind::TrashUnexplained], "{found:?}");
    let repaired = ops::check::repair(&services(&env)).expect("repair");
    let adopted: Vec<_> = (repaired.done.iter())
        .filter(|r| r.kind == RepairKind::Adopted)
        .collect();
    assert_eq!(adopted.len(), 1, "{:?}", repaired.done);
    let asset = adopted[0].asset_id.expect("the adopted asset");
    assert!(
        adopted[0].message.contains("holidays/a.png"),
        "{}",
        adopted[0].message
    );

    // Trash lists it, with the library path it came from.
    let trash = env.store.assets(true).expect("trash");
    assert_eq!(trash.iter().map(|t| t.id).collect::<Vec<_>>(), [asset]);
    assert_eq!(trash[0].paths[0].rel_path, b"holidays/a.png");
    assert!(check(&env).findings.is_empty(), "{:?}", check(&env));

    // Restore moves it back where it was, and the index agrees with the disk.
    let outcome = mediadex::trash::restore(&env.store, asset).expect("restore");
    assert_eq!(outcome, mediadex::model::MoveOutcome::Restored);
    assert_eq!(support::digest(&lib.root.join("holidays/a.png")), original);
    let live = env.store.asset(asset).expect("asset").expect("row");
    assert!(live.trashed_at.is_none());
    scan_now(&env, lib_id, "");
    assert!(check(&env).findings.is_empty(), "{:?}", check(&env));
    assert_eq!(
        env.store.assets(false).expect("live").len(),
        2,
        "the restored photo is one asset, not a second"
    );
}

#[test]
fn repair_never_deletes_or_overwrites_a_file() {
    let env = env();
    let lib = library(
        &env,
        "photos",
        &[("a.png", 10), ("b.png", 20), ("c.png", 30), ("d.png", 40)],
    );
    let (b, c) = (
        lib.asset(&env.store, "b.png"),
        lib.asset(&env.store, "c.png"),
    );
    mediadex::trash::trash(&env.store, b).expect("trash b");
    mediadex::trash::trash(&env.store, c).expect("trash c");
    let in_trash = |asset: i64, rel: &str| support::trashed_to(&env.store, &lib.root, asset, rel);
    // Every kind of disagreement at once: a file gone, one changed, a trashed file moved
    // back by hand, a stray photo in the trash whose original place is taken, a stray file
    // that is no photo, and a stray copy of a live photo.
    std::fs::remove_file(lib.root.join("a.png")).expect("rm");
    photo(&lib.root.join("d.png"), 41);
    std::fs::rename(in_trash(c, "c.png"), lib.root.join("c.png")).expect("mv back");
    photo(&lib.root.join(".mediadex-trash/90/d.png"), 77);
    std::fs::create_dir_all(lib.root.join(".mediadex-trash/91")).expect("mkdir");
    std::fs::write(lib.root.join(".mediadex-trash/91/notes.txt"), b"hello").expect("txt");
    std::fs::create_dir_all(lib.root.join(".mediadex-trash/92")).expect("mkdir");
    std::fs::copy(
        in_trash(b, "b.png"),
        lib.root.join(".mediadex-trash/92/b.png"),
    )
    .expect("cp");

    let before = tree(&lib.root);
    let repaired = ops::check::repair(&services(&env)).expect("repair");
    assert!(!repaired.found.is_empty());
    let after = tree(&lib.root);
    assert_eq!(
        before, after,
        "repair changed the folder: {:?}",
        repaired.done
    );
    let left: Vec<_> = (repaired.done.iter())
        .filter(|r| r.kind == RepairKind::Left)
        .map(|r| r.message.clone())
        .collect();
    assert_eq!(left.len(), 3, "{left:?}");
}

#[test]
fn repair_publishes_a_stranded_asset() {
    let env = env();
    let lib = library(&env, "photos", &[("a.png", 10), ("b.png", 20)]);
    let a = lib.asset(&env.store, "a.png");
    (env.sql())
        .execute(
            "UPDATE assets SET pending_run = 9999 WHERE id = ?1",
            &[a.into()],
        )
        .expect("plant");
    assert_eq!(env.store.assets(false).expect("live").len(), 1);
    let repaired = ops::check::repair(&services(&env)).expect("repair");
    assert!(
        (repaired.done.iter()).any(|r| r.kind == RepairKind::Published && r.asset_id == Some(a)),
        "{:?}",
        repaired.done
    );
    assert_eq!(env.store.assets(false).expect("live").len(), 2);
    assert!(check(&env).findings.is_empty(), "{:?}", check(&env));
}

#[test]
fn repair_requeues_an_orphaned_move_and_carries_it_on_under_a_lease() {
    let env = env();
    let lib = library(&env, "photos", &[("a.png", 10)]);
    let a = lib.asset(&env.store, "a.png");
    let mediadex::model::Begun::Held(lease, _) = env.store.begin_trash(a, TTL).expect("begin")
    else {
        panic!("nothing to move")
    };
    assert!(env.store.cancel(Target::Job, lease.id).expect("cancel"));
    let repaired = ops::check::repair(&services(&env)).expect("repair");
    assert!(
        (repaired.done.iter()).any(|r| r.kind == RepairKind::MoveRequeued),
        "{:?}",
        repaired.done
    );
    // A command without workers carries the move on itself: the photo is in the trash.
    assert!(
        env.store
            .live_job(&format!("{MOVE_JOB_KIND}:{a}"))
            .expect("job")
            .is_none()
    );
    let asset = env.store.asset(a).expect("asset").expect("row");
    assert!(asset.trashed_at.is_some());
    assert!(support::trashed_to(&env.store, &lib.root, a, "a.png").exists());
    assert!(check(&env).findings.is_empty(), "{:?}", check(&env));
}

#[test]
fn repair_asks_for_a_full_scan_of_each_present_library_only() {
    let env = env();
    let here = library(&env, "here", &[("a.png", 10)]);
    let away = library(&env, "away", &[("b.png", 20)]);
    std::fs::remove_file(here.root.join("a.png")).expect("rm");
    std::fs::rename(&away.root, away.root.with_file_name("away-unmounted")).expect("unmount");
    let repaired = ops::check::repair(&services(&env)).expect("repair");
    let scans: Vec<_> = (repaired.done.iter())
        .filter(|r| r.kind == RepairKind::ScanRequested)
        .map(|r| r.library_id)
        .collect();
    assert_eq!(scans, [Some(here.id)], "{:?}", repaired.done);
    let waiting = env.store.scan_runs(Some(here.id), 1).expect("runs");
    assert!(!waiting[0].state.is_terminal(), "{waiting:?}");
    assert!(
        env.store.scan_runs(Some(away.id), 1).expect("runs")[0]
            .state
            .is_terminal()
    );
}

#[test]
fn check_json_in_the_cli_names_each_finding_with_its_kind_words_and_path() {
    let env = env();
    let lib = library(&env, "photos", &[("a.png", 10)]);
    photo(&lib.root.join(".mediadex-trash/7/x.png"), 50);
    let out = env.cli_json(&["check", "--json"]);
    let findings = out["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 1, "{out}");
    assert_eq!(findings[0]["kind"], "trash_unexplained");
    assert_eq!(findings[0]["library_id"], lib.id);
    assert_eq!(findings[0]["path"], ".mediadex-trash/7/x.png");
    assert!(findings[0]["asset_id"].is_null());
    assert!(
        findings[0]["message"]
            .as_str()
            .expect("words")
            .contains("knows nothing")
    );
    assert_eq!(out["libraries"], 1);

    let out = env.cli_json(&["check", "--repair", "--json"]);
    assert_eq!(out["found"].as_array().expect("found").len(), 1, "{out}");
    let done = out["done"].as_array().expect("done");
    assert!(done.iter().any(|d| d["kind"] == "adopted"), "{out}");
    let again = env.cli_json(&["check", "--json"]);
    assert_eq!(again["findings"], serde_json::json!([]), "{again}");
}

#[test]
fn check_in_words_says_what_disagrees_and_that_all_is_well() {
    let env = env();
    let lib = library(&env, "photos", &[("a.png", 10)]);
    let ok = (env.cli()).arg("check").output().expect("run");
    assert!(ok.status.success());
    let text = String::from_utf8_lossy(&ok.stdout);
    assert!(text.contains("the index agrees with the disk"), "{text}");
    std::fs::remove_file(lib.root.join("a.png")).expect("rm");
    let out = (env.cli()).arg("check").output().expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("a.png is missing"), "{text}");
    assert!(text.contains("mediadex check --repair"), "{text}");
}

/// A request as the page sends it: Host set, and the custom header on a write when `page`.
fn request(method: Method, uri: &str, page: bool) -> Request<Body> {
    let mut b = Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "127.0.0.1:7468");
    if page {
        b = b.header("x-mediadex", "1");
    }
    b.body(Body::empty()).expect("request")
}

#[test]
fn the_api_checks_and_repairs_and_a_repair_needs_the_page_or_the_token() {
    support::block_on(async {
        let env = env();
        let lib = library(&env, "photos", &[("a.png", 10)]);
        photo(&lib.root.join(".mediadex-trash/7/x.png"), 50);
        let (_stop, stop_rx) = support::Stop::channel();
        let security = mediadex::http::Security::for_bind(
            "127.0.0.1:7468".parse().expect("addr"),
            Some("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef".into()),
            false,
        );
        let config = mediadex::http::HttpConfig {
            security,
            thumbs: mediadex::thumbs::Thumbs::with_ffmpeg(env.dir.path(), None),
            event_poll: std::time::Duration::from_millis(10),
            ops: Services {
                without_workers: false,
                ..services(&env)
            },
        };
        let state = support::app_state(config, stop_rx);
        let router = mediadex::http::router(state);
        let send = |r: Request<Body>| {
            let router = router.clone();
            async move {
                let (parts, body) = support::respond(&router, r, 1 << 20).await;
                let status = parts.status;
                let json: serde_json::Value = serde_json::from_slice(&body).expect("json");
                (status, json)
            }
        };
        let (status, found) = send(request(Method::GET, "/api/check", false)).await;
        assert_eq!(status, StatusCode::OK, "{found}");
        assert_eq!(found["findings"][0]["kind"], "trash_unexplained", "{found}");
        assert_eq!(found["findings"][0]["path"], ".mediadex-trash/7/x.png");

        let (status, refused) = send(request(Method::POST, "/api/check/repair", false)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
        assert!(env.store.assets(true).expect("trash").is_empty());

        let (status, repaired) = send(request(Method::POST, "/api/check/repair", true)).await;
        assert_eq!(status, StatusCode::OK, "{repaired}");
        assert_eq!(repaired["done"][0]["kind"], "adopted", "{repaired}");
        assert_eq!(env.store.assets(true).expect("trash").len(), 1);
        let (_, again) = send(request(Method::GET, "/api/check", false)).await;
        assert_eq!(again["findings"], serde_json::json!([]), "{again}");
    })
}

/// A trash folder of the old layout (`<asset id>/<path>`, from before a trash folder was a
/// move's own) is adopted with the path it came from (one starting with a folder of digits
/// too), read where it is, and restored there.
#[test]
fn an_old_layout_trash_folder_is_adopted_located_and_restored() {
    let env = env();
    let lib = library(&env, "photos", &[("a.png", 10)]);
    let old = lib.root.join(".mediadex-trash/7/2024/x.png");
    photo(&old, 50);
    let bytes = std::fs::read(&old).expect("the old trash file");
    let repaired = ops::check::repair(&services(&env)).expect("repair");
    let adopted = (repaired.done.iter())
        .find(|r| r.kind == RepairKind::Adopted)
        .and_then(|r| r.asset_id)
        .expect("adopted");
    let files = env.store.asset_files(adopted).expect("files");
    assert_eq!(files[0].rel_path, b"2024/x.png");
    let asset = mediadex::model::WalkAsset {
        id: adopted,
        checksum: [0; 32],
        trashed: true,
        files,
        timed_out: None,
        same_pixels: None,
        known: None,
    };
    assert_eq!(mediadex::locate::locate(&asset), Ok(old.clone()));
    let outcome = mediadex::trash::restore(&env.store, adopted).expect("restore");
    assert_eq!(outcome, mediadex::model::MoveOutcome::Restored);
    assert_eq!(std::fs::read(lib.root.join("2024/x.png")).ok(), Some(bytes));
    assert!(!old.exists());
}

/// A trash folder adopted from an index set aside names its move (`<asset>-<move>`): the
/// fresh index numbers its own moves above it, so no later trash folder has its name.
#[test]
fn moves_after_an_adoption_are_numbered_above_the_move_its_folder_names() {
    let env = env();
    let lib = library(&env, "photos", &[("a.png", 10)]);
    photo(&lib.root.join(".mediadex-trash/3-40/x.png"), 50);
    let repaired = ops::check::repair(&services(&env)).expect("repair");
    assert!(
        (repaired.done.iter()).any(|r| r.kind == RepairKind::Adopted),
        "{:?}",
        repaired.done
    );
    let a = lib.asset(&env.store, "a.png");
    mediadex::trash::trash(&env.store, a).expect("trash");
    assert_eq!(
        support::trashed_to(&env.store, &lib.root, a, "a.png"),
        lib.root.join(format!(".mediadex-trash/{a}-41/a.png"))
    );
}

/// A photo adopted from the trash folder of an index set aside (here by the fresh index's
/// first full scan; `check --repair` adopts the same way) gets a new id, so its trash
/// folder is not named by it: the page shows its real thumbnail and original all the same,
/// read where the journal says the file is (not a placeholder from a path guessed by id).
#[test]
fn a_photo_adopted_from_a_trash_folder_shows_its_real_thumbnail_and_original() {
    support::block_on(async {
        let env = env();
        let lib = library(&env, "photos", &[("holidays/a.png", 10), ("b.png", 20)]);
        let old = lib.asset(&env.store, "holidays/a.png");
        mediadex::trash::trash(&env.store, old).expect("trash");
        let moved = env.store.check_trashed_files_of(old).expect("journal");
        let in_trash = lib
            .root
            .join(String::from_utf8_lossy(&moved[0].to_path).as_ref());
        let bytes = std::fs::read(&in_trash).expect("the trashed file");
        // Photos added since: the fresh index gives them the low ids.
        for (i, shade) in [(1, 30), (2, 40), (3, 50)] {
            photo(&lib.root.join(format!("new{i}.png")), shade);
        }
        // The fresh index's first full scan indexes them first, then adopts the trash folder.
        let (env, lib_id) = fresh_index(env, "photos", &lib.root);
        scan_now(&env, lib_id, "");
        let trash = env.store.assets(true).expect("trash");
        assert_eq!(trash.len(), 1, "adopted: {trash:?}");
        let adopted = trash[0].id;
        assert_ne!(adopted, old, "the adopted photo has a new id");

        let (_stop, stop_rx) = support::Stop::channel();
        let config = mediadex::http::HttpConfig {
            security: mediadex::http::Security::for_bind(
                "127.0.0.1:7468".parse().expect("addr"),
                None,
                false,
            ),
            thumbs: mediadex::thumbs::Thumbs::with_ffmpeg(env.dir.path(), None),
            event_poll: std::time::Duration::from_millis(10),
            ops: services(&env),
        };
        let state = support::app_state(config, stop_rx);
        let router = mediadex::http::router(state);
        let get = |uri: String| {
            let router = router.clone();
            async move {
                let (parts, body) =
                    support::respond(&router, request(Method::GET, &uri, false), 1 << 24).await;
                let (status, headers) = (parts.status, parts.headers);
                (status, headers, body)
            }
        };
        let (status, headers, _) = get(format!("/api/assets/{adopted}/thumbnail")).await;
        assert_eq!(status, StatusCode::OK);
        let cache = headers.get("cache-control").expect("cache-control");
        assert!(
            cache.to_str().expect("text").contains("immutable"),
            "a placeholder, not its thumbnail: {cache:?}"
        );
        let (status, _, body) = get(format!("/api/assets/{adopted}/original")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            body.as_ref(),
            &bytes[..],
            "its original is the trashed file"
        );
    })
}

#[test]
fn a_live_photo_whose_file_sits_in_the_trash_folder_says_where_it_is() {
    let env = env();
    let lib = library(&env, "photos", &[("a.png", 10)]);
    let a = lib.asset(&env.store, "a.png");
    mediadex::trash::trash(&env.store, a).expect("trash");
    // A restore that reported success and moved nothing (defect 3) leaves this behind.
    (env.sql())
        .execute(
            "UPDATE assets SET trashed_at = NULL, trash_reason = NULL WHERE id = ?1",
            &[a.into()],
        )
        .expect("plant");
    let found = check(&env);
    let live = of_kind(&found, FindingKind::LiveWithoutFile);
    assert_eq!(live.len(), 1, "{:?}", found.findings);
    assert_eq!(
        live[0].2,
        format!(
            "photo {a} is shown as live but none of its files is on disk: photos/a.png is \
             missing; it is in the trash folder: photos/.mediadex-trash/{a}-1/a.png"
        )
    );
}

#[test]
fn a_photo_trashed_as_missing_whose_file_is_back_is_found() {
    let env = env();
    // Six files: one missing stays under the circuit breaker's share.
    let files: Vec<(String, u8)> = (0..6).map(|i| (format!("{i}.png"), 20 + i)).collect();
    let mut files: Vec<(&str, u8)> = files.iter().map(|(p, s)| (p.as_str(), *s)).collect();
    files.push(("a.png", 10));
    let lib = library(&env, "photos", &files);
    let a = lib.asset(&env.store, "a.png");
    let kept = std::fs::read(lib.root.join("a.png")).expect("read");
    std::fs::remove_file(lib.root.join("a.png")).expect("rm");
    scan_now(&env, lib.id, "");
    assert!(
        env.store
            .asset(a)
            .expect("asset")
            .expect("row")
            .trashed_at
            .is_some()
    );
    std::fs::write(lib.root.join("a.png"), kept).expect("put back");
    let found = check(&env);
    let back = of_kind(&found, FindingKind::TrashBack);
    assert_eq!(back.len(), 1, "{:?}", found.findings);
    assert_eq!((back[0].0, back[0].1.as_str()), (Some(a), "a.png"));
    assert_eq!(
        back[0].2,
        format!(
            "photo {a} is in the trash but there is a file at its place in the library again: \
             photos/a.png (the next scan reads it)"
        )
    );
    assert_eq!(found.findings.len(), 1, "{:?}", found.findings);
}

#[test]
fn repair_adopts_a_photo_trashed_with_two_copies_as_one_photo_that_restores_both() {
    let env = env();
    let lib = library(&env, "photos", &[("a.png", 10), ("b.png", 20)]);
    std::fs::create_dir_all(lib.root.join("copies")).expect("mkdir");
    std::fs::copy(lib.root.join("a.png"), lib.root.join("copies/a.png")).expect("copy");
    scan_now(&env, lib.id, "");
    let a = lib.asset(&env.store, "a.png");
    assert_eq!(
        lib.asset(&env.store, "copies/a.png"),
        a,
        "one asset, two files"
    );
    mediadex::trash::trash(&env.store, a).expect("trash");
    let (env, _) = fresh_index(env, "photos", &lib.root);

    let repaired = ops::check::repair(&services(&env)).expect("repair");
    let kinds: Vec<RepairKind> = repaired.done.iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        [
            RepairKind::Adopted,
            RepairKind::Adopted,
            RepairKind::ScanRequested
        ],
        "{:?}",
        repaired.done
    );
    let trash = env.store.assets(true).expect("trash");
    assert_eq!(trash.len(), 1, "{trash:?}");
    assert!(check(&env).findings.is_empty(), "{:?}", check(&env));
    mediadex::trash::restore(&env.store, trash[0].id).expect("restore");
    assert!(lib.root.join("a.png").is_file());
    assert!(lib.root.join("copies/a.png").is_file());
    assert!(trash_files_left(&lib.root).is_empty());
}

/// The files left in a library's trash folder.
fn trash_files_left(root: &Path) -> Vec<PathBuf> {
    tree(&root.join(".mediadex-trash")).into_keys().collect()
}

#[test]
fn a_scan_that_cannot_be_asked_for_is_said_and_the_rest_of_the_repair_stands() {
    let env = env();
    let lib = library(&env, "photos", &[("a.png", 10)]);
    photo(&lib.root.join(".mediadex-trash/7/x.png"), 50);
    // The library had its one scan of the hour already.
    let limited = Services {
        hourly_limit: Some(1),
        ..services(&env)
    };
    let repaired = ops::check::repair(&limited).expect("repair");
    let kinds: Vec<RepairKind> = repaired.done.iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        [RepairKind::Adopted, RepairKind::Left],
        "{repaired:?}"
    );
    assert!(
        repaired.done[1]
            .message
            .starts_with("a full scan of photos could not be asked for: "),
        "{}",
        repaired.done[1].message
    );
    assert_eq!(env.store.assets(true).expect("trash").len(), 1);
}

#[cfg(unix)]
#[test]
fn a_trash_folder_file_whose_name_is_not_text_is_adopted_and_restored_byte_exact() {
    let env = env();
    let lib = library(&env, "photos", &[("a.png", 10)]);
    let stray = support::join_bytes(&lib.root, b".mediadex-trash/7/caf\xe9.png");
    photo(&stray, 60);
    let content = support::digest(&stray);
    let out = env.cli_json(&["check", "--json"]);
    let finding = &out["findings"][0];
    assert_eq!(
        support::json_path_bytes(&finding["path"], &finding["path_bytes"]),
        b".mediadex-trash/7/caf\xe9.png"
    );
    let repaired = ops::check::repair(&services(&env)).expect("repair");
    let asset = (repaired.done.iter())
        .find(|r| r.kind == RepairKind::Adopted)
        .and_then(|r| r.asset_id)
        .expect("adopted");
    mediadex::trash::restore(&env.store, asset).expect("restore");
    assert_eq!(
        support::digest(&support::join_bytes(&lib.root, b"caf\xe9.png")),
        content
    );
    assert!(!stray.exists());
}
