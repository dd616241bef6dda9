//! The same checks of `Db` on both engines: each check is a function of a `Db` over a fresh
//! table `t`, run on SQLite in `cargo test` (`on_sqlite::`) and on a real PostgreSQL by
//! the pg tier (`on_postgres::`, ignored here: `MEDIADEX_TEST_PG_URL` names the server).
//! Must not import: http, scan, walks, queue, ops

use super::super::error::{PgKind, pg_kind};
use super::*;
use postgres::error::SqlState;

const SQLITE_TABLE: &str = "CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER, flag INTEGER, \
    name TEXT, data BLOB, r REAL, small INTEGER, yes INTEGER)";
const POSTGRES_TABLE: &str = "CREATE TABLE t (id BIGINT PRIMARY KEY, n BIGINT, flag BIGINT, \
    name TEXT, data BYTEA, r DOUBLE PRECISION, small INTEGER, yes BOOLEAN)";

type Check = fn(&Db<'_>) -> Result<(), StoreError>;

fn on_sqlite(check: Check) {
    let mut conn = rusqlite::Connection::open_in_memory().unwrap();
    conn.execute_batch(SQLITE_TABLE).unwrap();
    let tx = conn.transaction().unwrap();
    check(&Db::sqlite(&tx)).unwrap();
}

/// A connection to the test server, in a schema of its own that is dropped with it, so
/// that tests running at once do not see each other's tables.
pub(crate) struct PgScratch {
    pub(crate) client: postgres::Client,
    pub(crate) schema: String,
    pub(crate) url: String,
}

impl PgScratch {
    pub(crate) fn new() -> PgScratch {
        let url = std::env::var("MEDIADEX_TEST_PG_URL")
            .expect("MEDIADEX_TEST_PG_URL must name a PostgreSQL database (scripts/pg-tier.sh)");
        let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        let schema = format!("t_{}", uuid::Uuid::new_v4().simple());
        client
            .batch_execute(&format!(
                "CREATE SCHEMA {schema}; SET search_path TO {schema}"
            ))
            .unwrap();
        PgScratch {
            client,
            schema,
            url,
        }
    }

    /// A second connection into the same schema.
    pub(crate) fn another(&self) -> postgres::Client {
        let mut client = postgres::Client::connect(&self.url, postgres::NoTls).unwrap();
        client
            .batch_execute(&format!("SET search_path TO {}", self.schema))
            .unwrap();
        client
    }
}

impl Drop for PgScratch {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.url, postgres::NoTls) {
            let _ = client.batch_execute(&format!("DROP SCHEMA {} CASCADE", self.schema));
        }
    }
}

fn on_postgres(check: Check) {
    let mut pg = PgScratch::new();
    pg.client.batch_execute(POSTGRES_TABLE).unwrap();
    let mut statements = Statements::default();
    let db = Db::postgres(pg.client.transaction().unwrap(), &mut statements);
    check(&db).unwrap();
    db.commit().unwrap();
}

macro_rules! on_both {
    ($($check:ident),* $(,)?) => {
        mod on_sqlite {
            $(#[test]
            fn $check() {
                super::on_sqlite(super::$check)
            })*
        }
        mod on_postgres {
            $(#[test]
            #[ignore = "needs PostgreSQL: MEDIADEX_TEST_PG_URL (.ci/run starts one)"]
            fn $check() {
                super::on_postgres(super::$check)
            })*
        }
    };
}

/// Runs `check` in a transaction over a fresh index's schema as `Store::open` makes it.
pub(crate) fn on_sqlite_schema(check: Check) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.db");
    let clock = crate::clock::FakeClock::new(1_000);
    drop(crate::store::Store::open(&path, clock, crate::store::StoreOptions::default()).unwrap());
    let mut conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("PRAGMA foreign_keys = ON").unwrap();
    let tx = conn.transaction().unwrap();
    check(&Db::sqlite(&tx)).unwrap();
}

/// Runs `check` in a transaction over the PostgreSQL baseline, in a scratch schema.
pub(crate) fn on_postgres_schema(check: Check) {
    let mut pg = PgScratch::new();
    pg.client.batch_execute(POSTGRES_BASELINE).unwrap();
    let mut statements = Statements::default();
    let db = Db::postgres(pg.client.transaction().unwrap(), &mut statements);
    check(&db).unwrap();
    db.commit().unwrap();
}

