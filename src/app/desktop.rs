//! The desktop mode (`mediadex` with no arguments, a double-click): one engine per data dir.
//! The first launch takes the instance claim, adopts the pictures folder when there is no
//! library yet, serves on loopback (the default port or the next free one) and opens the
//! browser; a later launch finds the running instance and only opens the browser on it.

use super::{DEFAULT_BIND, ServeOptions, add_library, serve};
use crate::config::Config;
use crate::instance::{self, Launch};
use crate::store::Store;
use anyhow::Context;
use std::time::Duration;

/// Testing knob: the command that opens a url (given as its one argument) instead of the
/// system's default browser; `none` opens nothing.
pub const BROWSER_ENV: &str = "MEDIADEX_BROWSER";

/// How long a second launch waits for the first to answer (it may still be starting).
const PATIENCE: Duration = Duration::from_secs(15);

/// The desktop mode on `config`, serving on `bind` (else the default address) and adding
/// `libraries` beside the pictures folder (both from the settings).
pub fn desktop(
    config: Config,
    bind: Option<std::net::SocketAddr>,
    libraries: Vec<std::path::PathBuf>,
) -> anyhow::Result<()> {
    match instance::claim(&config.data_dir)? {
        Launch::Running(_) => open_running(&config),
        Launch::First(claim) => {
            let bind = match bind {
                Some(bind) => bind,
                None => DEFAULT_BIND.parse().context("the default address")?,
            };
            let options = ServeOptions {
                bind,
                next_free_port: true,
                libraries,
                insecure_no_auth: false,
                open_browser: true,
                adopt_pictures: true,
                claim: Some(claim),
            };
            serve(config, options)
        }
    }
}

/// Another process holds the data dir: open the browser on it once it answers.
fn open_running(config: &Config) -> anyhow::Result<()> {
    match instance::wait_live(&config.data_dir, PATIENCE) {
        Some(running) => {
            tracing::info!(url = %running.url, pid = running.pid, "mediadex is already running; opening it");
            open_browser(&running.url);
            Ok(())
        }
        None => anyhow::bail!(
            "another mediadex holds the data directory {} but does not answer on its address; \
             if it is stuck, stop it (or pass --data DIR to use another data directory)",
            config.data_dir.display()
        ),
    }
}

/// Opens `url` in the default browser (or with `MEDIADEX_BROWSER`). A failure is logged
/// with the url, never fatal: the user can open it by hand.
pub fn open_browser(url: &str) {
    let opened = match std::env::var(BROWSER_ENV) {
        Ok(cmd) if cmd == "none" => return,
        Ok(cmd) => std::process::Command::new(&cmd)
            .arg(url)
            .status()
            .map_err(|e| e.to_string())
            .and_then(|s| {
                if s.success() {
                    Ok(())
                } else {
                    Err(s.to_string())
                }
            }),
        Err(_) => open::that_detached(url).map_err(|e| e.to_string()),
    };
    match opened {
        Ok(()) => tracing::info!(%url, "opened the browser"),
        Err(e) => tracing::warn!(%url, error = %e, "could not open a browser; open {url} by hand"),
    }
}

/// On first start the OS pictures folder becomes the first library, as a desktop user
/// expects; a machine without one (a NAS) starts with none.
pub(super) fn add_pictures_library_if_none(store: &Store) -> anyhow::Result<()> {
    if !store.libraries()?.is_empty() {
        return Ok(());
    }
    let Some(dirs) = directories::UserDirs::new() else {
        return Ok(());
    };
    // Without an XDG user-dirs file (common on minimal Linux desktops) fall back to the
    // folder most systems name so.
    let pictures = dirs
        .picture_dir()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_else(|| dirs.home_dir().join("Pictures"));
    if !pictures.is_dir() {
        return Ok(());
    }
    let new = crate::ops::library::NewLibrary::check(&pictures, None)?;
    let library = add_library(store, &new.name, &new.root)?;
    tracing::info!(root = %library.root, "added the pictures folder as the first library");
    Ok(())
}
