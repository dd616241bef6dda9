//! The PostgreSQL baseline (`schema/postgres/`) against a fresh SQLite index made by
//! `Store::open`: tables, columns (name, nullability, kind), primary keys, unique
//! constraints, foreign keys with their ON DELETE, and index names (unique, partial), each
//! engine read from its own catalogue. Every difference fails the check, listed whole; the
//! only facts one engine has alone are `ENGINE_ONLY`'s, each with its reason. And the
//! triggers' effects, by the same statements on both engines.
//! Must not import: http, scan, walks, queue, ops

use super::tests::PgScratch;
use super::{Db, POSTGRES_BASELINE, POSTGRES_BASELINE_VERSION, Row, Statements};
use crate::clock::FakeClock;
use crate::store::StoreError;
use crate::store::{MIGRATIONS, Store, StoreOptions};
use std::collections::BTreeSet;

/// Facts only PostgreSQL's schema has, as the baseline's header says why.
const ENGINE_ONLY: &[&str] = &[
    // SQLite keeps the version in PRAGMA user_version.
    "table schema_version",
    "schema_version: column version integer not null",
    // SQLite's implicit rowid, which the sidecar family orders tags by.
    "asset_tags: column rowid integer not null",
];

#[test]
fn the_postgres_baseline_is_at_sqlites_latest_version() {
    let latest = MIGRATIONS.last().map(|m| m.version);
    assert_eq!(Some(POSTGRES_BASELINE_VERSION), latest);
    let stated = format!("VALUES ({POSTGRES_BASELINE_VERSION});");
    assert!(
        POSTGRES_BASELINE.contains(&stated),
        "schema_version must say {stated}"
    );
}

fn sqlite_facts() -> BTreeSet<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.db");
    drop(Store::open(&path, FakeClock::new(1_000), StoreOptions::default()).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    let strings = |sql: &str, arg: &str| -> Vec<Vec<Option<String>>> {
        let mut statement = conn.prepare(sql).unwrap();
        let width = statement.column_count();
        let rows = statement.query_map([arg], |r| {
            (0..width).map(|i| r.get::<_, Option<String>>(i)).collect()
        });
        rows.unwrap().collect::<Result<_, _>>().unwrap()
    };
    let tables = strings(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
         AND name <> ?1",
        "",
    );
    let mut facts = BTreeSet::new();
    for table in tables.into_iter().filter_map(|mut t| t.remove(0)) {
        facts.insert(format!("table {table}"));
        sqlite_columns(&table, &strings, &mut facts);
        sqlite_keys(&table, &strings, &mut facts);
    }
    facts
}

type Strings<'a> = dyn Fn(&str, &str) -> Vec<Vec<Option<String>>> + 'a;

fn text(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("?")
}

fn sqlite_columns(table: &str, strings: &Strings<'_>, facts: &mut BTreeSet<String>) {
    let columns = strings(
        "SELECT name, type, CAST(\"notnull\" AS TEXT), CAST(pk AS TEXT) \
         FROM pragma_table_info(?1)",
        table,
    );
    let mut pk: Vec<(String, String)> = vec![];
    for c in &columns {
        let declared = text(&c[1]).to_ascii_uppercase();
        let kind = match declared.as_str() {
            t if t.contains("INT") => "integer",
            "TEXT" => "text",
            "BLOB" => "blob",
            "REAL" => "real",
            other => other,
        };
        // A primary key column holds no NULL: a rowid alias cannot, and STRICT and WITHOUT
        // ROWID tables refuse one.
        let in_pk = text(&c[3]) != "0";
        let null = if text(&c[2]) == "1" || in_pk {
            "not null"
        } else {
            "null"
        };
        facts.insert(format!("{table}: column {} {kind} {null}", text(&c[0])));
        if in_pk {
            pk.push((text(&c[3]).to_string(), text(&c[0]).to_string()));
        }
    }
    pk.sort_by_key(|(at, _)| at.parse::<u32>().unwrap_or(0));
    let names: Vec<_> = pk.into_iter().map(|(_, name)| name).collect();
    facts.insert(format!("{table}: primary key ({})", names.join(", ")));
}

