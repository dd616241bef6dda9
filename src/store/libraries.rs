//! The `libraries` and `library_roots` tables: the libraries the user asked us to index,
//! each known by its identity (its marker id and, per host, its root's device), and where
//! each host sees it. A library's removal, which settles its assets, is `removal`'s.

use super::db::{Db, Pair, Row};
use super::{Store, StoreError};
use crate::model::{Library, LibraryIdentity};
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
/// PostgreSQL has no `UPDATE OR IGNORE`: it leaves out the rows that would clash with one
/// of this host's roots (the key (library_id, host) or the unique (host, root)).
const TAKE_UNHOSTED: Pair = Pair {
    sqlite: "UPDATE OR IGNORE library_roots SET host = ?1 WHERE host = ''",
    postgres: "
        UPDATE library_roots u SET host = ?1
         WHERE u.host = ''
           AND NOT EXISTS (SELECT 1 FROM library_roots o
                            WHERE o.host = ?1
                              AND (o.library_id = u.library_id OR o.root = u.root))",
};
const ANY_UNHOSTED: &str = "SELECT 1 FROM library_roots WHERE host = '' LIMIT 1";
/// Each engine names its tables in its own catalogue.
const HAS_ROOTS: Pair = Pair {
    sqlite: "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'library_roots'",
    postgres: "SELECT 1 WHERE to_regclass('library_roots') IS NOT NULL",
};

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

fn library_from_row(r: &Row<'_>) -> Result<Library, StoreError> {
    Ok(Library {
        id: r.get(0)?,
        name: r.get(1)?,
        root: r.get(2)?,
        created_at: r.get(3)?,
    })
}

fn all(db: &Db<'_>, host: &str) -> Result<Vec<Library>, StoreError> {
    db.all(LIST, args!(host), library_from_row)
}

fn one(db: &Db<'_>, host: &str, id: i64) -> Result<Option<Library>, StoreError> {
    db.optional(ONE, args!(host, id), library_from_row)
}

