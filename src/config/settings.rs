//! The user's settings and where they come from: the flags, the `MEDIADEX_*` variables and
//! `mediadex.toml`, layered by one rule (flag > env > file > default, `Settings::over`).
//! Owns the list of settings (`SETTINGS`: key, variable, flag), the config file's default
//! places and its reading, with an error that names the file, line, column and key. The
//! defaults themselves are `Config`'s; a `Settings` only says what was asked for.

use super::ConfigError;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// Where `mediadex.toml` is when `--config` is not given: the service reads the system one.
pub const SERVICE_FILE: &str = "/etc/mediadex/mediadex.toml";
/// The config file to read instead of the default one (what `--config` says, beneath it).
pub const CONFIG_ENV: &str = "MEDIADEX_CONFIG";

/// One setting: its key in `mediadex.toml`, its variable and its flag (if it has one).
#[derive(Clone, Copy, Debug)]
pub struct Setting {
    pub key: &'static str,
    pub env: &'static str,
    pub flag: Option<&'static str>,
}

const fn setting(key: &'static str, env: &'static str, flag: Option<&'static str>) -> Setting {
    Setting { key, env, flag }
}

/// Every setting. The tuning knobs have no flag: they belong in the file, where the service
/// and the commands run on its data dir all read them.
pub const SETTINGS: &[Setting] = &[
    setting("data_dir", "MEDIADEX_DATA", Some("--data")),
    setting("database", "MEDIADEX_DATABASE_URL", Some("--database")),
    setting("bind", "MEDIADEX_BIND", Some("serve --bind")),
    setting("libraries", "MEDIADEX_LIBRARIES", Some("serve --library")),
    setting("watch", super::WATCH_ENV, None),
    setting("watch_poll_secs", super::WATCH_POLL_SECS_ENV, None),
    setting("scan_hourly_limit", super::SCAN_HOURLY_LIMIT_ENV, None),
    setting("log_level", "MEDIADEX_LOG_LEVEL", None),
    setting("log_file", "MEDIADEX_LOG_FILE", None),
    setting("thumb_size", "MEDIADEX_THUMB_SIZE", None),
    setting("thumb_cache_max", "MEDIADEX_THUMB_CACHE_MAX", None),
    setting("disk_reserve", super::DISK_RESERVE_ENV, None),
    setting(
        "trash_retention_days",
        "MEDIADEX_TRASH_RETENTION_DAYS",
        None,
    ),
    setting(
        "similar_distance",
        super::SIMILAR_DISTANCE_ENV,
        Some("similar --distance"),
    ),
];

/// How library roots are watched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchMode {
    Events,
    Poll,
    Off,
}

/// What one layer (or all of them, merged) says; `None` is "not said here".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    pub data_dir: Option<PathBuf>,
    /// A PostgreSQL server's URL: the index shared by several hosts (issue 30).
    pub database: Option<String>,
    pub bind: Option<SocketAddr>,
    pub libraries: Option<Vec<PathBuf>>,
    pub watch: Option<WatchMode>,
    pub watch_poll_secs: Option<u64>,
    pub scan_hourly_limit: Option<u32>,
    pub log_level: Option<String>,
    pub log_file: Option<PathBuf>,
    pub thumb_size: Option<u32>,
    pub thumb_cache_max: Option<u64>,
    pub disk_reserve: Option<u64>,
    pub trash_retention_days: Option<u64>,
    pub similar_distance: Option<u32>,
}