/// A family's checks on both engines' real schemas: each `check` (a `fn(&Db) ->
/// Result<(), StoreError>` in the calling module) runs on SQLite in `cargo test` and on
/// PostgreSQL in the pg tier (`on_postgres::`, ignored without a server).
macro_rules! on_both_schemas {
    ($($check:ident),* $(,)?) => {
        mod on_sqlite {
            $(#[test]
            fn $check() {
                $crate::store::db::tests::on_sqlite_schema(super::$check)
            })*
        }
        mod on_postgres {
            $(#[test]
            #[ignore = "needs PostgreSQL: MEDIADEX_TEST_PG_URL (.ci/run starts one)"]
            fn $check() {
                $crate::store::db::tests::on_postgres_schema(super::$check)
            })*
        }
    };
}
pub(crate) use on_both_schemas;

on_both!(
    execute_answers_the_rows_it_changed,
    every_kind_of_value_reads_back_as_it_was_bound,
    nulls_read_back_as_none,
    one_optional_and_all_answer_rows_and_their_absence,
    each_visits_every_row_in_order_and_may_run_statements_meanwhile,
    a_flag_reads_as_a_bool_and_as_an_integer,
    a_column_read_as_the_wrong_kind_is_an_error,
    a_statement_of_a_pair_is_this_engines,
    a_broken_unique_key_is_an_error_that_does_not_pass,
);

fn insert(db: &Db<'_>, id: i64, n: i64, name: &str) -> Result<usize, StoreError> {
    db.execute(
        "INSERT INTO t (id, n, name, flag) VALUES (?1, ?2, ?3, ?4)",
        args![id, n, name, id % 2 == 0],
    )
}

fn execute_answers_the_rows_it_changed(db: &Db<'_>) -> Result<(), StoreError> {
    for id in 1..=3 {
        assert_eq!(insert(db, id, id * 10, "x")?, 1);
    }
    let changed = db.execute("UPDATE t SET n = n + 1 WHERE n >= ?1", args![20])?;
    assert_eq!(changed, 2);
    assert_eq!(db.execute("DELETE FROM t WHERE id > ?1", args![99])?, 0);
    Ok(())
}

fn every_kind_of_value_reads_back_as_it_was_bound(db: &Db<'_>) -> Result<(), StoreError> {
    let hash = [7u8; 32];
    let sql = "INSERT INTO t (id, n, flag, name, data, r, small, yes) \
               VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
    db.execute(
        sql,
        args![1, i64::MIN, true, "é ?1 '", hash, 0.25, 7i32, true],
    )?;
    let null: Option<i64> = None;
    let bytes: &[u8] = &[0, 255];
    db.execute(
        sql,
        args![
            2,
            i64::MAX,
            false,
            String::from("b"),
            bytes,
            1e300,
            7u32,
            null
        ],
    )?;
    let read = "SELECT n, flag, name, data, r, small, yes FROM t WHERE id = ?1";
    db.one(read, args![1], |r| {
        assert_eq!(r.get::<i64>(0)?, i64::MIN);
        assert!(r.get::<bool>(1)?);
        assert_eq!(r.get::<String>(2)?, "é ?1 '");
        assert_eq!(r.get::<[u8; 32]>(3)?, hash);
        assert_eq!(r.get::<f64>(4)?, 0.25);
        assert_eq!(r.get::<i64>(5)?, 7);
        assert_eq!(r.get::<Option<bool>>(6)?, Some(true));
        Ok(())
    })?;
    db.one(read, args![2], |r| {
        assert_eq!(r.get::<i64>(0)?, i64::MAX);
        assert!(!r.get::<bool>(1)?);
        assert_eq!(r.get::<Vec<u8>>(3)?, vec![0, 255]);
        assert_eq!(r.get::<f64>(4)?, 1e300);
        assert_eq!(r.get::<Option<i64>>(6)?, None);
        Ok(())
    })?;
    Ok(())
}

