//! What clap prints: `--help` texts read by the tests that check the docs and the man pages
//! against the command line.

use std::process::Command;

/// What clap prints for `mediadex ARGS --help`.
pub fn help(path: &[String]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_mediadex"))
        .args(path)
        .arg("--help")
        .output()
        .expect("run mediadex --help");
    assert!(out.status.success(), "mediadex {path:?} --help: {out:?}");
    String::from_utf8(out.stdout).expect("help is text")
}

/// The names listed under a help text's `Commands:` heading (clap's own `help` left out).
pub fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // A wrapped description continues deeper in; a command sits at two spaces.
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}