/// A value as a layer gives it: a variable's text, or a TOML value.
enum Given<'a> {
    Text(&'a str),
    Toml(&'a toml::Value),
}

impl Settings {
    /// `self` wherever it says something, else `beneath`: the one precedence rule.
    pub fn over(self, beneath: Settings) -> Settings {
        Settings {
            data_dir: self.data_dir.or(beneath.data_dir),
            database: self.database.or(beneath.database),
            bind: self.bind.or(beneath.bind),
            libraries: self.libraries.or(beneath.libraries),
            watch: self.watch.or(beneath.watch),
            watch_poll_secs: self.watch_poll_secs.or(beneath.watch_poll_secs),
            scan_hourly_limit: self.scan_hourly_limit.or(beneath.scan_hourly_limit),
            log_level: self.log_level.or(beneath.log_level),
            log_file: self.log_file.or(beneath.log_file),
            thumb_size: self.thumb_size.or(beneath.thumb_size),
            thumb_cache_max: self.thumb_cache_max.or(beneath.thumb_cache_max),
            disk_reserve: self.disk_reserve.or(beneath.disk_reserve),
            trash_retention_days: self.trash_retention_days.or(beneath.trash_retention_days),
            similar_distance: self.similar_distance.or(beneath.similar_distance),
        }
    }

    /// All layers: `flags` over the environment over the config file (`--config`, else
    /// `MEDIADEX_CONFIG`, else `default_file` if it exists).
    pub fn resolve(
        flags: Settings,
        config: Option<PathBuf>,
        default_file: Option<PathBuf>,
        env: &impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<Settings, ConfigError> {
        let environment = Settings::from_env(env)?;
        let file = match config.or_else(|| env(CONFIG_ENV).map(PathBuf::from)) {
            Some(path) => Settings::read(&path)?,
            None => match default_file {
                Some(path) if !path.exists() => Settings::default(),
                Some(path) => Settings::read(&path)?,
                None => Settings::default(),
            },
        };
        Ok(flags.over(environment).over(file))
    }

    /// The `MEDIADEX_*` variables' layer; a bad value is refused by its variable's name.
    pub fn from_env(
        env: &impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<Settings, ConfigError> {
        let mut out = Settings::default();
        for s in SETTINGS {
            let Some(raw) = env(s.env) else { continue };
            let text = raw.to_string_lossy();
            out.set(s.key, Given::Text(&text))
                .map_err(|why| ConfigError::Invalid { name: s.env, why })?;
        }
        Ok(out)
    }

    /// The config file at `path`, which must exist.
    pub fn read(path: &Path) -> Result<Settings, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::ConfigFile {
            path: path.display().to_string(),
            source,
        })?;
        Settings::from_toml(path, &text)
    }

    /// The settings `text` (the file at `path`) holds. An unknown key, a bad value or a
    /// syntax error is one error naming the file, line, column and key.
    pub fn from_toml(path: &Path, text: &str) -> Result<Settings, ConfigError> {
        let at = |span: std::ops::Range<usize>, why: String| ConfigError::InFile {
            path: path.display().to_string(),
            line: line_col(text, span.start).0,
            column: line_col(text, span.start).1,
            why,
        };
        let table: BTreeMap<Spanned<String>, Spanned<toml::Value>> = toml::from_str(text)
            .map_err(|e| at(e.span().unwrap_or(0..0), e.message().trim().to_string()))?;
        let mut out = Settings::default();
        for (key, value) in &table {
            if !SETTINGS.iter().any(|s| s.key == key.get_ref()) {
                let known: Vec<&str> = SETTINGS.iter().map(|s| s.key).collect();
                let why = format!(
                    "unknown key {:?}; known keys: {}",
                    key.get_ref(),
                    known.join(", ")
                );
                return Err(at(key.span(), why));
            }
            out.set(key.get_ref(), Given::Toml(value.get_ref()))
                .and_then(|()| absolute_in_file(key.get_ref(), &out))
                .map_err(|why| at(value.span(), format!("{}: {why}", key.get_ref())))?;
        }
        Ok(out)
    }

    /// Sets `key` from `value`, checked; the error says why (the caller says where).
    fn set(&mut self, key: &str, value: Given<'_>) -> Result<(), String> {
        match key {
            "data_dir" => self.data_dir = Some(text(&value)?.into()),
            "database" => self.database = Some(database(&value)?),
            "bind" => self.bind = Some(address(&value)?),
            "libraries" => self.libraries = Some(paths(&value)?),
            "watch" => self.watch = Some(watch_mode(&value)?),
            "watch_poll_secs" => self.watch_poll_secs = Some(at_least(&value, 1)?),
            "scan_hourly_limit" => self.scan_hourly_limit = Some(small(&value)?),
            "log_level" => self.log_level = Some(log_level(&value)?),
            "log_file" => self.log_file = Some(text(&value)?.into()),
            "thumb_size" => self.thumb_size = Some(thumb_size(&value)?),
            "thumb_cache_max" => self.thumb_cache_max = Some(whole(&value)?),
            "disk_reserve" => self.disk_reserve = Some(whole(&value)?),
            "trash_retention_days" => self.trash_retention_days = Some(at_least(&value, 1)?),
            "similar_distance" => self.similar_distance = Some(similar_distance(&value)?),
            other => return Err(format!("unknown setting {other:?}")),
        }
        Ok(())
    }
}

/// A file read by a service has no working directory worth the name: its paths must be
/// absolute, or they would depend on where the process happened to start.
fn absolute_in_file(key: &str, s: &Settings) -> Result<(), String> {
    let relative = |p: &Path| !p.is_absolute();
    let bad = match key {
        "data_dir" => s.data_dir.as_deref().filter(|p| relative(p)),
        "log_file" => s.log_file.as_deref().filter(|p| relative(p)),
        "libraries" => s
            .libraries
            .iter()
            .flatten()
            .map(PathBuf::as_path)
            .find(|p| relative(p)),
        _ => None,
    };
    match bad {
        Some(p) => Err(format!(
            "{:?} must be an absolute path",
            p.display().to_string()
        )),
        None => Ok(()),
    }
}

/// The 1-based line and column (in characters) of byte `at` of `text`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = text.get(..at).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// A PostgreSQL URL (`postgres://` or `postgresql://`) or connection string (`host=...
/// dbname=...`); the store reads it whole when it connects.
fn database(value: &Given<'_>) -> Result<String, String> {
    let url = text(value)?;
    let url_form = url.starts_with("postgres://") || url.starts_with("postgresql://");
    if url_form || url.contains('=') {
        Ok(url)
    } else {
        Err(format!(
            "{} is not a PostgreSQL URL (postgres://user@host/database) or connection \
             string (host=... dbname=...)",
            shown(value)
        ))
    }
}

fn shown(value: &Given<'_>) -> String {
    match value {
        Given::Text(s) => format!("{s:?}"),
        Given::Toml(v) => shown_toml(v),
    }
}

fn shown_toml(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => format!("{s:?}"),
        toml::Value::Integer(n) => n.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Datetime(d) => d.to_string(),
        toml::Value::Array(_) => "a list".into(),
        toml::Value::Table(_) => "a table".into(),
    }
}

