//! The composition root: what the binary's modes share (opening the store, and replacing a
//! damaged index found there by a fresh one; the handlers, the pool and maintenance
//! settings; the `ops::Services` of a command) and the modes themselves: `serve`
//! (the engine: workers, maintenance, watcher and HTTP server, until a stop signal; then
//! leases handed back and the writer drained) and `desktop` (one instance per data dir, the
//! browser opened on it). Wiring only: the use cases are in `ops`. Holds no SQL and no
//! protocol logic.
//!
//! Must not import: rusqlite, r2d2, axum

mod desktop;
mod serve;

pub use desktop::desktop;
pub use serve::{DEFAULT_BIND, ServeOptions, serve};

use crate::clock::SystemClock;
use crate::config::Config;
use crate::model::Millis;
use crate::model::{MOVE_JOB_KIND, RECLUSTER_JOB_KIND, THUMBS_JOB_KIND, WalkKindId};
use crate::people::recluster::ReclusterJob;
use crate::queue::{Handlers, Maintenance, MaintenanceConfig, PoolConfig, WorkerPool};
use crate::scan::job::{ScanConfig, ScanJob};
use crate::store::{StartCheck, Store, StoreError, StoreOptions};
use crate::thumbs::job::ThumbsJob;
use crate::trash::MoveJob;
use crate::walks::content_hash::ContentHashWalk;
use crate::walks::embeddings::EmbeddingsWalk;
use crate::walks::faces::{FaceDetector, FacesWalk};
use crate::walks::similar::SimilarWalk;
use crate::walks::{WalkJob, WalkKind};
use anyhow::Context;
use std::sync::Arc;

/// What `mediadex --version` prints after the name: the version, the git commit it was built
/// from (`build.rs`), the SQLite inside, and the schemes whose change makes a walk re-read
/// the library (so a bug report says which index a binary writes).
pub fn long_version() -> String {
    format!(
        "{}\ncommit: {}\nsqlite: {}\ncontent-hash scheme: {}\nface scheme: {}\nsimilar scheme: {}\nembedding scheme: {}",
        env!("CARGO_PKG_VERSION"),
        env!("MEDIADEX_GIT_COMMIT"),
        crate::store::sqlite_version(),
        crate::media::content_hash::SCHEME,
        crate::faces::SCHEME,
        crate::similar::SCHEME,
        crate::faces::EMBED_SCHEME,
    )
}

/// Opens the store for `config` with this process's identity and the system clock, after
/// reading as much of the file as `check` says (`store/vet.rs` has the measured costs).
///
/// A damaged index is moved aside, never deleted, and a fresh one is made at once with the
/// libraries the damaged file still shows (their `.mediadex-library` markers are kept, so the
/// circuit breaker still knows their roots); this start then ends with `IndexReplaced`, so
/// that no command answers from an index that was emptied under it. The next start indexes
/// the libraries anew: the service's and the app's boot scans do it, or `scan --wait`.
pub fn open_store(config: &Config, check: StartCheck) -> Result<Store, OpenError> {
    let mut options = StoreOptions {
        check,
        database: config.database.clone(),
        ..StoreOptions::default()
    };
    if let Some(files) = config.write_group_files {
        options.group_limits.weight = files;
    }
    match Store::open(&config.db_path, Arc::new(SystemClock), options) {
        Err(StoreError::Damaged { damage, .. }) => Err(replace_damaged(config, damage)),
        other => Ok(other?),
    }
}

/// Why `open_store` gave no store.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Replaced(#[from] IndexReplaced),
    #[error(transparent)]
    Host(#[from] crate::host::HostError),
}

/// A damaged index was found at start, moved aside and replaced by a fresh one.
#[derive(Debug, thiserror::Error)]
#[error("the index {} was damaged ({damage}) and moved to {}", path.display(), moved_to.display())]
pub struct IndexReplaced {
    pub path: std::path::PathBuf,
    pub damage: crate::store::Damage,
    pub moved_to: std::path::PathBuf,
    /// The roots of the libraries the fresh index has again.
    pub libraries: Vec<String>,
}

