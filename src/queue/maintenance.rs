//! The recurring maintenance loop: reclaims expired leases every few seconds for the life of
//! the process (not only at boot: a worker that dies mid-afternoon is rescued
//! mid-afternoon), prunes finished jobs and runs past their retention, and sweeps assets
//! trashed longer than the trash retention, then has the thumbnails of what the sweep
//! deleted forgotten (through a callback: the cache is not this module's). On the service
//! it also keeps the database file in shape: a passive WAL checkpoint often, a truncating
//! one and the planner's statistics refresh (SQLite's optimize) rarely.

use crate::model::{Millis, ReclaimReport};
use crate::store::{CheckpointMode, Store};
use crossbeam_channel::{Sender, bounded};
use std::thread::JoinHandle;
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct MaintenanceConfig {
    pub every: Duration,
    /// Prune once per this many rounds.
    pub prune_every_rounds: u32,
    pub job_retention: Millis,
    pub run_retention: Millis,
    /// Trashed assets older than this are deleted for good (rows, faces and cached
    /// thumbnails; files in a library's trash folder are the user's).
    pub trash_retention: Millis,
    /// A passive WAL checkpoint once per this many rounds (never waits for anyone).
    pub checkpoint_every_rounds: u32,
    /// A truncating checkpoint and the statistics refresh once per this many rounds.
    pub optimize_every_rounds: u32,
}

impl Default for MaintenanceConfig {
    fn default() -> Self {
        MaintenanceConfig {
            every: Duration::from_secs(5),
            prune_every_rounds: 720,
            job_retention: 7 * 24 * 3_600_000,
            run_retention: 90 * 24 * 3_600_000,
            trash_retention: 30 * 24 * 3_600_000,
            checkpoint_every_rounds: 12,
            optimize_every_rounds: 720,
        }
    }
}

pub struct Maintenance {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Maintenance {
    /// Starts the loop; its first round runs at once (the boot rescue). `after_reclaim` is
    /// called when a round put work back (to wake idle workers); `forget_thumbnails` after
    /// a sweep committed, with the checksums whose cached thumbnails are no one's any more.
    pub fn start(
        store: &Store,
        config: MaintenanceConfig,
        after_reclaim: impl Fn(&ReclaimReport) + Send + 'static,
        forget_thumbnails: impl Fn(&[[u8; 32]]) + Send + 'static,
    ) -> std::io::Result<Maintenance> {
        let (stop, stop_rx) = bounded::<()>(0);
        let store = store.clone();
        let thread = std::thread::Builder::new()
            .name("mediadex-maintenance".into())
            .spawn(move || {
                let mut round: u32 = 0;
                loop {
                    run_round(&store, &config, round, &after_reclaim, &forget_thumbnails);
                    round = round.wrapping_add(1);
                    if stop_rx
                        .recv_timeout(config.every)
                        .is_err_and(|e| e.is_disconnected())
                    {
                        return;
                    }
                }
            })?;
        Ok(Maintenance {
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Maintenance {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// One round; errors are logged and retried next round, never fatal.
pub fn run_round(
    store: &Store,
    config: &MaintenanceConfig,
    round: u32,
    after_reclaim: &dyn Fn(&ReclaimReport),
    forget_thumbnails: &dyn Fn(&[[u8; 32]]),
) {
    match store.reclaim_stale() {
        Ok(report) if report != ReclaimReport::default() => {
            tracing::info!(?report, "reclaimed expired leases");
            after_reclaim(&report);
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "reclaim failed; retrying next round"),
    }
    if round.is_multiple_of(config.prune_every_rounds.max(1)) {
        match store.prune(config.job_retention, config.run_retention) {
            Ok(0) => {}
            Ok(n) => tracing::info!(rows = n, "pruned finished jobs and runs"),
            Err(e) => tracing::warn!(error = %e, "prune failed; retrying later"),
        }
        sweep(store, config, forget_thumbnails);
    }
    keep_file_in_shape(store, config, round);
}

/// The sweep, then its thumbnails: only once the deletion committed, so a sweep that rolled
/// back leaves every thumbnail of its assets in place.
fn sweep(store: &Store, config: &MaintenanceConfig, forget_thumbnails: &dyn Fn(&[[u8; 32]])) {
    match store.sweep(config.trash_retention) {
        Ok(swept) => {
            if swept.assets > 0 {
                tracing::info!(
                    assets = swept.assets,
                    "swept assets trashed past the retention"
                );
            }
            if !swept.thumbnails.is_empty() {
                forget_thumbnails(&swept.thumbnails);
            }
        }
        Err(e) => tracing::warn!(error = %e, "trash sweep failed; retrying later"),
    }
}

/// The WAL grows while readers keep old snapshots alive; checkpoints bound it. The
/// truncating one and the statistics refresh run on the rare schedule (they may wait), but
/// never in the boot round: a truncating checkpoint blocks the writer until it is done, and
/// at boot the writer is busy with what the process was started for (a `scan --wait` waited
/// up to 10 ms on it). The boot round checkpoints passively.
fn keep_file_in_shape(store: &Store, config: &MaintenanceConfig, round: u32) {
    let rare = round > 0 && round.is_multiple_of(config.optimize_every_rounds.max(1));
    let often = round.is_multiple_of(config.checkpoint_every_rounds.max(1));
    if rare && let Err(e) = store.optimize() {
        tracing::warn!(error = %e, "statistics refresh failed; retrying later");
    }
    let mode = match (rare, often) {
        (true, _) => CheckpointMode::Truncate,
        (false, true) => CheckpointMode::Passive,
        (false, false) => return,
    };
    match store.checkpoint(mode) {
        Ok(r) if r.busy => tracing::debug!(?mode, "checkpoint could not finish; readers busy"),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, ?mode, "WAL checkpoint failed; retrying later"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;
    use crate::store::StoreOptions;

    #[test]
    fn the_rare_round_truncates_the_wal_and_the_frequent_one_checkpoints_passively() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("m.db");
        let store = Store::open(&db, FakeClock::new(1_000), StoreOptions::default()).expect("open");
        for i in 0..50 {
            store
                .add_library(&format!("l{i}"), &format!("/l{i}"))
                .expect("write");
        }
        let wal = dir.path().join("m.db-wal");
        let len = || std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
        assert!(len() > 0, "the writes sit in the WAL");
        let passive = store.checkpoint(CheckpointMode::Passive).expect("passive");
        assert!(!passive.busy);
        assert_eq!(
            passive.log_frames, passive.checkpointed_frames,
            "all copied back"
        );
        assert!(len() > 0, "a passive checkpoint leaves the file");
        let config = MaintenanceConfig::default();
        store.add_library("one more", "/more").expect("write");
        run_round(&store, &config, 0, &|_| {}, &|_| {});
        assert!(len() > 0, "the boot round does not truncate");
        run_round(
            &store,
            &config,
            config.optimize_every_rounds,
            &|_| {},
            &|_| {},
        );
        assert_eq!(len(), 0, "the rare round truncated the WAL");
        assert_eq!(store.libraries().expect("read").len(), 51, "nothing lost");
    }
}
