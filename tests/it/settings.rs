//! `mediadex.toml` and the settings (issue 17 items 2 and 3): the shipped example parses, all
//! commented and all set, and names every setting; the real binary layers flag > env > file,
//! and stops on an unknown key or a bad value with one line naming the file and line; and
//! `serve` run on a file alone listens where it says, logs where it says and serves
//! thumbnails at its size; `similar_distance` is refused beyond the index's bound and layered
//! like the others.

use mediadex::config::settings::{SETTINGS, Settings};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn example() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/mediadex.toml");
    std::fs::read_to_string(path).expect("read packaging/mediadex.toml")
}

/// The example with every key uncommented (`#key = value` lines).
fn uncommented(text: &str) -> String {
    text.lines()
        .map(|l| match l.strip_prefix('#') {
            Some(rest) if rest.starts_with(|c: char| c.is_ascii_lowercase()) => rest,
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_shipped_example_parses_commented_out_and_with_every_key_set() {
    let path = Path::new("packaging/mediadex.toml");
    let text = example();
    let commented = Settings::from_toml(path, &text).expect("the example as shipped");
    assert_eq!(
        commented,
        Settings::default(),
        "as shipped it changes nothing"
    );
    let set = Settings::from_toml(path, &uncommented(&text)).expect("every key uncommented");
    let shown = format!("{set:?}");
    assert!(
        !shown.contains("None"),
        "a setting the example does not set: {shown}"
    );
}

#[test]
fn the_shipped_example_names_every_setting_with_its_variable_and_flag() {
    let text = example();
    for s in SETTINGS {
        assert!(
            text.contains(&format!("\n#{} = ", s.key)),
            "no commented `{}` line",
            s.key
        );
        assert!(text.contains(s.env), "{} is not named", s.env);
        if let Some(flag) = s.flag {
            assert!(
                text.contains(&format!("Flag: {flag}")),
                "{flag} is not named"
            );
        }
    }
}

fn mediadex(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mediadex"));
    for s in SETTINGS {
        cmd.env_remove(s.env);
    }
    cmd.env_remove("MEDIADEX_CONFIG").env_remove("RUST_LOG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.args(args).output().expect("run mediadex")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The data dir `status --json` reports.
fn data_dir_of(out: &Output) -> PathBuf {
    assert!(out.status.success(), "{}", stderr(out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    PathBuf::from(v["data_dir"].as_str().expect("data_dir"))
}

/// A database that is not a PostgreSQL server, or one that does not answer, stops a
/// command with words that say which, and leaves no SQLite index behind in the data dir.
#[test]
fn a_database_that_is_no_server_or_does_not_answer_stops_a_command_clearly() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let data_arg = data.to_string_lossy().into_owned();
    let cases = [
        ("not a url", "not a PostgreSQL URL"),
        (
            "postgres://mediadex@127.0.0.1:1/none",
            "the database server is away",
        ),
    ];
    for (url, words) in cases {
        let out = mediadex(&["--data", &data_arg, "--database", url, "status"], &[]);
        assert!(!out.status.success(), "{url}: status succeeded");
        assert!(stderr(&out).contains(words), "{url}: {}", stderr(&out));
        assert!(
            !data.join("mediadex.db").exists(),
            "{url}: a SQLite index was made"
        );
    }
}

#[test]
fn the_binary_takes_the_flag_over_the_variable_over_the_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (file_dir, env_dir, flag_dir) = (
        tmp.path().join("from-file"),
        tmp.path().join("from-env"),
        tmp.path().join("from-flag"),
    );
    let config = tmp.path().join("mediadex.toml");
    std::fs::write(
        &config,
        format!("data_dir = {:?}\n", file_dir.display().to_string()),
    )
    .expect("write");
    let c = config.to_str().expect("utf-8");
    let flag = flag_dir.to_str().expect("utf-8");
    let status = ["status", "--json"];
    let args = |extra: &[&'static str]| -> Vec<String> {
        let mut v = vec!["--config".to_string(), c.to_string()];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let run = |args: Vec<String>, env: &[(&str, &Path)]| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        data_dir_of(&mediadex(&args, env))
    };
    assert_eq!(
        run(args(&status), &[]),
        file_dir,
        "the file beats the default"
    );
    let env = [("MEDIADEX_DATA", env_dir.as_path())];
    assert_eq!(
        run(args(&status), &env),
        env_dir,
        "the variable beats the file"
    );
    let mut with_flag = args(&[]);
    with_flag.extend([
        "--data".into(),
        flag.into(),
        "status".into(),
        "--json".into(),
    ]);
    assert_eq!(
        run(with_flag, &env),
        flag_dir,
        "the flag beats the variable"
    );
    // MEDIADEX_CONFIG names the file when --config does not.
    let by_env = mediadex(&status, &[("MEDIADEX_CONFIG", config.as_path())]);
    assert_eq!(data_dir_of(&by_env), file_dir);
}

/// Runs `status` on a config file holding `text`; returns its one stderr line.
fn refused(text: &str) -> (String, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = tmp.path().join("mediadex.toml");
    std::fs::write(&config, text).expect("write");
    let data = tmp.path().join("data");
    let out = mediadex(
        &[
            "--config",
            config.to_str().expect("utf-8"),
            "--data",
            data.to_str().expect("utf-8"),
            "status",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{text:?}: {}", stderr(&out));
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(!data.exists(), "a refused config creates no data dir");
    (err.trim().to_string(), config)
}

#[test]
fn an_unknown_key_stops_the_binary_with_the_file_line_and_key() {
    let (err, config) = refused("bind = \"127.0.0.1:7468\"\nwach = \"poll\"\n");
    let wanted = format!(
        "mediadex: error: {}:2:1: unknown key \"wach\"; known keys: data_dir, database, bind, libraries,",
        config.display()
    );
    assert!(err.starts_with(&wanted), "{err}");
}

#[test]
fn a_bad_value_stops_the_binary_with_the_file_line_and_key() {
    let (err, config) = refused("# the address\n\nbind = \"x\"\n");
    let wanted = format!(
        "mediadex: error: {}:3:8: bind: \"x\" is not an address",
        config.display()
    );
    assert!(err.starts_with(&wanted), "{err}");
}

#[test]
fn a_similar_distance_beyond_what_the_index_finds_stops_the_binary_with_the_file_and_line() {
    let (err, config) = refused("\nsimilar_distance = 12\n");
    let wanted = format!(
        "mediadex: error: {}:2:20: similar_distance: must be 0 to 11 bits (it is 12)",
        config.display()
    );
    assert!(err.starts_with(&wanted), "{err}");
}

/// `mediadex similar` reads `similar_distance` flag > variable > file, and says which.
#[test]
fn the_similar_distance_is_the_flag_over_the_variable_over_the_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = tmp.path().join("mediadex.toml");
    std::fs::write(&config, "similar_distance = 3\n").expect("write");
    let (config, data) = (config.to_str().unwrap(), tmp.path().join("data"));
    let data = data.to_str().unwrap();
    let base = ["--config", config, "--data", data, "similar"];
    let said = |extra: &[&str], env: &[(&str, &Path)]| {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        let out = mediadex(&args, env);
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let var = [("MEDIADEX_SIMILAR_DISTANCE", Path::new("5"))];
    assert_eq!(said(&[], &[]), "no similar pictures within 3 bits");
    assert_eq!(said(&[], &var), "no similar pictures within 5 bits");
    assert_eq!(
        said(&["--distance", "9"], &var),
        "no similar pictures within 9 bits"
    );
    let bad = mediadex(&base, &[("MEDIADEX_SIMILAR_DISTANCE", Path::new("64"))]);
    assert_eq!(bad.status.code(), Some(2));
    let err = stderr(&bad);
    assert!(
        err.contains("MEDIADEX_SIMILAR_DISTANCE") && err.contains("0 to 11"),
        "{err}"
    );
}

#[test]
fn a_missing_config_file_is_an_error_and_a_missing_default_one_is_not() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let missing = tmp.path().join("nowhere.toml");
    let data = tmp.path().join("data");
    let args = ["--config", missing.to_str().expect("utf-8"), "status"];
    let out = mediadex(&args, &[("MEDIADEX_DATA", data.as_path())]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("cannot read the config file") && err.contains("nowhere.toml"),
        "{err}"
    );
    // The desktop file sits under XDG_CONFIG_HOME on Linux: an empty one has none.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mediadex"));
    cmd.env("XDG_CONFIG_HOME", tmp.path().join("empty"))
        .env_remove("MEDIADEX_CONFIG")
        .args(["--data", data.to_str().expect("utf-8"), "status"]);
    let out = cmd.output().expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
}

/// One GET on loopback; the status line and the body's bytes.
fn get(port: u16, path: &str) -> (String, Vec<u8>) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut bytes = Vec::new();
    s.read_to_end(&mut bytes).expect("response");
    let at = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("headers end");
    let head = String::from_utf8_lossy(&bytes[..at]);
    (
        head.lines().next().unwrap_or("").to_string(),
        bytes[at + 4..].to_vec(),
    )
}

/// `serve` on a config file alone: it binds the file's address, adds its library, writes
/// its log where the file says, and serves thumbnails at the file's size.
#[cfg(unix)]
#[test]
fn serve_follows_the_config_file_for_bind_libraries_log_file_and_thumbnail_size() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let library = tmp.path().join("photos");
    std::fs::create_dir_all(&library).expect("mkdir");
    let img = image::RgbImage::from_pixel(800, 400, image::Rgb([200, 40, 40]));
    img.save(library.join("wide.png")).expect("png");
    let log = tmp.path().join("elsewhere/mediadex.log");
    let config = tmp.path().join("mediadex.toml");
    let text = format!(
        "bind = \"127.0.0.1:0\"\nlibraries = [{:?}]\nlog_file = {:?}\nthumb_size = 100\nwatch = \"off\"\n",
        library.display().to_string(),
        log.display().to_string(),
    );
    std::fs::write(&config, text).expect("write");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mediadex"))
        .args([
            "--config",
            config.to_str().expect("utf-8"),
            "serve",
            "--data",
        ])
        .arg(tmp.path().join("data"))
        .env_remove("RUST_LOG")
        .env("MEDIADEX_BROWSER", "none")
        .stderr(Stdio::piped())
        .spawn()
        .expect("start serve");
    let lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let port: u16 = lines
        .map_while(Result::ok)
        .find_map(|l| {
            let rest = l.split("listening on http://127.0.0.1:").nth(1)?;
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .expect("serve says it listens on loopback");
    let start = Instant::now();
    let id = loop {
        let (_, body) = get(port, "/api/assets");
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        if let Some(id) = v["items"][0]["id"].as_i64() {
            break id;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the library was not indexed"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let (status, thumb) = get(port, &format!("/api/assets/{id}/thumbnail"));
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
    assert!(status.contains("200"), "{status}");
    let thumb = image::load_from_memory(&thumb).expect("a JPEG");
    assert_eq!(
        (thumb.width(), thumb.height()),
        (100, 50),
        "thumb_size = 100"
    );
    let logged = std::fs::read_to_string(&log).expect("the log file the config names");
    assert!(logged.contains("listening on"), "{logged}");
    assert!(
        !tmp.path().join("data/logs/mediadex.log").exists(),
        "not the default place"
    );
}
