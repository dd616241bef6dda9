//! What a packager and a bug report rely on (issue 17): `mediadex --version` names the build
//! exactly, the version, the git commit, the SQLite inside and the schemes that decide when
//! a walk re-reads the library.

use std::process::Command;

fn mediadex(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_mediadex"))
        .args(args)
        .output()
        .expect("run mediadex");
    assert!(out.status.success(), "mediadex {args:?}: {out:?}");
    String::from_utf8(out.stdout).expect("text")
}

#[test]
fn version_names_the_commit_the_sqlite_and_the_schemes() {
    let long = mediadex(&["--version"]);
    let lines: Vec<&str> = long.lines().collect();
    assert_eq!(
        lines.first().copied(),
        Some(concat!("mediadex ", env!("CARGO_PKG_VERSION"))),
        "{long}"
    );
    let field = |name: &str| {
        lines
            .iter()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
            .unwrap_or_else(|| panic!("no {name:?} line in {long}"))
    };
    let commit = field("commit");
    let hex = commit;
    assert!(
        commit == "unknown" || (hex.len() == 12 && hex.chars().all(|c| c.is_ascii_hexdigit())),
        "{commit}"
    );
    assert_eq!(field("sqlite"), rusqlite::version());
    assert_eq!(
        field("content-hash scheme"),
        mediadex::media::content_hash::SCHEME.to_string()
    );
    assert_eq!(field("face scheme"), mediadex::faces::SCHEME.to_string());
    // The git checkout this test runs in knows its commit: a build from it must say it.
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    if let Some(head) = head.ok().filter(|h| h.status.success()) {
        let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
        assert_eq!(hex, head, "{long}");
    }
    // `-V` stays one line, for scripts.
    assert_eq!(mediadex(&["-V"]).lines().count(), 1);
}