fn sqlite_keys(table: &str, strings: &Strings<'_>, facts: &mut BTreeSet<String>) {
    let indexes = strings(
        "SELECT name, origin, CAST(\"unique\" AS TEXT), CAST(partial AS TEXT) \
         FROM pragma_index_list(?1)",
        table,
    );
    for i in &indexes {
        let name = text(&i[0]);
        match text(&i[1]) {
            "u" => {
                let cols = strings(
                    "SELECT name FROM pragma_index_info(?1) ORDER BY seqno",
                    name,
                );
                let cols: Vec<_> = cols.iter().map(|c| text(&c[0]).to_string()).collect();
                facts.insert(format!("{table}: unique ({})", cols.join(", ")));
            }
            "c" => {
                facts.insert(index_fact(
                    table,
                    name,
                    text(&i[2]) == "1",
                    text(&i[3]) == "1",
                ));
            }
            _ => {}
        }
    }
    let keys = strings(
        "SELECT \"from\", \"table\", \"to\", on_delete FROM pragma_foreign_key_list(?1)",
        table,
    );
    for k in &keys {
        facts.insert(format!(
            "{table}: foreign key ({}) -> {} ({}) on delete {}",
            text(&k[0]),
            text(&k[1]),
            text(&k[2]),
            text(&k[3])
        ));
    }
}

fn index_fact(table: &str, name: &str, unique: bool, partial: bool) -> String {
    let unique = if unique { " unique" } else { "" };
    let partial = if partial { " partial" } else { "" };
    format!("{table}: index {name}{unique}{partial}")
}

const PG_TABLES: &str = "SELECT table_name::text FROM information_schema.tables \
    WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'";
const PG_COLUMNS: &str = "SELECT table_name::text, column_name::text, data_type::text, \
    is_nullable::text FROM information_schema.columns WHERE table_schema = current_schema()";
const PG_CONSTRAINTS: &str = "SELECT c.conrelid::regclass::text, c.contype::text, \
    string_agg(a.attname::text, ', ' ORDER BY k.n), c.confrelid::regclass::text, \
    string_agg(fa.attname::text, ', ' ORDER BY k.n), c.confdeltype::text \
    FROM pg_constraint c \
    CROSS JOIN LATERAL unnest(c.conkey, coalesce(c.confkey, c.conkey)) WITH ORDINALITY \
        AS k(attnum, fattnum, n) \
    JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum \
    LEFT JOIN pg_attribute fa ON fa.attrelid = c.confrelid AND fa.attnum = k.fattnum \
    WHERE c.connamespace = current_schema()::regnamespace AND c.contype IN ('p', 'u', 'f') \
    GROUP BY c.oid, c.conrelid, c.contype, c.confrelid, c.confdeltype";
const PG_INDEXES: &str = "SELECT t.relname::text, ic.relname::text, i.indisunique, \
    i.indpred IS NOT NULL FROM pg_index i \
    JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid \
    WHERE t.relnamespace = current_schema()::regnamespace \
    AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)";

fn postgres_facts(client: &mut postgres::Client) -> BTreeSet<String> {
    let mut facts = BTreeSet::new();
    for row in client.query(PG_TABLES, &[]).unwrap() {
        facts.insert(format!("table {}", row.get::<_, String>(0)));
    }
    for row in client.query(PG_COLUMNS, &[]).unwrap() {
        let kind = match row.get::<_, String>(2).as_str() {
            "bigint" => "integer".to_string(),
            "text" => "text".into(),
            "bytea" => "blob".into(),
            "double precision" => "real".into(),
            // PostgreSQL calls INT4 "integer": named apart from SQLite's kind.
            other => format!("postgres {other}"),
        };
        let null = if row.get::<_, String>(3) == "YES" {
            "null"
        } else {
            "not null"
        };
        let (table, column): (String, String) = (row.get(0), row.get(1));
        facts.insert(format!("{table}: column {column} {kind} {null}"));
    }
    for row in client.query(PG_CONSTRAINTS, &[]).unwrap() {
        let (table, kind, cols): (String, String, String) = (row.get(0), row.get(1), row.get(2));
        facts.insert(match kind.as_str() {
            "p" => format!("{table}: primary key ({cols})"),
            "u" => format!("{table}: unique ({cols})"),
            _ => {
                let action = match row.get::<_, String>(5).as_str() {
                    "c" => "CASCADE",
                    "n" => "SET NULL",
                    "d" => "SET DEFAULT",
                    "r" => "RESTRICT",
                    _ => "NO ACTION",
                };
                let (to, to_cols): (String, String) = (row.get(3), row.get(4));
                format!("{table}: foreign key ({cols}) -> {to} ({to_cols}) on delete {action}")
            }
        });
    }
    for row in client.query(PG_INDEXES, &[]).unwrap() {
        let (table, name): (String, String) = (row.get(0), row.get(1));
        facts.insert(index_fact(&table, &name, row.get(2), row.get(3)));
    }
    facts
}

