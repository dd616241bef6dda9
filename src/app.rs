//! The composition root: opens the store, starts the worker pool and the maintenance loop,
//! runs until the process is asked to stop, then shuts down gracefully (leases handed
//! back, writer drained). Holds no SQL and no protocol logic; later issues plug the scan
//! pipeline, walks, watcher and HTTP server in here.

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

/// The foreground process (desktop double-click, or a service): runs until Ctrl-C/SIGTERM.
pub fn run(config: Config) -> anyhow::Result<()> {
    let store = open_store(&config)?;
    replay_trash(&store);
    add_pictures_library_if_none(&store)?;
    let pool = WorkerPool::start(&store, handlers(&store), pool_config(&config));
    let pool = Arc::new(pool);
    let waker = pool.clone();
    let maintenance =
        Maintenance::start(&store, maintenance_config(&config), move |_| waker.wake())
            .context("starting the maintenance loop")?;
    tracing::info!(
        data = %config.data_dir.display(),
        owner = store.owner(),
        "mediadex is running; press Ctrl-C to stop"
    );
    wait_for_stop_signal()?;
    tracing::info!("stopping: handing leases back");
    maintenance.shutdown();
    match Arc::try_unwrap(pool) {
        Ok(pool) => pool.shutdown(),
        Err(_) => tracing::warn!("the worker pool is still shared; it stops when dropped"),
    }
    Ok(())
}

/// The handlers this binary carries: the scan pipeline (the walks register here as they
/// land).
fn handlers(store: &Store) -> Handlers {
    Handlers::default().scan(ScanJob {
        store: store.clone(),
        config: ScanConfig::default(),
        extract: crate::media::extract_from,
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
            // A short poll: the answer comes this much after the run ends (a rescan of an
            // unchanged library takes well under a second; the check is one small read).
            Ok(true) => std::thread::sleep(std::time::Duration::from_millis(5)),
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
pub fn add_library(store: &Store, name: &str, root: &str) -> anyhow::Result<crate::model::Library> {
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

/// On first start the OS pictures folder becomes the first library, as a desktop user
/// expects; a machine without one (a NAS) starts with none.
fn add_pictures_library_if_none(store: &Store) -> anyhow::Result<()> {
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
    let (root, name) = crate::config::library_root(&pictures, None)?;
    let library = add_library(store, &name, &root)?;
    tracing::info!(root = %library.root, "added the pictures folder as the first library");
    Ok(())
}

fn wait_for_stop_signal() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the signal listener")?;
    runtime.block_on(async {
        #[cfg(unix)]
        {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .context("listening for SIGTERM")?;
            tokio::select! {
                r = tokio::signal::ctrl_c() => r.context("listening for Ctrl-C"),
                _ = term.recv() => Ok(()),
            }
        }
        #[cfg(not(unix))]
        {
            tokio::signal::ctrl_c()
                .await
                .context("listening for Ctrl-C")
        }
    })
}