fn nulls_read_back_as_none(db: &Db<'_>) -> Result<(), StoreError> {
    let null: Option<i64> = None;
    let nulls = args![
        3,
        null,
        none::<bool>(),
        none::<&str>(),
        none::<Vec<u8>>(),
        none::<f64>()
    ];
    db.execute(
        "INSERT INTO t (id, n, flag, name, data, r) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        nulls,
    )?;
    db.one(
        "SELECT n, flag, name, data, r FROM t WHERE id = ?1",
        args![3],
        |r| {
            assert_eq!(r.get::<Option<i64>>(0)?, None);
            assert_eq!(r.get::<Option<bool>>(1)?, None);
            assert_eq!(r.get::<Option<String>>(2)?, None);
            assert_eq!(r.get::<Option<[u8; 32]>>(3)?, None);
            assert_eq!(r.get::<Option<f64>>(4)?, None);
            Ok(())
        },
    )
}

fn none<T>() -> Option<T> {
    None
}

fn one_optional_and_all_answer_rows_and_their_absence(db: &Db<'_>) -> Result<(), StoreError> {
    for id in [3, 1, 2] {
        insert(db, id, id, &format!("n{id}"))?;
    }
    let name = |r: &Row<'_>| r.get::<String>(0);
    let by_id = "SELECT name FROM t WHERE id = ?1";
    assert_eq!(db.one(by_id, args![2], name)?, "n2");
    assert_eq!(db.optional(by_id, args![2], name)?, Some("n2".into()));
    assert_eq!(db.optional(by_id, args![9], name)?, None);
    let missing = db.one(by_id, args![9], name).unwrap_err();
    assert!(matches!(missing, StoreError::NotFound(_)), "{missing:?}");
    let names = db.all("SELECT name FROM t ORDER BY id", args![], name)?;
    assert_eq!(names, ["n1", "n2", "n3"]);
    let first = db.optional("SELECT name FROM t ORDER BY id DESC", args![], name)?;
    assert_eq!(first, Some("n3".into()));
    Ok(())
}

fn each_visits_every_row_in_order_and_may_run_statements_meanwhile(
    db: &Db<'_>,
) -> Result<(), StoreError> {
    // More rows than one PostgreSQL chunk, so that the visit crosses chunks.
    let rows = 2 * EACH_CHUNK as i64 + 3;
    for id in 1..=rows {
        insert(db, id, 0, "x")?;
    }
    let mut seen = Vec::new();
    db.each("SELECT id FROM t ORDER BY id", args![], |r| {
        let id: i64 = r.get(0)?;
        db.execute("UPDATE t SET n = ?2 WHERE id = ?1", args![id, id * 2])?;
        seen.push(id);
        Ok(())
    })?;
    assert_eq!(seen, (1..=rows).collect::<Vec<_>>());
    let sum = db.one("SELECT sum(n) FROM t", args![], |r| r.get::<i64>(0))?;
    assert_eq!(sum, rows * (rows + 1));
    // PostgreSQL's sum of BIGINTs and avg are NUMERIC: read as SQLite reads its answers.
    let avg = db.one("SELECT avg(n) FROM t", args![], |r| r.get::<f64>(0))?;
    assert_eq!(avg, (rows + 1) as f64);
    let stopped = db.each("SELECT id FROM t", args![], |_| {
        Err(StoreError::Conflict("stop".into()))
    });
    assert!(matches!(stopped, Err(StoreError::Conflict(_))));
    Ok(())
}

fn a_flag_reads_as_a_bool_and_as_an_integer(db: &Db<'_>) -> Result<(), StoreError> {
    db.execute(
        "INSERT INTO t (id, flag, yes) VALUES (1, 1, ?1)",
        args![true],
    )?;
    db.one("SELECT flag, yes FROM t", args![], |r| {
        assert_eq!((r.get::<bool>(0)?, r.get::<i64>(0)?), (true, 1));
        assert_eq!((r.get::<bool>(1)?, r.get::<i64>(1)?), (true, 1));
        Ok(())
    })?;
    let count = "SELECT count(*) FROM t WHERE yes = ?1";
    assert_eq!(db.one(count, args![true], |r| r.get::<i64>(0))?, 1);
    assert_eq!(db.one(count, args![0], |r| r.get::<i64>(0))?, 0);
    Ok(())
}

