//! Libraries seen from several hosts, and folders shared by several indexes (issue 30 item
//! 4): a library is known by its identity (its `.mediadex-library` marker), never by a path;
//! two indexes or two hosts share a folder without either's scans ending suspect.

use crate::support::{self, Env, env};
use mediadex::model::{Library, RunState};
use mediadex::scan::identity::{self, Verdict};
use std::path::{Path, PathBuf};

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
