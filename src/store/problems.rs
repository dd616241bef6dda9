//! The `scan_run_problems` table: each scan run's problems (the files and folders it could
//! not list, read or parse, with the error), in the order it met them, at most `PER_RUN` a
//! run. Rows are written only inside a scan run's fenced data write (`files.rs`'s ingest
//! batch), never on their own, so the fence that refuses a stale worker's batch refuses its
//! problems with it. Must not know what makes a problem: the scan decides, this stores it.

use super::{Store, StoreError};
use crate::model::RunProblem;
use rusqlite::{Connection, params};

/// The most problems a run keeps: a library of a million broken files must not double the
/// index. The run's progress still counts every problem it met.
pub const PER_RUN: i64 = 10_000;

const LAST_SEQ: &str = "SELECT coalesce(max(seq), 0) FROM scan_run_problems WHERE run_id = ?1";
const INSERT: &str = "
    INSERT INTO scan_run_problems (run_id, seq, rel_path, rel_path_text, error)
    VALUES (?1, ?2, ?3, ?4, ?5)";
const PAGE: &str = "
    SELECT seq, rel_path, rel_path_text, error FROM scan_run_problems
     WHERE run_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3";
const COUNT: &str = "SELECT count(*) FROM scan_run_problems WHERE run_id = ?1";

/// Appends `problems` to run `run_id`'s list, up to `PER_RUN`. Runs inside the caller's
/// fenced transaction: the caller has checked the lease.
pub(super) fn record(
    conn: &Connection,
    run_id: i64,
    problems: &[RunProblem],
) -> Result<(), StoreError> {
    if problems.is_empty() {
        return Ok(());
    }
    let last: i64 = conn
        .prepare_cached(LAST_SEQ)?
        .query_row([run_id], |r| r.get(0))?;
    let mut insert = conn.prepare_cached(INSERT)?;
    for (seq, p) in (last + 1..=PER_RUN).zip(problems) {
        insert.execute(params![run_id, seq, p.rel_path, p.rel_path_text, p.error])?;
    }
    Ok(())
}

impl Store {
    /// Up to `limit` of run `run_id`'s problems after number `after` (0: from the first),
    /// each with its number in the run's order.
    pub fn run_problems(
        &self,
        run_id: i64,
        after: i64,
        limit: i64,
    ) -> Result<Vec<(i64, RunProblem)>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(PAGE)?;
            let rows = stmt.query_map(params![run_id, after, limit], |r| {
                let problem = RunProblem {
                    rel_path: r.get(1)?,
                    rel_path_text: r.get(2)?,
                    error: r.get(3)?,
                };
                Ok((r.get(0)?, problem))
            })?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }

    /// How many problems run `run_id` kept (at most `PER_RUN`).
    pub fn run_problem_count(&self, run_id: i64) -> Result<i64, StoreError> {
        self.read(|conn| Ok(conn.query_row(COUNT, [run_id], |r| r.get(0))?))
    }
}
