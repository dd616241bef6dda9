//! The one writer thread of a process. It owns a dedicated connection, takes operations over
//! a crossbeam channel, and commits up to `max_batch` of them per `BEGIN IMMEDIATE`
//! transaction with a savepoint per operation. An operation that fails (a stale lease
//! included) is rolled back to its savepoint alone; replies go out only after the batch has
//! committed, so a caller never acts on a write that is not on disk. An operation that is
//! alone in its batch (a scan's ingest of a whole batch of files, mostly) runs with no savepoint: the
//! transaction is its own, so rolling it back undoes it alone, and SQLite does not have to
//! keep a sub-journal copy of every page the operation changes.

use super::{StoreError, counters};
use crate::model::Counter;
use crossbeam_channel::{Receiver, Sender, bounded, unbounded};
use rusqlite::Connection;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;

/// How one operation ended inside the transaction.
enum Status {
    Ok,
    Failed,
    LeaseLost,
}

/// Delivers the operation's result once the batch's fate is known (`None` = committed).
type Reply = Box<dyn FnOnce(Option<StoreError>) + Send>;
type Run = Box<dyn FnOnce(&Connection) -> (Status, Reply) + Send>;

/// An operation and the way to answer it without running it (its batch is already lost).
struct Op {
    run: Run,
    abort: Box<dyn FnOnce(StoreError) + Send>,
}

/// How often `BEGIN IMMEDIATE` is retried after busy_timeout ran out (another process kept
/// the write lock) before the batch is answered with `Locked`.
const BEGIN_ATTEMPTS: u32 = 6;

pub(super) struct Writer {
    sender: Option<Sender<Op>>,
    thread: Option<JoinHandle<()>>,
    stats: Arc<Stats>,
}

/// What the writer has committed since it started: operations and rows changed. Read by
/// tests and benchmarks to show that a piece of work costs no per-file write.
#[derive(Default)]
struct Stats {
    ops: AtomicU64,
    rows: AtomicU64,
}

/// A snapshot of the writer's committed work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteStats {
    /// Operations committed (each one savepoint inside a batch transaction).
    pub ops: u64,
    /// Rows inserted, updated or deleted by the committed batches.
    pub rows: u64,
}

impl Writer {
    pub(super) fn start(conn: Connection, max_batch: usize) -> Result<Writer, StoreError> {
        let (sender, receiver) = unbounded::<Op>();
        let stats = Arc::new(Stats::default());
        let counted = stats.clone();
        let thread = std::thread::Builder::new()
            .name("mediadex-writer".into())
            .spawn(move || run(conn, receiver, max_batch.max(1), &counted))
            .map_err(|_| StoreError::WriterGone)?;
        Ok(Writer {
            sender: Some(sender),
            thread: Some(thread),
            stats,
        })
    }

    pub(super) fn stats(&self) -> WriteStats {
        WriteStats {
            ops: self.stats.ops.load(Ordering::SeqCst),
            rows: self.stats.rows.load(Ordering::SeqCst),
        }
    }

