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

use super::db::{self, Db, Pair};
use super::{Store, StoreError};
use crate::model::{NOT_MEDIA, OpenProblem, RunProblem};

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
/// completed full run, or a run after it, met it. `$latest` keeps each path's row of the
/// latest run (engines differ: see `OPEN`).
macro_rules! open_problems {
    ($latest:expr) => {
        concat!(
            "WITH open AS (
             SELECT r.library_id, p.run_id, p.rel_path, p.rel_path_text, p.error
               FROM scan_run_problems p JOIN scan_runs r ON r.id = p.run_id
               JOIN files f ON f.library_id = r.library_id AND f.rel_path = p.rel_path
              WHERE f.state = 'present' AND f.last_seen_run = p.run_id
                AND (CAST(?1 AS BIGINT) IS NULL OR r.library_id = ?1)
             UNION ALL
             SELECT f.library_id, f.last_seen_run, f.rel_path, f.rel_path_text, f.error
               FROM files f
              WHERE f.state = 'present' AND f.error IS NOT NULL AND f.error IS DISTINCT FROM ?2
                AND (CAST(?1 AS BIGINT) IS NULL OR f.library_id = ?1)
             UNION ALL
             SELECT r.library_id, p.run_id, p.rel_path, p.rel_path_text, p.error
               FROM scan_runs r JOIN scan_run_problems p ON p.run_id = r.id
              WHERE (CAST(?1 AS BIGINT) IS NULL OR r.library_id = ?1)
                AND r.id >= coalesce((SELECT max(l.id) FROM scan_runs l
                                       WHERE l.library_id = r.library_id AND l.scope = ''
                                         AND l.state IN ('completed', 'suspect')), 0)
                AND NOT EXISTS (SELECT 1 FROM files f
                                 WHERE f.library_id = r.library_id AND f.rel_path = p.rel_path)
         ), latest_per_path AS (",
            $latest,
            ")"
        )
    };
}
/// SQLite keeps the row of `max(run_id)` for a bare column of its group (as it always did
/// here); PostgreSQL allows no bare column beside an aggregate and says `DISTINCT ON`.
macro_rules! latest_sqlite {
    () => {
        "SELECT library_id, max(run_id) AS run_id, rel_path, rel_path_text, error
           FROM open GROUP BY library_id, rel_path"
    };
}
macro_rules! latest_postgres {
    () => {
        "SELECT DISTINCT ON (library_id, rel_path) library_id, run_id, rel_path, rel_path_text,
                error
           FROM open ORDER BY library_id, rel_path, run_id DESC"
    };
}
macro_rules! first_open {
    () => {
        " SELECT library_id, run_id, rel_path, rel_path_text, error FROM latest_per_path
           ORDER BY library_id, rel_path LIMIT ?3"
    };
}
const OPEN: Pair = Pair {
    sqlite: concat!(open_problems!(latest_sqlite!()), first_open!()),
    postgres: concat!(open_problems!(latest_postgres!()), first_open!()),
};
const OPEN_COUNT: Pair = Pair {
    sqlite: concat!(
        open_problems!(latest_sqlite!()),
        " SELECT count(*) FROM latest_per_path"
    ),
    postgres: concat!(
        open_problems!(latest_postgres!()),
        " SELECT count(*) FROM latest_per_path"
    ),
};

/// Appends `problems` to run `run_id`'s list, up to `PER_RUN`. Runs inside the caller's
/// fenced transaction: the caller has checked the lease.
pub(super) fn record(db: &Db<'_>, run_id: i64, problems: &[RunProblem]) -> Result<(), StoreError> {
    if problems.is_empty() {
        return Ok(());
    }
    let last: i64 = db.one(LAST_SEQ, args!(run_id), |r| r.get(0))?;
    for (seq, p) in (last + 1..=PER_RUN).zip(problems) {
        let path: &[u8] = &p.rel_path;
        db.execute(
            INSERT,
            args!(
                run_id,
                seq,
                path,
                p.rel_path_text.as_str(),
                p.error.as_str()
            ),
        )?;
    }
    Ok(())
}

fn problem_at(r: &db::Row<'_>, at: usize) -> Result<RunProblem, StoreError> {
    Ok(RunProblem {
        rel_path: r.get(at)?,
        rel_path_text: r.get(at + 1)?,
        error: r.get(at + 2)?,
    })
}

/// Up to `limit` of run `run_id`'s problems after number `after`.
pub(super) fn page(
    db: &Db<'_>,
    run_id: i64,
    after: i64,
    limit: i64,
) -> Result<Vec<(i64, RunProblem)>, StoreError> {
    db.all(PAGE, args!(run_id, after, limit), |r| {
        Ok((r.get(0)?, problem_at(r, 1)?))
    })
}

