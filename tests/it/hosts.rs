//! Libraries seen from several hosts, and folders shared by several indexes (issue 30 item
//! 4): a library is known by its identity (its `.mediadex-library` marker), never by a path;
//! two indexes or two hosts share a folder without either's scans ending suspect.

use crate::support::{self, Env, env};
use mediadex::model::{Library, Provenance, RunState};
use mediadex::ops::library::{Joined, join};
use mediadex::scan::identity::{self, Verdict};
use mediadex::store::{Store, StoreOptions};
use std::path::{Path, PathBuf};

/// Another host on `env`'s index file: its own host id, lease owner and (unused) data dir.
fn host(env: &Env, id: &str) -> Env {
    let options = StoreOptions {
        host: Some(id.to_string()),
        owner: format!("{id}:1:boot"),
        database: env.pg.as_ref().map(|pg| pg.url.clone()),
        ..support::options()
    };
    let store = Store::open(
        &env.dir.path().join("mediadex.db"),
        env.clock.clone(),
        options,
    )
    .expect("open as another host");
    Env {
        dir: tempfile::tempdir().expect("tempdir"),
        clock: env.clock.clone(),
        store,
        pg: None,
    }
}

/// A second path to `root`: a symlink beside it, as another host's mount would be.
fn second_path(root: &Path, name: &str) -> PathBuf {
    let link = root.parent().expect("parent").join(name);
    std::os::unix::fs::symlink(root, &link).expect("symlink");
    link
}

fn text(path: &Path) -> &str {
    path.to_str().expect("utf8")
}

/// The reasons a run recorded, other than `unchanged`: what it read.
fn read_by(env: &Env, run: i64) -> Vec<(Provenance, i64)> {
    let reasons = env.store.run_reasons(run).expect("reasons");
    reasons
        .into_iter()
        .filter(|(p, _)| *p != Provenance::Unchanged)
        .collect()
}

/// A folder with six photos, outside either index's data dir.
fn folder(dir: &Path) -> PathBuf {
    let root = dir.join("photos");
    for shade in 1..=6 {
        support::photo(&root.join(format!("b/{shade}.png")), shade);
    }
    std::fs::canonicalize(&root).expect("canonical")
}

fn add(env: &Env, root: &Path) -> Library {
    mediadex::app::add_library(&env.store, "photos", root.to_str().expect("utf8")).expect("add")
}

fn marker(root: &Path) -> String {
    std::fs::read_to_string(root.join(identity::MARKER)).expect("marker")
}

#[test]
fn two_indexes_on_one_folder_both_scan_it_completed() {
    let (a, b) = (env(), env());
    let shared = tempfile::tempdir().expect("tempdir");
    let root = folder(shared.path());
    let in_a = add(&a, &root);
    assert_eq!(
        support::scan_now(&a, in_a.id, "").state,
        RunState::Completed
    );
    let written = marker(&root);
    let in_b = add(&b, &root);
    assert_eq!(
        support::scan_now(&b, in_b.id, "").state,
        RunState::Completed
    );
    assert_eq!(marker(&root), written, "the second index kept the marker");
    support::photo(&root.join("d.png"), 9);
    std::fs::remove_file(root.join("b/1.png")).expect("rm");
    for (env, library) in [(&a, &in_a), (&b, &in_b)] {
        let run = support::scan_now(env, library.id, "");
        assert_eq!(run.state, RunState::Completed, "{:?}", run.reason);
    }
}

#[test]
fn two_indexes_adding_one_new_folder_at_once_record_the_same_marker() {
    let (a, b) = (env(), env());
    let shared = tempfile::tempdir().expect("tempdir");
    let root = folder(shared.path());
    let in_a = a
        .store
        .add_library("photos", root.to_str().expect("utf8"))
        .expect("add a");
    let in_b = b
        .store
        .add_library("photos", root.to_str().expect("utf8"))
        .expect("add b");
    // Index A finds no marker; index B makes one before A does.
    identity::record_with(&a.store, &in_a, || {
        identity::record(&b.store, &in_b).expect("record b");
    })
    .expect("record a");
    assert_eq!(
        identity::check(&b.store, &in_b).expect("check b"),
        Verdict::Same,
        "the first index's marker was rewritten by the second"
    );
    assert_eq!(
        identity::check(&a.store, &in_a).expect("check a"),
        Verdict::Same
    );
}

