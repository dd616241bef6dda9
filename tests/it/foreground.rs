//! The foreground (desktop) mode as a user starts it: first start adopts the pictures
//! folder as a library, and an interrupt stops it cleanly.

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
        .env("MEDIADEX_BROWSER", "none")
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

/// A command standing in for the browser: it appends the url it is given to `log`.
fn fake_browser(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let log = dir.join("opened.txt");
    let script = dir.join("browser.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho \"$1\" >> '{}'\n", log.display()),
    )
    .expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    (script, log)
}

#[test]
fn a_second_launch_opens_the_running_instance_and_starts_no_engine() {
    let home = tempfile::tempdir().expect("home");
    std::fs::create_dir(home.path().join("Pictures")).expect("pictures");
    let data = home.path().join("data");
    let (browser, opened) = fake_browser(home.path());
    let launch = || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mediadex"));
        cmd.arg("--data")
            .arg(&data)
            .env("HOME", home.path())
            .env_remove("XDG_CONFIG_HOME")
            .env("RUST_LOG", "info")
            .env("MEDIADEX_BROWSER", &browser);
        cmd
    };
    let first = launch()
        .stderr(Stdio::piped())
        .spawn()
        .expect("first launch");
    // Killed even when an assertion fails, so no server outlives the test.
    struct KillOnDrop(std::process::Child);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut first = KillOnDrop(first);
    let mut lines = BufReader::new(first.0.stderr.take().expect("stderr")).lines();
    let url = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            let after = l.split("listening on ").nth(1)?;
            after.split_whitespace().next().map(str::to_string)
        })
        .expect("the first launch says where it listens");
    // Its own browser opens after it listens: wait for that, so the log below holds both
    // launches' lines whatever the machine's load (it raced once in a full `cargo test`).
    let opened_line = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|l| l.contains("opened the browser") || l.contains("could not open a browser"))
        .expect("the first launch opens the browser");
    assert!(opened_line.contains("opened the browser"), "{opened_line}");
    // Keep draining its stderr so it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));

    let second = launch().output().expect("second launch");
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{said}");
    assert!(said.contains("already running"), "{said}");
    assert!(
        !said.contains("listening on"),
        "the second launch started no server: {said}"
    );
    let urls = std::fs::read_to_string(&opened).expect("browser log");
    let urls: Vec<&str> = urls.lines().collect();
    assert_eq!(
        urls,
        vec![url.as_str(), url.as_str()],
        "both launches opened the one instance"
    );

    Command::new("kill")
        .args(["-TERM", &first.0.id().to_string()])
        .status()
        .expect("kill");
    assert!(first.0.wait().expect("wait").success());
    // Once it is gone, the next launch is the instance again (no stale lock or file).
    assert!(
        !data.join("instance.json").exists(),
        "the instance file went with it"
    );
}
