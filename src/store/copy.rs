//! Copying a whole index into another, empty one, on either engine (`mediadex migrate
//! --to`, issue 30 item 5), and the digest both sides are checked by (a helper: it moves
//! every table's rows whatever their columns, as the migrations change every table).
//!
//! The copy is one read snapshot of the source and one transaction of the destination:
//! it lands whole or not at all, and the source is never written. Rows keep their ids;
//! the columns are the PostgreSQL side's (its catalogue names them; SQLite selects its
//! implicit `rowid` for `asset_tags` by that name), in `TABLES`' order, parents first.
//! Two things the destination's own rules would change are put right: a Live Photo's
//! `live_video_id` may name a later asset, so it is set after every asset is in; the
//! `people.faces` count its triggers add to while `face_people` is copied is counted
//! again. The index's identity travels with it (the library markers name it), and a
//! SQLite destination's header is stamped with it.
//!
//! Must not import: http, scan, walks, queue, ops, axum

use super::Store;
use super::StoreError;
use super::db::{Db, Value};

/// Every table of the index but `schema_version` (each engine keeps its version itself),
/// parents before the tables whose foreign keys name them.
pub(super) const TABLES: &[&str] = &[
    "libraries",
    "library_roots",
    "index_identity",
    "counters",
    "move_counter",
    "live_kinds",
    "walks",
    "jobs",
    "scan_runs",
    "scan_run_reasons",
    "scan_run_problems",
    "scan_requests",
    "assets",
    "files",
    "unshown_assets",
    "stacks",
    "asset_tags",
    "decode_timeouts",
    "trash_intents",
    "faces",
    "face_vectors",
    "people",
    "face_people",
    "face_rejections",
];

/// The tables that hold what a user indexed: a destination with a row in any is not empty.
const USER_TABLES: &[&str] = &[
    "libraries",
    "assets",
    "files",
    "jobs",
    "scan_runs",
    "people",
];

/// A column as the PostgreSQL catalogue names it, and whether it holds bytes.
struct Col {
    name: String,
    bytes: bool,
}

const COLUMNS: &str = "
    SELECT column_name, data_type = 'bytea' FROM information_schema.columns
     WHERE table_schema = current_schema() AND table_name = ?1
     ORDER BY ordinal_position";

const IDENTITY_COLUMNS: &str = "
    SELECT table_name, column_name FROM information_schema.columns
     WHERE table_schema = current_schema() AND is_identity = 'YES'";

const RECOUNT_PEOPLE: &str =
    "UPDATE people SET faces = (SELECT count(*) FROM face_people WHERE person_id = people.id)";

const IDENTITY_NONCE: &str = "SELECT nonce FROM index_identity WHERE id = 1";

/// One table's rows and their digest, as the copy found them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableDigest {
    pub table: &'static str,
    pub rows: u64,
    /// blake3 of the sorted hashes of the rows (order-free: engines sort text differently).
    pub digest: String,
}

/// The columns of `table`, from whichever of `a` and `b` is PostgreSQL.
fn pg_columns(a: &Db<'_>, b: &Db<'_>, table: &str) -> Result<Vec<Col>, StoreError> {
    if a.is_postgres() {
        columns(a, table)
    } else {
        columns(b, table)
    }
}

fn columns(pg: &Db<'_>, table: &str) -> Result<Vec<Col>, StoreError> {
    let cols = pg.all(COLUMNS, args!(table), |r| {
        Ok(Col {
            name: r.get(0)?,
            bytes: r.get(1)?,
        })
    })?;
    if cols.is_empty() {
        return Err(StoreError::NotFound(format!(
            "the index has no table {table}"
        )));
    }
    Ok(cols)
}

fn select(table: &str, cols: &[Col]) -> String {
    let names: Vec<&str> = cols.iter().map(|c| c.name.as_str()).collect();
    format!("SELECT {} FROM {table} ORDER BY 1", names.join(", "))
}

