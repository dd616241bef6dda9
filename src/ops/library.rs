//! Libraries: a folder checked before anything is written (`NewLibrary::check`), added with
//! its root's identity recorded for the circuit breaker and the watcher told (a configured
//! folder that is away at start is added unavailable, `adopt`), removed (the
//! index forgets it; files on disk stay) with the watcher told, listed with whether each can
//! be scanned now, and found by id or name.

use super::{Error, Services};
use crate::model::Library;
use crate::store::Store;
use std::path::Path;

/// A folder that can be a library: its canonical root and its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewLibrary {
    pub root: String,
    pub name: String,
}

impl NewLibrary {
    /// Checks `path` (an existing directory, UTF-8) without touching the data dir, so that a
    /// bad path creates no database; the name defaults to the folder's last component.
    pub fn check(path: &Path, name: Option<String>) -> Result<NewLibrary, Error> {
        let (root, name) = crate::config::library_root(path, name).map_err(Error::LibraryPath)?;
        Ok(NewLibrary { root, name })
    }
}

/// Adds a folder the service is configured to index (`serve --library`, `libraries =`)
/// unless it is a library already; answers the library it added. A folder that is not there
/// or cannot be read at start is added all the same, as the path given, and is unavailable
/// until it is back (its identity is recorded by its first scan then): a start must not fail
/// on an unmounted disk, which under a service manager is a restart loop and no page at all.
/// From there it is any library that is away: its scans are held back with the reason, its
/// moves refused, and the library lists say why.
pub fn adopt(store: &Store, path: &Path) -> Result<Option<Library>, Error> {
    let given = std::path::absolute(path)
        .ok()
        .and_then(|p| p.to_str().map(str::to_string));
    let checked = NewLibrary::check(path, None);
    let away = checked.is_err() && (path.is_dir() || !path.exists());
    let new = match (checked, given.clone()) {
        (Ok(new), _) => new,
        (Err(_), Some(root)) if away => NewLibrary {
            name: Path::new(&root)
                .file_name()
                .and_then(|n| n.to_str())
                .map_or_else(|| root.clone(), str::to_string),
            root,
        },
        (Err(e), _) => return Err(e),
    };
    let known = store.libraries()?;
    let is_it = |root: &str| root == new.root || Some(root) == given.as_deref();
    if known.iter().any(|l| is_it(&l.root)) {
        return Ok(None);
    }
    Ok(Some(match away {
        true => store.add_library(&new.name, &new.root)?,
        false => add_root(store, &new.name, &new.root)?,
    }))
}

/// How a folder became a library of this host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Joined {
    /// A new library (its folder had no known marker).
    New,
    /// A library other hosts see: this host's root is attached to it.
    Attached,
    /// This host's root of the library moved (a move, a remount): re-linked, its index
    /// kept; `from` is the old root.
    Relinked { from: String },
}

/// Adds the library (or attaches this host's root to the one its marker names), records
/// its root's identity and tells the watcher.
pub fn add(s: &Services, new: &NewLibrary) -> Result<(Library, Joined), Error> {
    let (library, joined) = join(&s.store, &new.name, &new.root)?;
    if let Some(watch) = &s.watch {
        if joined != Joined::New {
            watch.remove(library.id);
        }
        watch.add(library.clone());
    }
    Ok((library, joined))
}

/// `join` answering the library only; for the start-up paths that run before a watcher
/// exists.
pub fn add_root(
    store: &Store,
    name: &str,
    root: &str,
) -> Result<Library, crate::store::StoreError> {
    Ok(join(store, name, root)?.0)
}

/// The folder `root` (canonical) as a library of this host. A library is known by its
/// identity, not its path: a folder whose `.mediadex-library` marker names a library the
/// index knows is that library, seen from here (attached, or re-linked when this host saw it
/// elsewhere before), never a second one; any other folder is a new library, its identity
/// (device id, marker) recorded for the circuit breaker.
pub fn join(
    store: &Store,
    name: &str,
    root: &str,
) -> Result<(Library, Joined), crate::store::StoreError> {
    let marker = crate::scan::identity::marker_at(Path::new(root));
    if let Some(marker) = &marker
        && let Some(known) = store.library_by_marker(marker)?
    {
        return attach(store, known, root, marker);
    }
    let library = store.add_library(name, root)?;
    crate::scan::identity::record(store, &library)?;
    Ok((library, Joined::New))
}

/// Makes `root` this host's root of `known`. Refused when the old root is still there with
/// the same marker: the new folder is a copy, and two roots of one library on one host would
/// index its photos twice.
fn attach(
    store: &Store,
    known: Library,
    root: &str,
    marker: &str,
) -> Result<(Library, Joined), crate::store::StoreError> {
    use crate::store::StoreError;
    if known.root == root {
        return Err(StoreError::Conflict(format!(
            "{root} is already the library '{}'",
            known.name
        )));
    }
    let joined = match known.root.is_empty() {
        true => Joined::Attached,
        false => Joined::Relinked {
            from: known.root.clone(),
        },
    };
    let old = Path::new(&known.root);
    if !known.root.is_empty() && crate::scan::identity::marker_at(old).as_deref() == Some(marker) {
        return Err(StoreError::Conflict(format!(
            "{root} carries the marker of the library '{}', which this host still sees at {}: \
             a copy? Delete {root}/{} to index it as a library of its own",
            known.name,
            known.root,
            crate::scan::identity::MARKER
        )));
    }
    let library = store.attach_root(known.id, root)?;
    crate::scan::identity::record(store, &library)?;
    Ok((library, joined))
}

/// Forgets the library, its files and runs and the assets no other library shows; answers
/// how many assets went. The watcher stops watching it.
pub fn remove(s: &Services, id: i64) -> Result<u64, Error> {
    let removed = s.store.remove_library(id)?;
    if let Some(watch) = &s.watch {
        watch.remove(id);
    }
    Ok(removed)
}

/// Every library, each with why it cannot be scanned now (its folder is not there or cannot
/// be read), or `None`.
pub fn list(store: &Store) -> Result<Vec<(Library, Option<String>)>, Error> {
    let mut listed = vec![];
    for library in store.libraries()? {
        let unavailable = crate::scan::identity::unavailable(store, &library)?;
        listed.push((library, unavailable));
    }
    Ok(listed)
}

/// The library `wanted` names, by id first, then by name.
pub fn find(s: &Services, wanted: &str) -> Result<Library, Error> {
    let libraries = s.store.libraries()?;
    let by_id = wanted
        .parse::<i64>()
        .ok()
        .and_then(|id| libraries.iter().find(|l| l.id == id));
    by_id
        .or_else(|| libraries.iter().find(|l| l.name == wanted))
        .cloned()
        .ok_or_else(|| Error::NoLibrary(wanted.to_string()))
}

/// The library `wanted` names, or every library when it names none (an error when there is
/// none yet).
pub fn targets(s: &Services, wanted: Option<&str>) -> Result<Vec<Library>, Error> {
    match wanted {
        Some(w) => Ok(vec![find(s, w)?]),
        None => {
            let libraries = s.store.libraries()?;
            if libraries.is_empty() {
                return Err(Error::NoLibraries);
            }
            Ok(libraries)
        }
    }
}
