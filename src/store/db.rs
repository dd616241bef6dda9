//! One way for a family to run a statement on either engine, inside the transaction it is
//! given (a helper): `Db` over a SQLite connection in a transaction or over a PostgreSQL
//! transaction, with `execute`, `one`, `optional`, `all` and `each`; parameters as `Value`
//! (`args!`), columns read through `Row::get`. It owns no table and no statement of a
//! family, and never opens or commits a SQLite transaction (the writer and the read pool
//! do); it commits a PostgreSQL one only when its owner says so (`Db::commit`).
//!
//! How a family writes a statement:
//! - Once, in SQLite's dialect with numbered placeholders `?N`; on PostgreSQL the text is
//!   rewritten to `$N` (`placeholders`) and prepared once per connection (`Statements`).
//!   Every number from 1 to the largest must be used (PostgreSQL infers each placeholder's
//!   type from where it stands, and refuses one it never sees).
//! - A placeholder whose type only its value tells (`SELECT ?1`, `coalesce(?1, ?2)` with no
//!   column beside it) is read by PostgreSQL as text: write `CAST(?1 AS INTEGER)`, which
//!   both engines read the same.
//! - A statement that must differ per engine (an upsert's conflict target that SQLite
//!   spells differently, `INSERT OR IGNORE`, a `RETURNING` SQLite lacks, a function only
//!   one engine has) is a `Pair` of two texts, each written with `?N`; the family runs
//!   `db.pick(&PAIR)`. Everything else is shared text.
//!
//! Must not import: http, scan, walks, queue, ops, axum

mod placeholders;
mod value;

use super::StoreError;
use std::cell::RefCell;
use std::collections::HashMap;

pub(crate) use placeholders::to_dollars;
pub(crate) use value::{Column, Value};

/// The PostgreSQL schema at `POSTGRES_BASELINE_VERSION`, what SQLite's migrations up to
/// that version leave; a database made from it takes the later migrations' PostgreSQL
/// halves.
pub(crate) const POSTGRES_BASELINE: &str = include_str!("../../schema/postgres/0029_baseline.sql");
pub(crate) const POSTGRES_BASELINE_VERSION: i64 = 29;

/// A statement's parameters, each converted by `Value::from`.
macro_rules! args {
    () => {
        &[] as &[$crate::store::db::Value<'_>]
    };
    ($($p:expr),+ $(,)?) => {
        &[$($crate::store::db::Value::from($p)),+] as &[$crate::store::db::Value<'_>]
    };
}

/// A statement written once per engine.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pair {
    pub(crate) sqlite: &'static str,
    pub(crate) postgres: &'static str,
}

/// How many prepared statements one PostgreSQL connection keeps; a family that builds its
/// text (an `IN` list of a batch's length) must not grow the server's memory without end.
const CACHED_STATEMENTS: usize = 512;

/// How many rows `each` fetches from PostgreSQL at a time: a walk's cursor may cover a
/// whole library, and only one chunk is in memory.
const EACH_CHUNK: i32 = 256;

/// The statements prepared on one PostgreSQL connection, by their SQLite text. Whoever
/// owns the connection owns this beside it: a statement belongs to its connection.
#[derive(Default)]
pub(crate) struct Statements {
    by_sql: HashMap<String, postgres::Statement>,
}

impl Statements {
    fn prepare(
        &mut self,
        tx: &mut postgres::Transaction<'_>,
        sql: &str,
    ) -> Result<postgres::Statement, StoreError> {
        if let Some(statement) = self.by_sql.get(sql) {
            return Ok(statement.clone());
        }
        let statement = tx.prepare(&to_dollars(sql))?;
        if self.by_sql.len() >= CACHED_STATEMENTS {
            self.by_sql.clear();
        }
        self.by_sql.insert(sql.to_string(), statement.clone());
        Ok(statement)
    }

    /// How many statements are prepared (for tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_sql.len()
    }
}

struct PgTx<'a> {
    tx: postgres::Transaction<'a>,
    statements: &'a mut Statements,
}

enum Engine<'a> {
    Sqlite(&'a rusqlite::Connection),
    Postgres(RefCell<PgTx<'a>>),
}

/// A transaction of either engine, as the families see it.
pub(crate) struct Db<'a> {
    engine: Engine<'a>,
}

