//! Folders that fail as libraries (issue 27 deliverable 8): an unreadable folder is refused
//! at `library add` with its path and the reason; a library folder that became unreadable
//! is unavailable and its scan says why instead of completing with nothing; an unreadable
//! sub-folder is a problem named by its own path. Permissions do not stop root, so as root
//! these run the binary as `nobody` (`setpriv`), the way a service user meets them.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

/// `mediadex --data DATA ARGS` as a user whom mode bits stop: this process's user, or
/// `nobody` when that is root.
fn as_user(data: &Path, args: &[&str]) -> Output {
    let bin = env!("CARGO_BIN_EXE_mediadex");
    let mut cmd = if rustix::process::geteuid().is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", bin]);
        c
    } else {
        Command::new(bin)
    };
    cmd.env_remove("MEDIADEX_DATA")
        .env_remove("RUST_LOG")
        .env("HOME", data.parent().expect("parent"))
        .arg("--data")
        .arg(data)
        .args(args)
        .output()
        .expect("run mediadex")
}

fn json(out: &Output, what: &str) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON value on stdout")
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A folder every user may write in, with a library `photos` holding one picture.
fn place() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    chmod(dir.path(), 0o777);
    let photos = dir.path().join("photos");
    std::fs::create_dir(&photos).expect("photos");
    image::RgbImage::from_pixel(8, 8, image::Rgb([1, 2, 3]))
        .save(photos.join("a.png"))
        .expect("png");
    chmod(&photos, 0o777);
    chmod(&photos.join("a.png"), 0o666);
    (dir, photos)
}

#[test]
fn library_add_refuses_an_unreadable_folder_with_its_path_and_the_reason() {
    let (dir, photos) = place();
    let data = dir.path().join("data");
    let path = photos.to_str().expect("utf8");
    // Neither listed (no read) nor entered (no search): both are refused.
    for mode in [0o000, 0o666, 0o333] {
        chmod(&photos, mode);
        let out = as_user(&data, &["library", "add", path]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "mode {mode:o} accepted: {err}");
        assert!(
            err.contains(path) && err.to_lowercase().contains("permission denied"),
            "mode {mode:o}: the error names the folder and the reason: {err}"
        );
        assert!(!data.exists(), "a refused folder creates no data dir");
    }
    chmod(&photos, 0o777);
    let added = json(&as_user(&data, &["library", "add", path, "--json"]), "add");
    assert_eq!(added["root"], path);
}

#[test]
fn a_library_folder_that_became_unreadable_is_unavailable_and_its_scan_says_why() {
    let (dir, photos) = place();
    let data = dir.path().join("data");
    let path = photos.to_str().expect("utf8");
    json(&as_user(&data, &["library", "add", path, "--json"]), "add");
    chmod(&photos, 0o000);
    let listed = json(&as_user(&data, &["library", "list", "--json"]), "list");
    assert_eq!(listed[0]["available"], false, "{listed}");
    let why = listed[0]["unavailable"].as_str().unwrap_or_default();
    assert!(
        why.contains(path) && why.to_lowercase().contains("permission denied"),
        "{listed}"
    );
    let out = as_user(&data, &["scan", "--wait", "--json"]);
    chmod(&photos, 0o777);
    let runs = json(&out, "scan");
    let run = &runs[0];
    assert_ne!(run["state"], "completed", "{run}");
    let reason = run["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains(path) && reason.to_lowercase().contains("permission denied"),
        "the run says which folder and why: {run}"
    );
}

#[test]
fn an_unreadable_sub_folder_is_a_problem_named_by_its_path() {
    let (dir, photos) = place();
    let data = dir.path().join("data");
    let private = photos.join("private");
    std::fs::create_dir(&private).expect("private");
    std::fs::copy(photos.join("a.png"), private.join("b.png")).expect("copy");
    chmod(&private, 0o000);
    let path = photos.to_str().expect("utf8");
    json(&as_user(&data, &["library", "add", path, "--json"]), "add");
    let out = as_user(&data, &["scan", "--wait", "--json"]);
    chmod(&private, 0o777);
    let runs = json(&out, "scan");
    assert_eq!(runs[0]["state"], "completed", "{runs}");
    let id = runs[0]["id"].as_i64().expect("run id").to_string();
    let problems = json(
        &as_user(&data, &["runs", "--problems", &id, "--json"]),
        "problems",
    );
    assert_eq!(problems.as_array().map(Vec::len), Some(1), "{problems}");
    assert_eq!(problems[0]["path"], "private", "{problems}");
    let error = problems[0]["error"].as_str().unwrap_or_default();
    assert!(
        error.to_lowercase().contains("permission denied"),
        "{problems}"
    );
}
