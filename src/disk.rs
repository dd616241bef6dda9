//! Free space on the disks mediadex writes to, and the one way of telling the user that one of
//! them is full. The database must stay writable: the thumbnail cache keeps `reserve` bytes
//! free on the disk holding the data dir and pauses below it; a scan or a job that met a full
//! disk waits and carries on by itself once space is freed. The probe is injectable so that
//! tests can fill a disk without one. Knows nothing of the database or the queue.
//!
//! Must not import: store, http, ops

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The free space kept on the disk holding the data dir when nothing else is configured
/// (`MEDIADEX_DISK_RESERVE`): room for the database and its write-ahead log to grow through
/// a large scan (about 1 KiB per file) after the thumbnail cache stopped writing.
pub const DEFAULT_RESERVE: u64 = 256 * 1024 * 1024;

/// Below this much free space the database itself may not be able to grow: everything that
/// writes to the index waits, not only the thumbnails.
pub const DB_ROOM: u64 = 1024 * 1024;

/// Tells how many bytes an unprivileged process may still write on the disk holding a path.
pub trait FreeSpace: Send + Sync + 'static {
    /// `None` when it cannot be told (the path is gone, or the platform has no probe): the
    /// caller carries on as if there were room, and a real full disk still shows as an error.
    fn free_bytes(&self, path: &Path) -> Option<u64>;
}

/// The operating system's answer (`statvfs`).
pub struct SystemFreeSpace;

impl FreeSpace for SystemFreeSpace {
    fn free_bytes(&self, path: &Path) -> Option<u64> {
        free_bytes(path)
    }
}

/// Shared probe.
pub type SharedFreeSpace = Arc<dyn FreeSpace>;

pub fn system() -> SharedFreeSpace {
    Arc::new(SystemFreeSpace)
}

#[cfg(target_os = "linux")]
fn free_bytes(path: &Path) -> Option<u64> {
    let s = rustix::fs::statvfs(path).ok()?;
    Some(s.f_bavail.saturating_mul(s.f_frsize))
}

#[cfg(not(target_os = "linux"))]
fn free_bytes(_path: &Path) -> Option<u64> {
    None
}

/// "The disk holding <path> is full": one vocabulary for the log, the CLI, the API and the
/// run history. `paused` says what waits and that it carries on by itself.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the disk holding {} is full ({}){}", path.display(), free_text(*free), paused_text(paused))]
pub struct DiskFull {
    pub path: PathBuf,
    /// Bytes free when it was noticed, if the probe could tell.
    pub free: Option<u64>,
    /// What mediadex paused (`"the scan of library photos"`), or `None` when nothing waits
    /// (the caller says what the user can do instead).
    pub paused: Option<String>,
}

impl DiskFull {
    /// The disk holding `path` as the probe sees it now.
    pub fn at(space: &dyn FreeSpace, path: &Path, paused: Option<String>) -> DiskFull {
        DiskFull {
            path: path.to_path_buf(),
            free: space.free_bytes(path),
            paused,
        }
    }
}

fn free_text(free: Option<u64>) -> String {
    match free {
        Some(n) => format!("{n} bytes free"),
        None => "free space unknown".to_string(),
    }
}

fn paused_text(paused: &Option<String>) -> String {
    match paused {
        Some(what) => format!("; mediadex paused {what} and will carry on when space is freed"),
        None => String::new(),
    }
}

/// Whether an I/O error says the disk is full (or the quota spent).
pub fn is_full(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_the_disk_the_free_space_and_what_waits() {
        let full = DiskFull {
            path: PathBuf::from("/data"),
            free: Some(4096),
            paused: Some("the scan of library photos".into()),
        };
        assert_eq!(
            full.to_string(),
            "the disk holding /data is full (4096 bytes free); mediadex paused the scan of \
             library photos and will carry on when space is freed"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_system_probe_answers_for_an_existing_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(system().free_bytes(dir.path()).is_some());
        assert_eq!(system().free_bytes(&dir.path().join("nope")), None);
    }
}
