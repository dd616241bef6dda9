//! A one-line file of the data dir made once and kept for good (the access token, the host
//! id): written only if absent (`create_new`, owner-only from the start where asked) and
//! synced, or read back when it exists, which is also what a start that lost the race to
//! make it does. Owns no file: its callers (`token`, `host`) name the file, make the line
//! and judge the one read back.
//!
//! Must not import: store, http, ops

use std::io::Write;
use std::path::Path;

/// Which half failed, with the system's error.
#[derive(Debug)]
pub enum Failed {
    Read(std::io::Error),
    Write(std::io::Error),
}

/// The file's line, trimmed: the one made now by `make`, or the one another start made.
pub fn load_or_create(
    file: &Path,
    owner_only: bool,
    make: impl FnOnce() -> String,
) -> Result<String, Failed> {
    match create(file, owner_only, make) {
        Ok(line) => Ok(line),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let text = std::fs::read_to_string(file).map_err(Failed::Read)?;
            Ok(text.trim().to_string())
        }
        Err(e) => Err(Failed::Write(e)),
    }
}

/// Fails with `AlreadyExists` when another start made it first.
fn create(file: &Path, owner_only: bool, make: impl FnOnce() -> String) -> std::io::Result<String> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    if owner_only {
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    }
    #[cfg(not(unix))]
    let _ = owner_only;
    let mut f = options.open(file)?;
    let line = make();
    f.write_all(format!("{line}\n").as_bytes())?;
    f.sync_all()?;
    Ok(line)
}
