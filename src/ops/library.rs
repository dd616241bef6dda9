//! Libraries: a folder checked before anything is written (`NewLibrary::check`), added with
//! its root's identity recorded for the circuit breaker and the watcher told, removed (the
//! index forgets it; files on disk stay) with the watcher told, and found by id or name.

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
