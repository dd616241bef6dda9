//! `mediadex serve`: the engine (store, workers, maintenance, watcher, HTTP server) until
//! SIGTERM/SIGINT, then a graceful drain. Also the engine of the desktop mode, which adds
//! the instance claim and the browser.

use super::{forget_thumbnails, handlers, maintenance_config, open_store, pool_config};
use crate::config::Config;
use crate::queue::{Maintenance, WorkerPool};
use crate::store::Store;
use anyhow::Context;
use std::sync::Arc;

/// The default address of `mediadex serve`.
pub const DEFAULT_BIND: &str = "127.0.0.1:7468";
/// How long open HTTP requests get to finish after a stop signal.
const HTTP_DRAIN: std::time::Duration = std::time::Duration::from_secs(3);

/// What `serve` is asked to do besides what `Config` says.
pub struct ServeOptions {
    pub bind: std::net::SocketAddr,
    /// When `bind`'s port is taken, take the next free one (desktop mode); `serve --bind`
    /// fails instead, with a clear message.
    pub next_free_port: bool,
    /// Folders to index (added as libraries when they are not yet, and scanned).
    pub libraries: Vec<std::path::PathBuf>,
    /// Serve a non-loopback address without the access token.
    pub insecure_no_auth: bool,
    /// Open the browser on the server once it listens (desktop mode).
    pub open_browser: bool,
    /// Adopt the OS pictures folder when there is no library yet (desktop mode).
    pub adopt_pictures: bool,
    /// The data dir's instance claim when the caller took it already (desktop mode); else
    /// `serve` tries to take it, so that a desktop launch finds this server.
    pub claim: Option<crate::instance::Claim>,
}

/// How many ports after the default the desktop mode tries.
const PORT_TRIES: u16 = 20;

/// The engine: store, workers, maintenance, watcher and the HTTP server, until SIGTERM or
/// SIGINT; then the HTTP server stops taking requests (open ones get a few seconds), event
/// streams end, the watcher stops, the workers hand their leases back and the writer
/// flushes.
pub fn serve(config: Config, mut options: ServeOptions) -> anyhow::Result<()> {
    open_log_file(&config);
    let claim = options.claim.take().or_else(|| claim_instance(&config));
    let store = open_store(&config, crate::store::StartCheck::Full)?;
    if options.adopt_pictures {
        super::desktop::add_pictures_library_if_none(&store)?;
    }
    for path in &options.libraries {
        adopt_library(&store, path)?;
    }
    crate::ops::scans::request_at_start(&store);
    super::boot_walks(&store, &config);
    let security = security(&config, &options)?;
    let pool = Arc::new(WorkerPool::start(
        &store,
        handlers(&store, &config),
        pool_config(&config),
    ));
    let waker = pool.clone();
    let maintenance = Maintenance::start(
        &store,
        maintenance_config(&config),
        move |_| waker.wake(),
        forget_thumbnails(&config),
    )
    .context("starting the maintenance loop")?;
    let wake = weak_waker(&pool);
    // Another host's new work wakes this one's workers (a shared database); without it
    // they find it at their next poll.
    let notices = wake.clone();
    let listener = store
        .on_new_work(move || notices())
        .context("listening for other hosts' work")?;
    let watcher = start_watcher(&store, &config, wake.clone())?;
    let http = crate::http::HttpConfig {
        security,
        thumbs: super::thumbs(&config),
        event_poll: std::time::Duration::from_millis(250),
        ops: crate::ops::Services {
            wake,
            watch: watcher.as_ref().map(crate::watch::Watcher::handle),
            without_workers: false,
            ..super::command_services(&config, store.clone(), true)
        },
    };
    let served = run_http(&store, &options, http, claim.as_ref());
    tracing::info!("stopping: handing leases back");
    if let Some(watcher) = watcher {
        watcher.shutdown();
    }
    maintenance.shutdown();
    drop(listener);
    match Arc::try_unwrap(pool) {
        Ok(pool) => pool.shutdown(),
        Err(_) => tracing::warn!("the worker pool is still shared; it stops when dropped"),
    }
    drop(store);
    drop(claim);
    served
}

fn open_log_file(config: &Config) {
    let log = config.log_file.display();
    match crate::logfile::open(&config.log_file) {
        Ok(()) => tracing::info!(%log, "logging to file"),
        Err(e) => {
            tracing::warn!(%log, error = %e, "cannot write the log file; logging to stderr only")
        }
    }
}

/// Takes the data dir's instance claim if nobody holds it. A second engine on one data dir
/// is safe (leases keep them apart), only a desktop launch will open the other one.
fn claim_instance(config: &Config) -> Option<crate::instance::Claim> {
    match crate::instance::claim(&config.data_dir) {
        Ok(crate::instance::Launch::First(claim)) => Some(claim),
        Ok(crate::instance::Launch::Running(other)) => {
            let url = other.map(|i| i.url).unwrap_or_default();
            tracing::warn!(%url, "another mediadex already runs on this data dir");
            None
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot claim the instance file");
            None
        }
    }
}

