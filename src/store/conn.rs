//! Opening connections: the writer's own connection and the read pool, each with the
//! per-connection pragmas of DESIGN.md section 3.

use super::{ReadPool, StoreError, StoreOptions};
use rusqlite::Connection;
use std::path::Path;

const READERS: u32 = 4;

fn pragmas(options: &StoreOptions) -> String {
    format!(
        "PRAGMA busy_timeout = {};\n\
         PRAGMA foreign_keys = ON;\n\
         PRAGMA temp_store = MEMORY;\n\
         PRAGMA cache_size = -65536;\n\
         PRAGMA synchronous = {};",
        options.busy_timeout.as_millis(),
        if options.durable { "FULL" } else { "OFF" },
    )
}

pub(super) fn open_writer(path: &Path, options: &StoreOptions) -> Result<Connection, StoreError> {
    let open_err = |source| StoreError::Open {
        path: path.display().to_string(),
        source,
    };
    let conn = Connection::open(path).map_err(open_err)?;
    // journal_mode returns a row, so it goes through query_row, not execute.
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .map_err(open_err)?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(%mode, "the database could not switch to WAL mode");
    }
    conn.execute_batch(&pragmas(options)).map_err(open_err)?;
    Ok(conn)
}

pub(super) fn read_pool(path: &Path, options: &StoreOptions) -> Result<ReadPool, StoreError> {
    // query_only makes "one writer per process" a property of the connections, not a habit.
    let init = format!("{}\nPRAGMA query_only = ON;", pragmas(options));
    let manager =
        r2d2_sqlite::SqliteConnectionManager::file(path).with_init(move |c| c.execute_batch(&init));
    Ok(r2d2::Pool::builder()
        .max_size(READERS)
        .min_idle(Some(0))
        .build(manager)?)
}