/// The first `limit` open problems of `library` (`None`: of every library), and how many.
pub(super) fn open(
    db: &Db<'_>,
    library: Option<i64>,
    limit: i64,
) -> Result<(Vec<OpenProblem>, i64), StoreError> {
    let items = db.all(db.pick(&OPEN), args!(library, NOT_MEDIA, limit), |r| {
        Ok(OpenProblem {
            library_id: r.get(0)?,
            run_id: r.get(1)?,
            problem: problem_at(r, 2)?,
        })
    })?;
    let total = db.one(db.pick(&OPEN_COUNT), args!(library, NOT_MEDIA), |r| {
        r.get(0)
    })?;
    Ok((items, total))
}

/// How many problems run `run_id` kept.
pub(super) fn count(db: &Db<'_>, run_id: i64) -> Result<i64, StoreError> {
    db.one(COUNT, args!(run_id), |r| r.get(0))
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
        self.read(|db| page(db, run_id, after, limit))
    }

    /// The first `limit` problems still open, in library and path order, of library
    /// `library` (`None`: of every library), and how many there are.
    pub fn open_problems(
        &self,
        library: Option<i64>,
        limit: i64,
    ) -> Result<(Vec<OpenProblem>, i64), StoreError> {
        self.read(|db| open(db, library, limit))
    }

    /// How many problems run `run_id` kept (at most `PER_RUN`).
    pub fn run_problem_count(&self, run_id: i64) -> Result<i64, StoreError> {
        self.read(|db| count(db, run_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::db::tests::on_both_schemas;
    use crate::store::lease::fixtures;

    fn problem(path: &str, error: &str) -> RunProblem {
        RunProblem {
            rel_path: path.as_bytes().to_vec(),
            rel_path_text: path.to_string(),
            error: error.to_string(),
        }
    }

    fn a_run_keeps_its_problems_in_order_up_to_the_cap(db: &Db<'_>) -> Result<(), StoreError> {
        fixtures::library(db, 1)?;
        fixtures::run(db, 1, 1, "running")?;
        record(db, 1, &[problem("a", "e1"), problem("b", "e2")])?;
        record(db, 1, &[problem("c", "e3")])?;
        assert_eq!(count(db, 1)?, 3);
        let after_one = page(db, 1, 1, 10)?;
        assert_eq!(
            after_one,
            vec![(2, problem("b", "e2")), (3, problem("c", "e3"))]
        );
        assert_eq!(page(db, 1, 0, 1)?, vec![(1, problem("a", "e1"))]);
        db.execute(
            "UPDATE scan_run_problems SET seq = ?1 WHERE run_id = 1 AND seq = 3",
            args!(PER_RUN - 1),
        )?;
        record(db, 1, &[problem("d", "e4"), problem("e", "e5")])?;
        assert_eq!(count(db, 1)?, 4, "only one more fits under PER_RUN");
        Ok(())
    }

    fn open(library: i64, run: i64, path: &str, error: &str) -> OpenProblem {
        OpenProblem {
            library_id: library,
            run_id: run,
            problem: problem(path, error),
        }
    }

    /// Run 1 (a completed full run) met a.jpg and gone/; run 2 (running) met gone/ again;
    /// b.jpg's read failed in run 2 and c.jpg is not media.
    fn two_runs_of_problems(db: &Db<'_>) -> Result<(), StoreError> {
        fixtures::library(db, 1)?;
        fixtures::library(db, 2)?;
        fixtures::run(db, 1, 1, "completed")?;
        fixtures::run(db, 2, 1, "running")?;
        record(
            db,
            1,
            &[problem("a.jpg", "truncated"), problem("gone/", "e1")],
        )?;
        record(db, 2, &[problem("gone/", "e2")])?;
        fixtures::file(db, (1, None, "a.jpg"), (1, 1, 1))?;
        fixtures::file(db, (1, None, "b.jpg"), (1, 1, 2))?;
        fixtures::file(db, (1, None, "c.jpg"), (1, 1, 2))?;
        db.execute(
            "UPDATE files SET error = 'bad read' WHERE rel_path_text = 'b.jpg'",
            args!(),
        )?;
        db.execute(
            "UPDATE files SET error = ?1 WHERE rel_path_text = 'c.jpg'",
            args!(NOT_MEDIA),
        )?;
        Ok(())
    }

    fn open_problems_are_each_paths_latest(db: &Db<'_>) -> Result<(), StoreError> {
        two_runs_of_problems(db)?;
        let every = vec![
            open(1, 1, "a.jpg", "truncated"),
            open(1, 2, "b.jpg", "bad read"),
            open(1, 2, "gone/", "e2"),
        ];
        assert_eq!(super::open(db, None, 10)?, (every.clone(), 3));
        assert_eq!(super::open(db, Some(1), 2)?, (every[..2].to_vec(), 3));
        assert_eq!(super::open(db, Some(2), 10)?, (vec![], 0));
        Ok(())
    }

    on_both_schemas!(
        a_run_keeps_its_problems_in_order_up_to_the_cap,
        open_problems_are_each_paths_latest,
    );
}
