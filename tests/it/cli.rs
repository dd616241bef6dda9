//! The command line as a user meets it: real processes of the built binary on temporary
//! data dirs. Each test names what it proves; failures must leave one stderr line, a
//! non-zero exit code and nothing half-written.

use crate::support;

use assert_cmd::Command;
use assert_cmd::cargo::cargo_bin_cmd;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use tempfile::TempDir;

/// A data dir and a place for library folders, both removed at the end of the test.
struct Env {
    tmp: TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            tmp: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn data(&self) -> PathBuf {
        self.tmp.path().join("data")
    }

    fn db(&self) -> PathBuf {
        self.data().join("mediadex.db")
    }

    /// A fresh directory to use as a library root.
    fn folder(&self, rel: &str) -> PathBuf {
        let p = self.tmp.path().join(rel);
        std::fs::create_dir_all(&p).expect("mkdir");
        p
    }

    fn cmd(&self) -> Command {
        cmd_with_data(&self.data())
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().expect("run mediadex")
    }

    fn ok_json(&self, args: &[&str]) -> Value {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{args:?} failed: {}",
            text(&out.stderr)
        );
        // from_slice rejects anything but one JSON value (and whitespace) on stdout.
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{args:?}: stdout is not one JSON value ({e}): {}",
                text(&out.stdout)
            )
        })
    }

    fn library_count(&self) -> usize {
        let v = self.ok_json(&["library", "list", "--json"]);
        v.as_array().expect("array").len()
    }
}

fn cmd_with_data(data: &Path) -> Command {
    let mut c = cargo_bin_cmd!("mediadex");
    c.env_remove("MEDIADEX_DATA")
        .env_remove("RUST_LOG")
        .arg("--data")
        .arg(data);
    c
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

/// A failure as the brief demands it: the given exit code, nothing on stdout, exactly one
/// line on stderr of the form `mediadex: error: ...` containing `needle`.
fn assert_fails(out: &Output, code: i32, needle: &str) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "stderr: {err}");
    assert!(out.stdout.is_empty(), "stdout: {}", text(&out.stdout));
    assert_eq!(err.lines().count(), 1, "not one line: {err:?}");
    assert!(err.starts_with("mediadex: error: "), "{err:?}");
    assert!(err.contains(needle), "{err:?} lacks {needle:?}");
}

#[test]
fn library_add_then_list_round_trips_in_json() {
    let env = Env::new();
    let photos = env.folder("photos");
    let videos = env.folder("videos");

    let added = env.ok_json(&["library", "add", s(&photos), "--json"]);
    assert_eq!(
        added["name"], "photos",
        "default name is the last component"
    );
    let root = std::fs::canonicalize(&photos).expect("canonical");
    assert_eq!(added["root"], s(&root));
    let id = added["id"].as_i64().expect("integer id");
    let created = added["created_at"].as_i64().expect("integer millis");
    let now = chrono::Utc::now().timestamp_millis();
    assert!(
        (now - 60_000..=now).contains(&created),
        "{created} is not ms near {now}"
    );

    let named = env.ok_json(&[
        "library",
        "add",
        s(&videos),
        "--name",
        "Home videos",
        "--json",
    ]);
    assert_eq!(named["name"], "Home videos");

    let list = env.ok_json(&["library", "list", "--json"]);
    let list = list.as_array().expect("array");
    assert_eq!(list.len(), 2);
    assert_eq!(list[0], added, "list shows exactly what add returned");
    assert_eq!(list[1], named);
    let keys: Vec<&str> = list[0]
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys.len(), 6);
    for k in [
        "id",
        "name",
        "root",
        "created_at",
        "available",
        "unavailable",
    ] {
        assert!(keys.contains(&k), "missing {k} in {keys:?}");
    }
    assert_ne!(id, list[1]["id"].as_i64().expect("id"));
}

#[test]
fn library_add_then_list_round_trips_in_human_output() {
    let env = Env::new();
    let photos = env.folder("photos");
    let out = env.run(&["library", "add", s(&photos)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("added library 'photos'"));

    let out = env.run(&["library", "list"]);
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines[0].starts_with("ID  NAME"), "{stdout}");
    assert!(lines[1].contains("photos"));
    let root = std::fs::canonicalize(&photos).expect("canonical");
    assert!(lines[1].ends_with(s(&root)), "{stdout}");
}

