//! What a packager and a bug report rely on (issue 17): `mediadex --version` names the build
//! exactly, the version, the git commit, the SQLite inside and the schemes that decide when
//! a walk re-reads the library.

use crate::support::help::{help, subcommands};
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

/// The long flags under a help text's `Options:` heading.
fn long_options(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim() != "Options:")
        .skip(1)
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("--")))
        .map(|w| w.trim_end_matches(',').to_string())
        .collect()
}

/// Every command `--help` shows, as its path below `mediadex` (`[]` is mediadex itself).
fn every_command() -> Vec<Vec<String>> {
    let mut found = vec![];
    let mut todo = vec![vec![]];
    while let Some(path) = todo.pop() {
        for sub in subcommands(&help(&path)) {
            let mut child = path.clone();
            child.push(sub);
            todo.push(child);
        }
        found.push(path);
    }
    found
}

/// The page of a command, roff's escaped hyphens read as hyphens.
fn page(dir: &std::path::Path, path: &[String]) -> String {
    let name = std::iter::once("mediadex")
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("-");
    let file = dir.join(format!("{name}.1"));
    std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("no man page {} for {path:?}: {e}", file.display()))
        .replace("\\-", "-")
}

/// The man pages the .deb ships (packaging/README.md) come from the same clap definitions as
/// `--help`: one page per command, each parent page names its subcommands, and each page
/// carries every long option its command's `--help` lists, so a new command or flag cannot be
/// left out of them.
#[test]
fn the_man_pages_name_every_subcommand_and_its_options() {
    let dir = tempfile::tempdir().expect("tempdir");
    mediadex(&["manpage", dir.path().to_str().expect("utf-8 temp path")]);
    let commands = every_command();
    assert!(commands.len() > 10, "{commands:?}");
    for path in &commands {
        let text = page(dir.path(), path);
        let title = format!(
            ".TH mediadex{} 1 ",
            path.iter().map(|p| format!("-{p}")).collect::<String>()
        );
        assert!(text.contains(&title), "{path:?}: no {title:?} in {text}");
        for option in long_options(&help(path)) {
            assert!(text.contains(&option), "{path:?}: page lacks {option}");
        }
        if let Some((_, parent)) = path.split_last() {
            let name = format!("mediadex-{}(1)", path.join("-"));
            let above = page(dir.path(), parent);
            assert!(
                above.contains(&name),
                "{parent:?}'s page does not name {name}"
            );
        }
    }
}

/// The crates whose `opt-level` `release` lowers (a `[profile.release.package.NAME]` below 3)
/// and `dist` does not raise back to 3. `dist` inherits release's per-package settings, so a
/// crate lowered to shorten the README's cold build (issue 27 item 9) would otherwise ship
/// slower too.
fn lowered_in_dist(manifest: &str) -> Vec<String> {
    let manifest: toml::Table = toml::from_str(manifest).expect("Cargo.toml parses");
    let packages = |profile: &str| {
        manifest
            .get("profile")
            .and_then(|p| p.get(profile))
            .and_then(|p| p.get("package"))
            .and_then(|p| p.as_table())
            .cloned()
            .unwrap_or_default()
    };
    let opt = |table: &toml::Table, name: &str| -> Option<String> {
        match table.get(name)?.get("opt-level")? {
            toml::Value::Integer(level) => Some(level.to_string()),
            toml::Value::String(level) => Some(level.clone()),
            other => Some(format!("{other:?}")),
        }
    };
    let (release, dist) = (packages("release"), packages("dist"));
    release
        .keys()
        .filter(|name| opt(&release, name).is_some_and(|o| o != "3"))
        .filter(|name| opt(&dist, name).as_deref() != Some("3"))
        .cloned()
        .collect()
}

#[test]
fn the_shipped_profile_raises_every_crate_release_lowers() {
    let manifest = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .expect("read Cargo.toml");
    assert!(
        manifest.contains("[profile.release.package.tract-core]"),
        "the check reads the profiles it guards"
    );
    assert_eq!(lowered_in_dist(&manifest), Vec::<String>::new());
}

#[test]
fn the_shipped_profile_check_sees_a_crate_left_lowered() {
    let manifest = r#"
        [profile.release.package.tract-core]
        opt-level = 1
        [profile.release.package.tract-hir]
        opt-level = 1
        [profile.release.package.libsqlite3-sys]
        opt-level = 3
        [profile.dist]
        inherits = "release"
        [profile.dist.package.tract-hir]
        opt-level = 3
    "#;
    assert_eq!(lowered_in_dist(manifest), vec!["tract-core".to_string()]);
}
