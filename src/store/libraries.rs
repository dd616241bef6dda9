//! The `libraries` table: the roots the user asked us to index, and their identity. A
//! library's removal, which settles its assets, is `removal`'s.

use super::{Store, StoreError};
use crate::model::{Library, LibraryIdentity};
use rusqlite::{Connection, OptionalExtension, Row};
use std::path::Path;

const LIST: &str = "SELECT id, name, root, created_at FROM libraries ORDER BY id";
const INSERT: &str = "INSERT INTO libraries (name, root, created_at) VALUES (?1, ?2, ?3)
                      RETURNING id, name, root, created_at";

/// Assets shown by a library's files, before it goes (its files go with it by cascade).
const LIBRARY_ASSETS: &str =
    "SELECT DISTINCT asset_id FROM files WHERE library_id = ?1 AND asset_id IS NOT NULL";
const DELETE: &str = "DELETE FROM libraries WHERE id = ?1";

const SET_IDENTITY: &str = "UPDATE libraries SET root_dev = ?2, marker_id = ?3 WHERE id = ?1";
const GET_IDENTITY: &str = "SELECT root_dev, marker_id FROM libraries WHERE id = ?1";

fn library_from_row(r: &Row<'_>) -> rusqlite::Result<Library> {
    Ok(Library {
        id: r.get(0)?,
        name: r.get(1)?,
        root: r.get(2)?,
        created_at: r.get(3)?,
    })
}

fn all(conn: &Connection) -> Result<Vec<Library>, StoreError> {
    Ok(conn
        .prepare_cached(LIST)?
        .query_map([], library_from_row)?
        .collect::<Result<_, _>>()?)
}

/// Why `root` may not become a library next to `existing`: the same root, the same name, or
/// one inside the other (the same files would be indexed twice).
fn clash(existing: &Library, name: &str, root: &str) -> Option<String> {
    let (new, old) = (Path::new(root), Path::new(&existing.root));
    if new == old {
        Some(format!("{root} is already the library '{}'", existing.name))
    } else if existing.name == name {
        Some(format!("a library named '{name}' already exists"))
    } else if new.starts_with(old) || old.starts_with(new) {
        Some(format!(
            "{root} overlaps the library '{}' at {}",
            existing.name, existing.root
        ))
    } else {
        None
    }
}

/// The assets a library's files show, read before it goes (its files go with it by
/// cascade).
pub(super) fn shown_assets(conn: &Connection, id: i64) -> Result<Vec<i64>, StoreError> {
    Ok(conn
        .prepare_cached(LIBRARY_ASSETS)?
        .query_map([id], |r| r.get(0))?
        .collect::<Result<_, _>>()?)
}

/// Deletes the library row (its files, runs, keys and journal rows go by cascade). False
/// when there was none.
pub(super) fn delete(conn: &Connection, id: i64) -> Result<bool, StoreError> {
    Ok(conn.prepare_cached(DELETE)?.execute([id])? != 0)
}

impl Store {
    /// Adds a library. `root` must already be canonical (absolute, no symlinks).
    pub fn add_library(&self, name: &str, root: &str) -> Result<Library, StoreError> {
        let (name, root) = (name.to_string(), root.to_string());
        self.write(move |conn, now| {
            if let Some(why) = all(conn)?.iter().find_map(|l| clash(l, &name, &root)) {
                return Err(StoreError::Conflict(why));
            }
            Ok(conn
                .prepare_cached(INSERT)?
                .query_row(rusqlite::params![name, root, now], library_from_row)?)
        })
    }

    /// Records the identity of a library's root (at `library add`): its device id and the
    /// id written into its `.mediadex-library` marker.
    pub fn set_library_identity(
        &self,
        library_id: i64,
        identity: LibraryIdentity,
    ) -> Result<(), StoreError> {
        self.write(move |conn, _| {
            let n = conn
                .prepare_cached(SET_IDENTITY)?
                .execute(rusqlite::params![
                    library_id,
                    identity.root_dev.map(|d| d as i64),
                    identity.marker_id
                ])?;
            if n == 0 {
                return Err(StoreError::NotFound(format!(
                    "no library with id {library_id}"
                )));
            }
            Ok(())
        })
    }

    /// The recorded identity of a library's root, for the circuit breaker.
    pub fn library_identity(&self, library_id: i64) -> Result<Option<LibraryIdentity>, StoreError> {
        self.read(|conn| {
            Ok(conn
                .prepare_cached(GET_IDENTITY)?
                .query_row([library_id], |r| {
                    Ok(LibraryIdentity {
                        root_dev: r.get::<_, Option<i64>>(0)?.map(|d| d as u64),
                        marker_id: r.get(1)?,
                    })
                })
                .optional()?)
        })
    }

    pub fn libraries(&self) -> Result<Vec<Library>, StoreError> {
        self.read(all)
    }

    pub fn library(&self, id: i64) -> Result<Option<Library>, StoreError> {
        self.read(|conn| {
            Ok(conn
                .prepare_cached("SELECT id, name, root, created_at FROM libraries WHERE id = ?1")?
                .query_row([id], library_from_row)
                .optional()?)
        })
    }
}