fn text(value: &Given<'_>) -> Result<String, String> {
    match value {
        Given::Text(s) => Ok((*s).to_string()),
        Given::Toml(toml::Value::String(s)) => Ok(s.clone()),
        Given::Toml(_) => Err(format!("must be a string (it is {})", shown(value))),
    }
}

fn whole(value: &Given<'_>) -> Result<u64, String> {
    let n = match value {
        Given::Text(s) => s.trim().parse().ok(),
        Given::Toml(toml::Value::Integer(n)) => u64::try_from(*n).ok(),
        Given::Toml(_) => None,
    };
    n.ok_or_else(|| format!("must be a whole number (it is {})", shown(value)))
}

fn at_least(value: &Given<'_>, min: u64) -> Result<u64, String> {
    let n = whole(value)?;
    if n < min {
        return Err(format!("must be at least {min} (it is {n})"));
    }
    Ok(n)
}

fn small(value: &Given<'_>) -> Result<u32, String> {
    let n = whole(value)?;
    u32::try_from(n).map_err(|_| format!("must be at most {} (it is {n})", u32::MAX))
}

fn address(value: &Given<'_>) -> Result<SocketAddr, String> {
    let s = text(value)?;
    s.trim().parse().map_err(|_| {
        format!("{s:?} is not an address; give an IP and a port, e.g. \"127.0.0.1:7468\" or \"0.0.0.0:7468\"")
    })
}

fn paths(value: &Given<'_>) -> Result<Vec<PathBuf>, String> {
    match value {
        // A list of folders in one variable, as PATH is written on this OS.
        Given::Text(s) => Ok(std::env::split_paths(s)
            .filter(|p| !p.as_os_str().is_empty())
            .collect()),
        Given::Toml(toml::Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                toml::Value::String(s) if !s.is_empty() => Ok(PathBuf::from(s)),
                other => Err(format!(
                    "must be a list of folders (it holds {})",
                    shown_toml(other)
                )),
            })
            .collect(),
        Given::Toml(_) => Err(format!(
            "must be a list of folders (it is {})",
            shown(value)
        )),
    }
}

fn watch_mode(value: &Given<'_>) -> Result<WatchMode, String> {
    match text(value)?.as_str() {
        "events" => Ok(WatchMode::Events),
        "poll" => Ok(WatchMode::Poll),
        "off" => Ok(WatchMode::Off),
        other => Err(format!("must be events, poll or off (it is {other:?})")),
    }
}

