//! A scan run's problems (issue 14 item 7): the files and folders it could not list, read or
//! parse, each with its error, kept per run in the fenced transaction of the batch that met
//! them, and listed by the store, `GET /api/scans/{id}/problems` and
//! `mediadex runs --problems ID`.

use crate::support::{TTL, env};
use mediadex::model::{IngestBatch, RunProblem, Target};
use mediadex::store::{PROBLEMS_PER_RUN, StoreError};

fn problem(path: &str, error: &str) -> RunProblem {
    RunProblem {
        rel_path: path.as_bytes().to_vec(),
        rel_path_text: path.to_string(),
        error: error.to_string(),
    }
}

fn with_problems(problems: Vec<RunProblem>) -> IngestBatch {
    IngestBatch {
        problems,
        ..IngestBatch::default()
    }
}

fn listed(env: &crate::support::Env, run: i64, after: i64, limit: i64) -> Vec<(i64, String)> {
    env.store
        .run_problems(run, after, limit)
        .unwrap()
        .into_iter()
        .map(|(seq, p)| (seq, p.rel_path_text))
        .collect()
}

#[test]
fn a_run_keeps_its_problems_in_the_order_met_and_pages_them() {
    let env = env();
    let lib = env.library("photos");
    let lease = env.claimed_scan(lib, "");
    let first = vec![
        problem("a.jpg", "truncated"),
        problem("loop", "symlink loop"),
    ];
    env.store
        .ingest_batch_counting(&lease, lib, with_problems(first), "{}")
        .unwrap();
    env.store
        .ingest_batch_counting(
            &lease,
            lib,
            with_problems(vec![problem("z.mp4", "no moov")]),
            "{}",
        )
        .unwrap();
    assert_eq!(
        listed(&env, lease.id, 0, 10),
        [(1, "a.jpg".into()), (2, "loop".into()), (3, "z.mp4".into())]
    );
    assert_eq!(listed(&env, lease.id, 1, 1), [(2, "loop".into())]);
    assert_eq!(env.store.run_problem_count(lease.id).unwrap(), 3);
    let (_, kept) = &env.store.run_problems(lease.id, 0, 1).unwrap()[0];
    assert_eq!(
        (kept.rel_path.as_slice(), kept.error.as_str()),
        (&b"a.jpg"[..], "truncated")
    );
}

#[test]
fn a_stale_worker_adds_no_problem_rows() {
    let env = env();
    let lib = env.library("photos");
    let stale = env.claimed_scan(lib, "");
    env.store
        .ingest_batch_counting(
            &stale,
            lib,
            with_problems(vec![problem("a.jpg", "one")]),
            "",
        )
        .unwrap();
    // Force-released: a new generation, so the old holder's next batch must land nothing.
    assert!(
        env.store
            .release_unowned(Target::ScanRun, stale.id)
            .unwrap()
    );
    let late = env.store.ingest_batch_counting(
        &stale,
        lib,
        with_problems(vec![problem("b.jpg", "two")]),
        "",
    );
    assert!(
        matches!(late, Err(StoreError::LeaseLost { .. })),
        "{late:?}"
    );
    // Expired (a slept laptop): reclaimed, and refused the same way.
    let again = env.store.claim_scan_run(TTL).unwrap().unwrap().0;
    assert_eq!(again.id, stale.id);
    env.clock.advance(TTL + 1);
    let expired = env.store.ingest_batch_counting(
        &again,
        lib,
        with_problems(vec![problem("c.jpg", "three")]),
        "",
    );
    assert!(
        matches!(expired, Err(StoreError::LeaseLost { .. })),
        "{expired:?}"
    );
    assert_eq!(listed(&env, stale.id, 0, 10), [(1, "a.jpg".into())]);
}

#[test]
fn a_run_keeps_at_most_its_cap_of_problems() {
    let env = env();
    let lib = env.library("photos");
    let lease = env.claimed_scan(lib, "");
    let many: Vec<RunProblem> = (0..PROBLEMS_PER_RUN + 5)
        .map(|i| problem(&format!("f{i}.jpg"), "unreadable"))
        .collect();
    env.store
        .ingest_batch_counting(&lease, lib, with_problems(many), "")
        .unwrap();
    env.store
        .ingest_batch_counting(
            &lease,
            lib,
            with_problems(vec![problem("late.jpg", "x")]),
            "",
        )
        .unwrap();
    assert_eq!(
        env.store.run_problem_count(lease.id).unwrap(),
        PROBLEMS_PER_RUN
    );
    let last = listed(&env, lease.id, PROBLEMS_PER_RUN - 1, 10);
    assert_eq!(
        last,
        [(PROBLEMS_PER_RUN, format!("f{}.jpg", PROBLEMS_PER_RUN - 1))]
    );
}

#[test]
fn a_pruned_run_takes_its_problems_with_it() {
    use mediadex::model::ScanEnd;
    let env = env();
    let lib = env.library("photos");
    let rows = |run: i64| -> i64 {
        (env.sql())
            .int(
                "SELECT count(*) FROM scan_run_problems WHERE run_id = ?1",
                &[run.into()],
            )
            .expect("a count")
    };
    let mut runs = Vec::new();
    for name in ["old.jpg", "newer.jpg"] {
        let lease = env.claimed_scan(lib, "");
        let batch = with_problems(vec![problem(name, "unreadable")]);
        env.store
            .ingest_batch_counting(&lease, lib, batch, "")
            .unwrap();
        env.store
            .finish_full_scan(&lease, lib, ScanEnd::breaker(0.2, true))
            .unwrap();
        runs.push(lease.id);
        env.clock.advance(10_000);
    }
    assert_eq!((rows(runs[0]), rows(runs[1])), (1, 1));
    // Past retention, the older run goes; the newest finished one is always kept.
    env.store.prune(1_000, 1_000).unwrap();
    assert!(env.store.scan_run(runs[0]).unwrap().is_none());
    assert_eq!((rows(runs[0]), rows(runs[1])), (0, 1));
}

