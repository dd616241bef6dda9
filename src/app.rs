//! The composition root: opens the store, starts the worker pool and the maintenance loop,
//! runs until the process is asked to stop, then shuts down gracefully (leases handed
//! back, writer drained). Holds no SQL and no protocol logic. `serve` is the engine of the
//! service (and, later, of the desktop mode): workers, maintenance and the HTTP server.

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
    match crate::logfile::open(&config.data_dir) {
        Ok(path) => tracing::info!(log = %path.display(), "logging to file"),
        Err(e) => tracing::warn!(error = %e, "cannot write the log file; logging to stderr only"),
    }
    let store = open_store(&config)?;
    replay_trash(&store);
    add_pictures_library_if_none(&store)?;
    let pool = WorkerPool::start(&store, handlers(&store), pool_config(&config));
    let pool = Arc::new(pool);
    let waker = pool.clone();
    let maintenance =
        Maintenance::start(&store, maintenance_config(&config), move |_| waker.wake())
            .context("starting the maintenance loop")?;
    let watcher = start_watcher(&store, &config, &pool)?;
    tracing::info!(
        data = %config.data_dir.display(),
        owner = store.owner(),
        "mediadex is running; press Ctrl-C to stop"
    );
    wait_for_stop_signal()?;
    tracing::info!("stopping: handing leases back");
    if let Some(watcher) = watcher {
        watcher.shutdown();
    }
    maintenance.shutdown();
    match Arc::try_unwrap(pool) {
        Ok(pool) => pool.shutdown(),
        Err(_) => tracing::warn!("the worker pool is still shared; it stops when dropped"),
    }
    Ok(())
}

/// Watches every library for changes (unless watching is off), waking `pool` when a
/// change was admitted as a scan request.
fn start_watcher(
    store: &Store,
    config: &Config,
    pool: &Arc<WorkerPool>,
) -> anyhow::Result<Option<crate::watch::Watcher>> {
    if !config.watch_enabled {
        tracing::info!("file watching is off (MEDIADEX_WATCH=off)");
        return Ok(None);
    }
    let libraries = store.libraries()?;
    let pool = pool.clone();
    let wake: crate::watch::Waker = Arc::new(move || pool.wake());
    let watcher = crate::watch::Watcher::start(store, &libraries, config.watch.clone(), wake);
    Ok(Some(watcher))
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

/// The default address of `mediadex serve`.
pub const DEFAULT_BIND: &str = "127.0.0.1:7468";
/// How long open HTTP requests get to finish after a stop signal.
const HTTP_DRAIN: std::time::Duration = std::time::Duration::from_secs(3);

/// What `serve` is asked to do besides what `Config` says.
pub struct ServeOptions {
    pub bind: std::net::SocketAddr,
    /// Folders to index (added as libraries when they are not yet, and scanned).
    pub libraries: Vec<std::path::PathBuf>,
    /// Serve a non-loopback address without the access token.
    pub insecure_no_auth: bool,
    /// Open the browser on the server once it listens (desktop mode).
    pub open_browser: bool,
}

/// The engine: store, workers, maintenance and the HTTP server, until SIGTERM/SIGINT; then
/// the HTTP server stops taking requests (open ones get a few seconds), event streams end,
/// the workers hand their leases back and the writer flushes.
pub fn serve(config: Config, options: ServeOptions) -> anyhow::Result<()> {
    let store = open_store(&config)?;
    replay_trash(&store);
    for path in &options.libraries {
        adopt_library(&store, path)?;
    }
    let token = crate::token::load_or_create(&config.data_dir)?;
    let security =
        crate::http::Security::for_bind(options.bind, Some(token), options.insecure_no_auth);
    if !security.loopback && !security.token_required {
        tracing::warn!(
            bind = %options.bind,
            "serving a non-loopback address WITHOUT the access token (--insecure-no-auth): \
             anyone who can reach it can read your library"
        );
    }
    let pool = Arc::new(WorkerPool::start(
        &store,
        handlers(&store),
        pool_config(&config),
    ));
    let waker = pool.clone();
    let maintenance =
        Maintenance::start(&store, maintenance_config(&config), move |_| waker.wake())
            .context("starting the maintenance loop")?;
    let weak = Arc::downgrade(&pool);
    let wake: crate::http::Wake = Arc::new(move || {
        if let Some(pool) = weak.upgrade() {
            pool.wake();
        }
    });
    let http = crate::http::HttpConfig {
        security,
        thumbs: crate::thumbs::Thumbs::new(&config.data_dir),
        event_poll: std::time::Duration::from_millis(250),
        hourly_limit: config.scan_hourly_limit,
        wake,
    };
    let served = run_http(&store, &options, http);
    tracing::info!("stopping: handing leases back");
    maintenance.shutdown();
    match Arc::try_unwrap(pool) {
        Ok(pool) => pool.shutdown(),
        Err(_) => tracing::warn!("the worker pool is still shared; it stops when dropped"),
    }
    drop(store);
    served
}

/// Runs the HTTP server on its own runtime until a stop signal, then drains it.
fn run_http(
    store: &Store,
    options: &ServeOptions,
    http: crate::http::HttpConfig,
) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the HTTP runtime")?;
    let outcome = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(options.bind)
            .await
            .with_context(|| format!("cannot listen on {}", options.bind))?;
        let addr = listener.local_addr().context("reading the bound address")?;
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let state = crate::http::AppState::start(store.clone(), http, stop_rx.clone())?;
        let router = crate::http::router(state);
        let url = format!("http://{addr}/");
        tracing::info!(%url, "mediadex is running; listening on {url}");
        if options.open_browser {
            open_browser(&url);
        }
        let mut stopped = stop_rx;
        let server = tokio::spawn(crate::http::serve(listener, router, async move {
            let _ = stopped.wait_for(|s| *s).await;
        }));
        let signal = stop_signal().await;
        // Ends the event streams and tells the server to stop taking requests.
        let _ = stop_tx.send(true);
        match tokio::time::timeout(HTTP_DRAIN, server).await {
            Ok(Ok(Err(e))) => tracing::warn!(error = %e, "the HTTP server stopped with an error"),
            Err(_) => tracing::warn!("open HTTP requests did not finish in time; closing them"),
            _ => {}
        }
        signal
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    outcome
}

/// The seam of desktop mode: opening the browser lands with it; until then, say where.
fn open_browser(url: &str) {
    tracing::info!(%url, "open {url} in your browser");
}

/// Adds `path` as a library unless it is one already; a new one gets a boot scan.
fn adopt_library(store: &Store, path: &std::path::Path) -> anyhow::Result<()> {
    let (root, name) = crate::config::library_root(path, None)?;
    if store.libraries()?.iter().any(|l| l.root == root) {
        return Ok(());
    }
    let library = add_library(store, &name, &root)
        .with_context(|| format!("cannot add {} as a library", path.display()))?;
    tracing::info!(root = %library.root, name = %library.name, "added a library");
    store.request_scan(crate::model::ScanRequest {
        library_id: library.id,
        scope: String::new(),
        trigger: crate::model::Trigger::Boot,
        watch_event: None,
    })?;
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
async fn stop_signal() -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
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
}

fn wait_for_stop_signal() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the signal listener")?;
    runtime.block_on(stop_signal())
}
