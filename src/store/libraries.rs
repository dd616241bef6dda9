//! The `libraries` and `library_roots` tables: the libraries the user asked us to index,
//! each known by its identity (its marker id and, per host, its root's device), and where
//! each host sees it. A library's removal, which settles its assets, is `removal`'s.

use super::{Store, StoreError};
use crate::model::{Library, LibraryIdentity};
use rusqlite::{Connection, OptionalExtension, Row, params};
use std::path::Path;

/// Libraries with this host's (?1) root, '' where this host has none.
macro_rules! with_root {
    ($where_order:literal) => {
        concat!(
            "SELECT l.id, l.name, coalesce(r.root, ''), l.created_at FROM libraries l
               LEFT JOIN library_roots r ON r.library_id = l.id AND r.host = ?1 ",
            $where_order
        )
    };
}
const LIST: &str = with_root!("ORDER BY l.id");
const ONE: &str = with_root!("WHERE l.id = ?2");
const BY_MARKER: &str = with_root!("WHERE l.marker_id = ?2 ORDER BY l.id LIMIT 1");
/// `libraries.root` keeps where the library was first added (a damaged index's salvage
/// reads it); the hosts' roots are `library_roots`.
const INSERT: &str = "INSERT INTO libraries (name, root, created_at) VALUES (?1, ?2, ?3)
                      RETURNING id";
/// This host's root of a library, new or moved (a re-link): the device id recorded for the
/// old root says nothing of the new one.
const SET_ROOT: &str = "
    INSERT INTO library_roots (library_id, host, root) VALUES (?1, ?2, ?3)
    ON CONFLICT (library_id, host) DO UPDATE SET root = excluded.root, root_dev = NULL";
const ROOTS: &str = "SELECT host, root FROM library_roots WHERE library_id = ?1 ORDER BY host";
/// The roots of an index from before hosts (host '', migration 0029) become the first
/// opening host's.
const TAKE_UNHOSTED: &str = "UPDATE OR IGNORE library_roots SET host = ?1 WHERE host = ''";
const ANY_UNHOSTED: &str = "SELECT 1 FROM library_roots WHERE host = '' LIMIT 1";
const HAS_ROOTS: &str =
    "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'library_roots'";

/// Assets shown by a library's files, before it goes (its files go with it by cascade).
const LIBRARY_ASSETS: &str =
    "SELECT DISTINCT asset_id FROM files WHERE library_id = ?1 AND asset_id IS NOT NULL";
const DELETE: &str = "DELETE FROM libraries WHERE id = ?1";

/// A host that cannot read the marker (a read-only mount without one) keeps the identity
/// another host recorded.
const SET_MARKER: &str =
    "UPDATE libraries SET marker_id = coalesce(?2, marker_id) WHERE id = ?1 RETURNING id";
const SET_DEV: &str = "UPDATE library_roots SET root_dev = ?3 WHERE library_id = ?1 AND host = ?2";
const GET_IDENTITY: &str = "
    SELECT r.root_dev, l.marker_id FROM libraries l
      LEFT JOIN library_roots r ON r.library_id = l.id AND r.host = ?2
     WHERE l.id = ?1";

fn library_from_row(r: &Row<'_>) -> rusqlite::Result<Library> {
    Ok(Library {
        id: r.get(0)?,
        name: r.get(1)?,
        root: r.get(2)?,
        created_at: r.get(3)?,
    })
}

fn all(conn: &Connection, host: &str) -> Result<Vec<Library>, StoreError> {
    Ok(conn
        .prepare_cached(LIST)?
        .query_map([host], library_from_row)?
        .collect::<Result<_, _>>()?)
}

fn one(conn: &Connection, host: &str, id: i64) -> Result<Option<Library>, StoreError> {
    Ok(conn
        .prepare_cached(ONE)?
        .query_row(params![host, id], library_from_row)
        .optional()?)
}

/// Library `id` as this host sees it, `NotFound` without one.
fn existing(conn: &Connection, host: &str, id: i64) -> Result<Library, StoreError> {
    one(conn, host, id)?.ok_or_else(|| StoreError::NotFound(format!("library {id}")))
}

/// Why `root` may not be this host's root of a library named `name` next to `existing`
/// (as this host sees it): the same root, the same name, or one inside the other (the same
/// files would be indexed twice).
fn clash(existing: &Library, name: &str, root: &str) -> Option<String> {
    let (new, old) = (Path::new(root), Path::new(&existing.root));
    if existing.name == name {
        return Some(format!("a library named '{name}' already exists"));
    }
    if existing.root.is_empty() {
        return None;
    }
    if new == old {
        Some(format!("{root} is already the library '{}'", existing.name))
    } else if new.starts_with(old) || old.starts_with(new) {
        Some(format!(
            "{root} overlaps the library '{}' at {}",
            existing.name, existing.root
        ))
    } else {
        None
    }
}

fn set_root(conn: &Connection, host: &str, id: i64, root: &str) -> Result<(), StoreError> {
    conn.prepare_cached(SET_ROOT)?
        .execute(params![id, host, root])?;
    Ok(())
}

