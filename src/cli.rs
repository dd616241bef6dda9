//! The command line: clap definitions, dispatch of each subcommand to the store, and the
//! mapping of failures to one stderr line and an exit code. Owns no logic beyond checking
//! user input (a library path); rendering lives in `cli/render.rs`. Must not hold SQL or
//! know how the store keeps its rows.

mod render;

use anyhow::Context;
use clap::{Parser, Subcommand};
use mediadex::config::{Config, ConfigError};
use mediadex::model::Library;
use mediadex::store::{Store, StoreError};
use std::io::Write;
use std::path::{Path, PathBuf};

/// mediadex: point it at your photo and video folders and it keeps an index of them.
///
/// Without a subcommand it runs in the foreground (desktop mode).
#[derive(Debug, Parser)]
#[command(name = "mediadex", version)]
pub struct Args {
    /// Where the database lives [default: the OS data directory, see README]
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

pub fn run(args: Args) -> anyhow::Result<()> {
    let Some(command) = args.command else {
        return mediadex::app::run(Config::load(args.data)?);
    };
    match command {
        Command::Library(LibraryCommand::Add { path, name, json }) => {
            // Input first: a bad path must not create a data dir or a database.
            let (root, name) = library_root_and_name(&path, name)?;
            let store = open(args.data)?.1;
            let library = store.add_library(&name, &root)?;
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
            emit(&render::runs(&runs, &libraries, json)?)
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
            };
            emit(&render::status(&status, json)?)
        }
    }
}

/// The store is returned by value and dropped by the caller before the process exits, so
/// its connections close and SQLite checkpoints and removes the WAL file.
fn open(data: Option<PathBuf>) -> anyhow::Result<(Config, Store)> {
    let config = Config::load(data)?;
    let store = mediadex::app::open_store(&config)?;
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