/// Issue 26 finding 11: a file whose name or bytes claim a photo or video and that is not
/// indexed is a problem of the run that read it, saying why: the formats mediadex names but
/// does not read (CRW, MRW, X3F, BigTIFF; exiftool 12.57 names each of these fixtures so) and
/// the content that is not what it claims. Files that claim nothing (a note, an empty file)
/// and pictures that index without a fault are none.
#[test]
fn a_file_that_claims_a_picture_and_is_not_indexed_is_a_problem_with_its_reason() {
    use crate::support::scan_now;
    let env = env();
    let lib = env.library("photos");
    let root = env.dir.path().join("photos");
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/raw");
    for name in [
        "CRW_0001.CRW",
        "PICT0001.MRW",
        "IMG00001.X3F",
        "bigtiff.tif",
        "no_marker.jpg",
        "DSCF0002.RAF",
        "DSCF0003.RAF",
        "empty.heic",
        "garbage.heic",
        "gimp_nikon.tif",
    ] {
        std::fs::copy(fixtures.join(name), root.join(name)).unwrap();
    }
    std::fs::write(root.join("notes.txt"), "not a picture").unwrap();
    std::fs::write(root.join("empty.txt"), "").unwrap();
    let run = scan_now(&env, lib, "");
    let mut got: Vec<(String, String)> = env
        .store
        .run_problems(run.id, 0, 100)
        .unwrap()
        .into_iter()
        .map(|(_, p)| (p.rel_path_text, p.error))
        .collect();
    got.sort();
    let want = [
        ("CRW_0001.CRW", "unsupported format (CRW)"),
        (
            "DSCF0003.RAF",
            "unreadable content (name says .raf, bytes start \"NOTAFUJI\")",
        ),
        ("IMG00001.X3F", "unsupported format (X3F)"),
        ("PICT0001.MRW", "unsupported format (MRW)"),
        ("bigtiff.tif", "unsupported format (BigTIFF)"),
        (
            "empty.heic",
            "unreadable content (name says .heic, the file is empty)",
        ),
        (
            "garbage.heic",
            "unreadable content (name says .heic, bytes start \"this fil\")",
        ),
        (
            "no_marker.jpg",
            "unreadable content (name says .jpg, bytes start FF D8 with no JPEG marker after)",
        ),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(p, e)| (p.to_string(), e.to_string()))
        .collect();
    assert_eq!(got, want);
}

/// Issue 27 deliverable 7: the problems a person sees are those still open, not only the last
/// run's. A file that failed stays listed while it is unchanged (an incremental scan does not
/// read it again, so its run does not list it: "14 became 3"), until a later run reads it fine
/// or it is gone; a folder's problem (a link out of the library) stays while the walk meets it.
#[test]
fn problems_stay_listed_until_the_path_reads_fine_or_is_gone() {
    use crate::support::scan_now;
    let env = env();
    let lib = env.library("photos");
    let other = env.library("others");
    let root = env.dir.path().join("photos");
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for name in ["CRW_0001.CRW", "no_marker.jpg", "bigtiff.tif"] {
        std::fs::copy(fixtures.join("raw").join(name), root.join(name)).unwrap();
    }
    // Enough good files that a deleted one is no mass disappearance (the circuit breaker).
    for i in 0..20 {
        std::fs::copy(
            fixtures.join("rocket.jpg"),
            root.join(format!("fine-{i}.jpg")),
        )
        .unwrap();
    }
    std::os::unix::fs::symlink("/", root.join("outside")).unwrap();
    let open = |library: Option<i64>| -> Vec<String> {
        let (items, total) = env.store.open_problems(library, 100).unwrap();
        assert_eq!(total as usize, items.len());
        let mut paths: Vec<String> = items.into_iter().map(|p| p.problem.rel_path_text).collect();
        paths.sort();
        paths
    };
    let all = ["CRW_0001.CRW", "bigtiff.tif", "no_marker.jpg", "outside"];
    let first = scan_now(&env, lib, "");
    assert_eq!(env.store.run_problem_count(first.id).unwrap(), 4);
    assert_eq!(open(None), all);
    assert_eq!(open(Some(lib)), all);
    assert!(open(Some(other)).is_empty());

    // Nothing was fixed: the next run need not read them again, but they are still open.
    env.clock.advance(1_000);
    let second = scan_now(&env, lib, "");
    assert_eq!(
        env.store.run_problem_count(second.id).unwrap(),
        1,
        "the run lists only what it met: the link"
    );
    assert_eq!(open(None), all);

    // The broken JPEG is replaced by a good one, the TIFF deleted, the link removed.
    env.clock.advance(1_000);
    std::fs::remove_file(root.join("no_marker.jpg")).unwrap();
    std::fs::copy(fixtures.join("rocket.jpg"), root.join("no_marker.jpg")).unwrap();
    std::fs::remove_file(root.join("bigtiff.tif")).unwrap();
    std::fs::remove_file(root.join("outside")).unwrap();
    scan_now(&env, lib, "");
    assert_eq!(open(None), ["CRW_0001.CRW"]);
    let (items, _) = env.store.open_problems(Some(lib), 100).unwrap();
    assert_eq!(items[0].library_id, lib);
    assert_eq!(items[0].problem.error, "unsupported format (CRW)");
    assert_eq!(
        env.store.open_problems(None, 0).unwrap().1,
        1,
        "total past the limit"
    );
}
