//! The foreground (desktop) mode as a user starts it: first start adopts the pictures
//! folder as a library, and an interrupt stops it cleanly.
#![cfg(unix)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[test]
fn first_start_adopts_the_pictures_folder_and_an_interrupt_stops_it_cleanly() {
    let home = tempfile::tempdir().expect("home");
    std::fs::create_dir(home.path().join("Pictures")).expect("pictures");
    let data = home.path().join("data");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mediadex"))
        .arg("--data")
        .arg(&data)
        .env("HOME", home.path())
        .env_remove("XDG_CONFIG_HOME")
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mediadex");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let running = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|l| l.contains("mediadex is running"));
    assert!(running, "the process said it is running");
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = child.wait().expect("wait");
    assert!(status.success(), "a clean stop exits 0, got {status:?}");

    let out = Command::new(env!("CARGO_BIN_EXE_mediadex"))
        .args(["library", "list", "--json", "--data"])
        .arg(&data)
        .output()
        .expect("list");
    let libraries: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(libraries.as_array().map(Vec::len), Some(1));
    assert_eq!(libraries[0]["name"], "Pictures");
}
