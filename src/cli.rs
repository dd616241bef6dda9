//! The command line: clap definitions, dispatch of each subcommand to the store, and the
//! mapping of failures to one stderr line and an exit code. Owns no logic beyond checking
//! user input (a library path); rendering lives in `cli/render.rs`. Must not hold SQL or
//! know how the store keeps its rows.

mod assets;
mod render;
mod walks;

use anyhow::Context;
use clap::{Parser, Subcommand};
use mediadex::config::{Config, ConfigError};
use mediadex::model::{Library, Provenance, ScanRequest, ScanRun, Trigger, WalkKindId};
use mediadex::store::AdmissionOptions;
use mediadex::store::{Store, StoreError};
use std::io::Write;
use std::path::{Path, PathBuf};

/// mediadex: point it at your photo and video folders and it keeps an index of them.
///
/// Without a subcommand it runs in the foreground (desktop mode).
#[derive(Debug, Parser)]
#[command(name = "mediadex", version)]
pub struct Args {
    /// Where the database lives [default: the OS data directory, see docs/operations.md]
    #[arg(
        long = "data",
        value_name = "DIR",
        env = "MEDIADEX_DATA",
        global = true
    )]
    pub data: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Add or list libraries (the folders mediadex indexes)
    #[command(subcommand)]
    Library(LibraryCommand),
    /// Show the scan run history, newest first
    Runs {
        /// Only runs of this library (its id or its name)
        #[arg(long, value_name = "ID|NAME")]
        library: Option<String>,
        /// Show at most this many runs
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(i64).range(1..=1_000_000))]
        limit: i64,
        /// Print one JSON array on stdout
        #[arg(long)]
        json: bool,
    },
    /// Show the job queue, newest first
    Jobs {
        /// Show at most this many jobs
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(i64).range(1..=1_000_000))]
        limit: i64,
        /// Print one JSON array on stdout
        #[arg(long)]
        json: bool,
    },
    /// Summarise the data dir, libraries, runs, jobs and counters
    Status {
        /// Print one JSON object on stdout
        #[arg(long)]
        json: bool,
    },
    /// Ask for a scan of a library (all libraries when none is named)
    Scan {
        /// The library (its id or its name)
        library: Option<String>,
        /// Only this sub-folder of the library (library-relative)
        #[arg(long, value_name = "SUBPATH")]
        scope: Option<String>,
        /// Re-read every file, changed or not
        #[arg(long)]
        force: bool,
        /// Wait until the scan has ended (running it in this process if no service does)
        #[arg(long)]
        wait: bool,
        /// Cancel the library's waiting or running scan instead
        #[arg(long, conflicts_with_all = ["scope", "force", "wait"])]
        cancel: bool,
        /// Print one JSON array of the runs on stdout
        #[arg(long)]
        json: bool,
    },
    /// List the indexed pictures and videos
    Assets {
        /// The trashed ones instead
        #[arg(long)]
        trashed: bool,
        /// Print one JSON array on stdout
        #[arg(long)]
        json: bool,
    },
    /// Move an asset's files into their library's trash folder
    Trash {
        /// The asset id (see `mediadex assets`)
        id: i64,
        /// Print the asset as one JSON object on stdout
        #[arg(long)]
        json: bool,
    },
    /// Move a trashed asset's files back where they were
    Restore {
        /// The asset id (see `mediadex assets --trashed`)
        id: i64,
        /// Print the asset as one JSON object on stdout
        #[arg(long)]
        json: bool,
    },
    /// Run as a service: workers, maintenance and the HTTP API until SIGTERM/SIGINT
    Serve {
        /// Address to listen on; a non-loopback address needs the access token
        #[arg(long, value_name = "ADDR", default_value = mediadex::app::DEFAULT_BIND)]
        bind: std::net::SocketAddr,
        /// A folder to index (added as a library if it is not one yet); repeatable
        #[arg(long = "library", value_name = "PATH")]
        libraries: Vec<PathBuf>,
        /// Do not open a browser (the service never does; accepted for scripts)
        #[arg(long)]
        no_browser: bool,
        /// Serve a non-loopback address without the access token (dangerous)
        #[arg(long)]
        insecure_no_auth: bool,
    },
    /// Print the HTTP API's access token (made on first use, stored 0600 in the data dir)
    Token,
    /// Face detection on demand
    Faces {
        #[command(subcommand)]
        action: FacesAction,
    },
    /// Run a walk over every asset: content-hash (re-stamps content hashes) or faces
    Walk {
        /// Which walk
        #[arg(value_enum)]
        kind: WalkArg,
        /// Wait until the walk has ended (running it in this process)
        #[arg(long)]
        wait: bool,
        /// Start again from the beginning, re-visiting assets already stamped
        #[arg(long)]
        restart: bool,
        /// Print the walk's state as one JSON object on stdout
        #[arg(long)]
        json: bool,
    },
    /// List duplicates: byte-identical files, and the same picture with other metadata
    Duplicates {
        /// Print one JSON array on stdout
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum FacesAction {
    /// Detect the faces of one picture again now, with this build's detector
    Redetect {
        /// The asset id (see `mediadex assets`)
        id: i64,
        /// Print the asset, with its faces, as one JSON object on stdout
        #[arg(long)]
        json: bool,
    },
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum WalkArg {
    ContentHash,
    Faces,
}

impl WalkArg {
    fn id(self) -> WalkKindId {
        match self {
            WalkArg::ContentHash => WalkKindId::ContentHash,
            WalkArg::Faces => WalkKindId::Faces,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum LibraryCommand {
    /// Add a folder as a library
    Add {
        /// An existing directory; stored canonicalized (absolute, symlinks resolved)
        path: PathBuf,
        /// The library's name [default: the directory's last component]
        #[arg(long)]
        name: Option<String>,
        /// Print the added library as one JSON object on stdout
        #[arg(long)]
        json: bool,
    },
    /// List libraries
    List {
        /// Print one JSON array on stdout
        #[arg(long)]
        json: bool,
    },
}

/// A mistake in what the user asked for (as opposed to a failure of the machine): exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InputError(String);

fn input_error(msg: impl Into<String>) -> anyhow::Error {
    InputError(msg.into()).into()
}

/// 2 for usage and input errors (like clap's own), 1 for everything else.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    let is_input = err.downcast_ref::<InputError>().is_some()
        || matches!(
            err.downcast_ref::<StoreError>(),
            Some(StoreError::Conflict(_) | StoreError::NotFound(_))
        )
        || matches!(
            err.downcast_ref::<ConfigError>(),
            Some(
                ConfigError::EmptyDataDir
                    | ConfigError::Invalid { .. }
                    | ConfigError::LibraryPath(_)
            )
        );
    if is_input { 2 } else { 1 }
}

/// The error and its causes on one line. Our error types already print their source in
/// their own message, so a cause already contained in the line is not repeated.
pub fn one_line(err: &anyhow::Error) -> String {
    if let Some(mediadex::app::OpenError::Replaced(replaced)) = err.downcast_ref() {
        return replaced_line(replaced).replace(['\r', '\n'], " ");
    }
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if text.is_empty() || line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line.replace(['\r', '\n'], " ")
}

/// What happened to a damaged index and what the user does now: the least there is (the
/// libraries the damaged file still showed are in the fresh index already).
fn replaced_line(r: &mediadex::app::IndexReplaced) -> String {
    let next = if r.libraries.is_empty() {
        ": add your folders again with `mediadex library add PATH`".to_string()
    } else {
        format!(
            " with your libraries ({}): start mediadex again, or run `mediadex scan --wait`, \
             and it indexes them anew",
            r.libraries.join(", ")
        )
    };
    format!(
        "the index {} is damaged ({}); it was moved to {}; your photos are untouched; \
         a fresh index was started{next}",
        r.path.display(),
        r.damage,
        r.moved_to.display()
    )
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let Some(command) = args.command else {
        return mediadex::app::desktop(Config::load(args.data)?);
    };
    match command {
        Command::Library(LibraryCommand::Add { path, name, json }) => {
            // Input first: a bad path must not create a data dir or a database.
            let (root, name) = library_root_and_name(&path, name)?;
            let store = open(args.data)?.1;
            let library = mediadex::app::add_library(&store, &name, &root)?;
            emit(&render::added(&library, json)?)
        }
        Command::Library(LibraryCommand::List { json }) => {
            let store = open(args.data)?.1;
            emit(&render::libraries(&store.libraries()?, json)?)
        }
        Command::Runs {
            library,
            limit,
            json,
        } => {
            let store = open(args.data)?.1;
            let libraries = store.libraries()?;
            let filter = match library {
                Some(wanted) => Some(find_library(&libraries, &wanted)?.id),
                None => None,
            };
            let runs = store.scan_runs(filter, limit)?;
            let reasons = run_reasons(&store, &runs)?;
            emit(&render::runs(&runs, &libraries, &reasons, json)?)
        }
        Command::Jobs { limit, json } => {
            let store = open(args.data)?.1;
            emit(&render::jobs(&store.jobs(limit)?, json)?)
        }
        Command::Status { json } => {
            let (config, store) = open(args.data)?;
            let status = render::Status {
                version: env!("CARGO_PKG_VERSION"),
                data_dir: config.data_dir.display().to_string(),
                db_path: config.db_path.display().to_string(),
                libraries: store.libraries()?.len(),
                runs: store.scan_run_counts()?,
                jobs: store.job_counts()?,
                counters: store.counters()?,
                walks: walk_states(&store, &config)?,
                disk: disk_status(&config),
            };
            emit(&render::status(&status, json)?)
        }
        Command::Scan {
            library,
            scope,
            force,
            wait,
            cancel,
            json,
        } => {
            let (config, store) = open(args.data)?;
            let targets = scan_targets(&store, library.as_deref())?;
            let runs = if cancel {
                cancel_scans(&store, &targets)?
            } else {
                let limit = config.scan_hourly_limit;
                request_scans(&store, &targets, scope.as_deref(), force, limit)?
            };
            let ids: Vec<i64> = targets.iter().map(|l| l.id).collect();
            if wait {
                mediadex::app::work_until_idle(&store, &config, &ids)?;
            }
            let latest = latest_runs(&store, &runs)?;
            let reasons = run_reasons(&store, &latest)?;
            emit(&render::runs(&latest, &targets, &reasons, json)?)
        }
        Command::Assets { trashed, json } => {
            let store = open(args.data)?.1;
            emit(&assets::assets(&store.assets(trashed)?, json)?)
        }
        Command::Trash { id, json } | Command::Restore { id, json } => {
            let trash = matches!(command, Command::Trash { .. });
            let (config, store) = open(args.data)?;
            mediadex::app::finish_abandoned_moves(&store);
            if trash {
                mediadex::trash::trash(&store, id)?;
            } else {
                mediadex::app::restore(&store, &config, id)?;
            }
            let asset = store
                .asset(id)?
                .ok_or_else(|| input_error(format!("no asset {id}")))?;
            emit(&assets::one(&asset, json)?)
        }
        Command::Serve {
            bind,
            libraries,
            no_browser: _,
            insecure_no_auth,
        } => {
            let config = Config::load(args.data)?;
            let options = mediadex::app::ServeOptions {
                bind,
                next_free_port: false,
                libraries,
                insecure_no_auth,
                open_browser: false,
                adopt_pictures: false,
                claim: None,
            };
            mediadex::app::serve(config, options)
        }
        Command::Token => {
            let config = Config::load(args.data)?;
            let token = mediadex::token::load_or_create(&config.data_dir)?;
            emit(&format!("{token}\n"))
        }
        Command::Duplicates { json } => {
            let store = open(args.data)?.1;
            let twins = store.content_twins()?;
            emit(&assets::duplicates(&store.duplicates()?, &twins, json)?)
        }
        Command::Faces {
            action: FacesAction::Redetect { id, json },
        } => {
            let (config, store) = open(args.data)?;
            match mediadex::app::redetect_faces(&store, &config, id) {
                Ok(_) => {}
                Err(e @ mediadex::app::RedetectError::NoPicture(_)) => {
                    return Err(input_error(e.to_string()));
                }
                Err(e) => return Err(e.into()),
            }
            let asset = store
                .asset(id)?
                .ok_or_else(|| input_error(format!("no asset {id}")))?;
            emit(&assets::one(&asset, json)?)
        }
        Command::Walk {
            kind,
            wait,
            restart,
            json,
        } => {
            let (config, store) = open(args.data)?;
            let kind = kind.id();
            let Some(scheme) = walk_scheme(&config, kind) else {
                return Err(input_error(mediadex::app::NoDetector.to_string()));
            };
            mediadex::app::walk(&store, &config, kind, restart, wait)?;
            let state = mediadex::walks::state(&store, kind, scheme)?;
            emit(&walks::walk(&state, json)?)
        }
    }
}

fn walk_scheme(config: &Config, kind: WalkKindId) -> Option<i64> {
    mediadex::app::walk_schemes(config)
        .into_iter()
        .find(|(k, _)| *k == kind)
        .and_then(|(_, s)| s)
}

/// The walks this binary can run, with their records and live chains.
/// The data dir's disk: its free space, and whether the thumbnail cache is paused at its
/// reserve (the message names the disk).
fn disk_status(config: &Config) -> render::DiskStatus {
    use mediadex::disk::FreeSpace;
    render::DiskStatus {
        free_bytes: mediadex::disk::SystemFreeSpace.free_bytes(&config.data_dir),
        reserve_bytes: config.disk_reserve,
        full: mediadex::app::thumbs(config).room().err().map(|mut e| {
            if e.free.is_some_and(|f| f < mediadex::disk::DB_ROOM) {
                e.paused = Some("its scans, jobs and thumbnails".into());
            }
            e.to_string()
        }),
    }
}

fn walk_states(store: &Store, config: &Config) -> anyhow::Result<Vec<mediadex::walks::WalkState>> {
    mediadex::app::walk_schemes(config)
        .into_iter()
        .filter_map(|(kind, scheme)| Some((kind, scheme?)))
        .map(|(kind, scheme)| Ok(mediadex::walks::state(store, kind, scheme)?))
        .collect()
}

fn scan_targets(store: &Store, wanted: Option<&str>) -> anyhow::Result<Vec<Library>> {
    let libraries = store.libraries()?;
    match wanted {
        Some(w) => Ok(vec![find_library(&libraries, w)?.clone()]),
        None if libraries.is_empty() => Err(input_error(
            "no libraries yet; add one with `mediadex library add PATH`",
        )),
        None => Ok(libraries),
    }
}

fn request_scans(
    store: &Store,
    targets: &[Library],
    scope: Option<&str>,
    forced: bool,
    hourly_limit: Option<u32>,
) -> anyhow::Result<Vec<ScanRun>> {
    let scope = scope.unwrap_or("").trim_matches('/').to_string();
    if scope.split('/').any(|part| part == "..") {
        return Err(input_error("--scope must stay inside the library"));
    }
    targets
        .iter()
        .map(|l| {
            let request = ScanRequest {
                library_id: l.id,
                scope: scope.clone(),
                trigger: Trigger::Manual,
                watch_event: None,
            };
            let options = AdmissionOptions {
                forced,
                hourly_limit,
                ..AdmissionOptions::default()
            };
            Ok(store.request_scan_keyed(request, options)?.0)
        })
        .collect()
}

/// Cancels each library's waiting and running runs, one write per library (never a read
/// then a cancel by id: reclaim may retire a run in between, and its successor would run);
/// a worker holding one stops within a fraction of a second and what it committed stays.
fn cancel_scans(store: &Store, targets: &[Library]) -> anyhow::Result<Vec<ScanRun>> {
    let mut cancelled = vec![];
    for l in targets {
        cancelled.extend(store.cancel_scans(l.id)?);
    }
    Ok(cancelled)
}

/// The runs as they are now, following a retried run to its successor.
fn latest_runs(store: &Store, runs: &[ScanRun]) -> anyhow::Result<Vec<ScanRun>> {
    let mut latest = vec![];
    for run in runs {
        let history = store.scan_runs(Some(run.library_id), 50)?;
        let mut current = run.id;
        while let Some(next) = history.iter().find(|r| r.predecessor_id == Some(current)) {
            current = next.id;
        }
        if let Some(r) = history.into_iter().find(|r| r.id == current) {
            latest.push(r);
        }
    }
    Ok(latest)
}

fn run_reasons(
    store: &Store,
    runs: &[ScanRun],
) -> anyhow::Result<std::collections::HashMap<i64, Vec<(Provenance, i64)>>> {
    runs.iter()
        .map(|r| Ok((r.id, store.run_reasons(r.id)?)))
        .collect()
}

/// The store is returned by value and dropped by the caller before the process exits, so
/// its connections close and SQLite checkpoints and removes the WAL file.
fn open(data: Option<PathBuf>) -> anyhow::Result<(Config, Store)> {
    let config = Config::load(data)?;
    let store = mediadex::app::open_store(
        &config,
        mediadex::store::StartCheck::FullUpTo(mediadex::store::COMMAND_CHECK_BYTES),
    )?;
    Ok((config, store))
}

fn library_root_and_name(path: &Path, name: Option<String>) -> anyhow::Result<(String, String)> {
    Ok(mediadex::config::library_root(path, name)?)
}

fn find_library<'a>(libraries: &'a [Library], wanted: &str) -> anyhow::Result<&'a Library> {
    let by_id = wanted
        .parse::<i64>()
        .ok()
        .and_then(|id| libraries.iter().find(|l| l.id == id));
    by_id
        .or_else(|| libraries.iter().find(|l| l.name == wanted))
        .ok_or_else(|| {
            input_error(format!(
                "no library with id or name '{wanted}' (see `mediadex library list`)"
            ))
        })
}

/// Writes the whole output at once, after every read succeeded: a failing command prints
/// nothing on stdout. A closed pipe (`| head`) is not an error.
fn emit(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("cannot write to stdout"),
    }
}