fn log_level(value: &Given<'_>) -> Result<String, String> {
    let filter = text(value)?;
    tracing_subscriber::EnvFilter::try_new(&filter)
        .map(|_| filter.clone())
        .map_err(|e| format!("{filter:?} is not a log level or filter (e.g. \"info\", \"debug\", \"info,mediadex=debug\"): {e}"))
}

/// Smaller is no thumbnail; larger costs the grid more than a screen shows.
pub const THUMB_SIZES: std::ops::RangeInclusive<u32> = 64..=2048;

fn thumb_size(value: &Given<'_>) -> Result<u32, String> {
    let n = whole(value)?;
    u32::try_from(n)
        .ok()
        .filter(|n| THUMB_SIZES.contains(n))
        .ok_or_else(|| {
            format!(
                "must be {} to {} pixels (it is {n})",
                THUMB_SIZES.start(),
                THUMB_SIZES.end()
            )
        })
}

/// Bits two perceptual hashes may differ in: the index finds every pair up to
/// `MAX_DISTANCE` (a wider radius would cost it 5 times the lookups).
fn similar_distance(value: &Given<'_>) -> Result<u32, String> {
    let n = whole(value)?;
    let max = crate::similar::index::MAX_DISTANCE;
    u32::try_from(n)
        .ok()
        .filter(|n| *n <= max)
        .ok_or_else(|| format!("must be 0 to {max} bits (it is {n})"))
}

