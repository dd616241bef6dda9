//! The status summary (`mediadex status`): the data dir, how many libraries, the run and job
//! rows per state, the counters, the walks this process runs, the data dir's disk and the
//! formats that get only a placeholder thumbnail here (their program is missing).

use super::{Error, Services};
use crate::config::Config;
use crate::model::{Counter, JobState, RunState};
use serde::Serialize;

pub struct Status {
    pub version: &'static str,
    pub data_dir: String,
    /// This host's id (`<data dir>/host-id`): whose library roots this process sees.
    pub host: String,
    pub db_path: String,
    pub libraries: usize,
    /// Rows per state; states missing here count as zero.
    pub runs: Vec<(RunState, i64)>,
    pub jobs: Vec<(JobState, i64)>,
    pub counters: Vec<(Counter, i64)>,
    pub walks: Vec<crate::walks::WalkState>,
    pub disk: DiskStatus,
    /// Formats this process gives only a placeholder thumbnail (`Thumbs::lacking`).
    pub no_thumbnails: Vec<&'static str>,
}

/// The disk holding the data dir, as `status` sees it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DiskStatus {
    /// `None` when the platform cannot tell.
    pub free_bytes: Option<u64>,
    /// What the thumbnail cache leaves free for the database.
    pub reserve_bytes: u64,
    /// The full-disk message when the free space is below the reserve (thumbnails paused).
    pub full: Option<String>,
}

/// The summary of `config`'s data dir, whose thumbnail cache is `thumbs`.
pub fn status(
    s: &Services,
    config: &Config,
    thumbs: &crate::thumbs::Thumbs,
) -> Result<Status, Error> {
    Ok(Status {
        version: env!("CARGO_PKG_VERSION"),
        data_dir: config.data_dir.display().to_string(),
        host: s.store.host().to_string(),
        db_path: s.store.database().to_string(),
        libraries: s.store.libraries()?.len(),
        runs: s.store.scan_run_counts()?,
        jobs: s.store.job_counts()?,
        counters: s.store.counters()?,
        walks: super::walks::states(s)?,
        disk: disk(config, thumbs),
        no_thumbnails: thumbs.lacking(),
    })
}

/// The data dir's disk: its free space, and whether the thumbnail cache is paused at its
/// reserve (the message names the disk, and what else stops when even the database's room
/// is gone).
fn disk(config: &Config, thumbs: &crate::thumbs::Thumbs) -> DiskStatus {
    use crate::disk::FreeSpace;
    DiskStatus {
        free_bytes: crate::disk::SystemFreeSpace.free_bytes(&config.data_dir),
        reserve_bytes: config.disk_reserve,
        full: thumbs.room().err().map(|mut e| {
            if e.free.is_some_and(|f| f < crate::disk::DB_ROOM) {
                e.paused = Some("its scans, jobs and thumbnails".into());
            }
            e.to_string()
        }),
    }
}