fn replace_damaged(config: &Config, damage: crate::store::Damage) -> OpenError {
    let path = config.db_path.clone();
    let moved_to = match crate::store::move_aside(&path, chrono::Utc::now()) {
        Ok(moved) => moved,
        Err(e) => return e.into(),
    };
    let host = match crate::host::load_or_create(&config.data_dir) {
        Ok(host) => host,
        Err(e) => return e.into(),
    };
    let salvaged = crate::store::salvage_libraries(&moved_to, &host);
    let libraries = readd_libraries(config, &host, &salvaged);
    IndexReplaced {
        path,
        damage,
        moved_to,
        libraries,
    }
    .into()
}

/// The fresh index, with the libraries of the damaged one added again; returns the roots
/// added. A failure is logged: the user is told which libraries came back.
fn readd_libraries(config: &Config, host: &str, libraries: &[(String, String)]) -> Vec<String> {
    let options = StoreOptions {
        host: Some(host.to_string()),
        ..StoreOptions::default()
    };
    let store = match Store::open(&config.db_path, Arc::new(SystemClock), options) {
        Ok(store) => store,
        Err(e) => {
            tracing::warn!(error = %e, "cannot make the fresh index");
            return vec![];
        }
    };
    let mut added = vec![];
    for (name, root) in libraries {
        match add_library(&store, name, root) {
            Ok(_) => added.push(root.clone()),
            Err(e) => tracing::warn!(%root, error = %e, "cannot add the library again"),
        }
    }
    added
}

/// The handlers this binary carries: the scan pipeline, the thumbnails of what scans add,
/// and the walks.
fn handlers(store: &Store, config: &Config) -> Handlers {
    let thumbs = Arc::new(thumbs(config));
    let mut handlers = scan_handler(store, config)
        .job(THUMBS_JOB_KIND, ThumbsJob::new(store, thumbs))
        .job(
            MOVE_JOB_KIND,
            MoveJob::new(store).with_faces(Some(faces_follow_up(store, config))),
        )
        .job(
            WalkKindId::ContentHash.job_kind(),
            WalkJob::new(store, Arc::new(content_walk(config))),
        )
        .job(
            WalkKindId::Similar.job_kind(),
            WalkJob::new(store, Arc::new(similar_walk(config))),
        );
    if let Some(faces) = faces_walk(config) {
        handlers = handlers.job(
            WalkKindId::Faces.job_kind(),
            WalkJob::new(store, Arc::new(faces)),
        );
    }
    if let Some(embeddings) = embeddings_walk(store, config) {
        handlers = handlers.job(
            WalkKindId::Embeddings.job_kind(),
            WalkJob::new(store, Arc::new(embeddings)),
        );
    }
    handlers.job(RECLUSTER_JOB_KIND, recluster_job(store, config))
}

/// The embedding scheme this process stamps: the embedder's version unless overridden;
/// known without loading the model, as `faces_scheme` is.
/// Copies the index `store` holds into `to`: a PostgreSQL URL (an empty database), or
/// the path of a SQLite file that does not exist yet. Answers the check of both sides.
pub fn copy_index(
    config: &Config,
    store: Store,
    to: &str,
) -> anyhow::Result<crate::store::CopyCheck> {
    use anyhow::Context;
    let server =
        to.starts_with("postgres://") || to.starts_with("postgresql://") || to.contains('=');
    let (path, database) = if server {
        (config.db_path.clone(), Some(to.to_string()))
    } else {
        let path = std::path::PathBuf::from(to);
        anyhow::ensure!(
            !path.exists(),
            "{} exists already: the copy goes into a new file",
            path.display()
        );
        (path, None)
    };
    let options = StoreOptions {
        database,
        ..StoreOptions::default()
    };
    let copy = Store::open(&path, Arc::new(SystemClock), options)
        .with_context(|| format!("opening the destination {}", describe_target(to, server)))?;
    Ok(store.copy_into(&copy)?)
}