fn a_column_read_as_the_wrong_kind_is_an_error(db: &Db<'_>) -> Result<(), StoreError> {
    db.execute(
        "INSERT INTO t (id, name, data) VALUES (1, 'text', ?1)",
        args![&[1u8, 2, 3][..]],
    )?;
    let read = |sql: &str, check: fn(&Row<'_>) -> Result<(), StoreError>| {
        db.one(sql, args![], check).unwrap_err()
    };
    let short = read("SELECT data FROM t", |r| r.get::<[u8; 32]>(0).map(drop));
    let text_as_int = read("SELECT name FROM t", |r| r.get::<i64>(0).map(drop));
    let null_as_int = read("SELECT n FROM t", |r| r.get::<i64>(0).map(drop));
    let past_the_end = read("SELECT n FROM t", |r| r.get::<Option<i64>>(3).map(drop));
    for e in [short, text_as_int, null_as_int, past_the_end] {
        assert!(!e.is_transient(), "{e}");
        assert!(
            matches!(e, StoreError::Sqlite(_) | StoreError::Column { .. }),
            "{e:?}"
        );
    }
    Ok(())
}

const PICK: Pair = Pair {
    sqlite: "SELECT 'lite' WHERE ?1 = 1",
    postgres: "SELECT 'pg' WHERE ?1 = 1",
};

fn a_statement_of_a_pair_is_this_engines(db: &Db<'_>) -> Result<(), StoreError> {
    let said = db.one(db.pick(&PICK), args![1], |r| r.get::<String>(0))?;
    assert_eq!(said, if db.is_postgres() { "pg" } else { "lite" });
    Ok(())
}

fn a_broken_unique_key_is_an_error_that_does_not_pass(db: &Db<'_>) -> Result<(), StoreError> {
    insert(db, 1, 1, "a")?;
    // Last: a failed statement aborts a PostgreSQL transaction (its commit rolls back).
    let e = insert(db, 1, 1, "b").unwrap_err();
    assert!(!e.is_transient(), "{e:?}");
    assert!(
        matches!(e, StoreError::Sqlite(_) | StoreError::Postgres(_)),
        "{e:?}"
    );
    Ok(())
}

#[test]
fn postgres_errors_are_sorted_by_their_sqlstate() {
    let kind = |code: &SqlState| pg_kind(Some(code), false);
    assert_eq!(kind(&SqlState::LOCK_NOT_AVAILABLE), PgKind::Locked);
    assert_eq!(kind(&SqlState::DISK_FULL), PgKind::DiskFull);
    assert_eq!(
        kind(&SqlState::T_R_SERIALIZATION_FAILURE),
        PgKind::Contended
    );
    assert_eq!(kind(&SqlState::T_R_DEADLOCK_DETECTED), PgKind::Contended);
    assert_eq!(kind(&SqlState::CONNECTION_FAILURE), PgKind::Away);
    assert_eq!(kind(&SqlState::ADMIN_SHUTDOWN), PgKind::Away);
    assert_eq!(kind(&SqlState::CANNOT_CONNECT_NOW), PgKind::Away);
    assert_eq!(kind(&SqlState::UNIQUE_VIOLATION), PgKind::Other);
    assert_eq!(pg_kind(None, true), PgKind::Away);
    assert_eq!(pg_kind(None, false), PgKind::Other);
}

/// What only PostgreSQL does: bind by the type it inferred, cache statements per
/// connection, and give up a transaction for another or lose its connection.
mod postgres_only {
    use super::*;

    fn scratch() -> (PgScratch, Statements) {
        let mut pg = PgScratch::new();
        pg.client.batch_execute(POSTGRES_TABLE).unwrap();
        pg.client
            .batch_execute("INSERT INTO t (id, n) VALUES (1, 0)")
            .unwrap();
        (pg, Statements::default())
    }

    #[test]
    #[ignore = "needs PostgreSQL: MEDIADEX_TEST_PG_URL (.ci/run starts one)"]
    fn on_postgres_a_parameter_is_bound_by_the_type_the_server_inferred() {
        let (mut pg, mut statements) = scratch();
        let db = Db::postgres(pg.client.transaction().unwrap(), &mut statements);
        let set_small = "UPDATE t SET small = ?1 WHERE id = 1";
        assert_eq!(
            db.execute(set_small, args![i64::from(i32::MAX)]).unwrap(),
            1
        );
        let too_big = db.execute(set_small, args![i64::from(i32::MAX) + 1]);
        let e = too_big.unwrap_err();
        assert!(matches!(e, StoreError::Postgres(_)), "{e:?}");
        assert!(e.to_string().contains("out of range for int4"), "{e}");
        db.commit().unwrap();
        let db = Db::postgres(pg.client.transaction().unwrap(), &mut statements);
        let e = db
            .execute("UPDATE t SET n = ?1", args!["seven"])
            .unwrap_err();
        assert!(e.to_string().contains("cannot be bound as int8"), "{e}");
        db.commit().unwrap();
        let db = Db::postgres(pg.client.transaction().unwrap(), &mut statements);
        let e = db.execute("UPDATE t SET yes = ?1", args![2]).unwrap_err();
        assert!(e.to_string().contains("cannot be bound as bool"), "{e}");
        db.commit().unwrap();
    }

