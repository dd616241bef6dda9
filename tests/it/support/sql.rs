//! A test's own connection to the store's database, on either engine: for planting what an
//! older or defective binary left behind and reading rows back (no code of ours writes
//! through it). The statements are written in SQLite's dialect; on PostgreSQL `?N` becomes
//! `$N`, `CAST(x AS BLOB)` of text becomes `convert_to(x, 'UTF8')` and
//! `PRAGMA foreign_keys = ON` (which PostgreSQL always enforces) is left out.

use bytes::BytesMut;
use postgres::types::{IsNull, ToSql, Type, to_sql_checked};

/// A parameter or a value read back: what both engines' columns hold (integers are BIGINT
/// on PostgreSQL, paths BYTEA).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Text(String),
    Bytes(Vec<u8>),
    Null,
}

impl Value {
    /// The integer, None for NULL; panics on any other value.
    pub fn int(&self) -> Option<i64> {
        match self {
            Value::Int(v) => Some(*v),
            Value::Null => None,
            other => panic!("not an integer: {other:?}"),
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Text(v.to_string())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Text(v)
    }
}

impl From<&[u8]> for Value {
    fn from(v: &[u8]) -> Value {
        Value::Bytes(v.to_vec())
    }
}

impl From<Vec<u8>> for Value {
    fn from(v: Vec<u8>) -> Value {
        Value::Bytes(v)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Int(v) => ValueRef::Integer(*v),
            Value::Text(v) => ValueRef::Text(v.as_bytes()),
            Value::Bytes(v) => ValueRef::Blob(v),
            Value::Null => ValueRef::Null,
        }))
    }
}

impl ToSql for Value {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Value::Int(v) if *ty == Type::INT4 => i32::try_from(*v)?.to_sql(ty, out),
            Value::Int(v) if *ty == Type::INT2 => i16::try_from(*v)?.to_sql(ty, out),
            Value::Int(v) => v.to_sql(ty, out),
            Value::Text(v) => v.to_sql(ty, out),
            Value::Bytes(v) => v.to_sql(ty, out),
            Value::Null => Ok(IsNull::Yes),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// A connection of the test's own on the store's database: the SQLite file, or the
/// PostgreSQL schema of the `Env`.
pub enum Sql {
    Lite(rusqlite::Connection),
    Pg(postgres::Client),
}

impl Sql {
    /// Runs one statement; the rows it changed.
    pub fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, String> {
        match self {
            Sql::Lite(c) => c
                .execute(sql, rusqlite::params_from_iter(params))
                .map(|n| n as u64)
                .map_err(|e| e.to_string()),
            Sql::Pg(c) => c
                .execute(&postgres_dialect(sql), &pg_params(params))
                .map_err(|e| pg_error(&e)),
        }
    }

    /// Runs statements separated by `;`, without parameters.
    pub fn batch(&mut self, sql: &str) -> Result<(), String> {
        match self {
            Sql::Lite(c) => c.execute_batch(sql).map_err(|e| e.to_string()),
            Sql::Pg(c) => c
                .batch_execute(&postgres_dialect(sql))
                .map_err(|e| pg_error(&e)),
        }
    }

    /// Every row of a query, each as its values.
    pub fn rows(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, String> {
        match self {
            Sql::Lite(c) => {
                let mut stmt = c.prepare(sql).map_err(|e| e.to_string())?;
                let width = stmt.column_count();
                let rows = stmt
                    .query_map(rusqlite::params_from_iter(params), |r| {
                        (0..width).map(|i| r.get_ref(i).map(lite_value)).collect()
                    })
                    .map_err(|e| e.to_string())?;
                rows.collect::<Result<_, _>>().map_err(|e| e.to_string())
            }
            Sql::Pg(c) => {
                let rows = c
                    .query(&postgres_dialect(sql), &pg_params(params))
                    .map_err(|e| pg_error(&e))?;
                rows.iter()
                    .map(|r| (0..r.len()).map(|i| pg_value(r, i)).collect())
                    .collect()
            }
        }
    }

    /// The first value of the one row a query returns (a panic when it returns none).
    pub fn value(&mut self, sql: &str, params: &[Value]) -> Value {
        let rows = self
            .rows(sql, params)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        let row = rows
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("no row: {sql}"));
        row.into_iter().next().expect("a column")
    }

