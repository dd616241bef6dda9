//! RAW+JPEG stacks (issue 15 item 2): a DNG and a JPEG of one name stem in one folder, taken
//! in the same second, are one stack whichever is stored first (in one scan, or the second
//! in a later scan: files of one folder can land in different batches). The asset list shows
//! the JPEG once with both files; the RAW stays its own asset (its own checksum), left out of
//! the list and still answered by id, naming its stack. Another second is no stack; a
//! vanished JPEG shows the RAW alone again, a trashed JPEG takes its RAW into the trash and
//! back, and a trashed RAW leaves the JPEG alone.

use crate::support::dng::Dng;
use crate::support::exif::{ascii, jpeg_with_exif};
use crate::support::{Env, env, scan_now};
use exif::Tag;
use mediadex::model::Asset;
use std::path::{Path, PathBuf};

const TAKEN: &str = "2021:09:18 19:02:33";

fn dng(taken: &'static str) -> Vec<u8> {
    Dng {
        make: "NIKON CORPORATION",
        model: "NIKON D750",
        taken,
        offset: "-04:00",
        orientation: 1,
        gps: None,
        raw: (64, 32),
        scene: |_, _, _, _| [0.3, 0.5, 0.2],
        preview: None,
    }
    .bytes()
}

/// The camera's JPEG: the same second with sub-seconds of its own, the same offset.
fn jpeg(taken: &str) -> Vec<u8> {
    jpeg_with_exif(
        32,
        16,
        &[
            ascii(Tag::Make, "NIKON CORPORATION"),
            ascii(Tag::DateTimeOriginal, taken),
            ascii(Tag::SubSecTimeOriginal, "47"),
            ascii(Tag::OffsetTimeOriginal, "-04:00"),
        ],
    )
}

fn library(env: &Env) -> (i64, PathBuf) {
    let root = env.dir.path().join("photos");
    std::fs::create_dir_all(root.join("RawPair")).unwrap();
    let root = std::fs::canonicalize(&root).unwrap();
    let lib = mediadex::app::add_library(&env.store, "photos", &root.to_string_lossy()).unwrap();
    (lib.id, root)
}

fn put(root: &Path, rel: &str, bytes: &[u8]) {
    std::fs::write(root.join(rel), bytes).unwrap();
}

/// `RawPair/DSC_0001.DNG` and `RawPair/DSC_0001.JPG` of one second under `root`.
pub fn write_pair(root: &Path) {
    std::fs::create_dir_all(root.join("RawPair")).unwrap();
    put(root, "RawPair/DSC_0001.DNG", &dng(TAKEN));
    put(root, "RawPair/DSC_0001.JPG", &jpeg(TAKEN));
}

fn listed(env: &Env) -> Vec<Asset> {
    env.store.assets(false).unwrap()
}

fn stack_paths(a: &Asset) -> Vec<(&str, bool)> {
    a.stack
        .iter()
        .map(|m| (m.rel_path_text.as_str(), m.primary))
        .collect()
}

/// The one listed asset is the JPEG, its stack the JPEG then the DNG, each its own asset.
fn assert_one_stack(env: &Env, how: &str) {
    let list: Vec<Asset> = listed(env)
        .into_iter()
        .filter(|a| a.facts.mime.as_deref() != Some("image/png"))
        .collect();
    assert_eq!(list.len(), 1, "{how}: the stack is listed once: {list:#?}");
    let jpeg = &list[0];
    assert_eq!(jpeg.facts.mime.as_deref(), Some("image/jpeg"), "{how}");
    let want = vec![
        ("RawPair/DSC_0001.JPG", true),
        ("RawPair/DSC_0001.DNG", false),
    ];
    assert_eq!(stack_paths(jpeg), want, "{how}");
    let raw_id = jpeg.stack[1].asset_id;
    assert_ne!(raw_id, jpeg.id, "{how}");
    let raw = env
        .store
        .asset(raw_id)
        .unwrap()
        .expect("the RAW is still an asset");
    assert_eq!(
        raw.facts.mime.as_deref(),
        Some("image/x-adobe-dng"),
        "{how}"
    );
    assert_ne!(raw.checksum, jpeg.checksum, "{how}: its own checksum");
    assert_eq!(stack_paths(&raw), want, "{how}: the RAW names its stack");
}

