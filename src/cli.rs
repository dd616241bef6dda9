//! The command line: clap definitions, dispatch of each subcommand to one operation of
//! `ops` (or one read of the store), and the mapping of failures to one stderr line and an
//! exit code. A thin adapter: it parses, calls, renders; the checks of what the user asked
//! for are the operations' own. Rendering lives in `cli/render.rs`. Must not hold SQL or
//! know how the store keeps its rows.
//!
//! Must not import: rusqlite, r2d2, axum, http

mod assets;
mod check;
mod manpage;
mod people;
mod problems;
mod render;
mod walks;

use anyhow::Context;
use clap::{Parser, Subcommand};
use mediadex::config::settings::{SERVICE_FILE, desktop_file};
use mediadex::config::{Config, ConfigError, Settings};
use mediadex::model::{Provenance, ScanRun, Trigger, WalkKindId};
use mediadex::ops;
use mediadex::store::{Store, StoreError};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// mediadex: point it at your photo and video folders and it keeps an index of them.
///
/// Without a subcommand it runs in the foreground (desktop mode).
#[derive(Debug, Parser)]
#[command(name = "mediadex", version)]
pub struct Args {
    /// Where the database lives [default: the OS data directory, see docs/operations.md]
    #[arg(long = "data", value_name = "DIR", global = true)]
    pub data: Option<PathBuf>,

    /// The index on a PostgreSQL server instead of the SQLite file in the data dir, shared
    /// by every machine that names it (postgres://user@host/database; see
    /// docs/multi-machine.md)
    #[arg(long = "database", value_name = "URL", global = true)]
    pub database: Option<String>,

