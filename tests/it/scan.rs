//! A library scanned end to end through the worker pool: provenance reasons, duplicates,
//! unchanged rescans, renames and deletes, the circuit breaker and cancellation; a walker
//! that fails; restores and moves while the walk runs; the index healing itself; files
//! that stop being media.

use crate::support;

use mediadex::model::{
    Asset, Begun, FileState, Provenance, RunState, ScanEnd, ScanRun, Target, TrashReason, Unseen,
};
use mediadex::queue::PoolConfig;
use mediadex::scan::job::{ScanConfig, ScanJob};
use mediadex::scan::pipeline::Settings;
use mediadex::scan::walk::{WalkHook, WalkPoint};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{Env, TTL, env};

fn photo(path: &Path, shade: u8) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    image::RgbImage::from_pixel(8, 6, image::Rgb([shade, 10, 20]))
        .save(path)
        .expect("write png");
}

struct Lib<'a> {
    env: &'a Env,
    id: i64,
    root: std::path::PathBuf,
}

fn library(env: &Env) -> Lib<'_> {
    let root = env.dir.path().join("photos");
    photo(&root.join("2024/a.png"), 1);
    photo(&root.join("2024/b.png"), 2);
    photo(&root.join("2024/trip/c.png"), 3);
    photo(&root.join("d.png"), 4);
    photo(&root.join("e.png"), 5);
    std::fs::copy(root.join("2024/a.png"), root.join("copy-of-a.png")).expect("copy");
    std::fs::write(root.join("notes.txt"), "not a photo").expect("notes");
    photo(&root.join("@eaDir/a.png/SYNOPHOTO_THUMB_M.png"), 9);
    let canonical = std::fs::canonicalize(&root).expect("canon");
    let library = mediadex::app::add_library(&env.store, "photos", &canonical.to_string_lossy())
        .expect("add");
    Lib {
        env,
        id: library.id,
        root: canonical,
    }
}

impl Lib<'_> {
    fn scan_with(&self, scope: &str, config: ScanConfig) -> (ScanRun, BTreeMap<&'static str, i64>) {
        let done = support::scan_now_with(self.env, self.id, scope, config);
        let reasons = self
            .env
            .store
            .run_reasons(done.id)
            .expect("reasons")
            .into_iter()
            .filter(|&(_, n)| n > 0)
            .map(|(p, n)| (p.as_str(), n))
            .collect();
        (done, reasons)
    }

    fn scan(&self) -> (ScanRun, BTreeMap<&'static str, i64>) {
        self.scan_with("", ScanConfig::default())
    }

    fn assets(&self, trashed: bool) -> Vec<Asset> {
        self.env.store.assets(trashed).expect("assets")
    }

    fn paths_of<'b>(&self, asset: &'b Asset) -> Vec<&'b str> {
        asset
            .paths
            .iter()
            .map(|p| p.rel_path_text.as_str())
            .collect()
    }
}

#[test]
fn a_first_scan_indexes_photos_once_with_their_duplicates_and_skips_junk() {
    let env = env();
    let lib = library(&env);
    let (run, reasons) = lib.scan();
    assert_eq!(run.state, RunState::Completed);
    assert_eq!(reasons, BTreeMap::from([("new", 7), ("duplicate", 1)]));
    let assets = lib.assets(false);
    assert_eq!(
        assets.len(),
        5,
        "six photos, one a byte copy; the text file is no asset"
    );
    let a = assets
        .iter()
        .find(|a| lib.paths_of(a).contains(&"2024/a.png"))
        .expect("a");
    assert_eq!(lib.paths_of(a), vec!["2024/a.png", "copy-of-a.png"]);
    assert_eq!(a.facts.mime.as_deref(), Some("image/png"));
    assert_eq!((a.facts.width, a.facts.height), (Some(8), Some(6)));
    assert!(
        assets
            .iter()
            .all(|a| !lib.paths_of(a).iter().any(|p| p.contains("@eaDir")))
    );
    assert_eq!(env.store.duplicates().expect("dups").len(), 1);
}

#[test]
fn an_unchanged_rescan_reads_nothing_and_changes_nothing() {
    let env = env();
    let lib = library(&env);
    lib.scan();
    let before = lib.assets(false);
    let (run, reasons) = lib.scan();
    assert_eq!(run.state, RunState::Completed);
    assert_eq!(
        reasons,
        BTreeMap::from([("unchanged", 7)]),
        "no file was read"
    );
    let progress: serde_json::Value =
        serde_json::from_str(run.progress.as_deref().expect("progress")).expect("json");
    assert_eq!(progress["changed"], 0);
    assert_eq!(lib.assets(false), before);
}