#[test]
fn a_raw_and_a_jpeg_of_one_name_and_second_are_one_stack_whichever_is_stored_first() {
    type Order = [(&'static str, bool); 2];
    let orders: [(&str, Order); 3] = [
        (
            "the JPEG first",
            [
                ("RawPair/DSC_0001.JPG", true),
                ("RawPair/DSC_0001.DNG", true),
            ],
        ),
        (
            "the DNG first",
            [
                ("RawPair/DSC_0001.DNG", true),
                ("RawPair/DSC_0001.JPG", true),
            ],
        ),
        (
            "in one scan",
            [
                ("RawPair/DSC_0001.DNG", false),
                ("RawPair/DSC_0001.JPG", true),
            ],
        ),
    ];
    for (how, steps) in orders {
        let env = env();
        let (lib, root) = library(&env);
        for (rel, scan) in steps {
            let bytes = if rel.ends_with("DNG") {
                dng(TAKEN)
            } else {
                jpeg(TAKEN)
            };
            put(&root, rel, &bytes);
            if scan {
                scan_now(&env, lib, "");
            }
        }
        assert_one_stack(&env, how);
    }
}

#[test]
fn a_same_name_pair_taken_in_another_second_is_not_a_stack() {
    let env = env();
    let (lib, root) = library(&env);
    put(&root, "RawPair/DSC_0001.DNG", &dng(TAKEN));
    put(&root, "RawPair/DSC_0001.JPG", &jpeg("2021:09:18 19:02:34"));
    put(&root, "RawPair/DSC_0002.JPG", &jpeg(TAKEN));
    scan_now(&env, lib, "");
    let list = listed(&env);
    assert_eq!(list.len(), 3, "{list:#?}");
    assert!(list.iter().all(|a| a.stack.is_empty()), "{list:#?}");
}

#[test]
fn a_trashed_jpeg_takes_its_raw_along_and_a_vanished_one_shows_it_alone_again() {
    let env = env();
    let (lib, root) = library(&env);
    put(&root, "RawPair/DSC_0001.DNG", &dng(TAKEN));
    put(&root, "RawPair/DSC_0001.JPG", &jpeg(TAKEN));
    // Enough other pictures that one vanished file stays under the circuit breaker's share.
    for n in 0..8 {
        crate::support::photo(&root.join(format!("other/{n}.png")), n);
    }
    scan_now(&env, lib, "");
    let others = |list: Vec<Asset>| -> Vec<Asset> {
        list.into_iter()
            .filter(|a| a.facts.mime.as_deref() != Some("image/png"))
            .collect()
    };
    let listed = |env: &Env| others(listed(env));
    assert_one_stack(&env, "before");
    let jpeg_id = listed(&env)[0].id;
    let raw_id = listed(&env)[0].stack[1].asset_id;
    // The user trashes what they see (issue 25): the RAW follows its JPEG into the trash.
    mediadex::trash::trash(&env.store, jpeg_id).expect("trash");
    let list = listed(&env);
    assert!(list.is_empty(), "the RAW stayed behind: {list:#?}");
    let trashed = |id: i64| env.store.asset(id).unwrap().unwrap().trashed_at.is_some();
    assert!(trashed(jpeg_id) && trashed(raw_id));
    assert!(!root.join("RawPair/DSC_0001.DNG").exists());
    assert!(
        crate::support::trashed_to(&env.store, &root, raw_id, "RawPair/DSC_0001.DNG").exists(),
        "the RAW is in its own trash folder of the move"
    );

    // The JPEG comes back, and its RAW with it.
    mediadex::trash::restore(&env.store, jpeg_id).expect("restore");
    assert!(!trashed(raw_id), "the RAW came back with its JPEG");
    assert_one_stack(&env, "restored");
    assert_eq!(listed(&env).len(), 1);

    // The RAW trashed: the JPEG is listed alone, naming no stack; restored, the stack is back.
    mediadex::trash::trash(&env.store, raw_id).expect("trash the RAW");
    let list = listed(&env);
    assert_eq!(list.len(), 1, "{list:#?}");
    assert_eq!((list[0].id, list[0].stack.len()), (jpeg_id, 0), "{list:#?}");
    mediadex::trash::restore(&env.store, raw_id).expect("restore the RAW");
    assert_one_stack(&env, "the RAW restored");
    std::fs::remove_file(root.join("RawPair/DSC_0001.JPG")).unwrap();
    scan_now(&env, lib, "");
    let list = listed(&env);
    assert_eq!(list.len(), 1, "{list:#?}");
    assert_eq!(list[0].facts.mime.as_deref(), Some("image/x-adobe-dng"));
    assert!(list[0].stack.is_empty());
}