    /// The settings file instead of the default one (see docs/configuration.md)
    #[arg(long = "config", value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,

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
        /// List this run's problems instead: each file or folder it could not list, read or
        /// parse, with its error (a run keeps its first 10,000)
        #[arg(long, value_name = "ID", conflicts_with_all = ["library", "limit"])]
        problems: Option<i64>,
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
    Scan(ScanArgs),
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
    /// Keep one asset of a group of duplicates or similar pictures and trash the others
    /// (each by its own move, as `trash` does); the kept one must be live. With `--file`:
    /// keep one file of the asset and trash its byte-identical copies
    Keep {
        /// The asset to keep (see `mediadex duplicates` and `mediadex similar`)
        id: i64,
        /// The assets to trash
        #[arg(long, num_args = 1.., required_unless_present = "file", conflicts_with = "file")]
        trash: Vec<i64>,
        /// Keep this file of the asset (library-relative path) and trash its other files,
        /// its byte-identical copies; the asset stays
        #[arg(long, value_name = "PATH")]
        file: Option<String>,
        /// The library of `--file` when several hold that path
        #[arg(long, value_name = "ID", requires = "file")]
        library: Option<i64>,
        /// Print `{"kept": asset, "trashed": [asset]}` as one JSON object on stdout
        #[arg(long)]
        json: bool,
    },
    /// Move a trashed asset's files back where they were (of a live asset: the copies
    /// `keep --file` trashed)
    Restore {
        /// The asset id (see `mediadex assets --trashed`)
        id: i64,
        /// Print the asset as one JSON object on stdout
        #[arg(long)]
        json: bool,
    },
    /// Run as a service: workers, maintenance and the HTTP API until SIGTERM/SIGINT
    Serve {
        /// Address to listen on; off loopback it needs the token [default: 127.0.0.1:7468]
        #[arg(long, value_name = "ADDR")]
        bind: Option<std::net::SocketAddr>,
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
    /// Run a walk over every asset: content-hash (re-stamps content hashes), faces, or
    /// similar (perceptual hashes of the pictures)
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
    /// List groups of similar pictures (near-duplicates, bursts): perceptual hashes within
    /// the `similar_distance` setting; byte-identical and same-content copies are duplicates
    Similar {
        /// Bits (of 64) two hashes may differ in, instead of the setting [default: 7]
        #[arg(long, value_name = "BITS", value_parser = clap::value_parser!(u32).range(0..=11))]
        distance: Option<u32>,
        /// Print one JSON array of the groups on stdout
        #[arg(long)]
        json: bool,
    },
    /// List the people found in the pictures, or change who they are (name, merge, move a
    /// face, hide, recluster)
    People(PeopleArgs),
    /// Check the index against the disk, like `git fsck`: say every file, photo, trash
    /// folder entry and unfinished move where they disagree
    Check {
        /// Fix what can be fixed without losing anything (no file is ever deleted), and say
        /// what was done
        #[arg(long)]
        repair: bool,
        /// Print one JSON object on stdout
        #[arg(long)]
        json: bool,
    },
    /// Copy the index into an empty PostgreSQL database (--to postgres://...) or back into
    /// a new SQLite file (--to PATH), then check the copy table by table (rows and a
    /// digest of every row); the index itself is only read
    Migrate {
        /// Where the copy goes: a PostgreSQL URL, or the path of a SQLite file to make
        #[arg(long, value_name = "URL|PATH")]
        to: String,
        /// Print one JSON object on stdout
        #[arg(long)]
        json: bool,
    },
    /// Write the man pages (mediadex.1 and one per subcommand) into DIR, for packagers
    #[command(hide = true)]
    Manpage {
        /// The folder to write them into (created if missing)
        dir: PathBuf,
    },
}

// `scan`'s arguments (its help is the `Scan` variant's).
#[derive(Debug, clap::Args)]
pub struct ScanArgs {
    /// The library (its id or its name)
    pub library: Option<String>,
    /// Only this sub-folder of the library (library-relative)
    #[arg(long, value_name = "SUBPATH")]
    pub scope: Option<String>,
    /// Re-read every file, changed or not
    #[arg(long)]
    pub force: bool,
    /// Wait until the scan has ended (running it in this process if no service does)
    #[arg(long)]
    pub wait: bool,
    /// Cancel the library's waiting or running scan instead
    #[arg(long, conflicts_with_all = ["scope", "force", "wait"])]
    pub cancel: bool,
    /// Print one JSON array of the runs on stdout
    #[arg(long)]
    pub json: bool,
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

// `people`'s arguments (its help is the `People` variant's).
#[derive(Debug, clap::Args)]
pub struct PeopleArgs {
    #[command(subcommand)]
    pub action: Option<PeopleAction>,
    /// List the hidden people too
    #[arg(long)]
    pub hidden: bool,
    /// Print one JSON array on stdout
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand, Debug)]
pub enum PeopleAction {
    /// Show one person and the photos they are in
    Show {
        /// The person's id (see `mediadex people`)
        id: i64,
        /// Print the person, with `photo_ids`, as one JSON object on stdout
        #[arg(long)]
        json: bool,
    },
    /// Who is in a photo: each face and its person
    Photo {
        /// The asset id (see `mediadex assets`)
        asset: i64,
        /// Print one JSON array of the faces on stdout
        #[arg(long)]
        json: bool,
    },
    /// Name a person (an empty name unnames them)
    Name {
        /// The person's id (see `mediadex people`)
        id: i64,
        name: String,
        /// Print the person as one JSON object on stdout
        #[arg(long)]
        json: bool,
    },
    /// Merge person B into person A: every face of B is A's from now on, whatever a
    /// recluster finds
    Merge {
        /// The person who stays
        a: i64,
        /// The person merged into A (their id goes)
        b: i64,
        #[arg(long)]
        json: bool,
    },
    /// Put one face in a person (a split, or a fix); `new` makes a new person of it
    Move {
        /// The face's id (see `mediadex people show` and the API's faces)
        face: i64,
        /// The person's id, or `new`
        person: String,
        #[arg(long)]
        json: bool,
    },
    /// Hide a person from the list (their faces stay theirs)
    Hide {
        id: i64,
        /// Show them again instead
        #[arg(long)]
        show: bool,
        #[arg(long)]
        json: bool,
    },
    /// Group every face into people again (the user's word is kept); a job
    Recluster {
        /// Wait until it has run (running it in this process if no service does)
        #[arg(long)]
        wait: bool,
    },
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum WalkArg {
    ContentHash,
    Faces,
    Similar,
    Embeddings,
}

impl WalkArg {
    fn id(self) -> WalkKindId {
        match self {
            WalkArg::ContentHash => WalkKindId::ContentHash,
            WalkArg::Faces => WalkKindId::Faces,
            WalkArg::Similar => WalkKindId::Similar,
            WalkArg::Embeddings => WalkKindId::Embeddings,
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

/// 2 for usage and input errors (like clap's own), 1 for everything else.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    let is_input = err
        .downcast_ref::<ops::Error>()
        .is_some_and(ops::Error::is_input)
        || matches!(
            err.downcast_ref::<StoreError>(),
            Some(StoreError::Conflict(_) | StoreError::NotFound(_))
        )
        || matches!(
            err.downcast_ref::<ConfigError>(),
            Some(
                ConfigError::EmptyDataDir
                    | ConfigError::Invalid { .. }
                    | ConfigError::InFile { .. }
                    | ConfigError::ConfigFile { .. }
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
             and it indexes them anew; then `mediadex check --repair` brings back the photos \
             that were in their trash",
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

/// This invocation's settings: the flags over the environment over the config file
/// (`--config`, else `MEDIADEX_CONFIG`, else the service's file for `serve` and the desktop
/// one for everything else), in `Settings::resolve`, the one place that layers them.
pub fn settings(args: &Args) -> Result<Settings, ConfigError> {
    let mut flags = Settings {
        data_dir: args.data.clone(),
        database: args.database.clone(),
        ..Settings::default()
    };
    let default_file = match &args.command {
        Some(Command::Serve {
            bind, libraries, ..
        }) => {
            flags.bind = *bind;
            flags.libraries = (!libraries.is_empty()).then(|| libraries.clone());
            Some(PathBuf::from(SERVICE_FILE))
        }
        Some(Command::Similar { distance, .. }) => {
            flags.similar_distance = *distance;
            desktop_file()
        }
        _ => desktop_file(),
    };
    Settings::resolve(flags, args.config.clone(), default_file, &|name| {
        std::env::var_os(name)
    })
}

pub fn run(args: Args, settings: &Settings) -> anyhow::Result<()> {
    let Some(command) = args.command else {
        let libraries = settings.libraries.clone().unwrap_or_default();
        let config = Config::load_settings(settings)?;
        return mediadex::app::desktop(config, settings.bind, libraries);
    };
    let data = settings;
    match command {
        Command::Library(LibraryCommand::Add { path, name, json }) => {
            library_add(data, &path, name, json)
        }
        Command::Library(LibraryCommand::List { json }) => library_list(data, json),
        Command::Runs {
            library,
            limit,
            problems,
            json,
        } => match problems {
            Some(run) => emit(&run_problems(data, run, json)?),
            None => runs(data, library.as_deref(), limit, json),
        },
        Command::Jobs { limit, json } => emit(&render::jobs(&open(data)?.1.jobs(limit)?, json)?),
        Command::Status { json } => status(data, json),
        Command::Scan(what) => scan(data, what),
        Command::Assets { trashed, json } => {
            emit(&assets::assets(&open(data)?.1.assets(trashed)?, json)?)
        }
        Command::Trash { id, json } => one_asset(data, id, json, ops::trash::trash, false),
        Command::Keep {
            id,
            trash,
            file,
            library,
            json,
        } => keep(data, id, (&trash, file.as_deref(), library), json),
        Command::Restore { id, json } => one_asset(data, id, json, ops::trash::restore, false),
        Command::Faces {
            action: FacesAction::Redetect { id, json },
        } => one_asset(data, id, json, ops::faces::redetect, true),
        Command::Serve {
            bind: _,
            libraries: _,
            no_browser: _,
            insecure_no_auth,
        } => serve(data, insecure_no_auth),
        Command::Token => token(data),
        Command::Duplicates { json } => duplicates(data, json),
        Command::Walk {
            kind,
            wait,
            restart,
            json,
        } => walk(data, kind.id(), restart, wait, json),
        Command::Similar { distance: _, json } => similar(data, json),
        Command::People(what) => people(data, what),
        Command::Check { repair, json } => check_index(data, repair, json),
        Command::Migrate { to, json } => migrate(data, &to, json),
        Command::Manpage { dir } => manpage::write(<Args as clap::CommandFactory>::command(), &dir),
    }
}

/// `mediadex token`: the data dir's API token, made on first use.
fn token(settings: &Settings) -> anyhow::Result<()> {
    let config = Config::load_settings(settings)?;
    emit(&format!(
        "{}\n",
        mediadex::token::load_or_create(&config.data_dir)?
    ))
}

/// The services of a command: no workers, no watcher; the face detector only for the
/// commands that detect or queue faces (loading it costs a fifth of a second).
fn services(config: &Config, store: Store, faces: bool) -> ops::Services {
    mediadex::app::command_services(config, store, faces)
}

fn library_add(
    data: &Settings,
    path: &Path,
    name: Option<String>,
    json: bool,
) -> anyhow::Result<()> {
    // Input first: a bad path must not create a data dir or a database.
    let new = ops::library::NewLibrary::check(path, name)?;
    let (config, store) = open(data)?;
    let (library, joined) = ops::library::add(&services(&config, store, false), &new)?;
    emit(&render::added(&library, &joined, json)?)
}

fn runs(data: &Settings, library: Option<&str>, limit: i64, json: bool) -> anyhow::Result<()> {
    let (config, store) = open(data)?;
    let s = services(&config, store, false);
    let filter = library.map(|l| ops::library::find(&s, l)).transpose()?;
    let runs = s.store.scan_runs(filter.map(|l| l.id), limit)?;
    emit(&render::runs(
        &runs,
        &s.store.libraries()?,
        &run_reasons(&s, &runs)?,
        json,
    )?)
}

fn status(data: &Settings, json: bool) -> anyhow::Result<()> {
    let (config, store) = open(data)?;
    let s = services(&config, store, false);
    let status = ops::status::status(&s, &config, &mediadex::app::thumbs(&config))?;
    emit(&render::status(&status, json)?)
}

fn scan(data: &Settings, what: ScanArgs) -> anyhow::Result<()> {
    let scope = ops::Scope::parse(what.scope.as_deref().unwrap_or("")).map_err(ops::Error::from)?;
    let (config, store) = open(data)?;
    let s = services(&config, store, false);
    let targets = ops::library::targets(&s, what.library.as_deref())?;
    let runs = if what.cancel {
        ops::scans::cancel_libraries(&s, &targets)?
    } else {
        let ask = ops::scans::Ask {
            scope,
            force: what.force,
            trigger: Trigger::Manual,
            key: None,
        };
        ops::scans::request_each(&s, &targets, &ask)?
    };
    if what.wait {
        let ids: Vec<i64> = targets.iter().map(|l| l.id).collect();
        mediadex::app::work_until_idle(&s.store, &config, &ids)?;
    }
    let latest = ops::scans::latest(&s, &runs)?;
    let reasons = run_reasons(&s, &latest)?;
    emit(&render::runs(&latest, &targets, &reasons, what.json)?)
}

/// Trash, restore and redetect: one asset's operation; answers the asset. Only redetect needs
/// this build's face detector (loading it costs a fifth of a second); a restore's face walk
/// is queued by scheme, without it.
fn one_asset(
    data: &Settings,
    id: i64,
    json: bool,
    op: fn(&ops::Services, i64) -> Result<mediadex::model::Asset, ops::Error>,
    detector: bool,
) -> anyhow::Result<()> {
    let (config, store) = open(data)?;
    let asset = op(&services(&config, store, detector), id)?;
    emit(&assets::one(&asset, json)?)
}

/// `library list`: each library with whether its folder can be scanned now.
fn library_list(data: &Settings, json: bool) -> anyhow::Result<()> {
    let listed = ops::library::list(&open(data)?.1)?;
    emit(&render::libraries(&listed, json)?)
}

fn duplicates(data: &Settings, json: bool) -> anyhow::Result<()> {
    let store = open(data)?.1;
    let twins = store.content_twins()?;
    emit(&assets::duplicates(&store.duplicates()?, &twins, json)?)
}

/// `keep`: one asset kept, the others trashed (`ops::trash::keep`); or with `--file`, one
/// file of the asset kept and its copies trashed (`keep_file`).
fn keep(
    data: &Settings,
    id: i64,
    (others, file, library): (&[i64], Option<&str>, Option<i64>),
    json: bool,
) -> anyhow::Result<()> {
    if let Some(path) = file {
        return keep_file(data, id, (library, path), json);
    }
    let (config, store) = open(data)?;
    let kept = ops::trash::keep(&services(&config, store, false), id, others)?;
    emit(&assets::kept(&kept, json)?)
}

/// `keep ID --file PATH`: one file of an identical group kept, the asset's other files
/// trashed (`ops::trash::keep_file`); prints the asset as `keep` prints the kept one.
fn keep_file(
    data: &Settings,
    id: i64,
    (library, path): (Option<i64>, &str),
    json: bool,
) -> anyhow::Result<()> {
    let (config, store) = open(data)?;
    let s = services(&config, store, false);
    let kept = ops::trash::keep_file(&s, id, library, path)?;
    let kept = ops::trash::Kept {
        kept,
        trashed: vec![],
    };
    emit(&assets::kept(&kept, json)?)
}

/// `serve` on the layered settings (its `--bind` and `--library` are in them).
fn serve(settings: &Settings, insecure_no_auth: bool) -> anyhow::Result<()> {
    let bind = match settings.bind {
        Some(bind) => bind,
        None => mediadex::app::DEFAULT_BIND.parse()?,
    };
    let options = mediadex::app::ServeOptions {
        bind,
        next_free_port: false,
        libraries: settings.libraries.clone().unwrap_or_default(),
        insecure_no_auth,
        open_browser: false,
        adopt_pictures: false,
        claim: None,
    };
    mediadex::app::serve(Config::load_settings(settings)?, options)
}

fn walk(
    data: &Settings,
    kind: WalkKindId,
    restart: bool,
    wait: bool,
    json: bool,
) -> anyhow::Result<()> {
    let (config, store) = open(data)?;
    let s = services(&config, store, false);
    let scheme = ops::walks::scheme(&s, kind).ok_or(ops::Error::NoDetector)?;
    mediadex::app::walk(&s.store, &config, kind, restart, wait)?;
    emit(&walks::walk(
        &mediadex::walks::state(&s.store, kind, scheme)?,
        json,
    )?)
}

/// `mediadex similar`: every group, at the layered `similar_distance` (its flag in them).
fn similar(data: &Settings, json: bool) -> anyhow::Result<()> {
    let (config, store) = open(data)?;
    let s = services(&config, store, false);
    let page = ops::similar::page(&s, None, usize::MAX)?;
    emit(&assets::similar(&page.groups, s.similar_distance, json)?)
}

/// `mediadex people ...`: the list, or one change of the user's and the person it leaves.
fn people(data: &Settings, what: PeopleArgs) -> anyhow::Result<()> {
    let (config, store) = open(data)?;
    let s = services(&config, store, false);
    let out = match what.action {
        None => people::list(&ops::people::list(&s, what.hidden)?, what.json)?,
        Some(PeopleAction::Show { id, json }) => {
            let person = ops::people::person(&s, id)?;
            people::show(&person, &ops::people::faces(&s, id)?, json)?
        }
        Some(PeopleAction::Photo { asset, json }) => {
            people::photo(&ops::people::in_photo(&s, asset)?, json)?
        }
        Some(PeopleAction::Name { id, name, json }) => {
            people::one(&ops::people::name(&s, id, &name)?, json)?
        }
        Some(PeopleAction::Merge { a, b, json }) => {
            people::one(&ops::people::merge(&s, a, b)?, json)?
        }
        Some(PeopleAction::Move { face, person, json }) => {
            let to = person_arg(&person)?;
            people::one(&ops::people::move_face(&s, face, to)?, json)?
        }
        Some(PeopleAction::Hide { id, show, json }) => {
            people::one(&ops::people::hide(&s, id, !show)?, json)?
        }
        Some(PeopleAction::Recluster { wait }) => {
            let queued = ops::people::recluster(&s)?;
            if wait {
                mediadex::app::recluster_here(&s.store, &config)?;
                "people regrouped\n".to_string()
            } else if queued {
                "recluster queued\n".to_string()
            } else {
                "a recluster is already waiting or running\n".to_string()
            }
        }
    };
    emit(&out)
}

/// A person argument: an id, or `new`.
fn person_arg(text: &str) -> anyhow::Result<Option<i64>> {
    if text == "new" {
        return Ok(None);
    }
    text.parse().map(Some).map_err(|_| {
        anyhow::Error::from(ops::Error::People(
            mediadex::store::PeopleRefusal::NotAPerson(text.to_string()),
        ))
    })
}

/// `mediadex check [--repair]`: what disagrees, and with `--repair` what was done about it.
fn check_index(data: &Settings, repair: bool, json: bool) -> anyhow::Result<()> {
    let (config, store) = open(data)?;
    let s = services(&config, store, false);
    if repair {
        emit(&check::repaired(&ops::check::repair(&s)?, json)?)
    } else {
        emit(&check::check(&ops::check::check(&s)?, json)?)
    }
}

/// `migrate --to`: the copy, its check table by table, and an error when any differs.
fn migrate(data: &Settings, to: &str, json: bool) -> anyhow::Result<()> {
    let (config, store) = open(data)?;
    let check = mediadex::app::copy_index(&config, store, to)?;
    emit(&render::copied(&check, json)?)?;
    let differing = check.differing();
    if differing.is_empty() {
        Ok(())
    } else {
        anyhow::bail!(
            "the copy differs from the index in {}: do not switch to it",
            differing.join(", ")
        )
    }
}

fn run_reasons(
    s: &ops::Services,
    runs: &[ScanRun],
) -> anyhow::Result<HashMap<i64, Vec<(Provenance, i64)>>> {
    runs.iter()
        .map(|r| Ok((r.id, ops::scans::reasons(s, r.id)?)))
        .collect()
}

/// The store is returned by value and dropped by the caller before the process exits, so
/// its connections close and SQLite checkpoints and removes the WAL file.
fn open(data: &Settings) -> anyhow::Result<(Config, Store)> {
    let config = Config::load_settings(data)?;
    let store = mediadex::app::open_store(
        &config,
        mediadex::store::StartCheck::FullUpTo(mediadex::store::COMMAND_CHECK_BYTES),
    )?;
    Ok((config, store))
}

/// Writes the whole output at once, after every read succeeded: a failing command prints
/// nothing on stdout. A closed pipe (`| head`) is not an error.
/// `runs --problems RUN`: every problem the run kept, or an input error for an unknown run.
fn run_problems(data: &Settings, run: i64, json: bool) -> anyhow::Result<String> {
    let (config, store) = open(data)?;
    let s = services(&config, store, false);
    let page = ops::scans::problems(&s, run, 0, mediadex::store::PROBLEMS_PER_RUN)?;
    Ok(problems::problems(run, &page.items, json)?)
}

fn emit(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("cannot write to stdout"),
    }
}