/// A destination in words, without a password a URL may carry.
fn describe_target(to: &str, server: bool) -> String {
    if server {
        "database".to_string()
    } else {
        to.to_string()
    }
}

pub fn embed_scheme(config: &Config) -> i64 {
    config.embed_scheme.unwrap_or(crate::faces::EMBED_SCHEME)
}

/// The embedding walk, when this build's descriptor loads (as for the detector, a failure
/// is logged and the walk is not run).
pub fn embeddings_walk(store: &Store, config: &Config) -> Option<EmbeddingsWalk> {
    match crate::faces::FaceEmbedder::new() {
        Ok(e) => Some(EmbeddingsWalk::new(
            store,
            Arc::new(crate::faces::WalkDlib(e)),
            config.embed_scheme,
        )),
        Err(e) => {
            tracing::error!(error = %e, "face descriptor unavailable; embedding walk disabled");
            None
        }
    }
}

/// The "recluster all" job, grouping this process's embedding scheme.
pub fn recluster_job(store: &Store, config: &Config) -> ReclusterJob {
    ReclusterJob::new(store, embed_scheme(config))
}

/// The thumbnail cache at the configured size and cap, keeping the configured reserve free
/// on the data dir's disk.
pub fn thumbs(config: &Config) -> crate::thumbs::Thumbs {
    crate::thumbs::Thumbs::new(&config.data_dir)
        .with_space(crate::disk::system(), config.disk_reserve)
        .with_size(config.thumb_size)
        .with_cap(config.thumb_cache_max)
}

fn scan_handler(store: &Store, config: &Config) -> Handlers {
    Handlers::default().scan(ScanJob {
        store: store.clone(),
        config: ScanConfig {
            content_hash_scheme: content_walk(config).scheme,
            faces: Some(faces_follow_up(store, config)),
            ..ScanConfig::default()
        },
        extract: crate::media::extract_from,
    })
}

/// The content-hash walk as this process runs it (scheme override from the config).
pub fn content_walk(config: &Config) -> ContentHashWalk {
    ContentHashWalk::new(config.content_hash_scheme)
}

/// The similar-photo walk as this process runs it (scheme override from the config).
pub fn similar_walk(config: &Config) -> SimilarWalk {
    SimilarWalk::new(Arc::new(crate::similar::WalkHasher), config.similar_scheme)
}

/// The face detector this build carries: RetinaFace, its model embedded in the binary. `None`
/// only if the model fails to load (a broken build): the face-repair walk is then not
/// scheduled, and the reason is logged.
pub fn face_detector() -> Option<Arc<dyn FaceDetector>> {
    match crate::faces::RetinaFace::new() {
        Ok(det) => Some(Arc::new(crate::faces::WalkRetinaFace(det))),
        Err(e) => {
            tracing::error!(error = %e, "face detector unavailable; face walk disabled");
            None
        }
    }
}

/// The face scheme this process stamps: the detector's version unless overridden. It is
/// known without loading the model, so a scan (which only queues the face walk) and
/// `status` never pay the model's load (~0.15 s of CPU, most of an unchanged rescan's
/// start-up).
pub fn faces_scheme(config: &Config) -> i64 {
    config.face_scheme.unwrap_or(crate::faces::SCHEME)
}

/// The face-repair walk, when this build has a detector.
pub fn faces_walk(config: &Config) -> Option<FacesWalk> {
    face_detector().map(|d| FacesWalk::new(d, config.face_scheme))
}

/// The walk kinds this process can run, with their current schemes.
pub fn walk_schemes(config: &Config) -> Vec<(WalkKindId, Option<i64>)> {
    vec![
        (WalkKindId::ContentHash, Some(content_walk(config).scheme)),
        (WalkKindId::Faces, Some(faces_scheme(config))),
        (WalkKindId::Similar, Some(similar_walk(config).scheme)),
        (WalkKindId::Embeddings, Some(embed_scheme(config))),
    ]
}