/// Whether `db` holds nothing a user indexed.
pub(super) fn is_empty(db: &Db<'_>) -> Result<bool, StoreError> {
    for table in USER_TABLES {
        let sql = format!("SELECT count(*) FROM {table}");
        if db.one(&sql, args!(), |r| r.get::<i64>(0))? > 0 {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Copies every table of `from` into `to` (which `is_empty`), inside their transactions.
/// `pg` says which of the two is the PostgreSQL side, whose catalogue names the columns.
pub(super) fn copy(from: &Db<'_>, to: &Db<'_>) -> Result<(), StoreError> {
    for table in TABLES.iter().rev() {
        to.execute(&format!("DELETE FROM {table}"), args!())?;
    }
    for table in TABLES {
        copy_table(from, to, table, &pg_columns(from, to, table)?)?;
    }
    to.execute(RECOUNT_PEOPLE, args!())?;
    if to.is_postgres() {
        restart_identities(to)?;
    } else if let Some(nonce) = to.optional(IDENTITY_NONCE, args!(), |r| r.get::<i64>(0))? {
        to.lite()?.pragma_update(None, "application_id", nonce)?;
    }
    Ok(())
}

fn copy_table(from: &Db<'_>, to: &Db<'_>, table: &str, cols: &[Col]) -> Result<(), StoreError> {
    let marks: Vec<String> = (1..=cols.len()).map(|i| format!("?{i}")).collect();
    let names: Vec<&str> = cols.iter().map(|c| c.name.as_str()).collect();
    let insert = format!(
        "INSERT INTO {table} ({}) VALUES ({})",
        names.join(", "),
        marks.join(", ")
    );
    let later = cols
        .iter()
        .position(|c| table == "assets" && c.name == "live_video_id");
    let mut links = Vec::new();
    from.each(&select(table, cols), args!(), |row| {
        let mut values = Vec::with_capacity(cols.len());
        for (at, col) in cols.iter().enumerate() {
            values.push(as_stored(row.get::<Value<'static>>(at)?, col, to));
        }
        if let Some(at) = later
            && values[at] != Value::Null
        {
            links.push((
                values[0].clone(),
                std::mem::replace(&mut values[at], Value::Null),
            ));
        }
        to.execute(&insert, &values).map(|_| ())
    })?;
    for (id, video) in links {
        to.execute(
            "UPDATE assets SET live_video_id = ?2 WHERE id = ?1",
            &[id, video],
        )?;
    }
    Ok(())
}

/// A value as the destination's column holds it: SQLite may keep text in a column
/// PostgreSQL types as bytes.
fn as_stored(value: Value<'static>, col: &Col, to: &Db<'_>) -> Value<'static> {
    match value {
        Value::Text(t) if col.bytes && to.is_postgres() => {
            Value::Blob(std::borrow::Cow::Owned(t.into_owned().into_bytes()))
        }
        other => other,
    }
}

/// Moves each identity column's sequence past the ids the copy inserted.
fn restart_identities(to: &Db<'_>) -> Result<(), StoreError> {
    let identities = to.all(IDENTITY_COLUMNS, args!(), |r| {
        Ok((r.get::<String>(0)?, r.get::<String>(1)?))
    })?;
    for (table, column) in identities {
        let sql = format!(
            "SELECT setval(pg_get_serial_sequence('{table}', '{column}'), \
             coalesce(max({column}), 0) + 1, false) FROM {table}"
        );
        to.one(&sql, args!(), |_| Ok(()))?;
    }
    Ok(())
}

/// Every table's row count and digest, the same on both engines for the same rows; the
/// columns are named by whichever of `db` and `other` is PostgreSQL.
pub(super) fn digest(db: &Db<'_>, other: &Db<'_>) -> Result<Vec<TableDigest>, StoreError> {
    let mut out = Vec::with_capacity(TABLES.len());
    for table in TABLES {
        let cols = pg_columns(db, other, table)?;
        let mut rows = Vec::new();
        db.each(&select(table, &cols), args!(), |row| {
            let mut hasher = blake3::Hasher::new();
            for at in 0..cols.len() {
                hash_value(&mut hasher, &row.get::<Value<'static>>(at)?);
            }
            rows.push(*hasher.finalize().as_bytes());
            Ok(())
        })?;
        rows.sort_unstable();
        let mut all = blake3::Hasher::new();
        rows.iter().for_each(|h| {
            all.update(h);
        });
        out.push(TableDigest {
            table,
            rows: rows.len() as u64,
            digest: all.finalize().to_hex().to_string(),
        });
    }
    Ok(out)
}

/// A value's bytes, tagged by kind; text and bytes are one kind (SQLite may keep either
/// in a column PostgreSQL types as bytes).
fn hash_value(hasher: &mut blake3::Hasher, value: &Value<'_>) {
    match value {
        Value::Null => hasher.update(b"n"),
        Value::Int(i) => hasher.update(b"i").update(&i.to_le_bytes()),
        Value::Real(r) => hasher.update(b"r").update(&r.to_bits().to_le_bytes()),
        Value::Text(t) => hasher
            .update(b"b")
            .update(&(t.len() as u64).to_le_bytes())
            .update(t.as_bytes()),
        Value::Blob(b) => hasher
            .update(b"b")
            .update(&(b.len() as u64).to_le_bytes())
            .update(b),
    };
}

/// What a copy left: each table's rows and digest on both sides.
#[derive(Clone, Debug)]
pub struct CopyCheck {
    pub source: Vec<TableDigest>,
    pub copy: Vec<TableDigest>,
}

impl CopyCheck {
    /// The tables whose rows or digest differ between the index and its copy.
    pub fn differing(&self) -> Vec<&'static str> {
        self.source
            .iter()
            .zip(&self.copy)
            .filter(|(a, b)| a != b)
            .map(|(a, _)| a.table)
            .collect()
    }
}

impl Store {
    /// Copies this index into `to`, an empty index on the other engine, in one
    /// transaction there, then reads both back: every table's count and digest. This
    /// store is only read.
    pub fn copy_into(&self, to: &Store) -> Result<CopyCheck, StoreError> {
        if self.is_shared() == to.is_shared() {
            return Err(StoreError::Conflict(
                "a copy goes from SQLite to PostgreSQL or back; to copy a SQLite index, \
                 copy its file (mediadex.db) while mediadex is stopped"
                    .into(),
            ));
        }
        let from = self.clone();
        to.write(move |target, _| {
            if !is_empty(target)? {
                return Err(StoreError::Conflict(
                    "the destination already holds an index (libraries, photos or work); \
                     copy into an empty database"
                        .into(),
                ));
            }
            from.read_snapshot(|source| copy(source, target))
        })?;
        to.read(|target| {
            self.read_snapshot(|source| {
                Ok(CopyCheck {
                    source: digest(source, target)?,
                    copy: digest(target, source)?,
                })
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table the copy does not know would be left behind: `TABLES` is every table of a
    /// fresh index but the engine's own.
    #[test]
    fn the_copy_knows_every_table_of_the_index() {
        crate::store::db::tests::on_sqlite_schema(|db| {
            let mut found: Vec<String> = db.all(
                "SELECT name FROM sqlite_schema WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite_%' ORDER BY name",
                args!(),
                |r| r.get(0),
            )?;
            found.retain(|t| t != "schema_version");
            let mut known: Vec<String> = TABLES.iter().map(|t| t.to_string()).collect();
            known.sort();
            assert_eq!(found, known);
            Ok(())
        });
    }
}
