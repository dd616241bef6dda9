//! Opening connections: the writer's own connection and the read pool, each with the
//! per-connection pragmas of DESIGN.md section 3.

use super::{ReadPool, StoreError, StoreOptions};
use rusqlite::Connection;
use std::path::Path;

const READERS: u32 = 4;
/// How much WAL the writer lets grow before it checkpoints.
const WAL_CHECKPOINT_BYTES: i64 = 32 << 20;

/// Page cache of the writer and of each reader, in KiB. SQLite fills a connection's cache up
/// to its cap and keeps it, so the caps are the part of a process's memory that grows with
/// the index (issue 16: peak RSS <= 64 MiB, flat from 100,000 to 1,000,000 files). At 64 MiB
/// each, a first index of 100,000 small files peaked at 93 MiB (heaptrack: 61 of the 61.5
/// MiB of heap at the peak were SQLite's page caches) and one of 1,000,000 at 119 MiB; with
/// 16 MiB for the writer and 8 MiB a reader it peaked at 47 MiB, its CPU time unchanged
/// (release, /usr/bin/time -v). A page missing from a cache is a `pread` from the OS's page
/// cache; at 1,000,000 files the writer's random index inserts miss more often (see
/// docs/performance.md for what that costs the first index there).
const WRITER_CACHE_KIB: i64 = 16 << 10;
const READER_CACHE_KIB: i64 = 8 << 10;

/// `temp_store`: MEMORY for the readers (sorts and temp b-trees stay off the disk). The
/// writer keeps the default (FILE): every op runs in its own savepoint, so each statement
/// inside it keeps a sub-journal of all pages the op changed so far, and SQLite truncates
/// an in-memory sub-journal by walking it from its start on every statement release — a
/// 1024-file batch then costs time quadratic in its size (measured: 59% of a first index's
/// CPU). With FILE the sub-journal stays in memory up to 64 KiB and is then a temp file
/// whose truncation is one call.
fn pragmas(options: &StoreOptions, temp_store: &str, cache_kib: i64) -> String {
    format!(
        "PRAGMA busy_timeout = {};\n\
         PRAGMA foreign_keys = ON;\n\
         PRAGMA temp_store = {temp_store};\n\
         PRAGMA cache_size = -{cache_kib};\n\
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
    // 16 KiB pages instead of 4 KiB: a first index inserts random checksum keys into two
    // indexes and rewrites most of their leaf pages in every batch; larger pages made a
    // 100,000-file first index ~10% faster (benches/scan-compare.sh). SQLite applies this
    // only to a database that has no page yet (set before WAL mode); an existing file keeps
    // the page size it was created with.
    conn.execute_batch("PRAGMA page_size = 16384;")
        .map_err(open_err)?;
    // journal_mode returns a row, so it goes through query_row, not execute.
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .map_err(open_err)?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(%mode, "the database could not switch to WAL mode");
    }
    // A checkpoint every 32 MiB of WAL instead of SQLite's 1000 pages: a first index
    // dirties index pages all over the file, and checkpointing them 8x less often made a
    // 100,000-file first index 1.04-1.19x faster (128 MiB was no better). The maintenance
    // loop still checkpoints on its schedule.
    let page: i64 = conn
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .map_err(open_err)?;
    let writer = format!(
        "{}\nPRAGMA wal_autocheckpoint = {};",
        pragmas(options, "DEFAULT", WRITER_CACHE_KIB),
        WAL_CHECKPOINT_BYTES / page.max(512)
    );
    conn.execute_batch(&writer).map_err(open_err)?;
    Ok(conn)
}

pub(super) fn read_pool(path: &Path, options: &StoreOptions) -> Result<ReadPool, StoreError> {
    // query_only makes "one writer per process" a property of the connections, not a habit.
    let init = format!(
        "{}\nPRAGMA query_only = ON;",
        pragmas(options, "MEMORY", READER_CACHE_KIB)
    );
    let manager =
        r2d2_sqlite::SqliteConnectionManager::file(path).with_init(move |c| c.execute_batch(&init));
    Ok(r2d2::Pool::builder()
        .max_size(READERS)
        .min_idle(Some(0))
        .build(manager)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The KiB a connection's page cache may hold (`PRAGMA cache_size`, negative: KiB).
    fn cache_kib(conn: &Connection) -> i64 {
        let pages: i64 = conn
            .query_row("PRAGMA cache_size", [], |r| r.get(0))
            .expect("cache_size");
        let page: i64 = conn
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .expect("page_size");
        if pages < 0 {
            -pages
        } else {
            pages * page / 1024
        }
    }

    #[test]
    fn the_page_caches_of_all_connections_together_stay_within_the_memory_budget() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("c.db");
        let options = StoreOptions::default();
        let writer = open_writer(&path, &options).expect("writer");
        let pool = read_pool(&path, &options).expect("pool");
        let reader = pool.get().expect("reader");
        let total = cache_kib(&writer) + i64::from(READERS) * cache_kib(&reader);
        // Peak RSS must stay within 64 MiB whatever the library's size (issue 16): the
        // caches are the part of it that grows with the index, up to their caps.
        assert!(total <= 48 * 1024, "the caches may hold {total} KiB");
    }
}
