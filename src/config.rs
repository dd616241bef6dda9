//! Configuration: turns what the command line, the environment and `mediadex.toml` said
//! (layered in `settings`: flag > env > file > default) into a validated `Config` (data
//! dir, database path, runtime knobs, the defaults), and prepares the data dir on disk.
//! Owns the OS-convention default data dir. Must not open the database or parse arguments
//! itself (clap lives in the binary); it only receives the values.
//!
//! Must not import: store, http, ops, rusqlite

pub mod settings;

pub use settings::{SETTINGS, Settings, WatchMode};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The database file's name inside the data dir.
pub const DB_FILE: &str = "mediadex.db";

/// Testing knob: the lease ttl in milliseconds (at least 300), so that a test of a killed
/// process sees its work reclaimed in about a second instead of `DEFAULT_LEASE_TTL`. Not a
/// tuning setting: a short ttl makes a busy or sleeping machine lose leases it still needs.
pub const LEASE_TTL_ENV: &str = "MEDIADEX_LEASE_TTL_MS";

/// At most this many new scan runs per library per hour (unset: no limit). Requests beyond
/// it are refused with a clear message; a request coalesced into a waiting run always passes.
pub const SCAN_HOURLY_LIMIT_ENV: &str = "MEDIADEX_SCAN_HOURLY_LIMIT";

/// Bytes the thumbnail cache keeps free on the disk holding the data dir, so that the
/// database can still grow (default `disk::DEFAULT_RESERVE`, 256 MiB).
pub const DISK_RESERVE_ENV: &str = "MEDIADEX_DISK_RESERVE";

/// How library roots are watched: `events` (default: kernel events, polling on network and
/// FUSE filesystems), `poll` (poll every root) or `off` (no watching; scans only on request).
pub const WATCH_ENV: &str = "MEDIADEX_WATCH";

/// Seconds between two polls of a polled root (default 300).
pub const WATCH_POLL_SECS_ENV: &str = "MEDIADEX_WATCH_POLL_SECS";

/// Testing knobs: the current content-hash and face schemes, overriding this binary's, so
/// that tests can stage a scheme upgrade or a rollback with one binary. Not settings.
pub const CONTENT_HASH_SCHEME_ENV: &str = "MEDIADEX_CONTENT_HASH_SCHEME";
pub const FACE_SCHEME_ENV: &str = "MEDIADEX_FACE_SCHEME";
pub const SIMILAR_SCHEME_ENV: &str = "MEDIADEX_SIMILAR_SCHEME";
pub const EMBED_SCHEME_ENV: &str = "MEDIADEX_EMBED_SCHEME";

/// Testing knob: at most this many files of a scan share one commit (default
/// `store::GroupLimits`' 65,536), so that a crash test on a fast machine still sees a scan
/// part committed. Not a setting.
pub const WRITE_GROUP_FILES_ENV: &str = "MEDIADEX_WRITE_GROUP_FILES";

/// How many bits (of 64) two pictures' perceptual hashes may differ in for them to be
/// similar (`similar_distance`, at most `similar::index::MAX_DISTANCE`).
pub const SIMILAR_DISTANCE_ENV: &str = "MEDIADEX_SIMILAR_DISTANCE";