#[test]
fn a_second_host_attaches_its_root_to_the_library_its_marker_names_and_reads_nothing_again() {
    let nas = env();
    let shared = tempfile::tempdir().expect("tempdir");
    let root = folder(shared.path());
    let (library, joined) = join(&nas.store, "photos", text(&root)).expect("add on nas");
    assert_eq!(joined, Joined::New);
    assert_eq!(
        support::scan_now(&nas, library.id, "").state,
        RunState::Completed
    );

    let desk = host(&nas, "desk");
    let seen = desk.store.library(library.id).expect("read").expect("row");
    assert_eq!(seen.root, "", "the desk has no root for it yet");
    let why = identity::unavailable(&desk.store, &seen).expect("check");
    assert!(
        why.is_some_and(|w| w.contains("desk")),
        "the desk says it has no folder"
    );
    let link = second_path(&root, "mnt-photos");
    let (attached, joined) = join(&desk.store, "other name", text(&link)).expect("attach");
    assert_eq!((attached.id, joined), (library.id, Joined::Attached));
    assert_eq!(attached.root, text(&link));
    assert_eq!(
        nas.store.libraries().expect("list").len(),
        1,
        "no second library"
    );
    assert_eq!(
        nas.store.library(library.id).unwrap().unwrap().root,
        text(&root)
    );
    let mut roots = vec![
        ("desk".to_string(), text(&link).to_string()),
        (nas.store.host().to_string(), text(&root).to_string()),
    ];
    roots.sort();
    assert_eq!(nas.store.library_roots(library.id).expect("roots"), roots);
    // The index holds library-relative paths: the desk's scan through its own path finds
    // every file it knows, and reads none again.
    let run = support::scan_now(&desk, library.id, "");
    assert_eq!(run.state, RunState::Completed, "{:?}", run.reason);
    assert_eq!(read_by(&desk, run.id), vec![], "the desk read files again");
    assert_eq!(
        support::scan_now(&nas, library.id, "").state,
        RunState::Completed
    );
}

#[test]
fn an_index_from_before_hosts_gives_its_roots_to_the_first_host_that_opens_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = folder(dir.path());
    let seed = format!(
        "INSERT INTO libraries (name, root, created_at, marker_id) VALUES ('photos', '{}', 1, 'm1');",
        text(&root)
    );
    let db = dir.path().join("mediadex.db");
    let clock = mediadex::clock::FakeClock::new(support::T0);
    let old = StoreOptions {
        migrations: support::schema_up_to(28, &seed),
        ..support::options()
    };
    drop(Store::open(&db, clock.clone(), old).expect("an index of version 28"));
    let open = |id: &str| {
        let options = StoreOptions {
            host: Some(id.to_string()),
            ..support::options()
        };
        Store::open(&db, clock.clone(), options).expect("open")
    };
    let first = open("nas");
    let second = open("desk");
    let by = |s: &Store| s.libraries().expect("list")[0].root.clone();
    assert_eq!(
        by(&first),
        text(&root),
        "the first host to open it has its roots"
    );
    assert_eq!(by(&second), "", "a later host has none");
    drop(first);
    assert_eq!(
        by(&open("nas")),
        text(&root),
        "and keeps them at its next start"
    );
}

#[test]
fn the_host_id_is_kept_in_the_data_dir_and_shown_by_status() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let first = support::cli_json(&data, &["status", "--json"]);
    let kept = std::fs::read_to_string(data.join("host-id")).expect("host-id");
    assert_eq!(first["host"], kept.trim());
    assert_eq!(
        support::cli_json(&data, &["status", "--json"])["host"],
        first["host"]
    );
}

