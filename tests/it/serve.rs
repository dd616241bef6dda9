//! `mediadex serve` as a service manager runs it: it listens, answers /healthz, keeps its
//! token 0600 in the data dir (the one `mediadex token` prints), wants the token on a
//! non-loopback bind, and SIGTERM drains it: exit 0 within seconds, no lease left behind.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Starts `serve` and returns it with the address it said it listens on and the lines it
/// logged up to that one.
fn start(data: &std::path::Path, args: &[&str]) -> (Child, String, Vec<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mediadex"))
        .arg("serve")
        .args(args)
        .arg("--data")
        .arg(data)
        .env("RUST_LOG", "info")
        // A root that is not there is polled: each second, not every five minutes.
        .env("MEDIADEX_WATCH_POLL_SECS", "1")
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mediadex serve");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let mut before = Vec::new();
    let addr = lines
        .by_ref()
        .map_while(Result::ok)
        .inspect(|l| before.push(l.clone()))
        .find_map(|l| {
            l.split("listening on http://").nth(1).map(|rest| {
                rest.trim_end_matches('/')
                    .split('/')
                    .next()
                    .unwrap_or("")
                    .to_string()
            })
        })
        .expect("the server says where it listens");
    // Keep draining stderr so the child never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (child, addr, before)
}

/// One raw HTTP/1.1 GET on loopback; returns the status line and the body.
fn get(port_addr: &str, path: &str, host: &str, token: Option<&str>) -> (String, String) {
    let port = port_addr.rsplit(':').next().expect("port");
    let mut s =
        TcpStream::connect(("127.0.0.1", port.parse::<u16>().expect("port"))).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).expect("response");
    let status = text.lines().next().unwrap_or("").to_string();
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (status, body)
}

fn stop(mut child: Child) {
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(status.success(), "a drained stop exits 0, got {status:?}");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(8),
            "SIGTERM drained within seconds"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn token(data: &std::path::Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_mediadex"))
        .args(["token", "--data"])
        .arg(data)
        .output()
        .expect("token");
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .expect("utf8")
        .trim()
        .to_string()
}

#[test]
fn serve_on_loopback_indexes_its_library_and_drains_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let photos = dir.path().join("photos");
    std::fs::create_dir_all(&photos).unwrap();
    image::RgbImage::from_pixel(8, 8, image::Rgb([1, 2, 3]))
        .save(photos.join("a.png"))
        .unwrap();
    let (child, addr, log) = start(
        &data,
        &[
            "--bind",
            "127.0.0.1:0",
            "--library",
            photos.to_str().unwrap(),
            "--no-browser",
        ],
    );
    assert!(
        !log.iter().any(|l| l.contains("mediadex token")),
        "the loopback needs no token: {log:#?}"
    );
    let (status, body) = get(&addr, "/healthz", "127.0.0.1", None);
    assert!(status.contains("200"), "{status}");
    assert_eq!(body, "ok\n");
    let (status, _) = get(&addr, "/api/libraries", "rebound.example", None);
    assert!(status.contains("403"), "DNS rebinding refused: {status}");
    // The boot scan of the new library runs to its end.
    let start = Instant::now();
    loop {
        let (_, body) = get(&addr, "/api/scans", "127.0.0.1", None);
        let runs: serde_json::Value = serde_json::from_str(&body).expect("json");
        if runs[0]["state"] == "completed" {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "scan never completed: {runs}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    stop(child);

    let mode = {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(data.join("token"))
            .unwrap()
            .permissions()
            .mode()
    };
    assert_eq!(mode & 0o777, 0o600, "the token is owner-only");
    assert_eq!(token(&data).len(), 64);
    let out = Command::new(env!("CARGO_BIN_EXE_mediadex"))
        .args(["runs", "--json", "--data"])
        .arg(&data)
        .output()
        .unwrap();
    let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        runs.as_array()
            .unwrap()
            .iter()
            .all(|r| r["state"] != "running" && r["lease_owner"].is_null())
    );
}

#[test]
fn a_non_loopback_bind_needs_the_token() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let (child, addr, log) = start(&data, &["--bind", "0.0.0.0:0"]);
    let hints: Vec<_> = log
        .iter()
        .filter(|l| l.contains("mediadex token"))
        .collect();
    assert_eq!(
        hints.len(),
        1,
        "the log says once how to get the token: {log:#?}"
    );
    let data_text = data.display().to_string();
    assert!(hints[0].contains(&data_text), "{}", hints[0]);
    let token = token(&data);
    let (status, _) = get(&addr, "/api/libraries", "nas.lan", None);
    assert!(status.contains("401"), "{status}");
    let (status, body) = get(&addr, "/api/libraries", "nas.lan", Some(&token));
    assert!(status.contains("200"), "{status}");
    assert_eq!(body, "[]");
    let (status, _) = get(&addr, "/healthz", "nas.lan", None);
    assert!(status.contains("200"), "{status}");
    stop(child);
}

/// The service's libraries as `/api/libraries` lists them.
fn libraries(addr: &str) -> serde_json::Value {
    let (status, body) = get(addr, "/api/libraries", "127.0.0.1", None);
    assert!(status.contains("200"), "{status}: {body}");
    serde_json::from_str(&body).expect("json")
}

/// A `--library` folder that is not mounted at start must not stop the service (under
/// systemd an exit is a restart loop and no page at all): the library is listed as
/// unavailable with the reason, the service serves, and once the folder is there it is
/// scanned (its root is polled meanwhile) and the next start knows it as the same library.
#[test]
fn a_missing_library_at_start_is_listed_unavailable_and_the_service_serves() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let photos = dir.path().join("nas").join("photos");
    let args = [
        "--bind",
        "127.0.0.1:0",
        "--library",
        photos.to_str().expect("utf8"),
        "--no-browser",
    ];
    let (child, addr, _) = start(&data, &args);
    let (status, _) = get(&addr, "/healthz", "127.0.0.1", None);
    assert!(status.contains("200"), "{status}");
    let listed = libraries(&addr);
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["available"], false, "{listed}");
    let why = listed[0]["unavailable"].as_str().unwrap_or_default();
    assert!(
        why.contains(photos.to_str().expect("utf8")) && why.contains("not there"),
        "the reason names the folder: {listed}"
    );
    std::fs::create_dir_all(&photos).expect("mounted");
    image::RgbImage::from_pixel(8, 8, image::Rgb([1, 2, 3]))
        .save(photos.join("a.png"))
        .expect("png");
    let began = Instant::now();
    loop {
        let (_, body) = get(&addr, "/api/assets", "127.0.0.1", None);
        if body.contains("a.png") {
            break;
        }
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "the folder, back, was never scanned: {body}"
        );
        // A poll of the child's state, not a race: the loop waits for the outcome itself
        // (the photo listed), and the sleep only spaces the requests.
        std::thread::sleep(Duration::from_millis(50));
    }
    let listed = libraries(&addr);
    assert_eq!(listed[0]["available"], true, "{listed}");
    assert!(listed[0]["unavailable"].is_null(), "{listed}");
    stop(child);

    let (child, addr, _) = start(&data, &args);
    let listed = libraries(&addr);
    assert_eq!(
        listed.as_array().map(Vec::len),
        Some(1),
        "one library: {listed}"
    );
    assert_eq!(listed[0]["available"], true, "{listed}");
    stop(child);
}
