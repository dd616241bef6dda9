//! Placeholder for the composition root: the real `app.rs` (store, workers, maintenance,
//! shutdown) is written in another tree and replaces this file at merge. It exists only so
//! that the binary's foreground mode compiles.

use crate::config::Config;

/// The foreground/desktop mode.
pub fn run(config: Config) -> anyhow::Result<()> {
    let _ = config;
    anyhow::bail!("foreground mode is wired by app.rs")
}