#[test]
fn a_moved_library_folder_is_re_linked_by_its_marker_and_its_next_scan_reads_nothing_again() {
    let env = env();
    let place = tempfile::tempdir().expect("tempdir");
    let root = folder(place.path());
    let (library, _) = join(&env.store, "photos", text(&root)).expect("add");
    assert_eq!(
        support::scan_now(&env, library.id, "").state,
        RunState::Completed
    );
    let hashed = env.counter(mediadex::model::Counter::FilesHashed);

    let moved = place.path().join("moved-photos");
    std::fs::rename(&root, &moved).expect("move the folder");
    let run = support::scan_now(&env, library.id, "");
    assert_eq!(
        run.state,
        RunState::Suspect,
        "the old root is gone: nothing trashed"
    );
    let (relinked, joined) = join(&env.store, "moved-photos", text(&moved)).expect("re-link");
    assert_eq!(
        relinked.id, library.id,
        "the same library, not a second one"
    );
    assert_eq!(
        joined,
        Joined::Relinked {
            from: text(&root).to_string()
        }
    );
    assert_eq!(env.store.libraries().expect("list").len(), 1);
    let run = support::scan_now(&env, library.id, "");
    assert_eq!(run.state, RunState::Completed, "{:?}", run.reason);
    assert_eq!(
        read_by(&env, run.id),
        vec![],
        "files read again after the re-link"
    );
    assert_eq!(
        env.counter(mediadex::model::Counter::FilesHashed),
        hashed,
        "a file was hashed again"
    );
    assert!(
        env.store.assets(false).expect("assets").len() >= 6,
        "nothing trashed"
    );

    // A copy of the folder beside the library is not the library seen elsewhere.
    let copy = place.path().join("copy");
    std::fs::create_dir(&copy).expect("mkdir");
    std::fs::copy(moved.join(identity::MARKER), copy.join(identity::MARKER)).expect("copy");
    let refused = join(&env.store, "copy", text(&copy)).expect_err("a copy is refused");
    assert!(refused.to_string().contains("a copy?"), "{refused}");
}

#[test]
fn a_host_claims_scans_moves_and_walks_only_of_libraries_it_sees() {
    use mediadex::model::{Begun, JobFilter, MOVE_JOB_KIND};
    let nas = env();
    let shared = tempfile::tempdir().expect("tempdir");
    let root = folder(shared.path());
    let (library, _) = join(&nas.store, "photos", text(&root)).expect("add on nas");
    assert_eq!(
        support::scan_now(&nas, library.id, "").state,
        RunState::Completed
    );
    let desk = host(&nas, "desk");

    // A scan of the nas's library waits for the nas.
    nas.store
        .request_scan(nas.scan_request(library.id, ""))
        .expect("request");
    assert!(
        desk.store
            .claim_scan_run(support::TTL)
            .expect("claim")
            .is_none(),
        "the desk took a scan of a library it cannot see"
    );
    let (lease, _) = nas
        .store
        .claim_scan_run(support::TTL)
        .expect("claim")
        .expect("the nas takes it");
    nas.store.release(&lease).expect("release");

    // A move whose holder died is carried on by a host that sees its library.
    let asset = nas.store.assets(false).expect("assets")[0].id;
    let Begun::Held(_, _) = nas.store.begin_trash(asset, support::TTL).expect("trash") else {
        panic!("the trash of a photo with a file is held");
    };
    nas.clock.advance(support::TTL + 1);
    nas.store.reclaim_stale().expect("reclaim");
    nas.clock.advance(120_000);
    assert!(
        desk.store
            .claim_job(&[MOVE_JOB_KIND], support::TTL)
            .expect("claim")
            .is_none(),
        "the desk took a move in a library it cannot see"
    );
    assert!(
        nas.store
            .claim_job(&[MOVE_JOB_KIND], support::TTL)
            .expect("claim")
            .is_some()
    );

    // A walk reads any asset's files: it is the work of a host that sees every library.
    nas.store
        .enqueue_unique("walk-test", "walk-test", "{\"scheme\": 1}")
        .expect("enqueue");
    let walk = [JobFilter::new("walk-test", Some(1))];
    assert!(
        desk.store
            .claim_jobs(&walk, support::TTL)
            .expect("claim")
            .is_none(),
        "the desk took a walk over a library it cannot see"
    );
    let link = second_path(&root, "mnt-photos");
    join(&desk.store, "photos", text(&link)).expect("attach");
    assert!(
        desk.store
            .claim_jobs(&walk, support::TTL)
            .expect("claim")
            .is_some(),
        "once it sees every library"
    );
}
