//! The thumbnail cache's size cap (`thumb_cache_max`): beyond it the least recently used
//! thumbnails go (a file's modification time is its last use: `Thumbs::cached` refreshes it,
//! coarsely). Owns the running total and the eviction; knows nothing of how a thumbnail is
//! made. A thumbnail evicted is only made again on its next request.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// A read refreshes a thumbnail's time at most this often: one metadata write per hour per
/// thumbnail shown, not one per request.
pub const TOUCH_AFTER: Duration = Duration::from_secs(3600);

pub struct Cap {
    max: u64,
    /// Bytes cached, as this process counts them; `None` until the first write measures.
    /// Another process writing the same cache makes it low: the eviction re-measures.
    used: Mutex<Option<u64>>,
}

impl Cap {
    pub fn new(max: u64) -> Cap {
        Cap {
            max,
            used: Mutex::new(None),
        }
    }

    /// After `len` bytes were cached under `dir`: over the cap, the least recently used go
    /// until a tenth of the cap is free, so that an eviction (a walk of the cache) is rare.
    pub fn added(&self, dir: &Path, len: u64) {
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        let now = match *used {
            Some(bytes) => bytes.saturating_add(len),
            None => cached(dir).iter().map(|c| c.len).sum(),
        };
        *used = Some(if now > self.max {
            evict(dir, self.max - self.max / 10)
        } else {
            now
        });
    }
}

/// A cached thumbnail.
struct Cached {
    used: SystemTime,
    len: u64,
    path: PathBuf,
}

/// Every thumbnail under `dir` (`<shard>/<name>.jpg`; a temp file being written is not one).
fn cached(dir: &Path) -> Vec<Cached> {
    let mut out = Vec::new();
    let Ok(shards) = std::fs::read_dir(dir) else {
        return out;
    };
    for shard in shards.flatten() {
        let Ok(files) = std::fs::read_dir(shard.path()) else {
            continue;
        };
        for file in files.flatten() {
            let path = file.path();
            let Ok(meta) = file.metadata() else { continue };
            if meta.is_file() && path.extension().is_some_and(|e| e == "jpg") {
                let used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                out.push(Cached {
                    used,
                    len: meta.len(),
                    path,
                });
            }
        }
    }
    out
}

/// Deletes the least recently used thumbnails until at most `keep` bytes remain; returns
/// the bytes left. A file that cannot be deleted is logged and counted as still there.
fn evict(dir: &Path, keep: u64) -> u64 {
    let mut all = cached(dir);
    all.sort_by_key(|c| c.used);
    let mut total: u64 = all.iter().map(|c| c.len).sum();
    let mut gone = 0;
    for c in &all {
        if total <= keep {
            break;
        }
        match std::fs::remove_file(&c.path) {
            Ok(()) => {
                total -= c.len;
                gone += 1;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => total -= c.len,
            Err(e) => {
                tracing::warn!(error = %e, path = %c.path.display(), "could not evict a thumbnail")
            }
        }
    }
    tracing::info!(
        evicted = gone,
        bytes = total,
        "thumbnail cache over its cap; evicted the least recently used"
    );
    total
}

/// Marks a thumbnail just read as used, when its time is older than `TOUCH_AFTER`.
pub fn touch(path: &Path) {
    let Ok(file) = std::fs::File::options().append(true).open(path) else {
        return;
    };
    let stale = file
        .metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_none_or(|age| age > TOUCH_AFTER);
    if stale {
        let _ = file.set_modified(SystemTime::now());
    }
}