#[test]
fn library_add_stores_the_canonical_path_of_a_relative_or_dotted_path() {
    let env = Env::new();
    env.folder("photos/2024");
    let out = env
        .cmd()
        .current_dir(env.tmp.path())
        .args(["library", "add", "photos/2024/../2024/", "--json"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let want = std::fs::canonicalize(env.tmp.path().join("photos/2024")).expect("canonical");
    assert_eq!(v["root"], s(&want));
    assert_eq!(v["name"], "2024");
}

#[cfg(unix)]
#[test]
fn library_add_resolves_a_symlink_to_its_target() {
    let env = Env::new();
    let real = env.folder("real");
    let link = env.tmp.path().join("link");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let v = env.ok_json(&["library", "add", s(&link), "--json"]);
    assert_eq!(
        v["root"],
        s(&std::fs::canonicalize(&real).expect("canonical"))
    );
    assert_eq!(v["name"], "real");
}

#[test]
fn data_dir_can_come_from_the_environment() {
    let env = Env::new();
    let photos = env.folder("photos");
    let mut c = cargo_bin_cmd!("mediadex");
    let out = c
        .env_remove("RUST_LOG")
        .env("MEDIADEX_DATA", env.data())
        .args(["library", "add", s(&photos)])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(env.db().is_file());
    assert_eq!(env.library_count(), 1);
}

#[test]
fn missing_path_is_an_input_error_that_creates_nothing() {
    let env = Env::new();
    let missing = env.tmp.path().join("nope");
    let out = env.run(&["library", "add", s(&missing)]);
    assert_fails(&out, 2, "does not exist");
    assert!(
        !env.data().exists(),
        "a bad path must not create the data dir"
    );
}

#[test]
fn a_file_is_not_a_library() {
    let env = Env::new();
    let file = env.tmp.path().join("photo.jpg");
    std::fs::write(&file, b"not a dir").expect("write");
    let out = env.run(&["library", "add", s(&file)]);
    assert_fails(&out, 2, "is not a directory");
    assert!(!env.data().exists());
}

#[test]
fn an_empty_name_is_refused() {
    let env = Env::new();
    let photos = env.folder("photos");
    let out = env.run(&["library", "add", s(&photos), "--name", " "]);
    assert_fails(&out, 2, "name must not be empty");
    assert!(!env.data().exists());
}

#[test]
fn the_same_root_twice_is_refused_and_adds_no_row() {
    let env = Env::new();
    let photos = env.folder("photos");
    env.ok_json(&["library", "add", s(&photos), "--json"]);
    let out = env.run(&["library", "add", s(&photos), "--name", "again"]);
    assert_fails(&out, 2, "is already the library 'photos'");
    assert_eq!(env.library_count(), 1);
}

#[test]
fn the_same_name_twice_is_refused_and_adds_no_row() {
    let env = Env::new();
    env.ok_json(&["library", "add", s(&env.folder("a/photos")), "--json"]);
    let out = env.run(&["library", "add", s(&env.folder("b/photos"))]);
    assert_fails(&out, 2, "a library named 'photos' already exists");
    assert_eq!(env.library_count(), 1);
}

#[test]
fn a_root_nested_in_a_library_or_around_it_is_refused() {
    let env = Env::new();
    let photos = env.folder("lib/photos");
    env.ok_json(&["library", "add", s(&photos), "--json"]);

    let inner = env.folder("lib/photos/2024");
    assert_fails(&env.run(&["library", "add", s(&inner)]), 2, "overlaps");
    let outer = env.tmp.path().join("lib");
    assert_fails(&env.run(&["library", "add", s(&outer)]), 2, "overlaps");
    assert_eq!(env.library_count(), 1);
}

#[test]
fn a_data_dir_under_a_regular_file_fails_for_everyone_and_names_the_path() {
    let env = Env::new();
    let file = env.tmp.path().join("file");
    std::fs::write(&file, b"x").expect("write");
    let data = file.join("data");
    let photos = env.folder("photos");
    let out = cmd_with_data(&data)
        .args(["library", "add", s(&photos)])
        .output()
        .expect("run");
    assert_fails(&out, 1, "cannot create the data directory");
    assert!(text(&out.stderr).contains(s(&data)));
    assert!(!data.exists());
}

#[test]
fn a_data_dir_that_is_a_regular_file_is_refused() {
    let env = Env::new();
    let file = env.tmp.path().join("data");
    std::fs::write(&file, b"x").expect("write");
    let out = env.run(&["status", "--json"]);
    assert_fails(&out, 1, s(&file));
    assert_eq!(std::fs::read(&file).expect("read"), b"x");
}

/// `ReadOnly` makes the parent unwritable for root too (a read-only bind mount), so this
/// proves the probe whoever runs it.
#[cfg(unix)]
#[test]
fn a_data_dir_under_a_read_only_parent_is_refused_without_a_database() {
    let env = Env::new();
    let parent = env.folder("ro");
    let read_only = support::ReadOnly::make(&parent);
    assert!(
        std::fs::write(parent.join("try"), b"").is_err(),
        "the parent is writable"
    );
    let data = parent.join("data");
    let out = cmd_with_data(&data).args(["status"]).output().expect("run");
    drop(read_only);
    assert_fails(&out, 1, s(&data));
    assert!(!data.exists());
}

/// SQLite keeps `user_version` as a big-endian u32 at byte 60 of the file header.
const USER_VERSION_OFFSET: usize = 60;

#[test]
fn a_database_newer_than_the_binary_is_refused_and_left_untouched() {
    let env = Env::new();
    let photos = env.folder("photos");
    env.ok_json(&["library", "add", s(&photos), "--json"]);

    // The process closed its connections, so SQLite checkpointed the WAL into the main file
    // and deleted it: the header on disk is the whole truth. If a WAL were left, its copy
    // of page 1 would win over the bytes we patch, and the test would prove nothing.
    let wal = env.data().join("mediadex.db-wal");
    assert!(!wal.exists(), "WAL not checkpointed on exit");
    let mut bytes = std::fs::read(env.db()).expect("read db");
    assert_eq!(&bytes[..16], b"SQLite format 3\0");
    let current = u32::from_be_bytes(
        bytes[USER_VERSION_OFFSET..USER_VERSION_OFFSET + 4]
            .try_into()
            .expect("4 bytes"),
    );
    assert!(
        current >= 1,
        "the binary should have migrated to at least 1"
    );
    bytes[USER_VERSION_OFFSET..USER_VERSION_OFFSET + 4].copy_from_slice(&999u32.to_be_bytes());
    std::fs::write(env.db(), &bytes).expect("write db");

    for args in [
        vec!["library", "list"],
        vec!["library", "add", s(&env.folder("more"))],
        vec!["status", "--json"],
    ] {
        let out = env.run(&args);
        assert_fails(&out, 1, "newer than this mediadex understands");
        assert!(text(&out.stderr).contains("999"));
    }
    assert_eq!(
        std::fs::read(env.db()).expect("read db"),
        bytes,
        "refusing must not change a byte"
    );
}

#[test]
fn runs_jobs_and_status_answer_json_on_an_empty_database() {
    let env = Env::new();
    assert_eq!(env.ok_json(&["runs", "--json"]), Value::Array(vec![]));
    assert_eq!(env.ok_json(&["jobs", "--json"]), Value::Array(vec![]));
    assert_eq!(
        env.ok_json(&["runs", "--limit", "5", "--json"]),
        Value::Array(vec![])
    );

    let status = env.ok_json(&["status", "--json"]);
    assert_eq!(status["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(status["data_dir"], s(&env.data()));
    assert_eq!(status["db_path"], s(&env.db()));
    assert_eq!(status["libraries"], 0);
    for (group, states) in [
        (
            "runs_by_state",
            &[
                "accepted",
                "running",
                "completed",
                "suspect",
                "failed",
                "cancelled",
                "interrupted",
            ][..],
        ),
        (
            "jobs_by_state",
            &["queued", "running", "done", "failed", "cancelled"][..],
        ),
    ] {
        for state in states {
            assert_eq!(status[group][state], 0, "{group}.{state}");
        }
    }
    let counters = status["counters"].as_object().expect("counters object");
    assert!(counters.contains_key("fence_rejections"));
    assert!(counters.values().all(|v| v == 0));
}

#[test]
fn runs_of_a_library_by_id_or_name_and_of_an_unknown_one() {
    let env = Env::new();
    let added = env.ok_json(&["library", "add", s(&env.folder("photos")), "--json"]);
    let id = added["id"].to_string();
    assert_eq!(
        env.ok_json(&["runs", "--library", &id, "--json"]),
        Value::Array(vec![])
    );
    assert_eq!(
        env.ok_json(&["runs", "--library", "photos", "--json"]),
        Value::Array(vec![])
    );
    let out = env.run(&["runs", "--library", "nope"]);
    assert_fails(&out, 2, "no library with id or name 'nope'");
}

/// `scan --scope` is checked by the API's rule (`ops::Scope::parse`): a folder inside the
/// library, no `.`, `..` or empty name, no backslash; a refusal asks for no scan.
#[test]
fn a_scan_scope_that_names_no_folder_inside_the_library_is_refused() {
    let env = Env::new();
    env.ok_json(&["library", "add", s(&env.folder("photos")), "--json"]);
    for scope in ["../x", "./2024", "2024//holiday", "2024\\holiday"] {
        let out = env.run(&["scan", "--scope", scope]);
        assert_fails(&out, 2, "the scope must be a folder inside the library");
    }
    assert_eq!(env.ok_json(&["runs", "--json"]), Value::Array(vec![]));
    let runs = env.ok_json(&["scan", "--scope", "/2024/holiday/", "--json"]);
    assert_eq!(runs[0]["scope"], "2024/holiday");
}

#[test]
fn human_output_of_empty_lists_says_so() {
    let env = Env::new();
    for (args, want) in [
        (&["library", "list"][..], "no libraries yet"),
        (&["runs"][..], "no scan runs"),
        (&["jobs"][..], "no jobs"),
        (&["status"][..], "libraries"),
    ] {
        let out = env.run(args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        assert!(
            text(&out.stdout).contains(want),
            "{args:?}: {}",
            text(&out.stdout)
        );
    }
}

#[test]
fn clap_usage_errors_keep_exit_code_2() {
    let env = Env::new();
    let out = env.run(&["runs", "--limit", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let out = env.run(&["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        !env.data().exists(),
        "a usage error must not create the data dir"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn without_data_or_env_the_xdg_data_dir_under_home_is_used() {
    let env = Env::new();
    let home = env.folder("home");
    let mut c = cargo_bin_cmd!("mediadex");
    let out = c
        .env_remove("MEDIADEX_DATA")
        .env_remove("XDG_DATA_HOME")
        .env_remove("RUST_LOG")
        .env("HOME", &home)
        .args(["status", "--json"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let want = home.join(".local/share/mediadex");
    assert_eq!(v["data_dir"], s(&want));
    assert!(want.join("mediadex.db").is_file());
}

/// Seeds one scan run and one job through the library's own store API (the rows the queue
/// will write later), then checks the documented JSON fields and the human tables.
#[test]
fn runs_jobs_and_status_show_rows_written_by_the_store() {
    use mediadex::model::{NewJob, ScanRequest, Trigger};
    use mediadex::store::{Store, StoreOptions};
    let env = Env::new();
    let added = env.ok_json(&["library", "add", s(&env.folder("photos")), "--json"]);
    let library_id = added["id"].as_i64().expect("id");
    {
        let store = Store::open(
            &env.db(),
            std::sync::Arc::new(mediadex::clock::SystemClock),
            StoreOptions::default(),
        )
        .expect("open");
        store
            .request_scan(ScanRequest {
                library_id,
                scope: String::new(),
                trigger: Trigger::Manual,
                watch_event: None,
            })
            .expect("request scan");
        store
            .enqueue(NewJob::new("content_hash", "{}"))
            .expect("enqueue");
    }

    let runs = env.ok_json(&["runs", "--library", "photos", "--json"]);
    let run = &runs.as_array().expect("array")[0];
    assert_eq!(run["library_id"], library_id);
    assert_eq!(run["library_name"], "photos");
    assert_eq!(run["state"], "accepted");
    assert_eq!(run["trigger"], "manual");
    assert_eq!(run["scope"], "");
    assert_eq!(run["attempt"], 1);
    assert!(run["requested_at"].is_i64() && run["started_at"].is_null());

    let jobs = env.ok_json(&["jobs", "--json"]);
    let job = &jobs.as_array().expect("array")[0];
    assert_eq!(job["kind"], "content_hash");
    assert_eq!(job["state"], "queued");
    assert_eq!(job["payload"], "{}");
    assert!(job["run_at"].is_i64() && job["finished_at"].is_null());

    let status = env.ok_json(&["status", "--json"]);
    assert_eq!(status["libraries"], 1);
    assert_eq!(status["runs_by_state"]["accepted"], 1);
    assert_eq!(status["jobs_by_state"]["queued"], 1);

    let human = text(&env.run(&["runs"]).stdout);
    assert!(human.starts_with("ID  LIBRARY  STATE"), "{human}");
    assert!(human.contains("photos   accepted  manual"), "{human}");
    let human = text(&env.run(&["jobs"]).stdout);
    assert!(human.contains("content_hash  queued  0/5"), "{human}");
}

/// Issue 12's reproduction as a new user would try it: an asset with two copies, the second
/// copy's trash destination taken. The command fails naming the file, and the asset stays
/// live with both copies where they were.
#[test]
fn a_trash_that_cannot_move_every_copy_fails_and_leaves_the_asset_live_with_both() {
    let env = Env::new();
    let photos = env.folder("photos");
    let png = include_bytes!("../fixtures/chelsea.png");
    std::fs::create_dir_all(photos.join("b")).expect("mkdir");
    std::fs::write(photos.join("a.png"), png).expect("a");
    std::fs::write(photos.join("b/a.png"), png).expect("b");
    env.ok_json(&["library", "add", s(&photos), "--json"]);
    env.ok_json(&["scan", "photos", "--wait", "--json"]);
    let assets = env.ok_json(&["assets", "--json"]);
    let id = assets[0]["id"].as_i64().expect("id");
    // Where the first move of this index puts it.
    let squat = photos.join(format!(".mediadex-trash/{id}-1/b/a.png"));
    std::fs::create_dir_all(squat.parent().expect("parent")).expect("mkdir");
    std::fs::write(&squat, b"squatter").expect("squat");

    let out = env.run(&["trash", &id.to_string()]);
    assert_fails(&out, 1, "b/a.png");
    assert!(
        text(&out.stderr).contains("exists already"),
        "{}",
        text(&out.stderr)
    );
    assert!(photos.join("a.png").exists() && photos.join("b/a.png").exists());
    let live = env.ok_json(&["assets", "--json"]);
    assert_eq!(live.as_array().expect("array").len(), 1, "{live}");
    assert_eq!(
        live[0]["paths"].as_array().expect("paths").len(),
        2,
        "{live}"
    );
    let trashed = env.ok_json(&["assets", "--trashed", "--json"]);
    assert!(trashed.as_array().expect("array").is_empty(), "{trashed}");
}

/// Issue 13 item 6: every hostile name is scanned, and `assets --json` gives back for each file
/// a path a script can open (the text, or the base64 `paths_bytes` where the text is lossy).
/// The human list keeps one line per asset, whatever the names hold.
#[cfg(unix)]
#[test]
fn assets_json_gives_every_hostile_path_back_exactly() {
    let env = Env::new();
    let photos = env.folder("photos");
    let mut made = support::hostile_library(&photos);
    let copy = b"copy\n\xe9.png".to_vec();
    std::fs::copy(
        support::join_bytes(&photos, &made[0]),
        support::join_bytes(&photos, &copy),
    )
    .expect("copy");
    made.push(copy.clone());
    env.ok_json(&["library", "add", s(&photos), "--json"]);
    let runs = env.ok_json(&["scan", "photos", "--wait", "--json"]);
    assert_eq!(runs[0]["state"], "completed", "{runs}");
    assert!(runs[0]["reasons"]["error"].is_null(), "{runs}");
    let assets = env.ok_json(&["assets", "--json"]);
    let mut seen = Vec::new();
    for a in assets.as_array().expect("array") {
        let texts = a["paths"].as_array().expect("paths");
        for (i, text) in texts.iter().enumerate() {
            let rel = support::json_path_bytes(text, &a["paths_bytes"][i]);
            let bytes = std::fs::read(support::join_bytes(&photos, &rel))
                .unwrap_or_else(|e| panic!("{text} (asset {}) does not open: {e}", a["id"]));
            assert_eq!(
                a["checksum"].as_str(),
                Some(blake3::hash(&bytes).to_hex().as_str()),
                "{text}"
            );
            seen.push(rel);
        }
    }
    seen.sort();
    let duplicates = env.ok_json(&["duplicates", "--json"]);
    let group = &duplicates[0];
    let twins: Vec<Vec<u8>> = (0..2)
        .map(|i| support::json_path_bytes(&group["paths"][i], &group["paths_bytes"][i]))
        .collect();
    assert_eq!(twins, [made[0].clone(), copy], "{duplicates}");
    made.sort();
    assert_eq!(seen, made, "every file, each once");

    let human = text(&env.run(&["assets"]).stdout);
    let rows = assets.as_array().expect("array").len();
    assert_eq!(human.lines().count(), rows + 1, "forged lines: {human}");
    let dups = text(&env.run(&["duplicates"]).stdout);
    assert_eq!(dups.lines().count(), 2, "forged lines: {dups}");
    assert!(dups.contains("caf\\xe9.png  copy\\n\\xe9.png"), "{dups}");
    assert!(
        !human.chars().any(|c| c.is_control() && c != '\n'),
        "raw control characters: {human:?}"
    );
    assert!(human.contains("caf\\xe9.png"), "{human}");
    assert!(human.contains("line\\nbreak.png"), "{human}");
}

// ---- A damaged index (issue 13, part 4): whichever command starts on it, the damage is
// found before anything is written, the file (with its WAL and shared memory) is moved
// aside intact, the user gets one line saying what happened and what to do, and the fresh
// index at the old path has the libraries back and can be built by a scan.

/// A data dir whose index knows a library with one photo, closed cleanly (no WAL).
fn indexed_env() -> (Env, PathBuf) {
    let env = Env::new();
    let photos = env.folder("photos");
    support::photo(&photos.join("a.png"), 1);
    env.ok_json(&["library", "add", s(&photos), "--json"]);
    env.ok_json(&["scan", "--wait", "--json"]);
    assert!(
        !support::sibling(&env.db(), "-wal").exists(),
        "a clean exit leaves no WAL"
    );
    (env, std::fs::canonicalize(&photos).expect("canonical"))
}

/// The one `mediadex.db.damaged-*` database in the data dir.
fn moved_aside(env: &Env) -> PathBuf {
    let moved: Vec<PathBuf> = std::fs::read_dir(env.data())
        .expect("data dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.starts_with("mediadex.db.damaged-")
                && !name.ends_with("-wal")
                && !name.ends_with("-shm")
        })
        .collect();
    assert_eq!(moved.len(), 1, "one damaged index moved aside: {moved:?}");
    moved.into_iter().next().expect("one")
}

/// What a damaged start must do (see the section comment). `root` is the library the fresh
/// index has again, None when the damaged file showed none.
fn assert_replaced(
    env: &Env,
    out: &Output,
    was: (support::Digest, support::Digest),
    what: &str,
    root: Option<&Path>,
) {
    assert_fails(out, 1, "is damaged");
    let line = text(&out.stderr);
    let moved = moved_aside(env);
    for needle in [
        what,
        "your photos are untouched",
        &format!("moved to {}", s(&moved)),
    ] {
        assert!(line.contains(needle), "{line:?} lacks {needle:?}");
    }
    assert!(
        support::digest(&moved) == was.0,
        "the damaged file was not moved aside intact"
    );
    // SQLite's read of a WAL-mode file creates an empty WAL where there was none.
    let wal = support::digest(&support::sibling(&moved, "-wal"));
    let created_empty = was.1.is_none() && wal.is_none_or(|(len, _)| len == 0);
    assert!(
        wal == was.1 || created_empty,
        "its WAL was not moved with it"
    );
    let libraries = env.ok_json(&["library", "list", "--json"]);
    match root {
        Some(root) => {
            assert!(line.contains(s(root)), "{line:?} does not name {root:?}");
            // Defect 12: the photos in the trash folders come back by check --repair.
            assert!(line.contains("`mediadex check --repair`"), "{line:?}");
            assert_eq!(libraries[0]["root"], s(root), "{libraries}");
            env.ok_json(&["scan", "--wait", "--json"]);
            let assets = env.ok_json(&["assets", "--json"]);
            assert_eq!(
                assets.as_array().map(Vec::len),
                Some(1),
                "rebuilt: {assets}"
            );
        }
        None => {
            assert!(line.contains("mediadex library add"), "{line:?}");
            assert_eq!(libraries, serde_json::json!([]));
        }
    }
}

fn damaged_digests(env: &Env) -> (support::Digest, support::Digest) {
    (
        support::digest(&env.db()),
        support::digest(&support::sibling(&env.db(), "-wal")),
    )
}

#[test]
fn a_truncated_index_is_moved_aside_and_replaced_at_any_command() {
    let (env, root) = indexed_env();
    // A schema larger than the first page puts the rest of `sqlite_schema` on the last
    // pages a new index allocates: pages of rows after them, cut in half, keep the schema,
    // as an index that holds a library's worth of rows would.
    let conn = rusqlite::Connection::open(env.db()).expect("db");
    conn.execute_batch(
        "CREATE TABLE filler (x BLOB);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
         INSERT INTO filler SELECT zeroblob(8000) FROM n;
         PRAGMA wal_checkpoint(TRUNCATE);",
    )
    .expect("filler");
    drop(conn);
    let len = std::fs::metadata(env.db()).expect("db").len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(env.db())
        .and_then(|f| f.set_len(len / support::PAGE / 2 * support::PAGE))
        .expect("truncate");
    let was = damaged_digests(&env);
    let out = env.run(&["status", "--json"]);
    assert_replaced(&env, &out, was, "malformed", Some(&root));
}

#[test]
fn a_zeroed_first_page_is_moved_aside_and_replaced() {
    let (env, _root) = indexed_env();
    support::zero_page(&env.db(), 1);
    let was = damaged_digests(&env);
    let out = env.run(&["library", "list"]);
    assert_replaced(&env, &out, was, "not an SQLite database", None);
}

#[test]
fn a_garbage_header_is_moved_aside_and_replaced() {
    let (env, _root) = indexed_env();
    let mut bytes = std::fs::read(env.db()).expect("db");
    bytes[..100].copy_from_slice(&[0x5a; 100]);
    std::fs::write(env.db(), &bytes).expect("garbage");
    let was = damaged_digests(&env);
    let out = env.run(&["assets", "--json"]);
    assert_replaced(&env, &out, was, "not an SQLite database", None);
}

#[test]
fn a_wal_from_another_sqlite_database_is_moved_aside_with_the_index() {
    let (env, root) = indexed_env();
    let other = env.tmp.path().join("other.db");
    let conn = rusqlite::Connection::open(&other).expect("other db");
    conn.execute_batch(
        "PRAGMA page_size = 16384; PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
         CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('not an index');",
    )
    .expect("another database");
    std::fs::copy(
        support::sibling(&other, "-wal"),
        support::sibling(&env.db(), "-wal"),
    )
    .expect("plant WAL");
    drop(conn);
    let was = damaged_digests(&env);
    let out = env.run(&["runs", "--json"]);
    assert_replaced(&env, &out, was, "another database", Some(&root));
}

#[test]
fn a_wal_from_another_mediadex_index_is_moved_aside_with_the_index() {
    let (env, root) = indexed_env();
    // Another data dir's index, in use, whose service died mid-scan: its WAL holds what a
    // growing index writes.
    let (theirs, _) = indexed_env();
    let clock = mediadex::clock::FakeClock::new(1_800_000_000_000);
    let store =
        mediadex::store::Store::open(&theirs.db(), clock, Default::default()).expect("their index");
    store.add_library("theirs", "/theirs").expect("library");
    for _ in 0..50 {
        let payload = format!("{{\"pad\":\"{}\"}}", "y".repeat(3000));
        store
            .enqueue(mediadex::model::NewJob::new("walk", &payload))
            .expect("job");
    }
    std::fs::copy(
        support::sibling(&theirs.db(), "-wal"),
        support::sibling(&env.db(), "-wal"),
    )
    .expect("plant WAL");
    drop(store);
    let was = damaged_digests(&env);
    let out = env.run(&["scan", "--wait"]);
    assert_replaced(&env, &out, was, "another database", Some(&root));
}

/// A zeroed page in the middle is found only by reading every page: a command does while
/// that costs about a tenth of a second (store/vet.rs has the figures).
#[test]
fn a_zeroed_page_in_the_middle_is_found_by_a_command() {
    let (env, root) = indexed_env();
    let pages = std::fs::metadata(env.db()).expect("db").len() / support::PAGE;
    support::zero_page(&env.db(), pages / 2);
    let was = damaged_digests(&env);
    let out = env.run(&["jobs", "--json"]);
    assert_replaced(&env, &out, was, "malformed", Some(&root));
}

/// The service (and the desktop app) reads every page at its start, whatever the size.
#[test]
fn a_zeroed_page_in_the_middle_is_found_when_the_service_starts() {
    let (env, root) = indexed_env();
    let pages = std::fs::metadata(env.db()).expect("db").len() / support::PAGE;
    support::zero_page(&env.db(), pages / 2);
    let was = damaged_digests(&env);
    let out = env
        .cmd()
        .args(["serve", "--bind", "127.0.0.1:0"])
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .expect("run serve");
    // The service logs its start on stderr before it opens the index: the last line counts.
    let last = text(&out.stderr).lines().last().unwrap_or("").to_string();
    let out = Output {
        stderr: format!("{last}\n").into_bytes(),
        ..out
    };
    assert_replaced(&env, &out, was, "malformed", Some(&root));
}

#[test]
fn status_says_the_thumbnails_are_paused_when_the_data_disk_is_down_to_its_reserve() {
    let env = Env::new();
    let free = |v: &Value| v["disk"]["free_bytes"].as_u64().expect("free bytes");
    let roomy = env.ok_json(&["status", "--json"]);
    assert_eq!(roomy["disk"]["full"], Value::Null, "{roomy}");
    // A reserve larger than any disk: the disk is down to it.
    let out = env
        .cmd()
        .env("MEDIADEX_DISK_RESERVE", u64::MAX.to_string())
        .args(["status"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let human = text(&out.stdout);
    let line = human
        .lines()
        .find(|l| l.starts_with("disk "))
        .unwrap_or_else(|| panic!("no disk line: {human}"));
    let want = format!("the disk holding {} is full (", s(&env.data()));
    assert!(line.contains(&want), "{line}");
    assert!(
        line.contains("mediadex paused the thumbnails") && line.contains("bytes free"),
        "{line}"
    );
    assert!(free(&roomy) > 0);
}

/// A library with one good picture, a broken JPEG, a text file and a link out of the library.
fn troubled_library(env: &Env) -> PathBuf {
    let photos = env.folder("photos");
    support::photo(&photos.join("ok.png"), 1);
    std::fs::write(
        photos.join("cut.jpg"),
        b"\xff\xd8\xff\xe1\x00\x20Exif\x00\x00broken",
    )
    .unwrap();
    std::fs::write(photos.join("notes.txt"), "not a picture").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(env.tmp.path(), photos.join("out")).unwrap();
    photos
}

#[test]
fn runs_problems_lists_each_file_a_run_could_not_read_or_parse_with_its_error() {
    let env = Env::new();
    let photos = troubled_library(&env);
    env.ok_json(&["library", "add", s(&photos), "--json"]);
    let runs = env.ok_json(&["scan", "photos", "--wait", "--json"]);
    let id = runs[0]["id"].as_i64().expect("run id").to_string();

    let listed = env.ok_json(&["runs", "--problems", &id, "--json"]);
    let listed = listed.as_array().expect("an array");
    let paths: Vec<&str> = listed.iter().filter_map(|p| p["path"].as_str()).collect();
    let mut expected = vec!["cut.jpg"];
    if cfg!(unix) {
        expected.insert(0, "out");
    }
    assert_eq!(paths, expected, "{listed:?}");
    let cut = listed.iter().find(|p| p["path"] == "cut.jpg").unwrap();
    assert!(
        cut["error"].as_str().unwrap().contains("Broken JPEG"),
        "{cut}"
    );
    assert_eq!(cut["seq"].as_i64(), Some(expected.len() as i64));

    let out = env.run(&["runs", "--problems", &id]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let human = text(&out.stdout);
    assert!(human.starts_with("PATH"), "{human}");
    assert!(
        human
            .lines()
            .any(|l| l.starts_with("cut.jpg") && l.contains("Broken JPEG")),
        "{human}"
    );
    assert_fails(
        &env.run(&["runs", "--problems", "999"]),
        2,
        "no scan run 999",
    );
}

/// Issue 27 deliverable 3: `keep ID --trash ID...` keeps one asset and trashes the others,
/// each by its own move; keeping one that is in the trash is refused and moves nothing.
#[test]
fn keep_trashes_the_others_and_refuses_a_trashed_one() {
    let env = Env::new();
    let photos = env.folder("photos");
    std::fs::write(
        photos.join("chelsea.png"),
        include_bytes!("../fixtures/chelsea.png"),
    )
    .expect("a");
    std::fs::write(
        photos.join("rocket.jpg"),
        include_bytes!("../fixtures/rocket.jpg"),
    )
    .expect("b");
    env.ok_json(&["library", "add", s(&photos), "--json"]);
    env.ok_json(&["scan", "photos", "--wait", "--json"]);
    let assets = env.ok_json(&["assets", "--json"]);
    let id_of = |name: &str| {
        (assets.as_array().expect("array").iter())
            .find(|a| a["paths"][0] == name)
            .and_then(|a| a["id"].as_i64())
            .expect("id")
    };
    let (keep, other) = (id_of("chelsea.png"), id_of("rocket.jpg"));
    let out = env.ok_json(&[
        "keep",
        &keep.to_string(),
        "--trash",
        &other.to_string(),
        "--json",
    ]);
    assert_eq!(out["kept"]["id"], keep, "{out}");
    assert_eq!(out["kept"]["trashed"], false, "{out}");
    assert_eq!(out["trashed"][0]["id"], other, "{out}");
    assert_eq!(out["trashed"][0]["trashed"], true, "{out}");
    assert!(photos.join("chelsea.png").exists() && !photos.join("rocket.jpg").exists());
    let refused = env.run(&["keep", &other.to_string(), "--trash", &keep.to_string()]);
    assert_fails(&refused, 2, "in the trash");
    assert!(photos.join("chelsea.png").exists());
}

/// `keep ID --file PATH` on a byte-identical group: the kept file stays, the asset's other
/// file goes to the trash folder, the asset stays live; `restore ID` puts the copy back.
#[test]
fn keep_file_keeps_one_copy_trashes_the_other_and_restore_puts_it_back() {
    let env = Env::new();
    let photos = env.folder("photos");
    image::RgbImage::from_pixel(8, 8, image::Rgb([1, 2, 3]))
        .save(photos.join("a.png"))
        .expect("png");
    std::fs::copy(photos.join("a.png"), photos.join("b.png")).expect("copy");
    env.ok_json(&["library", "add", s(&photos), "--json"]);
    env.ok_json(&["scan", "--wait", "--json"]);
    let assets = env.ok_json(&["assets", "--json"]);
    let id = assets[0]["id"].as_i64().expect("id").to_string();
    let kept = env.ok_json(&["keep", &id, "--file", "b.png", "--json"]);
    assert_eq!(kept["kept"]["trashed"], false, "{kept}");
    assert!(photos.join("b.png").exists() && !photos.join("a.png").exists());
    assert_fails(
        &env.run(&["keep", &id, "--file", "a.png"]),
        2,
        "has 0 present files",
    );
    env.ok_json(&["restore", &id, "--json"]);
    assert!(photos.join("a.png").exists() && photos.join("b.png").exists());
}