/// At start: clamps each walk record to this binary's scheme (warning on a rollback) and
/// schedules the walks that have work, one chain per kind. Failures are logged: the next
/// start tries again.
pub fn boot_walks(store: &Store, config: &Config) {
    for (kind, scheme) in walk_schemes(config) {
        let Some(scheme) = scheme else { continue };
        match crate::walks::boot(store, kind, scheme, millis(config.lease_ttl)) {
            Ok(boot) if boot.chain.is_some() => {
                tracing::info!(walk = %kind, scheme, "walk scheduled")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(walk = %kind, error = %e, "could not schedule the walk"),
        }
    }
}

/// `mediadex walk`: asks for a walk of `kind` (`ops::walks::start_here`: the walk's start,
/// clamp and rollback, first, as at any start) and, with `wait`, runs it in this process
/// until no chain of that kind is left (another process may do part of it).
pub fn walk(
    store: &Store,
    config: &Config,
    kind: WalkKindId,
    restart: bool,
    wait: bool,
) -> anyhow::Result<()> {
    let ttl = millis(config.lease_ttl);
    let handlers = match kind {
        WalkKindId::ContentHash => start_walk(store, kind, content_walk(config), restart, ttl),
        WalkKindId::Faces => {
            let walk = faces_walk(config).ok_or(crate::ops::Error::NoDetector)?;
            start_walk(store, kind, walk, restart, ttl)
        }
        WalkKindId::Similar => start_walk(store, kind, similar_walk(config), restart, ttl),
        WalkKindId::Embeddings => {
            let walk = embeddings_walk(store, config).ok_or(crate::ops::Error::NoDetector)?;
            start_walk(store, kind, walk, restart, ttl)
        }
    }?;
    if wait {
        run_until(store, config, handlers, || {
            Ok(store.live_job(kind.job_kind())?.is_some())
        })?;
    }
    Ok(())
}

/// `mediadex people recluster --wait`: runs the queued recluster in this process until no
/// recluster job is left (another process may run it).
pub fn recluster_here(store: &Store, config: &Config) -> anyhow::Result<()> {
    let handlers = Handlers::default().job(RECLUSTER_JOB_KIND, recluster_job(store, config));
    run_until(store, config, handlers, || {
        Ok(store.live_job(RECLUSTER_JOB_KIND)?.is_some())
    })
}

/// Starts a walk of `kind` run by `walk` here (`ops::walks::start_here`) and answers the
/// handlers that run its batches.
fn start_walk<K: WalkKind + 'static>(
    store: &Store,
    kind: WalkKindId,
    walk: K,
    restart: bool,
    ttl: i64,
) -> anyhow::Result<Handlers> {
    let s = crate::ops::Services::new(store.clone());
    crate::ops::walks::start_here(&s, kind, walk.scheme(), restart, ttl)?;
    Ok(Handlers::default().job(kind.job_kind(), WalkJob::new(store, Arc::new(walk))))
}

/// The services of a command (no workers, no watcher): `config`'s hourly limit and walks,
/// and with `faces` this build's face detector (loading it costs a fifth of a second, so
/// only the commands that detect or queue faces ask for it).
pub fn command_services(config: &Config, store: Store, faces: bool) -> crate::ops::Services {
    crate::ops::Services {
        hourly_limit: config.scan_hourly_limit,
        walks: running_walks(config),
        faces: if faces {
            faces_walk(config).map(Arc::new)
        } else {
            None
        },
        restore_faces: Some(faces_follow_up(&store, config)),
        similar_distance: config.similar_distance,
        ..crate::ops::Services::new(store)
    }
}

/// The walks this process runs, each with its scheme.
fn running_walks(config: &Config) -> Arc<[(WalkKindId, i64)]> {
    walk_schemes(config)
        .into_iter()
        .filter_map(|(kind, scheme)| Some((kind, scheme?)))
        .collect()
}