/// The desktop mode's config file: `mediadex.toml` in the OS config dir
/// (`~/.config/mediadex/` on Linux, `~/Library/Application Support/mediadex/` on macOS,
/// `%APPDATA%\mediadex\config\` on Windows).
pub fn desktop_file() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "mediadex").map(|d| d.config_dir().join("mediadex.toml"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<std::ffi::OsString> + use<> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.into())
    }

    fn file(text: &str) -> Result<Settings, ConfigError> {
        Settings::from_toml(Path::new("/etc/mediadex/mediadex.toml"), text)
    }

    #[test]
    fn each_layer_wins_over_the_one_beneath_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("mediadex.toml");
        std::fs::write(
            &path,
            "bind = \"0.0.0.0:1\"\nthumb_size = 100\nwatch = \"poll\"\n",
        )
        .expect("write");
        let env = env_of(&[
            ("MEDIADEX_BIND", "0.0.0.0:2"),
            ("MEDIADEX_THUMB_SIZE", "200"),
        ]);
        let flags = Settings {
            bind: Some("0.0.0.0:3".parse().expect("addr")),
            ..Settings::default()
        };
        let s = Settings::resolve(flags, Some(path.clone()), None, &env).expect("valid");
        assert_eq!(
            s.bind,
            Some("0.0.0.0:3".parse().expect("addr")),
            "the flag wins"
        );
        assert_eq!(s.thumb_size, Some(200), "the variable wins over the file");
        assert_eq!(
            s.watch,
            Some(WatchMode::Poll),
            "the file wins over the default"
        );
        assert_eq!(s.log_level, None, "nobody said: the default stays");
        let s = Settings::resolve(Settings::default(), Some(path), None, &env).expect("valid");
        assert_eq!(
            s.bind,
            Some("0.0.0.0:2".parse().expect("addr")),
            "no flag: the variable"
        );
    }

    #[test]
    fn the_database_is_the_flag_over_the_variable_over_the_file_and_must_be_postgres() {
        let in_file = file("database = \"postgres://nas/mediadex\"\n").expect("valid");
        assert_eq!(in_file.database.as_deref(), Some("postgres://nas/mediadex"));
        let env = env_of(&[("MEDIADEX_DATABASE_URL", "host=/run/pg dbname=m")]);
        let from_env = Settings::from_env(&env).expect("valid");
        let flags = Settings {
            database: Some("postgresql://desk/m".into()),
            ..Settings::default()
        };
        let all = flags.clone().over(from_env.clone()).over(in_file.clone());
        assert_eq!(all.database.as_deref(), Some("postgresql://desk/m"));
        let no_flag = from_env.over(in_file);
        assert_eq!(no_flag.database.as_deref(), Some("host=/run/pg dbname=m"));
        let err = file("database = \"/var/lib/mediadex/index.db\"\n")
            .expect_err("a path is not a server")
            .to_string();
        assert!(err.contains("not a PostgreSQL URL"), "{err}");
    }

    #[test]
    fn the_config_file_comes_from_the_flag_else_the_variable_else_the_default_place() {
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |name: &str, size: u32| {
            let p = dir.path().join(name);
            std::fs::write(&p, format!("thumb_size = {size}\n")).expect("write");
            p
        };
        let (flag, var, default) = (
            write("a.toml", 100),
            write("b.toml", 200),
            write("c.toml", 300),
        );
        let env = env_of(&[(CONFIG_ENV, var.to_str().expect("utf-8"))]);
        let none = env_of(&[]);
        let size = |config, env: &dyn Fn(&str) -> Option<std::ffi::OsString>| {
            Settings::resolve(Settings::default(), config, Some(default.clone()), &env)
                .expect("valid")
                .thumb_size
        };
        assert_eq!(size(Some(flag), &env), Some(100));
        assert_eq!(size(None, &env), Some(200));
        assert_eq!(size(None, &none), Some(300));
        let missing = Settings::resolve(
            Settings::default(),
            None,
            Some(dir.path().join("none.toml")),
            &none,
        );
        assert_eq!(
            missing.expect("a missing default file is fine"),
            Settings::default()
        );
        let err = Settings::resolve(
            Settings::default(),
            Some(dir.path().join("no.toml")),
            None,
            &none,
        )
        .expect_err("a missing --config file is an error")
        .to_string();
        assert!(
            err.contains("no.toml") && err.contains("cannot read the config file"),
            "{err}"
        );
    }

    #[test]
    fn an_unknown_key_names_the_file_line_column_and_the_known_keys() {
        let err = file("bind = \"127.0.0.1:7468\"\n\n  wach = \"poll\"\n").expect_err("unknown");
        let err = err.to_string();
        assert!(
            err.starts_with(
                "/etc/mediadex/mediadex.toml:3:3: unknown key \"wach\"; known keys: data_dir, database, bind,"
            ),
            "{err}"
        );
        assert!(err.contains("trash_retention_days"), "{err}");
    }

    #[test]
    fn a_bad_value_names_the_file_line_and_key() {
        let cases = [
            (
                "\n\nbind = \"x\"",
                "/etc/mediadex/mediadex.toml:3:8: bind: \"x\" is not an address",
            ),
            (
                "thumb_size = 5",
                ":1:14: thumb_size: must be 64 to 2048 pixels (it is 5)",
            ),
            (
                "watch = \"sometimes\"",
                ":1:9: watch: must be events, poll or off (it is \"sometimes\")",
            ),
            (
                "watch_poll_secs = -1",
                ":1:19: watch_poll_secs: must be a whole number (it is -1)",
            ),
            (
                "libraries = \"/srv\"",
                "libraries: must be a list of folders",
            ),
            (
                "data_dir = \"rel\"",
                ":1:12: data_dir: \"rel\" must be an absolute path",
            ),
            ("log_level = \"[\"", "log_level: \"[\" is not a log level"),
            ("bind = ", "/etc/mediadex/mediadex.toml:1:"),
            (
                "similar_distance = 12",
                ":1:20: similar_distance: must be 0 to 11 bits (it is 12)",
            ),
        ];
        for (text, wanted) in cases {
            let err = file(text).expect_err(text).to_string();
            assert!(err.contains(wanted), "{text:?}: {err}");
            assert!(!err.contains('\n'), "one line: {err:?}");
        }
    }

    #[test]
    fn a_variable_with_a_bad_value_is_refused_by_name() {
        let err = Settings::from_env(&env_of(&[("MEDIADEX_BIND", "x")])).expect_err("bad");
        assert!(
            matches!(
                err,
                ConfigError::Invalid {
                    name: "MEDIADEX_BIND",
                    ..
                }
            ),
            "{err}"
        );
        let libs = Settings::from_env(&env_of(&[("MEDIADEX_LIBRARIES", "/a:/b")])).expect("ok");
        assert_eq!(
            libs.libraries,
            Some(vec![PathBuf::from("/a"), PathBuf::from("/b")])
        );
    }

    #[test]
    fn every_setting_has_a_key_the_file_reads_and_a_variable() {
        for s in SETTINGS {
            assert!(s.env.starts_with("MEDIADEX_"), "{s:?}");
            let mut out = Settings::default();
            // Whatever the value, a known key must not be "unknown setting".
            let why = out.set(s.key, Given::Text("")).err().unwrap_or_default();
            assert!(!why.contains("unknown setting"), "{s:?}: {why}");
        }
    }
}