#[test]
#[ignore = "needs PostgreSQL: MEDIADEX_TEST_PG_URL (.ci/run starts one)"]
fn on_postgres_the_baseline_makes_the_schema_sqlite_has() {
    let mut pg = PgScratch::new();
    pg.client.batch_execute(POSTGRES_BASELINE).unwrap();
    let version: i64 = pg
        .client
        .query_one("SELECT version FROM schema_version", &[])
        .unwrap()
        .get(0);
    assert_eq!(version, POSTGRES_BASELINE_VERSION);
    let lite = sqlite_facts();
    let mut server = postgres_facts(&mut pg.client);
    assert!(
        lite.len() > 100,
        "the SQLite side read too little: {lite:?}"
    );
    for fact in ENGINE_ONLY {
        assert!(server.remove(*fact), "no longer only PostgreSQL's: {fact}");
    }
    let only_sqlite: Vec<_> = lite.difference(&server).collect();
    let only_postgres: Vec<_> = server.difference(&lite).collect();
    assert!(
        only_sqlite.is_empty() && only_postgres.is_empty(),
        "the schemas differ.\nonly SQLite has:\n  {}\nonly PostgreSQL has:\n  {}",
        only_sqlite
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n  "),
        only_postgres
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

/// The triggers' effects, by the same statements on both engines' schemas.
fn triggers_keep_the_derived_columns(db: &Db<'_>) -> Result<(), StoreError> {
    let count = |sql: &str, id: i64| db.one(sql, args![id], |r| r.get::<i64>(0));
    let asset = "INSERT INTO assets (id, checksum, size, kind, created_at, pending_run, \
                 faces_scheme) VALUES (?1, ?2, 1, 'image', 0, 5, 1)";
    db.execute(asset, args![1, [1u8; 32]])?;
    db.execute(asset, args![2, [2u8; 32]])?;
    // live_kinds: counted when published, uncounted when trashed.
    db.execute(
        "UPDATE assets SET pending_run = NULL WHERE id = ?1",
        args![1],
    )?;
    let live = "SELECT coalesce(sum(n), 0) + 0 * ?1 FROM live_kinds WHERE kind = 'image'";
    assert_eq!(count(live, 0)?, 1);
    db.execute(
        "UPDATE assets SET trashed_at = 9, trash_reason = 'user' WHERE id = ?1",
        args![1],
    )?;
    assert_eq!(count(live, 0)?, 0);
    // Many rows of one statement count each (PostgreSQL counts once per statement), and a
    // statement that changes no asset's liveness changes no count.
    db.execute(asset, args![3, [3u8; 32]])?;
    db.execute(asset, args![4, [4u8; 32]])?;
    db.execute(
        "UPDATE assets SET pending_run = NULL WHERE id IN (3, 4)",
        args!(),
    )?;
    assert_eq!(count(live, 0)?, 2);
    db.execute("UPDATE assets SET size = 2 WHERE id IN (3, 4)", args!())?;
    assert_eq!(count(live, 0)?, 2);
    db.execute("DELETE FROM assets WHERE id IN (3, 4)", args!())?;
    assert_eq!(count(live, 0)?, 0);
    // has_faces: a face of the asset's detector version, kept when the version changes.
    let has_faces = "SELECT has_faces FROM assets WHERE id = ?1";
    let face = "INSERT INTO faces (id, asset_id, detector_version, x, y, w, h, score) \
                VALUES (?1, 2, ?2, 0, 0, 1, 1, 1)";
    db.execute(face, args![10, 1])?;
    assert_eq!(count(has_faces, 2)?, 1);
    db.execute("DELETE FROM faces WHERE id = ?1", args![10])?;
    assert_eq!(count(has_faces, 2)?, 0);
    db.execute(face, args![11, 2])?;
    assert_eq!(count(has_faces, 2)?, 0);
    db.execute("UPDATE assets SET faces_scheme = ?1 WHERE id = 2", args![2])?;
    assert_eq!(count(has_faces, 2)?, 1);
    people_triggers(db)?;
    files_triggers(db)
}

/// people.faces: counted, moved and uncounted with the face's person, a statement of one
/// face or of many. Asset 2 has faces 11 to 13 to give.
fn people_triggers(db: &Db<'_>) -> Result<(), StoreError> {
    let count = |sql: &str, id: i64| db.one(sql, args![id], |r| r.get::<i64>(0));
    let face = "INSERT INTO faces (id, asset_id, detector_version, x, y, w, h, score) \
                VALUES (?1, 2, ?2, 0, 0, 1, 1, 1)";
    let person = "INSERT INTO people (id, created_at, updated_at) VALUES (?1, 0, 0)";
    db.execute(person, args![1])?;
    db.execute(person, args![2])?;
    db.execute(
        "INSERT INTO face_people (face_id, person_id, asset_id) VALUES (11, ?1, 2)",
        args![1],
    )?;
    let faces = "SELECT faces FROM people WHERE id = ?1";
    assert_eq!((count(faces, 1)?, count(faces, 2)?), (1, 0));
    db.execute(
        "UPDATE face_people SET person_id = ?1 WHERE face_id = 11",
        args![2],
    )?;
    assert_eq!((count(faces, 1)?, count(faces, 2)?), (0, 1));
    db.execute("DELETE FROM face_people WHERE face_id = ?1", args![11])?;
    assert_eq!(count(faces, 2)?, 0);
    // Many faces in one statement count each (PostgreSQL counts once per statement).
    db.execute(face, args![12, 2])?;
    db.execute(face, args![13, 2])?;
    db.execute(
        "INSERT INTO face_people (face_id, person_id, asset_id) VALUES (12, 1, 2), (13, 1, 2)",
        args!(),
    )?;
    assert_eq!((count(faces, 1)?, count(faces, 2)?), (2, 0));
    db.execute(
        "UPDATE face_people SET person_id = 2 WHERE face_id IN (12, 13)",
        args!(),
    )?;
    assert_eq!((count(faces, 1)?, count(faces, 2)?), (0, 2));
    db.execute("DELETE FROM face_people WHERE face_id IN (12, 13)", args!())?;
    assert_eq!(count(faces, 2)?, 0);
    Ok(())
}

/// A missing file seen again is revived in the running scan and read again; a file moved
/// to another asset leaves its old asset unshown when it was the last.
fn files_triggers(db: &Db<'_>) -> Result<(), StoreError> {
    db.execute(
        "INSERT INTO libraries (id, name, root, created_at) VALUES (?1, 'l', '/l', 0)",
        args![1],
    )?;
    db.execute(
        "INSERT INTO scan_runs (id, library_id, trigger, state, run_at, lease_owner, \
         lease_expires_at, requested_at, accepted_at, updated_at) \
         VALUES (?1, 1, 'manual', 'running', 0, 'me', 99, 0, 0, 0)",
        args![7],
    )?;
    let file = "INSERT INTO files (id, library_id, rel_path, rel_path_text, size, mtime_ns, \
                dev, inode, asset_id, state, last_reason, first_seen_run, last_seen_run, \
                missing_since) VALUES (?1, 1, ?2, 'f', 1, 1, 1, 1, ?3, 'missing', 'new', 1, 1, 5)";
    db.execute(file, args![1, b"a".as_slice(), 2])?;
    db.execute(file, args![2, b"b".as_slice(), 2])?;
    let back = "UPDATE files SET state = 'present', missing_since = NULL, \
                last_seen_run = ?2 WHERE id = ?1";
    db.execute(back, args![1, 1])?;
    db.execute(back, args![2, 7])?;
    let seen = "SELECT revived_in_run, read_again FROM files WHERE id = ?1";
    let read = |r: &Row<'_>| Ok((r.get::<Option<i64>>(0)?, r.get::<Option<String>>(1)?));
    assert_eq!(
        db.one(seen, args![1], read)?,
        (Some(7), Some("back".into()))
    );
    assert_eq!(db.one(seen, args![2], read)?, (Some(7), None));
    let unshown = "SELECT count(*) FROM unshown_assets WHERE asset_id = ?1";
    db.execute("UPDATE files SET asset_id = 1 WHERE id = ?1", args![1])?;
    assert_eq!(db.one(unshown, args![2], |r| r.get::<i64>(0))?, 0);
    db.execute("UPDATE files SET asset_id = 1 WHERE id = ?1", args![2])?;
    assert_eq!(db.one(unshown, args![2], |r| r.get::<i64>(0))?, 1);
    Ok(())
}

#[test]
fn on_sqlite_triggers_keep_the_derived_columns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.db");
    drop(Store::open(&path, FakeClock::new(1_000), StoreOptions::default()).unwrap());
    let mut conn = rusqlite::Connection::open(&path).unwrap();
    let tx = conn.transaction().unwrap();
    triggers_keep_the_derived_columns(&Db::sqlite(&tx)).unwrap();
}

#[test]
#[ignore = "needs PostgreSQL: MEDIADEX_TEST_PG_URL (.ci/run starts one)"]
fn on_postgres_triggers_keep_the_derived_columns() {
    let mut pg = PgScratch::new();
    pg.client.batch_execute(POSTGRES_BASELINE).unwrap();
    let mut statements = Statements::default();
    let db = Db::postgres(pg.client.transaction().unwrap(), &mut statements);
    triggers_keep_the_derived_columns(&db).unwrap();
    db.commit().unwrap();
}
