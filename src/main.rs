//! The `mediadex` binary: sets up logging, parses the command line and turns the outcome
//! into an exit code. Everything else is in `cli` (commands) and the library crate.
//!
//! Must not import: store, rusqlite, r2d2

// A double-clicked desktop app must not open a console window on Windows, so the release
// binary is a GUI-subsystem program; `console::attach` gives commands typed in a terminal
// their output back. Debug builds keep the console for development.
#![cfg_attr(all(windows, not(debug_assertions)), windows_subsystem = "windows")]

mod cli;
#[cfg(windows)]
mod console;

use clap::{CommandFactory, FromArgMatches};
use std::io::IsTerminal;
use std::process::ExitCode;

/// nom-exif logs a line per file at info; the filter keeps it quiet unless RUST_LOG asks.
const DEFAULT_LOG_FILTER: &str = "info,nom_exif=off";

fn main() -> ExitCode {
    // Before any thread: the cap on malloc's arenas holds peak RSS flat (`memory`).
    mediadex::memory::limit_arenas();
    #[cfg(all(windows, not(debug_assertions)))]
    console::attach();
    let args = parse_args();
    // The settings say the log level, so logging starts once they are read; an error in
    // them is printed like any other.
    let settings = cli::settings(&args);
    init_logging(settings.as_ref().ok().and_then(|s| s.log_level.as_deref()));
    match settings
        .map_err(anyhow::Error::from)
        .and_then(|settings| cli::run(args, &settings))
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("mediadex: error: {}", cli::one_line(&err));
            ExitCode::from(cli::exit_code(&err))
        }
    }
}

/// The command line. clap reports its own errors (exit 2) and prints --help and --version
/// (exit 0) here; `--version` names the build (`app::long_version`), `-V` only the version.
fn parse_args() -> cli::Args {
    // Leaked once: clap keeps the text for the life of the process anyway.
    let long: &'static str = Box::leak(mediadex::app::long_version().into_boxed_str());
    let matches = cli::Args::command().long_version(long).get_matches();
    cli::Args::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// Logs go to stderr so that stdout carries only the command's output (`--json`), and, once
/// the desktop app or the service opened it, to the rolling log file. The filter is the
/// `log_level` setting (already checked), else `RUST_LOG`, else the default.
fn init_logging(level: Option<&str>) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = level
        .and_then(|l| tracing_subscriber::EnvFilter::try_new(l).ok())
        .or_else(|| tracing_subscriber::EnvFilter::try_from_default_env().ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new(DEFAULT_LOG_FILTER));
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let file = tracing_subscriber::fmt::layer()
        .with_writer(mediadex::logfile::Sink)
        .with_ansi(false);
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(stderr)
        .with(file)
        .try_init();
}