/// Small batches, so that a cost paid per batch would show as clearly as one paid per file.
fn small_batches() -> ScanConfig {
    ScanConfig {
        pipeline: Settings {
            batch: 4,
            channel: 4,
            ..Settings::default()
        },
        ..ScanConfig::default()
    }
}

#[test]
fn an_unchanged_rescan_writes_no_row_per_file_or_per_batch() {
    let env = env();
    let lib = library(&env);
    for i in 0..60u8 {
        photo(&lib.root.join(format!("more/{}/{i}.png", i % 3)), 100 + i);
    }
    lib.scan_with("", small_batches());
    let before = env.store.write_stats();
    let (run, reasons) = lib.scan_with("", small_batches());
    let after = env.store.write_stats();
    assert_eq!(run.state, RunState::Completed);
    assert_eq!(reasons, BTreeMap::from([("unchanged", 67)]));
    // What is left is the run's own bookkeeping: its request, claim, first heartbeat and
    // fenced completion (with the `unchanged` count). 67 files in batches of 4 would cost
    // 17 writes and over 67 rows if anything were written per file or per batch.
    let (ops, rows) = (after.ops - before.ops, after.rows - before.rows);
    assert!(ops <= 6, "{ops} write operations for an unchanged rescan");
    assert!(rows <= 12, "{rows} rows written for an unchanged rescan");
}

#[test]
fn touch_grow_rename_and_delete_give_their_reasons_and_asset_links() {
    let env = env();
    let lib = library(&env);
    for i in 0..10 {
        photo(&lib.root.join(format!("more/{i}.png")), 100 + i);
    }
    lib.scan();
    let d = lib.root.join("d.png");
    let f = std::fs::File::options().write(true).open(&d).expect("open");
    f.set_modified(std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000))
        .expect("touch");
    photo(&lib.root.join("e.png"), 6); // new content, new size or bytes
    std::fs::rename(
        lib.root.join("2024/b.png"),
        lib.root.join("2024/b-renamed.png"),
    )
    .expect("rename");
    std::fs::remove_file(lib.root.join("copy-of-a.png")).expect("rm copy");
    let (run, reasons) = lib.scan();
    assert_eq!(run.state, RunState::Completed);
    let changed = reasons.get("mtime").unwrap_or(&0) + reasons.get("size").unwrap_or(&0);
    assert_eq!(
        changed, 2,
        "the touched and the rewritten file: {reasons:?}"
    );
    assert_eq!(reasons.get("new"), Some(&1), "the renamed file");
    assert_eq!(
        reasons.get("missing"),
        Some(&2),
        "the old name and the deleted copy"
    );
    let live = lib.assets(false);
    let b = live
        .iter()
        .find(|a| lib.paths_of(a).contains(&"2024/b-renamed.png"))
        .expect("renamed b keeps its asset");
    assert!(
        b.paths.iter().any(|p| p.rel_path_text == "2024/b.png"),
        "old path kept as missing"
    );
    let trashed = lib.assets(true);
    assert_eq!(trashed.len(), 1, "only e's old content lost its last file");
}

#[test]
fn the_breaker_holds_when_the_marker_changes_or_too_much_goes_missing() {
    let env = env();
    let lib = library(&env);
    lib.scan();
    std::fs::write(lib.root.join(".mediadex-library"), "another-disk\n").expect("marker");
    std::fs::remove_file(lib.root.join("d.png")).expect("rm");
    let (run, reasons) = lib.scan();
    assert_eq!(run.state, RunState::Suspect);
    assert!(run.reason.expect("reason").contains("marker"));
    assert_eq!(reasons.get("missing"), None);
    assert!(lib.assets(true).is_empty(), "nothing trashed");

    let env2 = support::env();
    let lib2 = library(&env2);
    lib2.scan();
    for p in ["d.png", "e.png", "2024/a.png", "copy-of-a.png"] {
        std::fs::remove_file(lib2.root.join(p)).expect("rm");
    }
    let (run, _) = lib2.scan();
    assert_eq!(run.state, RunState::Suspect, "over 20% would go missing");
    assert!(lib2.assets(true).is_empty());
}

#[test]
fn an_unmounted_root_trashes_nothing() {
    let env = env();
    let lib = library(&env);
    lib.scan();
    let away = env.dir.path().join("unmounted");
    std::fs::rename(&lib.root, &away).expect("unmount");
    let (run, _) = lib.scan();
    assert_eq!(run.state, RunState::Suspect);
    assert!(run.reason.expect("reason").contains("not there"));
    std::fs::rename(&away, &lib.root).expect("remount");
    assert!(lib.assets(true).is_empty());
    assert_eq!(lib.scan().0.state, RunState::Completed);
}