    /// `value` as an integer, None for NULL.
    pub fn int(&mut self, sql: &str, params: &[Value]) -> Option<i64> {
        self.value(sql, params).int()
    }

    /// The first column of every row, as integers (NULL is a panic).
    pub fn ints(&mut self, sql: &str, params: &[Value]) -> Vec<i64> {
        let rows = self
            .rows(sql, params)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        rows.into_iter()
            .map(|r| r[0].int().unwrap_or_else(|| panic!("NULL in {sql}")))
            .collect()
    }
}

fn lite_value(v: rusqlite::types::ValueRef<'_>) -> Value {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::Bytes(b.to_vec()),
        ValueRef::Null => Value::Null,
        ValueRef::Real(r) => panic!("a REAL ({r}) where the suite reads integers, text or bytes"),
    }
}

fn pg_value(row: &postgres::Row, i: usize) -> Result<Value, String> {
    let ty = row.columns()[i].type_().clone();
    let err = |e: postgres::Error| pg_error(&e);
    Ok(if ty == Type::INT8 {
        row.try_get::<_, Option<i64>>(i).map_err(err)?.into()
    } else if ty == Type::INT4 {
        (row.try_get::<_, Option<i32>>(i).map_err(err)?)
            .map(i64::from)
            .into()
    } else if ty == Type::INT2 {
        (row.try_get::<_, Option<i16>>(i).map_err(err)?)
            .map(i64::from)
            .into()
    } else if ty == Type::BOOL {
        (row.try_get::<_, Option<bool>>(i).map_err(err)?)
            .map(i64::from)
            .into()
    } else if ty == Type::BYTEA {
        row.try_get::<_, Option<Vec<u8>>>(i).map_err(err)?.into()
    } else if ty == Type::TEXT || ty == Type::VARCHAR || ty == Type::NAME {
        row.try_get::<_, Option<String>>(i).map_err(err)?.into()
    } else {
        return Err(format!(
            "column {i} is of type {ty}, which the suite does not read"
        ));
    })
}

fn pg_params(params: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

fn pg_error(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{e}: {}", db.message()),
        None => e.to_string(),
    }
}

/// A statement in SQLite's dialect, as PostgreSQL reads it (see the module's header).
pub fn postgres_dialect(sql: &str) -> String {
    let sql = sql
        .replace("PRAGMA foreign_keys = ON;", "")
        .replace("PRAGMA foreign_keys = ON", "");
    let mut out = String::with_capacity(sql.len());
    let mut rest = sql.as_str();
    while let Some(at) = rest.find("CAST(") {
        out.push_str(&rest[..at]);
        let inner = &rest[at + "CAST(".len()..];
        match inner.find(" AS BLOB)") {
            Some(end) if !inner[..end].contains('(') => {
                out.push_str(&format!("convert_to({}, 'UTF8')", &inner[..end]));
                rest = &inner[end + " AS BLOB)".len()..];
            }
            _ => {
                out.push_str("CAST(");
                rest = inner;
            }
        }
    }
    out.push_str(rest);
    // `?N` to `$N` (no statement of the suite has a `?` in a literal).
    let mut numbered = String::with_capacity(out.len());
    let mut chars = out.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            numbered.push('$');
        } else {
            numbered.push(c);
        }
    }
    numbered
}

/// Connects on a thread of its own: the synchronous client runs a runtime of its own, which
/// cannot start on a thread that drives a tokio runtime.
pub fn pg_connect(url: &str) -> postgres::Client {
    off_runtime(|| postgres::Client::connect(url, postgres::NoTls).expect("connect"))
}

/// Runs `f` on a scoped thread of its own (no tokio runtime's context there).
pub fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| s.spawn(f).join().expect("off-runtime thread"))
}

#[test]
fn sqlites_dialect_reads_as_postgresqls() {
    assert_eq!(
        postgres_dialect(
            "PRAGMA foreign_keys = ON; UPDATE files SET asset_id = ?2 \
             WHERE rel_path = CAST(?1 AS BLOB) OR rel_path = CAST('a.png' AS BLOB)"
        ),
        " UPDATE files SET asset_id = $2 \
         WHERE rel_path = convert_to($1, 'UTF8') OR rel_path = convert_to('a.png', 'UTF8')"
    );
}
