//! The composition root: what the binary's modes share (opening the store, the handlers,
//! the pool and maintenance settings, adding a library) and the modes themselves: `serve`
//! (the engine: workers, maintenance, watcher and HTTP server, until a stop signal; then
//! leases handed back and the writer drained) and `desktop` (one instance per data dir, the
//! browser opened on it). Holds no SQL and no protocol logic.

mod desktop;
mod serve;

pub use desktop::desktop;
pub use serve::{DEFAULT_BIND, ServeOptions, serve};

use crate::clock::{SharedClock, SystemClock};
use crate::config::Config;
use crate::model::Millis;
use crate::queue::{Handlers, Maintenance, MaintenanceConfig, PoolConfig, WorkerPool};
use crate::scan::job::{ScanConfig, ScanJob};
use crate::store::{Store, StoreOptions};
use anyhow::Context;
use std::sync::Arc;

/// Opens the store for `config` with this process's identity and the system clock.
pub fn open_store(config: &Config) -> Result<Store, crate::store::StoreError> {
    let clock: SharedClock = Arc::new(SystemClock);
    Store::open(&config.db_path, clock, StoreOptions::default())
}

/// The handlers this binary carries: the scan pipeline (the walks register here as they
/// land).
fn handlers(store: &Store) -> Handlers {
    Handlers::default().scan(ScanJob {
        store: store.clone(),
        config: ScanConfig::default(),
        extract: crate::media::extract,
    })
}

/// Runs workers in this process until none of `libraries` has a scan waiting or running
/// (`scan --wait` without a service). Another process may do part of the work; either way
/// this returns when the work is done.
pub fn work_until_idle(store: &Store, config: &Config, libraries: &[i64]) -> anyhow::Result<()> {
    let pool = WorkerPool::start(store, handlers(store), pool_config(config));
    let maintenance = Maintenance::start(store, maintenance_config(config), |_| {})
        .context("starting the maintenance loop")?;
    let busy = || -> anyhow::Result<bool> {
        for &id in libraries {
            let runs = store.scan_runs(Some(id), 3)?;
            if runs.iter().any(|r| !r.state.is_terminal()) {
                return Ok(true);
            }
        }
        Ok(false)
    };
    let outcome = loop {
        match busy() {
            Ok(true) => std::thread::sleep(std::time::Duration::from_millis(50)),
            Ok(false) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    maintenance.shutdown();
    pool.shutdown();
    outcome
}

/// Finishes trash and restore moves a crash interrupted. A failure is logged, not fatal:
/// the intents stay pending for the next start.
pub fn replay_trash(store: &Store) {
    match crate::trash::replay(store) {
        Ok(0) => {}
        Ok(n) => tracing::info!(moves = n, "finished interrupted trash moves"),
        Err(e) => tracing::warn!(error = %e, "could not finish interrupted trash moves"),
    }
}

/// Adds a library and records its root's identity (device id, marker) for the circuit
/// breaker.
pub fn add_library(
    store: &Store,
    name: &str,
    root: &str,
) -> Result<crate::model::Library, crate::store::StoreError> {
    let library = store.add_library(name, root)?;
    crate::scan::identity::record(store, &library)?;
    Ok(library)
}

fn millis(d: std::time::Duration) -> Millis {
    Millis::try_from(d.as_millis()).unwrap_or(Millis::MAX)
}

fn pool_config(config: &Config) -> PoolConfig {
    PoolConfig {
        workers: config.workers,
        ..PoolConfig::with_ttl(config.workers, millis(config.lease_ttl))
    }
}

fn maintenance_config(config: &Config) -> MaintenanceConfig {
    MaintenanceConfig {
        every: config.maintenance_interval,
        job_retention: millis(config.job_retention),
        run_retention: millis(config.run_retention),
        ..MaintenanceConfig::default()
    }
}
