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

/// Adds the library, records its root's identity and tells the watcher.
pub fn add(s: &Services, new: &NewLibrary) -> Result<Library, Error> {
    let library = add_root(&s.store, &new.name, &new.root)?;
    if let Some(watch) = &s.watch {
        watch.add(library.clone());
    }
    Ok(library)
}

/// Adds a library and records its root's identity (device id, marker) for the circuit
/// breaker; for the start-up paths that run before a watcher exists.
pub fn add_root(
    store: &Store,
    name: &str,
    root: &str,
) -> Result<Library, crate::store::StoreError> {
    let library = store.add_library(name, root)?;
    crate::scan::identity::record(store, &library)?;
    Ok(library)
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