    #[test]
    #[ignore = "needs PostgreSQL: MEDIADEX_TEST_PG_URL (.ci/run starts one)"]
    fn on_postgres_a_statement_is_prepared_once_per_connection() {
        let (mut pg, mut statements) = scratch();
        let read = "SELECT n FROM t WHERE id = ?1";
        for _ in 0..3 {
            let db = Db::postgres(pg.client.transaction().unwrap(), &mut statements);
            assert_eq!(db.one(read, args![1], |r| r.get::<i64>(0)).unwrap(), 0);
            db.commit().unwrap();
        }
        assert_eq!(statements.len(), 1);
        let prepared: i64 = pg
            .client
            .query_one(
                "SELECT count(*) FROM pg_prepared_statements \
                 WHERE statement = 'SELECT n FROM t WHERE id = $1'",
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(prepared, 1);
    }

    #[test]
    #[ignore = "needs PostgreSQL: MEDIADEX_TEST_PG_URL (.ci/run starts one)"]
    fn on_postgres_a_serialization_failure_passes() {
        let (mut pg, mut statements) = scratch();
        let mut other = pg.another();
        let mut tx = pg.client.transaction().unwrap();
        tx.batch_execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            .unwrap();
        let db = Db::postgres(tx, &mut statements);
        db.one("SELECT n FROM t WHERE id = 1", args![], |r| r.get::<i64>(0))
            .unwrap();
        // Another connection changes the row after this transaction's snapshot.
        other
            .batch_execute("UPDATE t SET n = 5 WHERE id = 1")
            .unwrap();
        let e = db
            .execute("UPDATE t SET n = n + 1 WHERE id = ?1", args![1])
            .unwrap_err();
        assert!(matches!(e, StoreError::Contended(_)), "{e:?}");
        assert!(e.is_transient());
    }

    #[test]
    #[ignore = "needs PostgreSQL: MEDIADEX_TEST_PG_URL (.ci/run starts one)"]
    fn on_postgres_a_lock_timeout_is_locked() {
        let (mut pg, mut statements) = scratch();
        let mut other = pg.another();
        let mut holder = other.transaction().unwrap();
        holder
            .batch_execute("UPDATE t SET n = 5 WHERE id = 1")
            .unwrap();
        let mut tx = pg.client.transaction().unwrap();
        tx.batch_execute("SET LOCAL lock_timeout = '50ms'").unwrap();
        let db = Db::postgres(tx, &mut statements);
        let e = db
            .execute("UPDATE t SET n = ?1 WHERE id = 1", args![6])
            .unwrap_err();
        assert!(matches!(e, StoreError::Locked), "{e:?}");
        assert!(e.is_transient());
        holder.rollback().unwrap();
    }

    #[test]
    #[ignore = "needs PostgreSQL: MEDIADEX_TEST_PG_URL (.ci/run starts one)"]
    fn on_postgres_a_lost_connection_is_away_and_passes() {
        let (mut pg, mut statements) = scratch();
        let pid: i32 = pg
            .client
            .query_one("SELECT pg_backend_pid()", &[])
            .unwrap()
            .get(0);
        let mut other = pg.another();
        let db = Db::postgres(pg.client.transaction().unwrap(), &mut statements);
        other
            .execute("SELECT pg_terminate_backend($1)", &[&pid])
            .unwrap();
        let e = db
            .execute("UPDATE t SET n = ?1 WHERE id = 1", args![6])
            .unwrap_err();
        assert!(matches!(e, StoreError::Away(_)), "{e:?}");
        assert!(e.is_transient());
    }
}