/// Everything the process needs to know before it opens the store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Absolute path of the data dir (database, later thumbnails and the instance file).
    pub data_dir: PathBuf,
    /// `<data_dir>/mediadex.db`.
    pub db_path: PathBuf,
    /// The PostgreSQL server holding the index instead of `db_path` (`database`).
    pub database: Option<String>,
    /// How long a claimed lease lives without a heartbeat.
    pub lease_ttl: Duration,
    /// How many workers claim jobs and scan runs.
    pub workers: usize,
    /// How often the maintenance loop reclaims stale leases and prunes.
    pub maintenance_interval: Duration,
    /// Finished jobs older than this are pruned.
    pub job_retention: Duration,
    /// Finished scan runs older than this are pruned (the newest per library is kept).
    pub run_retention: Duration,
    /// At most this many new scan runs per library per hour; `None` is no limit.
    pub scan_hourly_limit: Option<u32>,
    /// Whether library roots are watched for changes at all.
    pub watch_enabled: bool,
    /// How the watcher behaves (debounce, poll interval, polling forced).
    pub watch: crate::watch::WatchOptions,
    /// `MEDIADEX_CONTENT_HASH_SCHEME`: the content-hash scheme to walk instead of this
    /// binary's (testing knob).
    pub content_hash_scheme: Option<i64>,
    /// `MEDIADEX_FACE_SCHEME`: the face scheme instead of the detector's version (testing).
    pub face_scheme: Option<i64>,
    /// `MEDIADEX_SIMILAR_SCHEME`: the perceptual-hash scheme instead of this binary's (testing).
    pub similar_scheme: Option<i64>,
    /// `MEDIADEX_EMBED_SCHEME`: the face-descriptor scheme instead of the embedder's (testing).
    pub embed_scheme: Option<i64>,
    /// `MEDIADEX_WRITE_GROUP_FILES`: the most files of a scan one commit holds (testing).
    pub write_group_files: Option<u64>,
    /// The Hamming distance within which two pictures are similar (`similar_distance`).
    pub similar_distance: u32,
    /// `MEDIADEX_DISK_RESERVE`: bytes the thumbnail cache leaves free for the database.
    pub disk_reserve: u64,
    /// The longest side of a thumbnail, in pixels (`thumb_size`).
    pub thumb_size: u32,
    /// At most this many bytes of cached thumbnails (`thumb_cache_max`); `None`: no cap.
    pub thumb_cache_max: Option<u64>,
    /// Trashed assets older than this are swept from the index (`trash_retention_days`).
    pub trash_retention: Duration,
    /// The service's and the desktop mode's log file (`log_file`).
    pub log_file: PathBuf,
}

pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(30);
pub const DEFAULT_WORKERS: usize = 2;
pub const DEFAULT_MAINTENANCE_INTERVAL: Duration = Duration::from_secs(5);
pub const DEFAULT_JOB_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);
pub const DEFAULT_RUN_RETENTION: Duration = Duration::from_secs(90 * 24 * 3600);
pub const DEFAULT_TRASH_RETENTION_DAYS: u64 = 30;
/// See docs/configuration.md (`similar_distance`) for the distances measured on the corpus.
pub const DEFAULT_SIMILAR_DISTANCE: u32 = 7;
/// The log file's place inside the data dir unless `log_file` says otherwise.
pub const DEFAULT_LOG_FILE: &str = "logs/mediadex.log";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "cannot find a default data directory (no home directory?); pass --data DIR or set \
         MEDIADEX_DATA"
    )]
    NoDefaultDataDir,
    #[error("the data directory path is empty; pass --data DIR or set MEDIADEX_DATA")]
    EmptyDataDir,
    #[error("cannot resolve the data directory {path}: {source}")]
    Resolve {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot create the data directory {path}: {source}")]
    CreateDataDir {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the data directory {path} is not writable: {source}")]
    NotWritable {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    LibraryPath(String),
    #[error("invalid setting {name}: {why}")]
    Invalid { name: &'static str, why: String },
    #[error("cannot read the config file {path}: {source}")]
    ConfigFile {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// `mediadex.toml` holds an unknown key, a bad value or a syntax error.
    #[error("{path}:{line}:{column}: {why}")]
    InFile {
        path: String,
        line: usize,
        column: usize,
        why: String,
    },
}

impl Config {
    /// The configuration for `data_dir` (or the OS default when `None`) with default knobs,
    /// except what the testing knob `MEDIADEX_LEASE_TTL_MS` says. Touches nothing on disk;
    /// `prepare` does.
    pub fn resolve(data_dir: Option<PathBuf>) -> Result<Config, ConfigError> {
        Config::resolve_with(data_dir, |name| std::env::var_os(name))
    }

    /// `resolve` with the environment given as a lookup, so that tests need not change the
    /// process environment.
    fn resolve_with(
        data_dir: Option<PathBuf>,
        env: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<Config, ConfigError> {
        let asked = Settings {
            data_dir,
            ..Settings::default()
        };
        Config::from_settings(&asked.over(Settings::from_env(&env)?), env)
    }

    /// The configuration the layered `settings` ask for, the defaults where they are
    /// silent; the testing knobs come from `env`. Touches nothing on disk.
    pub fn from_settings(
        settings: &Settings,
        env: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<Config, ConfigError> {
        let data_dir = absolute_data_dir(settings.data_dir.clone())?;
        let log_file = match &settings.log_file {
            Some(file) => absolute(file)?,
            None => data_dir.join(DEFAULT_LOG_FILE),
        };
        let days = settings
            .trash_retention_days
            .unwrap_or(DEFAULT_TRASH_RETENTION_DAYS);
        let mut config = Config {
            db_path: data_dir.join(DB_FILE),
            database: settings.database.clone(),
            data_dir,
            lease_ttl: DEFAULT_LEASE_TTL,
            workers: DEFAULT_WORKERS,
            maintenance_interval: DEFAULT_MAINTENANCE_INTERVAL,
            job_retention: DEFAULT_JOB_RETENTION,
            run_retention: DEFAULT_RUN_RETENTION,
            scan_hourly_limit: settings.scan_hourly_limit,
            watch_enabled: settings.watch != Some(WatchMode::Off),
            watch: crate::watch::WatchOptions::default(),
            content_hash_scheme: None,
            face_scheme: None,
            similar_scheme: None,
            embed_scheme: None,
            write_group_files: None,
            similar_distance: settings
                .similar_distance
                .unwrap_or(DEFAULT_SIMILAR_DISTANCE),
            disk_reserve: settings
                .disk_reserve
                .unwrap_or(crate::disk::DEFAULT_RESERVE),
            thumb_size: settings.thumb_size.unwrap_or(crate::thumbs::THUMB_SIZE),
            thumb_cache_max: settings.thumb_cache_max,
            trash_retention: Duration::from_secs(days.saturating_mul(86_400)),
            log_file,
        };
        config.watch.hourly_limit = config.scan_hourly_limit;
        config.watch.force_poll = settings.watch == Some(WatchMode::Poll);
        if let Some(secs) = settings.watch_poll_secs {
            config.watch.poll_interval = Duration::from_secs(secs);
        }
        let scheme = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        config.content_hash_scheme = env_number(&env, CONTENT_HASH_SCHEME_ENV)?.map(scheme);
        config.face_scheme = env_number(&env, FACE_SCHEME_ENV)?.map(scheme);
        config.similar_scheme = env_number(&env, SIMILAR_SCHEME_ENV)?.map(scheme);
        config.embed_scheme = env_number(&env, EMBED_SCHEME_ENV)?.map(scheme);
        config.write_group_files = env_number(&env, WRITE_GROUP_FILES_ENV)?.filter(|&n| n > 0);
        match env_number(&env, LEASE_TTL_ENV)? {
            None => config.validate()?,
            Some(ms) => config.set_lease_ttl(ms)?,
        }
        Ok(config)
    }

    /// `MEDIADEX_LEASE_TTL_MS`, validated, with the maintenance interval it needs.
    fn set_lease_ttl(&mut self, ms: u64) -> Result<(), ConfigError> {
        self.lease_ttl = Duration::from_millis(ms);
        // Reclaim must run within the shorter ttl (validate insists), so the maintenance
        // loop then runs twice per ttl.
        if self.lease_ttl < DEFAULT_MAINTENANCE_INTERVAL {
            self.maintenance_interval = self.lease_ttl / 2;
        }
        self.validate().map_err(|e| match e {
            ConfigError::Invalid {
                name: "lease_ttl",
                why,
            } => ConfigError::Invalid {
                name: LEASE_TTL_ENV,
                why: format!("{why} (it is \"{ms}\")"),
            },
            other => other,
        })
    }

    /// `resolve`, then `prepare`.
    pub fn load(data_dir: Option<PathBuf>) -> Result<Config, ConfigError> {
        let config = Config::resolve(data_dir)?;
        config.prepare()?;
        Ok(config)
    }

    /// `from_settings` with the process environment, then `prepare`: what every command
    /// that opens the database calls.
    pub fn load_settings(settings: &Settings) -> Result<Config, ConfigError> {
        let config = Config::from_settings(settings, |name| std::env::var_os(name))?;
        config.prepare()?;
        Ok(config)
    }

    /// Checks the knobs against each other. Public because callers that change a knob after
    /// `resolve` (tests, a later TOML file) must re-check.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |name, why: &str| {
            Err(ConfigError::Invalid {
                name,
                why: why.to_string(),
            })
        };
        // A heartbeat renews every ttl/3 in whole milliseconds; below this it cannot keep up.
        if self.lease_ttl < Duration::from_millis(300) {
            return invalid("lease_ttl", "must be at least 300 ms");
        }
        if self.workers == 0 {
            return invalid("workers", "must be at least 1");
        }
        if self.maintenance_interval.is_zero() {
            return invalid("maintenance_interval", "must be greater than zero");
        }
        // Reclaim must run well within a lease's life, or an expired lease lingers.
        if self.maintenance_interval > self.lease_ttl {
            return invalid("maintenance_interval", "must not exceed lease_ttl");
        }
        if self.job_retention.is_zero() || self.run_retention.is_zero() {
            return invalid("retention", "must be greater than zero");
        }
        Ok(())
    }

    /// Creates the data dir if needed and proves it is writable, by creating and removing
    /// a probe file. On failure nothing else has been written (no database file). A dir
    /// that is writable but on a full disk passes, with a warning: reading the index (status,
    /// assets, runs) must still work, and a write says the disk is full when it fails.
    pub fn prepare(&self) -> Result<(), ConfigError> {
        let path = || self.data_dir.display().to_string();
        std::fs::create_dir_all(&self.data_dir).map_err(|source| ConfigError::CreateDataDir {
            path: path(),
            source,
        })?;
        let probed = probe_writable(&self.data_dir);
        writable_unless_only_full(&self.data_dir, probed).map_err(|source| {
            ConfigError::NotWritable {
                path: path(),
                source,
            }
        })
    }
}

/// The OS convention: `~/.local/share/mediadex` (or `$XDG_DATA_HOME/mediadex`) on Linux,
/// `~/Library/Application Support/mediadex` on macOS, `%APPDATA%\mediadex\data` on Windows.
pub fn default_data_dir() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "mediadex").map(|d| d.data_dir().to_path_buf())
}

/// Permission bits alone do not answer "can I write here" (root, ACLs, read-only mounts),
/// so the probe really writes.
/// A probe that failed only because the disk is full: the dir is writable.
fn writable_unless_only_full(dir: &Path, probed: std::io::Result<()>) -> std::io::Result<()> {
    match probed {
        Err(e) if crate::disk::is_full(&e) => {
            let full = crate::disk::DiskFull::at(&crate::disk::SystemFreeSpace, dir, None);
            tracing::warn!("{full}: what reads the index works, what writes waits for space");
            Ok(())
        }
        other => other,
    }
}

fn probe_writable(dir: &Path) -> std::io::Result<()> {
    let probe = dir.join(format!(".mediadex-write-probe-{}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .and_then(|mut f| f.write_all(b"probe").and_then(|()| f.sync_all()));
    let removed = std::fs::remove_file(&probe);
    written?;
    removed
}

/// A whole number from the environment, `None` when unset.
/// The data dir given, or the OS default; absolute so that status output, logs and a later
/// chdir all agree on one place.
fn absolute_data_dir(data_dir: Option<PathBuf>) -> Result<PathBuf, ConfigError> {
    let data_dir = match data_dir {
        Some(dir) => dir,
        None => default_data_dir().ok_or(ConfigError::NoDefaultDataDir)?,
    };
    if data_dir.as_os_str().is_empty() {
        return Err(ConfigError::EmptyDataDir);
    }
    absolute(&data_dir)
}

fn absolute(path: &Path) -> Result<PathBuf, ConfigError> {
    std::path::absolute(path).map_err(|source| ConfigError::Resolve {
        path: path.display().to_string(),
        source,
    })
}

fn env_number(
    env: &impl Fn(&str) -> Option<std::ffi::OsString>,
    name: &'static str,
) -> Result<Option<u64>, ConfigError> {
    let Some(raw) = env(name) else {
        return Ok(None);
    };
    raw.to_str()
        .and_then(|s| s.trim().parse().ok())
        .map(Some)
        .ok_or_else(|| ConfigError::Invalid {
            name,
            why: format!("must be a whole number (it is {:?})", raw.to_string_lossy()),
        })
}

/// Checks a folder the user wants as a library and returns its canonical root (absolute,
/// symlinks resolved, UTF-8) and its name (`name`, else the folder's last component).
pub fn library_root(path: &Path, name: Option<String>) -> Result<(String, String), ConfigError> {
    let shown = path.display();
    let bad = |why: String| ConfigError::LibraryPath(why);
    let canonical = std::fs::canonicalize(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => bad(format!("{shown} does not exist")),
        _ => bad(format!("cannot read {shown}: {e}")),
    })?;
    let meta =
        std::fs::metadata(&canonical).map_err(|e| bad(format!("cannot read {shown}: {e}")))?;
    if !meta.is_dir() {
        return Err(bad(format!("{shown} is not a directory")));
    }
    // A folder that cannot be listed or entered would scan as empty: refused here, with
    // the reason, instead of a scan that "completes" with nothing.
    crate::scan::identity::listable(&canonical)
        .map_err(|e| bad(format!("cannot read {shown}: {e}")))?;
    let root = canonical
        .to_str()
        .ok_or_else(|| bad(format!("{shown} is not valid UTF-8")))?
        .to_string();
    let name = match name {
        Some(name) => name,
        None => canonical
            .file_name()
            .and_then(|n| n.to_str())
            .map_or_else(|| root.clone(), str::to_string),
    };
    if name.trim().is_empty() {
        return Err(bad("a library name must not be empty".to_string()));
    }
    Ok((root, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_applies_the_documented_defaults() {
        let c = Config::resolve(Some("/tmp/x".into())).expect("valid");
        assert_eq!(c.db_path, Path::new("/tmp/x/mediadex.db"));
        assert_eq!(c.lease_ttl, Duration::from_secs(30));
        assert_eq!(c.workers, 2);
        assert_eq!(c.maintenance_interval, Duration::from_secs(5));
        assert_eq!(c.job_retention, Duration::from_secs(7 * 86_400));
        assert_eq!(c.run_retention, Duration::from_secs(90 * 86_400));
    }

    #[test]
    fn resolve_makes_a_relative_data_dir_absolute() {
        let c = Config::resolve(Some("rel/dir".into())).expect("valid");
        assert!(c.data_dir.is_absolute());
        assert!(c.data_dir.ends_with("rel/dir"));
    }

    #[test]
    fn empty_data_dir_is_refused() {
        assert!(matches!(
            Config::resolve(Some(PathBuf::new())),
            Err(ConfigError::EmptyDataDir)
        ));
    }

    #[test]
    fn validate_refuses_zero_workers_and_slow_maintenance() {
        let mut c = Config::resolve(Some("/tmp/x".into())).expect("valid");
        c.workers = 0;
        assert!(c.validate().is_err());
        c.workers = 1;
        c.maintenance_interval = c.lease_ttl * 2;
        assert!(c.validate().is_err());
    }

    fn with_ttl_knob(value: &str) -> Result<Config, ConfigError> {
        let value = std::ffi::OsString::from(value);
        Config::resolve_with(Some("/tmp/x".into()), |name| {
            (name == LEASE_TTL_ENV).then(|| value.clone())
        })
    }

    #[test]
    fn lease_ttl_knob_sets_the_ttl_and_keeps_maintenance_within_it() {
        let c = with_ttl_knob("1000").expect("valid");
        assert_eq!(c.lease_ttl, Duration::from_millis(1000));
        assert_eq!(c.maintenance_interval, Duration::from_millis(500));
        let c = with_ttl_knob("300").expect("the minimum is allowed");
        assert_eq!(c.lease_ttl, Duration::from_millis(300));
        assert_eq!(c.maintenance_interval, Duration::from_millis(150));
        // At or above the default interval the interval stays as it is.
        let c = with_ttl_knob("60000").expect("valid");
        assert_eq!(c.lease_ttl, Duration::from_secs(60));
        assert_eq!(c.maintenance_interval, DEFAULT_MAINTENANCE_INTERVAL);
        let c = with_ttl_knob("5000").expect("valid");
        assert_eq!(c.maintenance_interval, DEFAULT_MAINTENANCE_INTERVAL);
    }

    #[test]
    fn a_data_dir_on_a_full_disk_is_still_usable_and_an_unwritable_one_is_not() {
        let dir = Path::new("/data");
        let full = std::io::Error::from(std::io::ErrorKind::StorageFull);
        assert!(writable_unless_only_full(dir, Err(full)).is_ok());
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert!(writable_unless_only_full(dir, Err(denied)).is_err());
    }

    #[test]
    fn the_disk_reserve_comes_from_the_environment() {
        let with = |v: &'static str| {
            Config::resolve_with(Some(PathBuf::from("/tmp/x")), move |name| {
                (name == DISK_RESERVE_ENV).then(|| v.into())
            })
        };
        let unset = Config::resolve_with(Some(PathBuf::from("/tmp/x")), |_| None);
        assert_eq!(unset.expect("unset").disk_reserve, 256 * 1024 * 1024);
        assert_eq!(with("1048576").expect("set").disk_reserve, 1_048_576);
        assert!(with("lots").is_err());
    }

    #[test]
    fn the_scan_hourly_limit_comes_from_the_environment() {
        let dir = Some(PathBuf::from("/tmp/x"));
        let with = |v: Option<&str>| {
            Config::resolve_with(dir.clone(), |name| {
                (name == SCAN_HOURLY_LIMIT_ENV)
                    .then(|| v.map(Into::into))
                    .flatten()
            })
        };
        assert_eq!(with(None).expect("unset").scan_hourly_limit, None);
        assert_eq!(with(Some("12")).expect("set").scan_hourly_limit, Some(12));
        assert!(matches!(
            with(Some("lots")),
            Err(ConfigError::Invalid {
                name: SCAN_HOURLY_LIMIT_ENV,
                ..
            })
        ));
    }

    #[test]
    fn lease_ttl_knob_refuses_bad_values_by_name() {
        for bad in ["299", "0", "", "1s", "-5", "1.5", "99999999999999999999999"] {
            match with_ttl_knob(bad) {
                Err(ConfigError::Invalid { name, why }) => {
                    assert_eq!(name, LEASE_TTL_ENV, "{bad:?}");
                    assert!(why.contains(&format!("{bad:?}")), "{bad:?}: {why}");
                }
                other => panic!("{bad:?} must be refused, got {other:?}"),
            }
        }
        let err = with_ttl_knob("299").expect_err("too short").to_string();
        assert!(err.contains("MEDIADEX_LEASE_TTL_MS"), "{err}");
        assert!(err.contains("at least 300 ms"), "{err}");
        let err = with_ttl_knob("soon").expect_err("not a number").to_string();
        assert!(err.contains("whole number"), "{err}");
    }

    #[test]
    fn without_the_knob_the_ttl_is_the_default() {
        let c = Config::resolve_with(Some("/tmp/x".into()), |_| None).expect("valid");
        assert_eq!(c.lease_ttl, DEFAULT_LEASE_TTL);
        assert_eq!(c.maintenance_interval, DEFAULT_MAINTENANCE_INTERVAL);
    }

    #[test]
    fn prepare_creates_the_dir_and_leaves_only_the_dir() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let c = Config::resolve(Some(tmp.path().join("a/b"))).expect("valid");
        c.prepare().expect("prepare");
        let left: Vec<_> = std::fs::read_dir(&c.data_dir).expect("read").collect();
        assert!(left.is_empty(), "probe file left behind: {left:?}");
    }

    #[test]
    fn prepare_under_a_file_names_the_path() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let file = tmp.path().join("file");
        std::fs::write(&file, b"x").expect("write");
        let c = Config::resolve(Some(file.join("data"))).expect("valid");
        let err = c.prepare().expect_err("must fail").to_string();
        assert!(err.contains("cannot create the data directory"), "{err}");
        assert!(
            err.contains(&file.join("data").display().to_string()),
            "{err}"
        );
    }
}