/// Library `id` as this host sees it, `NotFound` without one.
fn existing(db: &Db<'_>, host: &str, id: i64) -> Result<Library, StoreError> {
    one(db, host, id)?.ok_or_else(|| StoreError::NotFound(format!("library {id}")))
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

fn set_root(db: &Db<'_>, host: &str, id: i64, root: &str) -> Result<(), StoreError> {
    db.execute(SET_ROOT, args!(id, host, root))?;
    Ok(())
}

/// At open: the roots of an index from before hosts become this host's (a test's schema
/// may stop before the table). Read first: a write here, even one that changes nothing,
/// waits for the write lock, and a command that only reads (`runs` beside a scanning
/// service, or a frozen one) must not.
pub(super) fn take_unhosted(db: &Db<'_>, host: &str) -> Result<(), StoreError> {
    let answers = |sql| Ok::<_, StoreError>(db.optional(sql, args!(), |_| Ok(()))?.is_some());
    if answers(db.pick(&HAS_ROOTS))? && answers(ANY_UNHOSTED)? {
        db.execute(db.pick(&TAKE_UNHOSTED), args!(host))?;
    }
    Ok(())
}

/// The assets a library's files show, read before it goes (its files go with it by
/// cascade).
pub(super) fn shown_assets(db: &Db<'_>, id: i64) -> Result<Vec<i64>, StoreError> {
    db.all(LIBRARY_ASSETS, args!(id), |r| r.get(0))
}

/// Deletes the library row (its files, runs, keys, roots and journal rows go by cascade).
/// False when there was none.
pub(super) fn delete(db: &Db<'_>, id: i64) -> Result<bool, StoreError> {
    Ok(db.execute(DELETE, args!(id))? != 0)
}

fn add(
    db: &Db<'_>,
    host: &str,
    (name, root): (&str, &str),
    now: i64,
) -> Result<Library, StoreError> {
    if let Some(why) = all(db, host)?.iter().find_map(|l| clash(l, name, root)) {
        return Err(StoreError::Conflict(why));
    }
    let id: i64 = db.one(INSERT, args!(name, root, now), |r| r.get(0))?;
    set_root(db, host, id, root)?;
    existing(db, host, id)
}

fn attach(db: &Db<'_>, host: &str, id: i64, root: &str) -> Result<Library, StoreError> {
    let others = all(db, host)?.into_iter().filter(|l| l.id != id);
    if let Some(why) = others.into_iter().find_map(|l| clash(&l, "", root)) {
        return Err(StoreError::Conflict(why));
    }
    existing(db, host, id)?;
    set_root(db, host, id, root)?;
    existing(db, host, id)
}

fn by_marker(db: &Db<'_>, host: &str, marker: &str) -> Result<Option<Library>, StoreError> {
    db.optional(BY_MARKER, args!(host, marker), library_from_row)
}

fn roots(db: &Db<'_>, id: i64) -> Result<Vec<(String, String)>, StoreError> {
    db.all(ROOTS, args!(id), |r| Ok((r.get(0)?, r.get(1)?)))
}

fn set_identity(
    db: &Db<'_>,
    host: &str,
    library_id: i64,
    identity: LibraryIdentity,
) -> Result<(), StoreError> {
    let marker = identity.marker_id.as_deref();
    if db
        .optional(SET_MARKER, args!(library_id, marker), |_| Ok(()))?
        .is_none()
    {
        return Err(StoreError::NotFound(format!(
            "no library with id {library_id}"
        )));
    }
    let dev = identity.root_dev.map(|d| d as i64);
    db.execute(SET_DEV, args!(library_id, host, dev))?;
    Ok(())
}

fn identity(
    db: &Db<'_>,
    host: &str,
    library_id: i64,
) -> Result<Option<LibraryIdentity>, StoreError> {
    db.optional(GET_IDENTITY, args!(library_id, host), |r| {
        Ok(LibraryIdentity {
            root_dev: r.get::<Option<i64>>(0)?.map(|d| d as u64),
            marker_id: r.get(1)?,
        })
    })
}

impl Store {
    /// Adds a library that this host sees at `root`, which must already be canonical
    /// (absolute, no symlinks).
    pub fn add_library(&self, name: &str, root: &str) -> Result<Library, StoreError> {
        let (name, root, host) = (name.to_string(), root.to_string(), self.host().to_string());
        self.write(move |db, now| add(db, &host, (&name, &root), now))
    }

    /// Makes `root` (canonical) this host's root of library `id`: attaches a root on a host
    /// that had none, or re-links one whose folder moved. Refused when it overlaps another
    /// library this host sees.
    pub fn attach_root(&self, id: i64, root: &str) -> Result<Library, StoreError> {
        let (root, host) = (root.to_string(), self.host().to_string());
        self.write(move |db, _| attach(db, &host, id, &root))
    }

    /// The library whose marker id is `marker`, as this host sees it.
    pub fn library_by_marker(&self, marker: &str) -> Result<Option<Library>, StoreError> {
        let host = self.host().to_string();
        self.read(|db| by_marker(db, &host, marker))
    }

    /// Where each host sees library `id`: (host, root), by host.
    pub fn library_roots(&self, id: i64) -> Result<Vec<(String, String)>, StoreError> {
        self.read(|db| roots(db, id))
    }

    /// Records the identity of a library's root as this host sees it (at `library add`):
    /// its device id here and the id in its `.mediadex-library` marker.
    pub fn set_library_identity(
        &self,
        library_id: i64,
        identity: LibraryIdentity,
    ) -> Result<(), StoreError> {
        let host = self.host().to_string();
        self.write(move |db, _| set_identity(db, &host, library_id, identity.clone()))
    }

    /// The recorded identity of a library's root on this host, for the circuit breaker.
    pub fn library_identity(&self, library_id: i64) -> Result<Option<LibraryIdentity>, StoreError> {
        let host = self.host().to_string();
        self.read(|db| identity(db, &host, library_id))
    }

    /// Every library, each with this host's root ('' where this host has none).
    pub fn libraries(&self) -> Result<Vec<Library>, StoreError> {
        let host = self.host().to_string();
        self.read(|db| all(db, &host))
    }

    pub fn library(&self, id: i64) -> Result<Option<Library>, StoreError> {
        let host = self.host().to_string();
        self.read(|db| one(db, &host, id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::db::tests::on_both_schemas;

    fn a_library_is_added_seen_per_host_and_refused_where_it_clashes(
        db: &Db<'_>,
    ) -> Result<(), StoreError> {
        let a = add(db, "h1", ("a", "/p/a"), 7)?;
        assert_eq!(
            (a.name.as_str(), a.root.as_str(), a.created_at),
            ("a", "/p/a", 7)
        );
        for (name, root) in [("a", "/p/z"), ("b", "/p/a"), ("b", "/p/a/in"), ("b", "/p")] {
            let clash = add(db, "h1", (name, root), 8);
            assert!(
                matches!(clash, Err(StoreError::Conflict(_))),
                "{name} {root}"
            );
        }
        let b = add(db, "h1", ("b", "/p/b"), 8)?;
        assert_eq!(all(db, "h1")?, vec![a.clone(), b.clone()]);
        // Another host sees both, without a root until it attaches one.
        assert_eq!(one(db, "h2", b.id)?.map(|l| l.root), Some(String::new()));
        assert!(matches!(
            attach(db, "h1", b.id, "/p/a/x"),
            Err(StoreError::Conflict(_))
        ));
        assert_eq!(attach(db, "h2", b.id, "/q/b")?.root, "/q/b");
        assert_eq!(attach(db, "h1", b.id, "/p/b2")?.root, "/p/b2");
        assert!(matches!(
            attach(db, "h1", 999, "/z"),
            Err(StoreError::NotFound(_))
        ));
        assert_eq!(one(db, "h1", 999)?, None);
        assert_eq!(
            roots(db, b.id)?,
            vec![("h1".into(), "/p/b2".into()), ("h2".into(), "/q/b".into())]
        );
        Ok(())
    }

    fn an_identity_is_kept_per_host_and_a_missing_marker_keeps_the_old(
        db: &Db<'_>,
    ) -> Result<(), StoreError> {
        let a = add(db, "h1", ("a", "/p/a"), 7)?;
        attach(db, "h2", a.id, "/q/a")?;
        assert_eq!(identity(db, "h1", a.id)?, Some(LibraryIdentity::default()));
        let marked = LibraryIdentity {
            root_dev: Some(u64::MAX - 1),
            marker_id: Some("m-1".into()),
        };
        set_identity(db, "h1", a.id, marked.clone())?;
        assert_eq!(identity(db, "h1", a.id)?, Some(marked.clone()));
        let unread = LibraryIdentity {
            root_dev: Some(5),
            marker_id: None,
        };
        set_identity(db, "h2", a.id, unread)?;
        let h2 = identity(db, "h2", a.id)?.expect("library");
        assert_eq!(
            (h2.root_dev, h2.marker_id.as_deref()),
            (Some(5), Some("m-1"))
        );
        assert_eq!(identity(db, "h1", a.id)?, Some(marked));
        assert_eq!(
            by_marker(db, "h2", "m-1")?.map(|l| l.root),
            Some("/q/a".into())
        );
        assert_eq!(by_marker(db, "h2", "m-2")?, None);
        let gone = set_identity(db, "h1", 999, LibraryIdentity::default());
        assert!(matches!(gone, Err(StoreError::NotFound(_))));
        assert_eq!(identity(db, "h1", 999)?, None);
        Ok(())
    }

    /// A root left from before hosts becomes the opening host's, unless that host has a
    /// root of its own there (the other host's row stays unhosted).
    fn unhosted_roots_become_the_opening_hosts(db: &Db<'_>) -> Result<(), StoreError> {
        let a = add(db, "h1", ("a", "/p/a"), 7)?;
        let b = add(db, "h0", ("b", "/p/b"), 7)?;
        db.execute(
            "INSERT INTO library_roots (library_id, host, root) VALUES (?1, '', ?2)",
            args!(a.id, "/old/a"),
        )?;
        db.execute(
            "UPDATE library_roots SET host = '' WHERE library_id = ?1",
            args!(b.id),
        )?;
        take_unhosted(db, "h1")?;
        assert_eq!(
            roots(db, a.id)?,
            vec![("".into(), "/old/a".into()), ("h1".into(), "/p/a".into())]
        );
        assert_eq!(roots(db, b.id)?, vec![("h1".into(), "/p/b".into())]);
        take_unhosted(db, "h2")?;
        assert_eq!(roots(db, a.id)?[0], ("h1".into(), "/p/a".into()));
        assert_eq!(roots(db, a.id)?[1], ("h2".into(), "/old/a".into()));
        Ok(())
    }

    fn a_library_goes_with_its_roots_and_names_the_assets_it_showed(
        db: &Db<'_>,
    ) -> Result<(), StoreError> {
        let a = add(db, "h1", ("a", "/p/a"), 7)?;
        let asset: i64 = db.one(
            "INSERT INTO assets (checksum, size, created_at) VALUES (?1, 1, 1) RETURNING id",
            args!([7u8; 32]),
            |r| r.get(0),
        )?;
        for (path, asset) in [("x", Some(asset)), ("y", Some(asset)), ("z", None)] {
            db.execute(
                "INSERT INTO files (library_id, rel_path, rel_path_text, size, mtime_ns, dev,
                                    inode, asset_id, last_reason, first_seen_run, last_seen_run)
                 VALUES (?1, ?2, ?3, 1, 1, 1, 1, ?4, 'new', 1, 1)",
                args!(a.id, path.as_bytes(), path, asset),
            )?;
        }
        assert_eq!(shown_assets(db, a.id)?, vec![asset]);
        assert!(delete(db, a.id)?);
        assert!(!delete(db, a.id)?);
        assert_eq!(roots(db, a.id)?, vec![]);
        assert_eq!(shown_assets(db, a.id)?, Vec::<i64>::new());
        Ok(())
    }

    on_both_schemas!(
        a_library_is_added_seen_per_host_and_refused_where_it_clashes,
        an_identity_is_kept_per_host_and_a_missing_marker_keeps_the_old,
        unhosted_roots_become_the_opening_hosts,
        a_library_goes_with_its_roots_and_names_the_assets_it_showed,
    );
}
