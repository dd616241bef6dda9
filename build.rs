//! Build script: records the git commit the binary is built from, for `mediadex --version`
//! (issue 17). `MEDIADEX_GIT_COMMIT` overrides it (a build from a release tarball, which has
//! no `.git`); without either the commit is `unknown`. Uncommitted changes are not marked:
//! telling them would mean running this script on every source change.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=MEDIADEX_GIT_COMMIT");
    let commit = std::env::var("MEDIADEX_GIT_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| {
            let head = git(&["rev-parse", "--short=12", "HEAD"])?;
            // Rebuilt when HEAD moves: a commit, a checkout, or the branch it names moving.
            if let Some(path) = git(&["rev-parse", "--git-path", "HEAD"]) {
                println!("cargo:rerun-if-changed={}", Path::new(&path).display());
            }
            if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"])
                && let Some(path) = git(&["rev-parse", "--git-path", &branch])
            {
                println!("cargo:rerun-if-changed={path}");
            }
            Some(head)
        })
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=MEDIADEX_GIT_COMMIT={commit}");
}