    pub(super) fn call<T, F>(&self, op: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply_tx, reply_rx) = bounded(1);
        let abort_tx = reply_tx.clone();
        let run: Run = Box::new(move |conn| {
            let result = op(conn);
            let status = match &result {
                Ok(_) => Status::Ok,
                Err(e) if e.is_lease_lost() => Status::LeaseLost,
                Err(_) => Status::Failed,
            };
            let reply: Reply = Box::new(move |batch_error| {
                let answer = match (result, batch_error) {
                    (Ok(_), Some(e)) => Err(e),
                    (result, _) => result,
                };
                let _ = reply_tx.send(answer);
            });
            (status, reply)
        });
        let abort = Box::new(move |e| {
            let _ = abort_tx.send(Err(e));
        });
        let op = Op { run, abort };
        let sender = self.sender.as_ref().ok_or(StoreError::WriterGone)?;
        sender.send(op).map_err(|_| StoreError::WriterGone)?;
        reply_rx.recv().map_err(|_| StoreError::WriterGone)?
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        drop(self.sender.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(conn: Connection, receiver: Receiver<Op>, max_batch: usize, stats: &Stats) {
    while let Ok(first) = receiver.recv() {
        let mut batch = vec![first];
        while batch.len() < max_batch {
            match receiver.try_recv() {
                Ok(op) => batch.push(op),
                Err(_) => break,
            }
        }
        run_batch(&conn, batch, stats);
    }
}

fn run_batch(conn: &Connection, mut batch: Vec<Op>, stats: &Stats) {
    if batch.len() == 1
        && let Some(op) = batch.pop()
    {
        return run_solo(conn, op, stats);
    }
    let rows_before = conn.total_changes();
    if let Err(e) = begin_immediate(conn) {
        tracing::error!(error = %e, "could not start a write transaction");
        batch
            .into_iter()
            .for_each(|op| (op.abort)(StoreError::from_batch(&e)));
        return;
    }
    let mut replies = Vec::with_capacity(batch.len());
    let mut ops = batch.into_iter();
    let mut broken = None;
    for op in ops.by_ref() {
        match run_one(conn, op) {
            Ok(Some(reply)) => replies.push(reply),
            Ok(None) => {}
            Err((reply, e)) => {
                replies.push(reply);
                broken = Some(e);
                break;
            }
        }
    }
    let outcome = match broken {
        Some(e) => Err(e),
        None => conn.execute_batch("COMMIT"),
    };
    match outcome {
        Ok(()) => {
            stats.ops.fetch_add(replies.len() as u64, Ordering::SeqCst);
            let rows = conn.total_changes().saturating_sub(rows_before);
            stats.rows.fetch_add(rows, Ordering::SeqCst);
            replies.into_iter().for_each(|reply| reply(None));
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            tracing::error!(error = %e, "write batch rolled back");
            replies
                .into_iter()
                .for_each(|reply| reply(Some(StoreError::from_batch(&e))));
            ops.for_each(|op| (op.abort)(StoreError::from_batch(&e)));
        }
    }
}

/// Runs an operation that is alone in its batch as the whole transaction, without a
/// savepoint (each statement inside a savepoint copies every page it is the first to change
/// since the savepoint into the sub-journal: for a 1024-file ingest that was most of the
/// writer's time). A failed or stale operation rolls the transaction back, which undoes it
/// alone, as its savepoint would have; a stale lease is then counted on its own.
fn run_solo(conn: &Connection, op: Op, stats: &Stats) {
    let rows_before = conn.total_changes();
    if let Err(e) = begin_immediate(conn) {
        tracing::error!(error = %e, "could not start a write transaction");
        return (op.abort)(StoreError::from_batch(&e));
    }
    let Op { run, abort } = op;
    let (status, reply) = match catch_unwind(AssertUnwindSafe(|| run(conn))) {
        Ok(done) => done,
        Err(_) => {
            tracing::error!("a write operation panicked; it was rolled back");
            let _ = conn.execute_batch("ROLLBACK");
            return abort(StoreError::WriterGone);
        }
    };
    let outcome = match status {
        Status::Ok => conn.execute_batch("COMMIT"),
        Status::Failed => conn.execute_batch("ROLLBACK"),
        // Counted after the rollback, in a transaction of its own, so the count survives.
        Status::LeaseLost => conn
            .execute_batch("ROLLBACK")
            .and_then(|()| counters::bump_raw(conn, Counter::FenceRejections, 1)),
    };
    match outcome {
        Ok(()) => {
            stats.ops.fetch_add(1, Ordering::SeqCst);
            if matches!(status, Status::Ok) {
                let rows = conn.total_changes().saturating_sub(rows_before);
                stats.rows.fetch_add(rows, Ordering::SeqCst);
            }
            reply(None);
        }
        Err(e) => {
            if !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK");
            }
            tracing::error!(error = %e, "write transaction rolled back");
            reply(Some(StoreError::from_batch(&e)));
        }
    }
}

/// Runs one operation in its own savepoint. A failed operation is undone alone; a stale
/// lease is counted in the same transaction (after its rollback, so the count survives).
/// A panicking operation is answered at once and yields no reply to defer. Errors only when
/// the savepoint machinery itself fails, which breaks the whole batch.
fn run_one(conn: &Connection, op: Op) -> Result<Option<Reply>, (Reply, rusqlite::Error)> {
    if let Err(e) = conn.execute_batch("SAVEPOINT op") {
        let abort = op.abort;
        let reply: Reply = Box::new(move |err| abort(err.unwrap_or(StoreError::WriterGone)));
        return Err((reply, e));
    }
    let Op { run, abort } = op;
    let (status, reply) = match catch_unwind(AssertUnwindSafe(|| run(conn))) {
        Ok((status, reply)) => (status, Some(reply)),
        Err(_) => {
            tracing::error!("a write operation panicked; it was rolled back");
            abort(StoreError::WriterGone);
            (Status::Failed, None)
        }
    };
    let end = match status {
        Status::Ok => conn.execute_batch("RELEASE op"),
        Status::Failed => conn.execute_batch("ROLLBACK TO op; RELEASE op"),
        Status::LeaseLost => conn
            .execute_batch("ROLLBACK TO op; RELEASE op")
            .and_then(|()| counters::bump_raw(conn, Counter::FenceRejections, 1)),
    };
    match (end, reply) {
        (Ok(()), reply) => Ok(reply),
        (Err(e), Some(reply)) => Err((reply, e)),
        (Err(e), None) => Err((Box::new(|_| {}), e)),
    }
}

fn begin_immediate(conn: &Connection) -> Result<(), rusqlite::Error> {
    let mut attempt = 0;
    loop {
        match conn.execute_batch("BEGIN IMMEDIATE") {
            Err(e)
                if attempt + 1 < BEGIN_ATTEMPTS
                    && matches!(
                        e.sqlite_error_code(),
                        Some(rusqlite::ErrorCode::DatabaseBusy)
                    ) =>
            {
                attempt += 1;
                tracing::warn!(
                    attempt,
                    "database busy: another process holds the write lock"
                );
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Target;
    use std::sync::Arc;

    fn writer() -> (tempfile::TempDir, Writer) {
        let dir = tempfile::tempdir().expect("tempdir");
        let conn = Connection::open(dir.path().join("w.db")).expect("open");
        conn.execute_batch(
            "CREATE TABLE t (x INTEGER) STRICT;
             CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) STRICT;",
        )
        .expect("schema");
        (dir, Writer::start(conn, 64).expect("start"))
    }

    fn count(w: &Writer) -> i64 {
        w.call(|c| Ok(c.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?))
            .expect("count")
    }

    #[test]
    fn a_failed_or_stale_op_rolls_back_alone_within_its_batch() {
        let (_dir, w) = writer();
        let w = Arc::new(w);
        let (hold_tx, hold_rx) = bounded::<()>(0);
        let (inside_tx, inside_rx) = bounded::<()>(0);
        // The first op holds the writer so the next ones queue up and share one batch.
        let first = {
            let w = w.clone();
            std::thread::spawn(move || {
                w.call(move |_| {
                    inside_tx.send(()).ok();
                    hold_rx.recv().ok();
                    Ok(())
                })
            })
        };
        inside_rx.recv().expect("first op running");
        let queued: Vec<_> = (0..6)
            .map(|i| {
                let w = w.clone();
                std::thread::spawn(move || {
                    w.call(move |c| {
                        c.execute("INSERT INTO t (x) VALUES (?1)", [i])?;
                        match i {
                            2 => Err(StoreError::Conflict("boom".into())),
                            4 => Err(StoreError::LeaseLost {
                                target: Target::Job,
                                id: 1,
                                generation: 1,
                            }),
                            _ => Ok(i),
                        }
                    })
                })
            })
            .collect();
        while w.sender.as_ref().map_or(0, |s| s.len()) < 6 {
            std::thread::yield_now();
        }
        hold_tx.send(()).expect("release the first op");
        first.join().expect("first").expect("first op");
        let results: Vec<_> = queued.into_iter().map(|t| t.join().expect("op")).collect();
        assert!(matches!(results[2], Err(StoreError::Conflict(_))));
        assert!(matches!(results[4], Err(StoreError::LeaseLost { .. })));
        assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 4);
        assert_eq!(count(&w), 4, "only the failed ops' rows were undone");
        let rejections: i64 = w
            .call(|c| Ok(c.query_row("SELECT value FROM counters", [], |r| r.get(0))?))
            .expect("counter");
        assert_eq!(rejections, 1);
    }

    #[test]
    fn an_op_alone_in_its_batch_runs_without_a_savepoint_and_still_rolls_back_alone() {
        let (_dir, w) = writer();
        // Alone in its batch, the op is the transaction: there is no savepoint to release.
        let released: Result<(), StoreError> =
            w.call(|c| Ok(c.execute_batch("RELEASE op").map(|_| ())?));
        assert!(released.is_err(), "a sole op ran inside a savepoint");
        let failed: Result<(), StoreError> = w.call(|c| {
            c.execute("INSERT INTO t (x) VALUES (1)", [])?;
            Err(StoreError::Conflict("boom".into()))
        });
        assert!(matches!(failed, Err(StoreError::Conflict(_))));
        let stale: Result<(), StoreError> = w.call(|c| {
            c.execute("INSERT INTO t (x) VALUES (2)", [])?;
            Err(StoreError::LeaseLost {
                target: Target::Job,
                id: 1,
                generation: 1,
            })
        });
        assert!(matches!(stale, Err(StoreError::LeaseLost { .. })));
        w.call(|c| Ok(c.execute("INSERT INTO t (x) VALUES (3)", [])?))
            .expect("insert");
        assert_eq!(count(&w), 1, "the failed and the stale op were undone");
        let rejections: i64 = w
            .call(|c| Ok(c.query_row("SELECT value FROM counters", [], |r| r.get(0))?))
            .expect("counter");
        assert_eq!(rejections, 1, "the stale op was counted");
        let stats = w.stats();
        assert_eq!(stats.ops, 6);
    }

    #[test]
    fn a_panicking_op_is_answered_and_the_writer_lives_on() {
        let (_dir, w) = writer();
        let panicked: Result<(), StoreError> = w.call(|_| panic!("bug"));
        assert!(matches!(panicked, Err(StoreError::WriterGone)));
        w.call(|c| Ok(c.execute("INSERT INTO t (x) VALUES (1)", [])?))
            .expect("the writer still works");
        assert_eq!(count(&w), 1);
    }
}