/// One row of a result, on either engine.
pub(crate) enum Row<'r> {
    Sqlite(&'r rusqlite::Row<'r>),
    Postgres(&'r postgres::Row),
}

impl Row<'_> {
    /// The column at `idx` (from 0) as `T`; a NULL, a missing column or a value of
    /// another kind is an error.
    pub(crate) fn get<T: Column>(&self, idx: usize) -> Result<T, StoreError> {
        match self {
            Row::Sqlite(row) => T::lite(row, idx),
            Row::Postgres(row) => T::pg(row, idx),
        }
    }
}

type Params<'p> = &'p [Value<'p>];

impl<'a> Db<'a> {
    /// Over a SQLite connection inside a transaction its owner opened and will end.
    pub(crate) fn sqlite(conn: &'a rusqlite::Connection) -> Self {
        Db {
            engine: Engine::Sqlite(conn),
        }
    }

    /// Over a PostgreSQL transaction, preparing through its connection's `statements`.
    pub(crate) fn postgres(tx: postgres::Transaction<'a>, statements: &'a mut Statements) -> Self {
        Db {
            engine: Engine::Postgres(RefCell::new(PgTx { tx, statements })),
        }
    }

    /// Commits a PostgreSQL transaction; a SQLite one is its owner's to commit.
    pub(crate) fn commit(self) -> Result<(), StoreError> {
        match self.engine {
            Engine::Sqlite(_) => Ok(()),
            Engine::Postgres(pg) => Ok(pg.into_inner().tx.commit()?),
        }
    }

    /// This engine's text of a statement written as a pair.
    pub(crate) fn pick(&self, pair: &Pair) -> &'static str {
        match self.engine {
            Engine::Sqlite(_) => pair.sqlite,
            Engine::Postgres(_) => pair.postgres,
        }
    }

    /// The SQLite connection itself, for what only SQLite has: its query plans, its
    /// pragmas, its test seams. On PostgreSQL it is `SqliteOnly`.
    pub(crate) fn lite(&self) -> Result<&'a rusqlite::Connection, StoreError> {
        match self.engine {
            Engine::Sqlite(conn) => Ok(conn),
            Engine::Postgres(_) => Err(StoreError::SqliteOnly("this diagnostic")),
        }
    }

    pub(crate) fn is_postgres(&self) -> bool {
        matches!(self.engine, Engine::Postgres(_))
    }

    /// Runs a statement that returns no rows; answers how many rows it changed.
    pub(crate) fn execute(&self, sql: &str, params: Params<'_>) -> Result<usize, StoreError> {
        match &self.engine {
            Engine::Sqlite(conn) => {
                let mut statement = conn.prepare_cached(sql)?;
                Ok(statement.execute(rusqlite::params_from_iter(params))?)
            }
            Engine::Postgres(pg) => {
                let pg = &mut *pg.borrow_mut();
                let statement = pg.statements.prepare(&mut pg.tx, sql)?;
                let changed = pg.tx.execute(&statement, &pg_params(params))?;
                Ok(usize::try_from(changed).unwrap_or(usize::MAX))
            }
        }
    }

    /// Runs an INSERT and answers the id it gave its row: on SQLite the pair's INSERT as it
    /// is, then the connection's last rowid (a RETURNING costs SQLite an ephemeral table on
    /// every execution: issue 29's hot path); on PostgreSQL the pair's text, which ends in
    /// `RETURNING id`.
    pub(crate) fn insert_id(&self, pair: &Pair, params: Params<'_>) -> Result<i64, StoreError> {
        match &self.engine {
            Engine::Sqlite(conn) => {
                self.execute(pair.sqlite, params)?;
                Ok(conn.last_insert_rowid())
            }
            Engine::Postgres(_) => self.one(pair.postgres, params, |r| r.get(0)),
        }
    }

    /// The first row mapped by `f`; no row is `StoreError::NotFound`.
    pub(crate) fn one<T>(
        &self,
        sql: &str,
        params: Params<'_>,
        f: impl FnOnce(&Row<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.optional(sql, params, f)?
            .ok_or_else(|| StoreError::NotFound(format!("no row answers {}", head(sql))))
    }

    /// The first row mapped by `f`, if there is one.
    pub(crate) fn optional<T>(
        &self,
        sql: &str,
        params: Params<'_>,
        f: impl FnOnce(&Row<'_>) -> Result<T, StoreError>,
    ) -> Result<Option<T>, StoreError> {
        match &self.engine {
            Engine::Sqlite(conn) => {
                let mut statement = conn.prepare_cached(sql)?;
                let mut rows = statement.query(rusqlite::params_from_iter(params))?;
                match rows.next()? {
                    Some(row) => Ok(Some(f(&Row::Sqlite(row))?)),
                    None => Ok(None),
                }
            }
            Engine::Postgres(_) => {
                let rows = self.pg_rows(sql, params, 1)?;
                rows.first().map(|row| f(&Row::Postgres(row))).transpose()
            }
        }
    }

    /// Every row, each mapped by `f`. On PostgreSQL in one round trip (every row is kept
    /// anyway): a page of 100 photos reads each one's paths, tags, clip and stack, and a
    /// cursor's bind and fetch were two round trips each, 15 ms of a page's 16.
    pub(crate) fn all<T>(
        &self,
        sql: &str,
        params: Params<'_>,
        mut f: impl FnMut(&Row<'_>) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        if let Engine::Postgres(pg) = &self.engine {
            let rows = {
                let pg = &mut *pg.borrow_mut();
                let statement = pg.statements.prepare(&mut pg.tx, sql)?;
                pg.tx.query(&statement, &pg_params(params))?
            };
            return rows.iter().map(|row| f(&Row::Postgres(row))).collect();
        }
        let mut out = Vec::new();
        self.each(sql, params, |row| {
            out.push(f(row)?);
            Ok(())
        })?;
        Ok(out)
    }

    /// Visits the rows in order, holding only a chunk of them at a time. `f` may run other
    /// statements on this `Db`; an error from it stops the visit and is returned.
    pub(crate) fn each(
        &self,
        sql: &str,
        params: Params<'_>,
        mut f: impl FnMut(&Row<'_>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.each_while(sql, params, |row| f(row).map(|()| true))
    }

    /// Visits the rows in order, as `each`, until `f` answers false: the rows after it are
    /// never read (a listing that jumps over a subtree must not read the subtree).
    pub(crate) fn each_while(
        &self,
        sql: &str,
        params: Params<'_>,
        mut f: impl FnMut(&Row<'_>) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        match &self.engine {
            Engine::Sqlite(conn) => {
                let mut statement = conn.prepare_cached(sql)?;
                let mut rows = statement.query(rusqlite::params_from_iter(params))?;
                while let Some(row) = rows.next()? {
                    if !f(&Row::Sqlite(row))? {
                        break;
                    }
                }
                Ok(())
            }
            Engine::Postgres(pg) => {
                let portal = {
                    let pg = &mut *pg.borrow_mut();
                    let statement = pg.statements.prepare(&mut pg.tx, sql)?;
                    pg.tx.bind(&statement, &pg_params(params))?
                };
                loop {
                    let chunk = pg.borrow_mut().tx.query_portal(&portal, EACH_CHUNK)?;
                    for row in &chunk {
                        if !f(&Row::Postgres(row))? {
                            return Ok(());
                        }
                    }
                    if chunk.len() < EACH_CHUNK as usize {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Up to `limit` rows of a PostgreSQL statement.
    fn pg_rows(
        &self,
        sql: &str,
        params: Params<'_>,
        limit: i32,
    ) -> Result<Vec<postgres::Row>, StoreError> {
        let Engine::Postgres(pg) = &self.engine else {
            return Ok(Vec::new());
        };
        let pg = &mut *pg.borrow_mut();
        let statement = pg.statements.prepare(&mut pg.tx, sql)?;
        let portal = pg.tx.bind(&statement, &pg_params(params))?;
        Ok(pg.tx.query_portal(&portal, limit)?)
    }
}

fn pg_params<'p>(params: Params<'p>) -> Vec<&'p (dyn postgres::types::ToSql + Sync)> {
    params
        .iter()
        .map(|p| p as &(dyn postgres::types::ToSql + Sync))
        .collect()
}

/// The start of a statement, to name it in an error.
fn head(sql: &str) -> String {
    let one_line = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(60) {
        Some((at, _)) => format!("{}...", &one_line[..at]),
        None => one_line,
    }
}

// After `args!`, which its checks use.
#[cfg(test)]
mod schema_tests;
#[cfg(test)]
pub(crate) mod tests;
