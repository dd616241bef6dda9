//! The `scan_run_problems` table: each scan run's problems (the files and folders it could
//! not list, read or parse, with the error), in the order it met them, at most `PER_RUN` a
//! run. Rows are written only inside a scan run's fenced data write (`files.rs`'s ingest
//! batch), never on their own, so the fence that refuses a stale worker's batch refuses its
//! problems with it. Must not know what makes a problem: the scan decides, this stores it.
//!
//! Also the problems still open (issue 27), read from what is already stored rather than
//! kept in a list of their own: a file's open problem is the one met by the read its row
//! still stands for (a later read that succeeds replaces it, a file gone is missing), and a
//! path with no file row (a folder that cannot be listed, a link out of the library) is open
//! while the library's latest completed full run, or a run after it, met it (every walk
//! meets it again).

use super::{Store, StoreError};
use crate::model::{NOT_MEDIA, OpenProblem, RunProblem};
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
/// The open problems of library `?1` (NULL: of every library), one per path with the
/// latest run's error; `?2` is `model::NOT_MEDIA`. A file's problem is open while its row
/// is present and the run that met it is the one that last read it (`last_seen_run`: an
/// unchanged file is not read again, and a file that claims a picture and is none keeps
/// only `NOT_MEDIA` on its row); a failed read also keeps its error on the row, which
/// outlives a pruned run. A path with no file row is open while the library's latest
/// completed full run, or a run after it, met it.
macro_rules! open_problems {
    () => {
        "WITH open AS (
             SELECT r.library_id, p.run_id, p.rel_path, p.rel_path_text, p.error
               FROM scan_run_problems p JOIN scan_runs r ON r.id = p.run_id
               JOIN files f ON f.library_id = r.library_id AND f.rel_path = p.rel_path
              WHERE f.state = 'present' AND f.last_seen_run = p.run_id
                AND (?1 IS NULL OR r.library_id = ?1)
             UNION ALL
             SELECT f.library_id, f.last_seen_run, f.rel_path, f.rel_path_text, f.error
               FROM files f
              WHERE f.state = 'present' AND f.error IS NOT NULL AND f.error IS NOT ?2
                AND (?1 IS NULL OR f.library_id = ?1)
             UNION ALL
             SELECT r.library_id, p.run_id, p.rel_path, p.rel_path_text, p.error
               FROM scan_runs r JOIN scan_run_problems p ON p.run_id = r.id
              WHERE (?1 IS NULL OR r.library_id = ?1)
                AND r.id >= coalesce((SELECT max(l.id) FROM scan_runs l
                                       WHERE l.library_id = r.library_id AND l.scope = ''
                                         AND l.state IN ('completed', 'suspect')), 0)
                AND NOT EXISTS (SELECT 1 FROM files f
                                 WHERE f.library_id = r.library_id AND f.rel_path = p.rel_path)
         ), latest_per_path AS (
             SELECT library_id, max(run_id) AS run_id, rel_path, rel_path_text, error
               FROM open GROUP BY library_id, rel_path
         )"
    };
}
const OPEN: &str = concat!(
    open_problems!(),
    " SELECT library_id, run_id, rel_path, rel_path_text, error FROM latest_per_path
       ORDER BY library_id, rel_path LIMIT ?3"
);
const OPEN_COUNT: &str = concat!(open_problems!(), " SELECT count(*) FROM latest_per_path");

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
        self.read_lite(|conn| {
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

    /// The first `limit` problems still open, in library and path order, of library
    /// `library` (`None`: of every library), and how many there are.
    pub fn open_problems(
        &self,
        library: Option<i64>,
        limit: i64,
    ) -> Result<(Vec<OpenProblem>, i64), StoreError> {
        self.read_lite(|conn| {
            let mut stmt = conn.prepare_cached(OPEN)?;
            let rows = stmt.query_map(params![library, NOT_MEDIA, limit], |r| {
                Ok(OpenProblem {
                    library_id: r.get(0)?,
                    run_id: r.get(1)?,
                    problem: RunProblem {
                        rel_path: r.get(2)?,
                        rel_path_text: r.get(3)?,
                        error: r.get(4)?,
                    },
                })
            })?;
            let items = rows.collect::<Result<_, _>>()?;
            let total = conn.query_row(OPEN_COUNT, params![library, NOT_MEDIA], |r| r.get(0))?;
            Ok((items, total))
        })
    }

    /// How many problems run `run_id` kept (at most `PER_RUN`).
    pub fn run_problem_count(&self, run_id: i64) -> Result<i64, StoreError> {
        self.read_lite(|conn| Ok(conn.query_row(COUNT, [run_id], |r| r.get(0))?))
    }
}