/// At open: the roots of an index from before hosts become this host's (a test's schema
/// may stop before the table). Read first: a write here, even one that changes nothing,
/// waits for the write lock, and a command that only reads (`runs` beside a scanning
/// service, or a frozen one) must not.
pub(super) fn take_unhosted(conn: &Connection, host: &str) -> Result<(), StoreError> {
    if super::answers(conn, HAS_ROOTS, [])? && super::answers(conn, ANY_UNHOSTED, [])? {
        conn.prepare_cached(TAKE_UNHOSTED)?.execute([host])?;
    }
    Ok(())
}

/// The assets a library's files show, read before it goes (its files go with it by
/// cascade).
pub(super) fn shown_assets(conn: &Connection, id: i64) -> Result<Vec<i64>, StoreError> {
    Ok(conn
        .prepare_cached(LIBRARY_ASSETS)?
        .query_map([id], |r| r.get(0))?
        .collect::<Result<_, _>>()?)
}

/// Deletes the library row (its files, runs, keys, roots and journal rows go by cascade).
/// False when there was none.
pub(super) fn delete(conn: &Connection, id: i64) -> Result<bool, StoreError> {
    Ok(conn.prepare_cached(DELETE)?.execute([id])? != 0)
}

impl Store {
    /// Adds a library that this host sees at `root`, which must already be canonical
    /// (absolute, no symlinks).
    pub fn add_library(&self, name: &str, root: &str) -> Result<Library, StoreError> {
        let (name, root, host) = (name.to_string(), root.to_string(), self.host().to_string());
        self.write_lite(move |conn, now| {
            if let Some(why) = all(conn, &host)?
                .iter()
                .find_map(|l| clash(l, &name, &root))
            {
                return Err(StoreError::Conflict(why));
            }
            let id: i64 = conn
                .prepare_cached(INSERT)?
                .query_row(params![name, root, now], |r| r.get(0))?;
            set_root(conn, &host, id, &root)?;
            existing(conn, &host, id)
        })
    }

    /// Makes `root` (canonical) this host's root of library `id`: attaches a root on a host
    /// that had none, or re-links one whose folder moved. Refused when it overlaps another
    /// library this host sees.
    pub fn attach_root(&self, id: i64, root: &str) -> Result<Library, StoreError> {
        let (root, host) = (root.to_string(), self.host().to_string());
        self.write_lite(move |conn, _| {
            let others = all(conn, &host)?.into_iter().filter(|l| l.id != id);
            if let Some(why) = others.into_iter().find_map(|l| clash(&l, "", &root)) {
                return Err(StoreError::Conflict(why));
            }
            existing(conn, &host, id)?;
            set_root(conn, &host, id, &root)?;
            existing(conn, &host, id)
        })
    }

    /// The library whose marker id is `marker`, as this host sees it.
    pub fn library_by_marker(&self, marker: &str) -> Result<Option<Library>, StoreError> {
        let host = self.host().to_string();
        self.read_lite(|conn| {
            Ok(conn
                .prepare_cached(BY_MARKER)?
                .query_row(params![host, marker], library_from_row)
                .optional()?)
        })
    }

    /// Where each host sees library `id`: (host, root), by host.
    pub fn library_roots(&self, id: i64) -> Result<Vec<(String, String)>, StoreError> {
        self.read_lite(|conn| {
            Ok(conn
                .prepare_cached(ROOTS)?
                .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?)
        })
    }

    /// Records the identity of a library's root as this host sees it (at `library add`):
    /// its device id here and the id in its `.mediadex-library` marker.
    pub fn set_library_identity(
        &self,
        library_id: i64,
        identity: LibraryIdentity,
    ) -> Result<(), StoreError> {
        let host = self.host().to_string();
        self.write_lite(move |conn, _| {
            let found = conn
                .prepare_cached(SET_MARKER)?
                .query_row(params![library_id, identity.marker_id], |_| Ok(()))
                .optional()?;
            if found.is_none() {
                return Err(StoreError::NotFound(format!(
                    "no library with id {library_id}"
                )));
            }
            let dev = identity.root_dev.map(|d| d as i64);
            conn.prepare_cached(SET_DEV)?
                .execute(params![library_id, host, dev])?;
            Ok(())
        })
    }

    /// The recorded identity of a library's root on this host, for the circuit breaker.
    pub fn library_identity(&self, library_id: i64) -> Result<Option<LibraryIdentity>, StoreError> {
        let host = self.host().to_string();
        self.read_lite(|conn| {
            Ok(conn
                .prepare_cached(GET_IDENTITY)?
                .query_row(params![library_id, host], |r| {
                    Ok(LibraryIdentity {
                        root_dev: r.get::<_, Option<i64>>(0)?.map(|d| d as u64),
                        marker_id: r.get(1)?,
                    })
                })
                .optional()?)
        })
    }

    /// Every library, each with this host's root ('' where this host has none).
    pub fn libraries(&self) -> Result<Vec<Library>, StoreError> {
        let host = self.host().to_string();
        self.read_lite(|conn| all(conn, &host))
    }

    pub fn library(&self, id: i64) -> Result<Option<Library>, StoreError> {
        let host = self.host().to_string();
        self.read_lite(|conn| one(conn, &host, id))
    }
}