/// The access rules for the bind address; the token is made on first use.
fn security(config: &Config, options: &ServeOptions) -> anyhow::Result<crate::http::Security> {
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
    if security.token_required {
        // Said once, at start: the first visit from another machine needs it.
        let data = config.data_dir.display();
        tracing::info!(
            "this address needs the access token: the page asks for it once and remembers it; \
             print it with `mediadex token --data {data}` (as the service's user) or read {}",
            crate::token::path(&config.data_dir).display()
        );
    }
    Ok(security)
}

/// Wakes the pool while it lives (the HTTP server and the watcher may outlive it briefly).
fn weak_waker(pool: &Arc<WorkerPool>) -> crate::ops::Wake {
    let weak = Arc::downgrade(pool);
    Arc::new(move || {
        if let Some(pool) = weak.upgrade() {
            pool.wake();
        }
    })
}

/// Watches every library for changes (unless watching is off).
fn start_watcher(
    store: &Store,
    config: &Config,
    wake: crate::ops::Wake,
) -> anyhow::Result<Option<crate::watch::Watcher>> {
    if !config.watch_enabled {
        tracing::info!("file watching is off (MEDIADEX_WATCH=off)");
        return Ok(None);
    }
    let libraries = store.libraries()?;
    let watcher = crate::watch::Watcher::start(store, &libraries, config.watch.clone(), wake);
    Ok(Some(watcher))
}

/// Binds `options.bind`, or with `next_free_port` the first free port after it.
async fn bind(options: &ServeOptions) -> anyhow::Result<tokio::net::TcpListener> {
    let tries = if options.next_free_port {
        PORT_TRIES
    } else {
        1
    };
    let mut addr = options.bind;
    let mut last = None;
    for _ in 0..tries {
        match tokio::net::TcpListener::bind(addr).await {
            Ok(listener) => return Ok(listener),
            Err(e) => last = Some(e),
        }
        addr.set_port(addr.port().saturating_add(1));
    }
    let e = last.map_or_else(|| "no port tried".to_string(), |e| e.to_string());
    anyhow::bail!(
        "cannot listen on {} ({e}); is another program using the port? \
         Choose another with --bind",
        options.bind
    )
}

/// Runs the HTTP server on its own runtime until a stop signal, then drains it.
fn run_http(
    store: &Store,
    options: &ServeOptions,
    http: crate::http::HttpConfig,
    claim: Option<&crate::instance::Claim>,
) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the HTTP runtime")?;
    let outcome = runtime.block_on(async {
        let stop = Stop::listen()?;
        let listener = bind(options).await?;
        let addr = listener.local_addr().context("reading the bound address")?;
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let state = crate::http::AppState::start(http, stop_rx.clone())?;
        let router = crate::http::router(state);
        let url = format!("http://{addr}/");
        let mut stopped = stop_rx;
        let server = tokio::spawn(crate::http::serve(listener, router, async move {
            let _ = stopped.wait_for(|s| *s).await;
        }));
        announce(store, &url, claim, options.open_browser);
        let signal = stop.wait().await;
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

/// Says where the server is: the log, the instance file, and the browser when asked.
fn announce(store: &Store, url: &str, claim: Option<&crate::instance::Claim>, browser: bool) {
    tracing::info!(%url, "mediadex is running; listening on {url}");
    if let Some(claim) = claim {
        let instance = crate::instance::Instance {
            pid: std::process::id(),
            url: url.to_string(),
            owner: store.owner().to_string(),
        };
        if let Err(e) = claim.publish(&instance) {
            tracing::warn!(error = %e, "cannot write the instance file");
        }
    }
    if browser {
        super::desktop::open_browser(url);
    }
}

/// Adds `path` as a library unless it is one already (its scan is the boot scan that
/// `ops::scans::request_at_start` asks for every library); one that is away is added
/// unavailable (`ops::library::adopt`), and the service serves.
fn adopt_library(store: &Store, path: &std::path::Path) -> anyhow::Result<()> {
    let added = crate::ops::library::adopt(store, path)
        .with_context(|| format!("cannot add {} as a library", path.display()))?;
    if let Some(library) = added {
        tracing::info!(root = %library.root, name = %library.name, "added a library");
    }
    Ok(())
}

/// Ctrl-C and SIGTERM, listened for from `listen` on (inside the HTTP runtime, before the
/// server says it is running): a signal that arrives before `wait` is kept, never the
/// default action that kills the process without handing its leases back.
struct Stop {
    #[cfg(unix)]
    signals: (tokio::signal::unix::Signal, tokio::signal::unix::Signal),
}

impl Stop {
    fn listen() -> anyhow::Result<Stop> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let signals = (
                signal(SignalKind::interrupt()).context("listening for Ctrl-C")?,
                signal(SignalKind::terminate()).context("listening for SIGTERM")?,
            );
            Ok(Stop { signals })
        }
        #[cfg(not(unix))]
        Ok(Stop {})
    }

    async fn wait(self) -> anyhow::Result<()> {
        #[cfg(unix)]
        {
            let (mut int, mut term) = self.signals;
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            Ok(())
        }
        #[cfg(not(unix))]
        {
            tokio::signal::ctrl_c()
                .await
                .context("listening for Ctrl-C")
        }
    }
}
