//! The man pages (`mediadex manpage DIR`, hidden): one roff page per command, rendered by
//! clap_mangen from the same clap definitions as `--help`, so the pages the .deb ships
//! (packaging/README.md) cannot drift from the binary. A subcommand of the binary rather than
//! a build script or an example because the clap `Command` lives in the binary crate
//! (`cli::Args`); the packaging script runs the binary it packages. Owns only the writing of
//! the pages; must not open a data dir or read the configuration.
//!
//! Must not import: store, ops, app

use std::path::Path;

/// Writes `mediadex.1` and `mediadex-<sub>[-<sub>].1` for every command clap shows into
/// `dir` (created if missing); hidden commands, this one among them, get no page.
pub fn write(cmd: clap::Command, dir: &Path) -> anyhow::Result<()> {
    use anyhow::Context;
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the man page folder {}", dir.display()))?;
    clap_mangen::generate_to(cmd, dir)
        .with_context(|| format!("cannot write the man pages into {}", dir.display()))
}