/// How long `run_until` waits before it asks again, `elapsed` into the work: a twentieth
/// of it, from 1 to 50 ms, unless a worker of its pool acks first (then it asks at once).
/// Work another process finishes is then seen at most 5% (and 50 ms) after it ends, and a
/// long scan is not polled a thousand times a second (each check is one small read).
fn poll_after(elapsed: std::time::Duration) -> std::time::Duration {
    (elapsed / 20).clamp(
        std::time::Duration::from_millis(1),
        std::time::Duration::from_millis(50),
    )
}

/// Runs a worker pool with `handlers` (and the maintenance loop) until `busy` says no.
fn run_until(
    store: &Store,
    config: &Config,
    handlers: Handlers,
    busy: impl Fn() -> anyhow::Result<bool>,
) -> anyhow::Result<()> {
    let pool = WorkerPool::start(store, handlers, pool_config(config));
    let forget = forget_thumbnails(config);
    let maintenance = Maintenance::start(store, maintenance_config(config), |_| {}, forget)
        .context("starting the maintenance loop")?;
    let started = std::time::Instant::now();
    let outcome = loop {
        match busy() {
            Ok(true) => {
                let _ = pool.acked().recv_timeout(poll_after(started.elapsed()));
            }
            Ok(false) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    maintenance.shutdown();
    pool.shutdown();
    outcome
}

/// Runs workers in this process until none of `libraries` has a scan waiting or running
/// (`scan --wait` without a service). Another process may do part of the work; either way
/// this returns when the work is done.
pub fn work_until_idle(store: &Store, config: &Config, libraries: &[i64]) -> anyhow::Result<()> {
    run_until(store, config, scan_handler(store, config), || {
        for &id in libraries {
            let runs = store.scan_runs(Some(id), 3)?;
            if runs.iter().any(|r| !r.state.is_terminal()) {
                return Ok(true);
            }
        }
        Ok(false)
    })
}

/// Adds a library and records its root's identity: the one use case, `ops::library`, for
/// the start-up paths and the tests that add a library before any engine runs.
pub use crate::ops::library::add_root as add_library;

fn millis(d: std::time::Duration) -> Millis {
    Millis::try_from(d.as_millis()).unwrap_or(Millis::MAX)
}

fn pool_config(config: &Config) -> PoolConfig {
    PoolConfig {
        workers: config.workers,
        ..PoolConfig::with_ttl(config.workers, millis(config.lease_ttl))
    }
}

/// What the maintenance loop does after a sweep: the deleted assets' thumbnails go.
fn forget_thumbnails(config: &Config) -> impl Fn(&[[u8; 32]]) + Send + 'static {
    let thumbs = crate::thumbs::Thumbs::with_ffmpeg(&config.data_dir, None);
    move |sums| thumbs.forget(sums)
}

/// The maintenance loop's settings from `config` (public for the tests of the retention).
pub fn maintenance_config(config: &Config) -> MaintenanceConfig {
    MaintenanceConfig {
        every: config.maintenance_interval,
        job_retention: millis(config.job_retention),
        run_retention: millis(config.run_retention),
        trash_retention: millis(config.trash_retention),
        ..MaintenanceConfig::default()
    }
}

/// The face walk a scan's completion or a restore queues in its own transaction (it picks
/// up new assets, and restored ones the walk skipped while they were trashed), and with it
/// the similar-photo walk, which skips the same assets.
pub fn faces_follow_up(store: &Store, config: &Config) -> crate::model::WalkRequest {
    let similar = crate::walks::follow_up(store, WalkKindId::Similar, similar_walk(config).scheme);
    crate::model::WalkRequest {
        with: vec![similar],
        ..crate::walks::follow_up(store, WalkKindId::Faces, faces_scheme(config))
    }
}

#[cfg(test)]
mod tests {
    use super::poll_after;
    use std::time::Duration;

    #[test]
    fn the_idle_poll_is_a_twentieth_of_the_wait_from_1_to_50_ms() {
        let ms = Duration::from_millis;
        assert_eq!(poll_after(ms(0)), ms(1));
        assert_eq!(poll_after(ms(100)), ms(5));
        assert_eq!(poll_after(ms(600)), ms(30));
        assert_eq!(poll_after(Duration::from_secs(3600)), ms(50));
    }
}
