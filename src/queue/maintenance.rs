//! The recurring maintenance loop: reclaims expired leases every few seconds for the life of
//! the process (not only at boot: a worker that dies mid-afternoon is rescued
//! mid-afternoon), prunes finished jobs and runs past their retention, and sweeps assets
//! trashed longer than the trash retention.

use crate::model::{Millis, ReclaimReport};
use crate::store::Store;
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
    /// Trashed assets older than this are deleted for good (rows only; files in a
    /// library's trash folder are the user's).
    pub trash_retention: Millis,
}

impl Default for MaintenanceConfig {
    fn default() -> Self {
        MaintenanceConfig {
            every: Duration::from_secs(5),
            prune_every_rounds: 720,
            job_retention: 7 * 24 * 3_600_000,
            run_retention: 90 * 24 * 3_600_000,
            trash_retention: 30 * 24 * 3_600_000,
        }
    }
}

pub struct Maintenance {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Maintenance {
    /// Starts the loop; its first round runs at once (the boot rescue). `after_reclaim` is
    /// called when a round put work back (to wake idle workers).
    pub fn start(
        store: &Store,
        config: MaintenanceConfig,
        after_reclaim: impl Fn(&ReclaimReport) + Send + 'static,
    ) -> std::io::Result<Maintenance> {
        let (stop, stop_rx) = bounded::<()>(0);
        let store = store.clone();
        let thread = std::thread::Builder::new()
            .name("mediadex-maintenance".into())
            .spawn(move || {
                let mut round: u32 = 0;
                loop {
                    run_round(&store, &config, round, &after_reclaim);
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
        match store.sweep_trash(config.trash_retention) {
            Ok(0) => {}
            Ok(n) => tracing::info!(assets = n, "swept assets trashed past the retention"),
            Err(e) => tracing::warn!(error = %e, "trash sweep failed; retrying later"),
        }
    }
}
