//! The identity of a library root, for the circuit breaker (DESIGN.md section 5): the root's
//! device id and the id in its `.mediadex-library` marker, recorded at `library add` and
//! compared before a full scan may mark anything missing. An unmounted NAS share, a
//! different disk mounted at the same path, or an empty folder in place of the real one
//! must never look like deleted photos. A root that is not there, or that this process cannot
//! list or enter, is unavailable: nothing is walked or moved, and the library lists say why.
//! The marker is the library's identity across hosts and indexes: each records the id it
//! finds there, and only a folder without one gets a new one (never rewritten), so two
//! indexes or two hosts share a folder; the device id is recorded per host.
//! No SQL: rows go through `Store`.

use crate::model::{Library, LibraryIdentity};
use crate::store::{Store, StoreError};
use std::path::Path;

/// The marker file written at the root of every library.
pub const MARKER: &str = ".mediadex-library";

/// What a scan may do with the root it found.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The same root as recorded: a full scan may mark missing files.
    Same,
    /// Walkable, but not provably the same root: scan, but trash nothing.
    Changed(String),
    /// Not there at all (unmounted, deleted): nothing to walk.
    Unavailable(String),
}

/// Writes (or reads back) the marker and records the root's identity. A read-only root gets
/// no marker; the device id still guards it.
pub fn record(store: &Store, library: &Library) -> Result<LibraryIdentity, StoreError> {
    record_with(store, library, || {})
}

/// `record`, running `before_create` once the root is found to have no marker and before
/// one is made there: another index (another data dir, another host) may make it meanwhile,
/// and tests stand in for it there.
pub fn record_with(
    store: &Store,
    library: &Library,
    before_create: impl FnOnce(),
) -> Result<LibraryIdentity, StoreError> {
    let root = Path::new(&library.root);
    let known = store
        .library_identity(library.id)?
        .and_then(|i| i.marker_id);
    // A library known by its marker keeps it: a folder here without it (or with another)
    // is not provably the library, and the breaker says so; it gets no marker of its own.
    let marker_id = match known {
        Some(_) => None,
        None => read_marker(root).or_else(|| {
            before_create();
            write_marker(root)
        }),
    };
    let identity = LibraryIdentity {
        root_dev: root_dev(root),
        marker_id,
    };
    store.set_library_identity(library.id, identity)?;
    Ok(store.library_identity(library.id)?.unwrap_or_default())
}

/// Compares the root as it is now with the identity recorded for the library.
pub fn check(store: &Store, library: &Library) -> Result<Verdict, StoreError> {
    if library.root.is_empty() {
        return Ok(Verdict::Unavailable(format!(
            "this host ({}) has no folder for this library: `mediadex library add PATH` \
             where this host sees it attaches one",
            store.host()
        )));
    }
    let root = Path::new(&library.root);
    if !root.is_dir() {
        return Ok(Verdict::Unavailable(format!(
            "the library folder {} is not there (unmounted?)",
            library.root
        )));
    }
    if let Err(e) = listable(root) {
        return Ok(Verdict::Unavailable(format!(
            "the library folder {} cannot be read: {e}",
            library.root
        )));
    }
    let recorded = store.library_identity(library.id)?.unwrap_or_default();
    if let Some(dev) = recorded.root_dev
        && root_dev(root) != Some(dev)
    {
        return Ok(Verdict::Changed(
            "the library folder is on another device than before".into(),
        ));
    }
    if let Some(marker) = &recorded.marker_id
        && read_marker(root).as_ref() != Some(marker)
    {
        return Ok(Verdict::Changed(format!(
            "the library folder's {MARKER} marker is missing or different"
        )));
    }
    Ok(Verdict::Same)
}

/// Records the identity of a root that has none yet (a library added while its folder was
/// away, at a service's start) once the root is there, so the breaker guards it from then on.
pub fn record_if_none(store: &Store, library: &Library) -> Result<(), StoreError> {
    let recorded = store.library_identity(library.id)?.unwrap_or_default();
    let here = !library.root.is_empty() && Path::new(&library.root).is_dir();
    if recorded.root_dev.is_none() && here {
        record(store, library)?;
    }
    Ok(())
}

/// Whether the library can be scanned now: `None`, or why not (its folder is not there or
/// cannot be read), for the library lists of the API and the CLI.
pub fn unavailable(store: &Store, library: &Library) -> Result<Option<String>, StoreError> {
    Ok(match check(store, library)? {
        Verdict::Unavailable(why) => Some(why),
        Verdict::Same | Verdict::Changed(_) => None,
    })
}

/// Fails unless this process may list `dir` (read) and reach what is in it (search): the
/// stat of `dir/.` resolves through `dir` itself, so it needs the search permission that a
/// listing alone does not.
pub fn listable(dir: &Path) -> std::io::Result<()> {
    std::fs::read_dir(dir)?;
    std::fs::metadata(dir.join("."))?;
    Ok(())
}

/// The id in the marker at `root`, if there is one: the identity of the library it is.
pub fn marker_at(root: &Path) -> Option<String> {
    read_marker(root)
}

fn read_marker(root: &Path) -> Option<String> {
    let text = std::fs::read_to_string(root.join(MARKER)).ok()?;
    let id = text.trim();
    (!id.is_empty()).then(|| id.to_string())
}

/// Makes the marker unless there is one: created only if absent, so that another index (or
/// host) that made it between our look and this write keeps its id, and we record the same.
fn write_marker(root: &Path) -> Option<String> {
    let id = uuid::Uuid::now_v7().simple().to_string();
    let path = root.join(MARKER);
    let made = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, format!("{id}\n").as_bytes()));
    match made {
        Ok(()) => Some(id),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_marker(root),
        Err(e) => {
            tracing::warn!(root = %root.display(), error = %e, "cannot write the library marker");
            None
        }
    }
}

#[cfg(unix)]
fn root_dev(root: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(root).ok().map(|m| m.dev())
}

#[cfg(not(unix))]
fn root_dev(_root: &Path) -> Option<u64> {
    None
}