#[test]
fn a_scoped_scan_reads_only_its_folder_and_marks_nothing_missing() {
    let env = env();
    let lib = library(&env);
    lib.scan();
    std::fs::remove_file(lib.root.join("d.png")).expect("rm");
    photo(&lib.root.join("2024/trip/new.png"), 42);
    let (run, reasons) = lib.scan_with("2024/trip", ScanConfig::default());
    assert_eq!(run.state, RunState::Completed);
    assert_eq!(reasons, BTreeMap::from([("new", 1), ("unchanged", 1)]));
    assert!(lib.assets(true).is_empty());
}

/// Keeps the cancelled scan busy long enough that the cancel lands mid-way on any machine.
fn slow_extract(path: &Path, bytes: Option<&[u8]>) -> mediadex::model::MediaFacts {
    std::thread::sleep(Duration::from_millis(3));
    mediadex::media::extract_from(path, bytes)
}

#[test]
fn a_cancelled_scan_stops_and_what_it_committed_stays_consistent() {
    // Each batch of 8 commits on its own (a write group of one batch), so that progress
    // shows, and the cancel lands, while most of the library is still to be read.
    let env = support::env_with(mediadex::store::StoreOptions {
        group_limits: mediadex::store::GroupLimits {
            weight: 8,
            age: Duration::from_secs(1),
        },
        ..support::options()
    });
    let lib = library(&env);
    for i in 0..400 {
        photo(
            &lib.root.join(format!("bulk/{}/{i}.png", i % 10)),
            (i % 200) as u8,
        );
    }
    let job = ScanJob {
        store: env.store.clone(),
        config: ScanConfig {
            pipeline: mediadex::scan::pipeline::Settings {
                batch: 8,
                ..Default::default()
            },
            ..ScanConfig::default()
        },
        extract: slow_extract,
    };
    let (run, pool) = support::start_scan(&env, lib.id, "", job, PoolConfig::with_ttl(1, TTL));
    let start = Instant::now();
    while env
        .store
        .scan_run(run.id)
        .expect("run")
        .expect("row")
        .progress
        .is_none()
    {
        assert!(start.elapsed() < Duration::from_secs(20));
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(
        env.other_process("cli:1:cccc")
            .cancel(Target::ScanRun, run.id)
            .expect("cancel")
    );
    let cancelled_at = Instant::now();
    while pool.busy() > 0 {
        assert!(
            cancelled_at.elapsed() < Duration::from_secs(2),
            "the worker stops within a second or so"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    pool.shutdown();
    let row = env.store.scan_run(run.id).expect("run").expect("row");
    assert_eq!(row.state, RunState::Cancelled);
    let counted: i64 = env
        .store
        .run_reasons(run.id)
        .expect("reasons")
        .iter()
        .filter(|(p, _)| *p != Provenance::Duplicate)
        .map(|(_, n)| n)
        .sum();
    let files: usize = lib.assets(false).iter().map(|a| a.paths.len()).sum();
    assert!(counted < 407, "stopped before the end ({counted})");
    assert!(
        files as i64 <= counted,
        "every stored file was counted by the run"
    );
}

#[test]
fn trash_and_restore_move_the_files_and_survive_rescans() {
    let env = env();
    let lib = library(&env);
    lib.scan();
    let d = lib
        .assets(false)
        .into_iter()
        .find(|a| lib.paths_of(a) == vec!["d.png"])
        .expect("d");
    mediadex::trash::trash(&env.store, d.id).expect("trash");
    assert!(!lib.root.join("d.png").exists());
    let in_trash = support::trashed_to(&env.store, &lib.root, d.id, "d.png");
    assert!(in_trash.exists(), "moved into the library's trash folder");
    assert_eq!(lib.assets(true).len(), 1);
    let (run, _) = lib.scan();
    assert_eq!(
        run.state,
        RunState::Completed,
        "a user's trash is not a mass disappearance"
    );
    assert_eq!(lib.assets(true).len(), 1, "still trashed after a rescan");

    mediadex::trash::restore(&env.store, d.id).expect("restore");
    assert!(lib.root.join("d.png").exists() && !in_trash.exists());
    assert!(lib.assets(true).is_empty());
    let (_, reasons) = lib.scan();
    assert_eq!(reasons.get("new"), None, "{reasons:?}");
    assert_eq!(lib.assets(false).len(), 5);
}

#[test]
fn an_interrupted_trash_is_carried_on_by_the_reclaimer_whether_or_not_the_file_moved() {
    let env = env();
    let lib = library(&env);
    lib.scan();
    let live = lib.assets(false);
    let pick = |name: &str| {
        live.iter()
            .find(|a| lib.paths_of(a) == vec![name])
            .expect("asset")
            .id
    };
    let (d, e) = (pick("d.png"), pick("e.png"));
    // A process dies after the intent, before the move:
    env.store.begin_trash(d, TTL).expect("intent d");
    // Another dies after the move, before the commit:
    let Begun::Held(_, held) = env.store.begin_trash(e, TTL).expect("intent e") else {
        panic!("nothing to move");
    };
    let to = lib
        .root
        .join(String::from_utf8(held.intents[0].to_path.clone()).expect("utf8"));
    std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
    std::fs::rename(lib.root.join("e.png"), &to).expect("move");

    let config = mediadex::trash::MoveConfig::default();
    assert_eq!(
        mediadex::trash::finish_abandoned(&env.store, &config).expect("live"),
        0
    );
    env.clock.advance(TTL);
    env.store.reclaim_stale().expect("reclaim");
    env.clock.advance(60_000);
    assert_eq!(
        mediadex::trash::finish_abandoned(&env.store, &config).expect("carry"),
        2
    );
    let trashed: Vec<i64> = lib.assets(true).iter().map(|a| a.id).collect();
    assert_eq!(trashed.len(), 2);
    assert!(trashed.contains(&d) && trashed.contains(&e));
    assert!(!lib.root.join("d.png").exists() && !lib.root.join("e.png").exists());
    assert!(env.store.pending_intents().expect("pending").is_empty());
}

impl Lib<'_> {
    /// The asset whose only path is `rel`.
    fn only(&self, rel: &str) -> Asset {
        let all = [self.assets(false), self.assets(true)].concat();
        all.into_iter()
            .find(|a| self.paths_of(a) == vec![rel])
            .unwrap_or_else(|| panic!("no asset shown by {rel} alone"))
    }

    /// The live asset a present `rel` shows, if any.
    fn live_at(&self, rel: &str) -> Option<Asset> {
        self.assets(false).into_iter().find(|a| {
            a.paths
                .iter()
                .any(|p| p.rel_path_text == rel && p.state == FileState::Present)
        })
    }

    /// A full scan whose walker calls `hook` as it enters and leaves each folder.
    fn scan_hooked(
        &self,
        hook: impl Fn(WalkPoint<'_>) + Send + Sync + 'static,
    ) -> (ScanRun, BTreeMap<&'static str, i64>) {
        let config = ScanConfig {
            pipeline: Settings {
                walk_hook: Some(WalkHook(Arc::new(hook))),
                ..Settings::default()
            },
            ..ScanConfig::default()
        };
        self.scan_with("", config)
    }
}

#[test]
fn a_walker_that_panics_fails_the_run_and_marks_nothing_missing() {
    let env = env();
    let lib = library(&env);
    // More entries than one chunk of the walker's channel, so that the reader has folders
    // open when the walker dies (a walker that dies before its first chunk shows nothing).
    for i in 0..300u32 {
        let path = lib.root.join(format!("bulk/{i}.png"));
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        image::RgbImage::from_pixel(2, 2, image::Rgb([(i % 256) as u8, (i / 256) as u8, 7]))
            .save(&path)
            .expect("png");
    }
    assert_eq!(lib.scan().0.state, RunState::Completed);
    let before = lib.assets(false);
    let panicking = ScanConfig {
        // The breaker is a separate guard: with it open, only the walker decides here.
        max_missing_share: 1.0,
        pipeline: Settings {
            walk_hook: Some(WalkHook(Arc::new(|at| {
                if at == WalkPoint::Left(Path::new("bulk")) {
                    panic!("injected walker failure");
                }
            }))),
            ..Settings::default()
        },
        ..ScanConfig::default()
    };
    let (run, reasons) = lib.scan_with("", panicking);
    assert_eq!(run.state, RunState::Failed, "{:?}", run.reason);
    let reason = run.reason.expect("a reason");
    assert!(reason.contains("injected walker failure"), "{reason}");
    let runs = env.store.scan_runs(Some(lib.id), 10).expect("runs");
    assert!(
        runs.iter().all(|r| r.predecessor_id != Some(run.id)),
        "a bug is permanent: no successor"
    );
    assert_eq!(reasons.get("missing"), None, "{reasons:?}");
    assert!(lib.assets(true).is_empty(), "nothing trashed");
    assert_eq!(lib.assets(false), before, "every file still present");
}

#[test]
fn a_restore_while_the_walk_runs_holds_after_the_completion() {
    let env = env();
    let lib = library(&env);
    lib.scan();
    let c = lib.only("2024/trip/c.png").id;
    mediadex::trash::trash(&env.store, c).expect("trash");
    // The trash left 2024/trip empty, and the user removed it: the walk finds the folder gone.
    std::fs::remove_dir(lib.root.join("2024/trip")).expect("rmdir");
    let store = env.store.clone();
    let (run, reasons) = lib.scan_hooked(move |at| {
        if at == WalkPoint::Left(Path::new("")) {
            // The walk has passed every folder; the restore puts 2024/trip/c.png back.
            mediadex::trash::restore(&store, c).expect("restore");
        }
    });
    assert_eq!(run.state, RunState::Completed, "{:?}", run.reason);
    assert!(lib.root.join("2024/trip/c.png").exists());
    assert_eq!(reasons.get("missing"), None, "{reasons:?}");
    let asset = env.store.asset(c).expect("read").expect("row");
    assert_eq!(asset.trashed_at, None, "the restore holds");
    assert_eq!(asset.paths[0].state, FileState::Present);
}

#[test]
fn a_file_moved_away_and_back_while_the_walk_runs_is_not_marked_missing() {
    let env = env();
    let lib = library(&env);
    lib.scan();
    let d = lib.only("d.png").id;
    let (here, aside) = (lib.root.join("d.png"), env.dir.path().join("aside.png"));
    let (run, reasons) = lib.scan_hooked(move |at| match at {
        // Away while the walk lists the root, back before the completion.
        WalkPoint::Entering(rel) if rel == Path::new("") => {
            std::fs::rename(&here, &aside).expect("away")
        }
        WalkPoint::Left(rel) if rel == Path::new("") => {
            std::fs::rename(&aside, &here).expect("back")
        }
        _ => {}
    });
    assert_eq!(run.state, RunState::Completed, "{:?}", run.reason);
    assert_eq!(reasons.get("missing"), None, "{reasons:?}");
    let asset = env.store.asset(d).expect("read").expect("row");
    assert_eq!(asset.trashed_at, None);
    assert_eq!(asset.paths[0].state, FileState::Present);
}

#[test]
fn a_row_a_restore_brought_back_during_the_run_is_not_marked_missing_by_its_completion() {
    let env = env();
    let lib = library(&env);
    lib.scan();
    let (d, c) = (lib.only("d.png"), lib.only("2024/trip/c.png"));
    mediadex::trash::trash(&env.store, d.id).expect("trash d");
    mediadex::trash::trash(&env.store, c.id).expect("trash c");
    env.store
        .request_scan(env.scan_request(lib.id, ""))
        .expect("request");
    let (lease, _) = env
        .store
        .claim_scan_run(TTL)
        .expect("claim")
        .expect("a run");
    // Both restores land after the walk looked: it found d.png absent and 2024/trip gone.
    mediadex::trash::restore(&env.store, d.id).expect("restore d");
    mediadex::trash::restore(&env.store, c.id).expect("restore c");
    let unseen = Unseen {
        files: vec![d.paths[0].file_id],
        dirs: vec![b"2024/trip".to_vec()],
    };
    let end = ScanEnd::breaker(0.5, true).unseen(unseen);
    let report = env
        .store
        .finish_full_scan(&lease, lib.id, end)
        .expect("finish");
    assert_eq!(report.state, RunState::Completed);
    assert_eq!((report.missing_files, report.trashed_assets), (0, 0));
    for id in [d.id, c.id] {
        let asset = env.store.asset(id).expect("read").expect("row");
        assert_eq!(asset.trashed_at, None, "asset {id}: the restore holds");
        assert_eq!(asset.paths[0].state, FileState::Present);
    }
}

#[test]
fn a_present_unchanged_file_whose_asset_is_trashed_is_restored_by_a_plain_scan() {
    let env = env();
    let lib = library(&env);
    lib.scan();
    let d = lib.only("d.png").id;
    // What the defective trash left behind: the asset trashed, its file still in place.
    (env.sql())
        .execute(
            "UPDATE assets SET trashed_at = 1, trash_reason = 'user' WHERE id = ?1",
            &[d.into()],
        )
        .expect("plant");
    let (run, reasons) = lib.scan();
    assert_eq!(run.state, RunState::Completed);
    assert_eq!(reasons, BTreeMap::from([("unchanged", 7)]), "nothing read");
    let asset = env.store.asset(d).expect("read").expect("row");
    assert_eq!(asset.trashed_at, None, "restored by id");
    assert_eq!(lib.live_at("d.png").map(|a| a.id), Some(d));
}

#[test]
fn a_present_unchanged_file_whose_asset_is_gone_is_stored_afresh_by_a_plain_scan() {
    let env = env();
    let lib = library(&env);
    lib.scan();
    let e = lib.only("e.png").id;
    // What the defective sweep left behind: the asset deleted, its present file unlinked.
    (env.sql())
        .batch(&format!(
            "UPDATE files SET asset_id = NULL WHERE asset_id = {e};
             DELETE FROM assets WHERE id = {e};"
        ))
        .expect("plant");
    let (run, reasons) = lib.scan();
    assert_eq!(run.state, RunState::Completed);
    assert_eq!(
        reasons,
        BTreeMap::from([("new", 1), ("unchanged", 6)]),
        "e.png is read again; notes.txt, no picture, is not"
    );
    let fresh = lib.live_at("e.png").expect("e.png is indexed again");
    assert_eq!(lib.paths_of(&fresh), vec!["e.png"]);
    let (_, again) = lib.scan();
    assert_eq!(again, BTreeMap::from([("unchanged", 7)]), "healed once");
}

#[test]
fn a_scan_scoped_inside_the_trash_folder_reads_and_restores_nothing() {
    let env = env();
    let lib = library(&env);
    lib.scan();
    let d = lib.only("d.png").id;
    mediadex::trash::trash(&env.store, d).expect("trash");
    let (run, reasons) = lib.scan_with(".mediadex-trash", ScanConfig::default());
    assert_eq!(run.state, RunState::Completed);
    assert_eq!(reasons, BTreeMap::new(), "nothing walked");
    let asset = env.store.asset(d).expect("read").expect("row");
    assert!(asset.trashed_at.is_some(), "still trashed");
    assert_eq!(asset.paths.len(), 1, "no file of the trash folder indexed");
}

#[test]
fn a_file_that_is_no_longer_media_drops_its_asset_and_a_lone_asset_goes_to_the_trash() {
    let env = env();
    let lib = library(&env);
    lib.scan();
    let d = lib.only("d.png").id;
    let a = lib.live_at("copy-of-a.png").expect("a").id;
    std::fs::write(lib.root.join("d.png"), "now a text file").expect("rewrite d");
    std::fs::write(lib.root.join("copy-of-a.png"), "and this one too").expect("rewrite");
    let (run, _) = lib.scan();
    assert_eq!(run.state, RunState::Completed);
    let old = env.store.asset(d).expect("read").expect("row");
    assert!(
        old.paths.is_empty(),
        "d.png shows no asset: {:?}",
        old.paths
    );
    assert_eq!(
        old.trash_reason,
        Some(TrashReason::Replaced),
        "its last file"
    );
    let a = env.store.asset(a).expect("read").expect("row");
    assert_eq!(a.trashed_at, None, "it still has 2024/a.png");
    assert_eq!(lib.paths_of(&a), vec!["2024/a.png"]);
    let (_, reasons) = lib.scan();
    assert_eq!(
        reasons,
        BTreeMap::from([("unchanged", 7)]),
        "not read again"
    );
}

/// Waits until run `id` has ended.
#[test]
fn a_scan_that_meets_a_full_disk_keeps_what_it_indexed_and_carries_on_once_space_is_freed() {
    support::sqlite_only(
        "scan::a_scan_that_meets_a_full_disk_keeps_what_it_indexed_and_carries_on_once_space_is_freed",
    );
    let env = env();
    let lib = library(&env);
    assert_eq!(lib.scan().0.state, RunState::Completed);
    let before = lib.assets(false);
    for i in 0..300u32 {
        photo(&lib.root.join(format!("new/{i}.png")), (i % 250) as u8 + 1);
        let bytes = std::fs::read(lib.root.join(format!("new/{i}.png"))).expect("read");
        // Unique bytes per file: each one is a new asset, so the ingest must grow the file.
        std::fs::write(
            lib.root.join(format!("new/{i}.png")),
            [&bytes[..], &i.to_le_bytes()].concat(),
        )
        .expect("unique");
    }
    env.store.cap_size(true).expect("cap");
    let job = ScanJob {
        store: env.store.clone(),
        config: ScanConfig::default(),
        extract: mediadex::media::extract_from,
    };
    let (run, pool) = support::start_scan(&env, lib.id, "", job, {
        let mut c = PoolConfig::with_ttl(1, TTL);
        c.poll_every = Duration::from_millis(20);
        c
    });
    let failed = support::run_ended(&env, run.id);
    assert_eq!(failed.state, RunState::Failed);
    let reason = failed.reason.clone().unwrap_or_default();
    let dir = env.store.dir().display().to_string();
    assert!(
        reason.starts_with(&format!("the disk holding {dir} is full (")),
        "{reason}"
    );
    assert!(
        reason.contains("will carry on when space is freed"),
        "{reason}"
    );
    assert_eq!(lib.assets(false), before, "nothing indexed before is lost");
    assert!(env.store.integrity_check().expect("check").is_empty());
    let next = env
        .store
        .scan_runs(Some(lib.id), 10)
        .expect("runs")
        .into_iter()
        .find(|r| r.predecessor_id == Some(run.id))
        .expect("the paused scan has a successor");
    assert_eq!(next.state, RunState::Accepted);
    assert_eq!(
        next.run_at,
        failed.finished_at.expect("ended") + mediadex::store::PAUSED_RETRY
    );
    // Space is freed; once the wait is over the scan carries on by itself.
    env.store.cap_size(false).expect("uncap");
    env.clock.advance(mediadex::store::PAUSED_RETRY);
    pool.wake();
    let done = support::run_ended(&env, next.id);
    pool.shutdown();
    assert_eq!(done.state, RunState::Completed, "{:?}", done.reason);
    assert_eq!(lib.assets(false).len(), before.len() + 300);
}

#[test]
fn a_completed_scan_always_has_its_face_walk_queued_in_the_same_transaction() {
    let env = env();
    let lib = library(&env);
    let with_faces = ScanConfig {
        faces: Some(mediadex::walks::follow_up(
            &env.store,
            mediadex::model::WalkKindId::Faces,
            1,
        )),
        ..ScanConfig::default()
    };
    let (run, _) = lib.scan_with("", with_faces.clone());
    assert_eq!(run.state, RunState::Completed);
    assert!(
        support::face_walk_queued(&env),
        "the completion queued the face walk"
    );
    let chain = env
        .store
        .live_job("walk:faces")
        .expect("read")
        .expect("row");
    env.store.cancel(Target::Job, chain.id).expect("cancel");
    photo(&lib.root.join("2025/new.png"), 9);
    env.refuse_face_walks();
    let (run, _) = lib.scan_with("", with_faces);
    assert!(
        run.state != RunState::Completed || support::face_walk_queued(&env),
        "the run completed ({:?}) and its face walk was lost",
        run.reason
    );
    assert_eq!(
        run.state,
        RunState::Failed,
        "the completion was refused whole"
    );
}

#[test]
fn a_library_root_that_vanishes_mid_scan_fails_the_run_with_a_successor_and_trashes_nothing() {
    let env = env();
    let lib = library(&env);
    assert_eq!(lib.scan().0.state, RunState::Completed);
    let before = lib.assets(false);
    // The share drops off while the walk is under way (here: the folder moves away).
    let (root, away) = (lib.root.clone(), env.dir.path().join("unmounted"));
    let config = ScanConfig {
        max_missing_share: 1.0,
        pipeline: Settings {
            walk_hook: Some(WalkHook(Arc::new(move |at| {
                if at == WalkPoint::Left(Path::new("2024/trip")) {
                    std::fs::rename(&root, &away).expect("unmount");
                }
            }))),
            ..Settings::default()
        },
        ..ScanConfig::default()
    };
    let (run, reasons) = lib.scan_with("", config);
    assert_eq!(run.state, RunState::Failed, "{:?} {reasons:?}", run.reason);
    let why = run.reason.clone().unwrap_or_default();
    assert!(why.contains("not there"), "{why}");
    assert_eq!(reasons.get("missing"), None, "{reasons:?}");
    assert!(lib.assets(true).is_empty(), "nothing trashed");
    let next = env
        .store
        .scan_runs(Some(lib.id), 10)
        .expect("runs")
        .into_iter()
        .find(|r| r.predecessor_id == Some(run.id))
        .expect("a root gone for a moment gives the run a successor");
    assert_eq!(next.state, RunState::Accepted);
    std::fs::rename(env.dir.path().join("unmounted"), &lib.root).expect("mounted again");
    env.clock.advance(next.run_at - env.store.now());
    let job = ScanJob {
        store: env.store.clone(),
        config: ScanConfig::default(),
        extract: mediadex::media::extract_from,
    };
    let pool = mediadex::queue::WorkerPool::start(
        &env.store,
        mediadex::queue::Handlers::default().scan(job),
        PoolConfig::with_ttl(1, TTL),
    );
    let done = support::run_ended(&env, next.id);
    pool.shutdown();
    assert_eq!(done.state, RunState::Completed, "{:?}", done.reason);
    assert_eq!(lib.assets(false), before, "everything still indexed");
}

/// Sets `path`'s mtime to `secs` after the epoch.
fn set_mtime(path: &Path, secs: u64) {
    let when = std::time::UNIX_EPOCH + Duration::from_secs(secs);
    std::fs::File::options()
        .write(true)
        .open(path)
        .expect("open")
        .set_modified(when)
        .expect("set mtime");
}

#[test]
fn each_asset_says_where_its_date_came_from_and_the_chain_keeps_the_first() {
    use support::exif::{ascii, jpeg, jpeg_with_exif};
    let env = env();
    let root = env.dir.path().join("dated");
    std::fs::create_dir_all(&root).expect("mkdir");
    let exif = [ascii(exif::Tag::DateTimeOriginal, "2020:02:29 23:59:59")];
    // EXIF beats the name; the name beats the mtime; the mtime is the last resort.
    let files: [(&str, Vec<u8>); 4] = [
        ("IMG_20000101_000000.jpg", jpeg_with_exif(8, 8, &exif)),
        ("IMG_20190305_131457.jpg", jpeg(9, 8)),
        ("plain.jpg", jpeg(10, 8)),
        (
            "clip.mp4",
            std::fs::read("tests/fixtures/astronaut.mp4").expect("fixture"),
        ),
    ];
    for (name, bytes) in &files {
        std::fs::write(root.join(name), bytes).expect("write");
        // 2021-06-01T12:00:00Z, a time none of the other sources gives.
        set_mtime(&root.join(name), 1_622_548_800);
    }
    let canonical = std::fs::canonicalize(&root).expect("canon");
    let library =
        mediadex::app::add_library(&env.store, "dated", &canonical.to_string_lossy()).expect("add");
    support::scan_now(&env, library.id, "");
    let dates: BTreeMap<String, (Option<String>, Option<&str>)> = env
        .store
        .assets(false)
        .expect("assets")
        .into_iter()
        .map(|a| {
            let f = &a.facts;
            let source = f.taken_at_source.map(|s| s.as_str());
            (a.paths[0].rel_path_text.clone(), (f.taken_at(), source))
        })
        .collect();
    let want = |at: &str, source| (Some(at.to_string()), Some(source));
    let expected = BTreeMap::from([
        (
            "IMG_20000101_000000.jpg".to_string(),
            want("2020-02-29T23:59:59", "exif"),
        ),
        (
            "IMG_20190305_131457.jpg".to_string(),
            want("2019-03-05T13:14:57", "filename"),
        ),
        (
            "plain.jpg".to_string(),
            want("2021-06-01T12:00:00+00:00", "mtime"),
        ),
        (
            "clip.mp4".to_string(),
            want("2021-08-14T10:00:00+00:00", "quicktime"),
        ),
    ]);
    assert_eq!(dates, expected);
}

/// A link to a folder the walk reaches anyway (inside the library, not hidden) is that
/// folder, not a second copy of its files: they are indexed once, at their own paths, and
/// nothing is listed as an identical duplicate (issue 27 deliverable 3). A link into a folder
/// the walk skips (a hidden one) is still followed: nothing else reaches its files.
#[cfg(unix)]
#[test]
fn a_link_to_a_folder_the_walk_reaches_is_that_folder_not_a_copy() {
    let env = env();
    let lib = library(&env);
    let links = lib.root.join("Links");
    std::fs::create_dir(&links).expect("Links");
    std::os::unix::fs::symlink("../2024", links.join("year-2024")).expect("link");
    std::os::unix::fs::symlink(lib.root.join("2024/trip"), links.join("trip")).expect("link");
    photo(&lib.root.join(".hidden/h.png"), 7);
    std::os::unix::fs::symlink("../.hidden", links.join("shown")).expect("link");
    let (run, _) = lib.scan();
    assert_eq!(run.state, RunState::Completed);
    let known: Vec<String> = (env.store.known_files(lib.id, "").expect("files").iter())
        .map(|k| String::from_utf8_lossy(&k.rel_path).into_owned())
        .filter(|p| p.starts_with("Links/"))
        .collect();
    assert_eq!(
        known,
        ["Links/shown/h.png"],
        "only the hidden folder's link is walked"
    );
    let dups = env.store.duplicates().expect("dups");
    assert_eq!(dups.len(), 1, "only copy-of-a.png is a copy: {dups:?}");
    let a = (lib.assets(false).into_iter())
        .find(|a| lib.paths_of(a).contains(&"2024/a.png"))
        .expect("a");
    assert_eq!(lib.paths_of(&a), ["2024/a.png", "copy-of-a.png"]);
}
