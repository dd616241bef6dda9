//! The one writer thread of a process: the channel every write goes through, its answers
//! and counts, and the loop on SQLite (on PostgreSQL the thread runs `pg_writer`'s loop,
//! started through `Writer::spawn`). On SQLite it owns a dedicated connection, takes
//! operations over a crossbeam channel, and commits up to `max_batch` of them per `BEGIN IMMEDIATE`
//! transaction with a savepoint per operation. An operation that fails (a stale lease
//! included) is rolled back to its savepoint alone; replies go out only after the batch has
//! committed, so a caller never acts on a write that is not on disk. An operation that is
//! alone in its batch (a scan's ingest of a whole batch of files, mostly) runs with no savepoint: the
//! transaction is its own, so rolling it back undoes it alone, and SQLite does not have to
//! keep a sub-journal copy of every page the operation changes.
//!
//! A grouped operation (`call_grouped`: a scan's batches) answers once it has run, and
//! shares its transaction with the next operations of its group until the group reaches
//! its bound (`GroupLimits`: files or age), another operation arrives, or the queue ends;
//! its commit is answered apart (`Committed`). One commit then writes each page the batches
//! changed once: a first index inserts random keys into the checksum indexes, and each
//! commit rewrote most of their leaves (issue 29). A later operation of the group that fails
//! rolls back the whole group; so does the group's seal (its fence, checked again just
//! before the commit), so a group lands whole, under a lease still held, or not at all.
use super::db::Db;
use super::{StoreError, counters};
use crate::model::Counter;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded, unbounded};
use rusqlite::Connection;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How one operation ended inside the transaction; a failure carries its error again for
/// the other operations of a group its rollback undoes (`echo`).
pub(super) enum Status {
    Ok,
    Failed(StoreError),
    LeaseLost(StoreError),
}

/// Delivers the operation's result once the batch's fate is known (`None` = committed).
pub(super) type Reply = Box<dyn FnOnce(Option<StoreError>) + Send>;
pub(super) type Run = Box<dyn FnOnce(&Db<'_>) -> (Status, Reply) + Send>;

/// An operation and the way to answer it without running it (its batch is already lost).
pub(super) struct Op {
    pub(super) run: Run,
    pub(super) abort: Box<dyn FnOnce(StoreError) + Send>,
    pub(super) group: Option<Group>,
}

/// Checked just before a group commits, inside its transaction: the fence of the lease the
/// group's operations wrote under. An error rolls the whole group back.
pub(super) type Seal = Box<dyn FnOnce(&Db<'_>) -> Result<(), StoreError> + Send>;

/// What makes an operation grouped: operations of one `id` (a scan run) share a transaction.
pub(super) struct Group {
    pub id: i64,
    /// What it counts against `GroupLimits::weight` (a scan batch: its files).
    pub weight: u64,
    pub seal: Seal,
}

/// When an open group commits at the latest: the bound on what a crash can undo of it.
#[derive(Clone, Copy, Debug)]
pub struct GroupLimits {
    /// Once its operations' weights reach this (files, for a scan).
    pub weight: u64,
    /// Once this long has passed since its first operation ran.
    pub age: Duration,
}

impl Default for GroupLimits {
    /// 65,536 files or 1 s, whichever comes first: a crash re-reads at most that (plus the
    /// batch being read), well under a minute of work, while a first index of 1,000,000
    /// small files commits tens of times instead of 245 (issue 29; docs/performance.md).
    /// Larger groups wrote more, not less, in the model there: past the writer's page
    /// cache a transaction spills its pages to the WAL before its commit. The age bounds
    /// how long another process waits for the write lock an open group holds (it gets in
    /// between two groups): with 5 s a cancel from another process took seconds to land.
    fn default() -> Self {
        GroupLimits {
            weight: 65_536,
            age: Duration::from_secs(1),
        }
    }
}

/// The commit of a grouped operation that has run: `wait` answers once its group has
/// committed (`Ok`) or was rolled back (the error that undid it). The handle keeps the
/// answer once it came: asked again, it says the same (the channel is empty and closed by
/// then, which would read as a writer that has stopped).
#[derive(Debug)]
pub struct Committed {
    answer: Receiver<Option<StoreError>>,
    kept: std::cell::OnceCell<Option<StoreError>>,
}

impl Committed {
    fn new(answer: Receiver<Option<StoreError>>) -> Self {
        Committed {
            answer,
            kept: std::cell::OnceCell::new(),
        }
    }

    pub fn wait(self) -> Result<(), StoreError> {
        let outcome = match self.kept.into_inner() {
            Some(kept) => kept,
            None => self.answer.recv().unwrap_or(Some(StoreError::WriterGone)),
        };
        outcome.map_or(Ok(()), Err)
    }

    /// The outcome if the group has settled, without waiting.
    pub fn settled(&self) -> Option<Result<(), StoreError>> {
        if self.kept.get().is_none() {
            let outcome = match self.answer.try_recv() {
                Ok(outcome) => outcome,
                Err(crossbeam_channel::TryRecvError::Empty) => return None,
                Err(crossbeam_channel::TryRecvError::Disconnected) => Some(StoreError::WriterGone),
            };
            let _ = self.kept.set(outcome);
        }
        self.kept
            .get()
            .map(|kept| kept.as_ref().map_or(Ok(()), |e| Err(echo(e))))
    }
}

/// The same failure again, for the other operations a group's rollback undid.
pub(super) fn echo(e: &StoreError) -> StoreError {
    match e {
        StoreError::LeaseLost {
            target,
            id,
            generation,
        } => StoreError::LeaseLost {
            target: *target,
            id: *id,
            generation: *generation,
        },
        StoreError::DiskFull => StoreError::DiskFull,
        StoreError::Locked => StoreError::Locked,
        // A server away or a transaction given up passes for every operation it undid.
        StoreError::Away(words) => StoreError::Away(words.clone()),
        StoreError::Contended(words) => StoreError::Contended(words.clone()),
        e => StoreError::Conflict(format!("rolled back with its group: {e}")),
    }
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
pub(super) struct Stats {
    pub(super) ops: AtomicU64,
    pub(super) rows: AtomicU64,
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
    pub(super) fn start(
        conn: Connection,
        max_batch: usize,
        limits: GroupLimits,
    ) -> Result<Writer, StoreError> {
        let (sender, receiver) = unbounded::<Op>();
        let stats = Arc::new(Stats::default());
        let counted = stats.clone();
        let thread = std::thread::Builder::new()
            .name("mediadex-writer".into())
            .spawn(move || run(conn, receiver, max_batch.max(1), limits, &counted))
            .map_err(|_| StoreError::WriterGone)?;
        Ok(Writer {
            sender: Some(sender),
            thread: Some(thread),
            stats,
        })
    }

    /// A writer whose thread runs another engine's loop (`pg_writer`): the same calls,
    /// answers and counts over the same channel.
    pub(super) fn spawn(
        run: impl FnOnce(Receiver<Op>, &Stats) + Send + 'static,
    ) -> Result<Writer, StoreError> {
        let (sender, receiver) = unbounded::<Op>();
        let stats = Arc::new(Stats::default());
        let counted = stats.clone();
        let thread = std::thread::Builder::new()
            .name("mediadex-writer".into())
            .spawn(move || run(receiver, &counted))
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
        F: FnOnce(&Db<'_>) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply_tx, reply_rx) = bounded(1);
        let abort_tx = reply_tx.clone();
        let run: Run = Box::new(move |conn| {
            let result = op(conn);
            let status = match &result {
                Ok(_) => Status::Ok,
                Err(e) if e.is_lease_lost() => Status::LeaseLost(echo(e)),
                Err(e) => Status::Failed(echo(e)),
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
        let op = Op {
            run,
            abort,
            group: None,
        };
        let sender = self.sender.as_ref().ok_or(StoreError::WriterGone)?;
        sender.send(op).map_err(|_| StoreError::WriterGone)?;
        reply_rx.recv().map_err(|_| StoreError::WriterGone)?
    }

    /// Runs `op` in the open transaction of its group (see the module's header) and answers
    /// its result as soon as it has run, with the handle on its commit. A caller must not
    /// act on the write before `Committed::wait` says it is on disk.
    pub(super) fn call_grouped<T, F>(
        &self,
        group: Group,
        op: F,
    ) -> Result<(T, Committed), StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Db<'_>) -> Result<T, StoreError> + Send + 'static,
    {
        let (ran_tx, ran_rx) = bounded(1);
        let (done_tx, done_rx) = bounded(1);
        let abort_tx = ran_tx.clone();
        let run: Run = Box::new(move |conn| {
            let result = op(conn);
            let status = match &result {
                Ok(_) => Status::Ok,
                Err(e) if e.is_lease_lost() => Status::LeaseLost(echo(e)),
                Err(e) => Status::Failed(echo(e)),
            };
            let failed = result.as_ref().err().map(echo);
            let _ = ran_tx.send(result);
            let reply: Reply = Box::new(move |outcome| {
                // A failed operation's own error already went out; its group's rollback
                // answers the commit handle it never got.
                let _ = done_tx.send(outcome.or(failed));
            });
            (status, reply)
        });
        let abort = Box::new(move |e| {
            let _ = abort_tx.send(Err(e));
        });
        let op = Op {
            run,
            abort,
            group: Some(group),
        };
        let sender = self.sender.as_ref().ok_or(StoreError::WriterGone)?;
        sender.send(op).map_err(|_| StoreError::WriterGone)?;
        let ran = ran_rx.recv().map_err(|_| StoreError::WriterGone)??;
        Ok((ran, Committed::new(done_rx)))
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

fn run(
    conn: Connection,
    receiver: Receiver<Op>,
    max_batch: usize,
    limits: GroupLimits,
    stats: &Stats,
) {
    let mut open: Option<Open> = None;
    let mut carried: Option<Op> = None;
    loop {
        let op = match carried.take() {
            Some(op) => op,
            None => match next_op(&receiver, open.as_ref(), limits) {
                Ok(op) => op,
                Err(RecvTimeoutError::Timeout) => {
                    close(&conn, open.take(), stats);
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            },
        };
        if op.group.is_some() {
            open = join(&conn, open, op, limits, stats);
            continue;
        }
        // Any other operation commits the open group first: it may act on what it reads.
        close(&conn, open.take(), stats);
        let (batch, next) = batch_from(op, &receiver, max_batch);
        carried = next;
        run_batch(&conn, batch, stats);
    }
    close(&conn, open.take(), stats);
}

/// `first` and the ungrouped operations queued behind it, up to `max_batch`; a grouped one
/// that comes next is carried to the next turn (a group runs in a transaction of its own).
pub(super) fn batch_from(
    first: Op,
    receiver: &Receiver<Op>,
    max_batch: usize,
) -> (Vec<Op>, Option<Op>) {
    let mut batch = vec![first];
    while batch.len() < max_batch {
        match receiver.try_recv() {
            Ok(op) if op.group.is_some() => return (batch, Some(op)),
            Ok(op) => batch.push(op),
            Err(_) => break,
        }
    }
    (batch, None)
}

/// The next operation; with a group open, waits no longer than the group may stay open.
fn next_op(
    receiver: &Receiver<Op>,
    open: Option<&Open>,
    limits: GroupLimits,
) -> Result<Op, RecvTimeoutError> {
    match open {
        None => receiver.recv().map_err(|_| RecvTimeoutError::Disconnected),
        Some(open) => {
            let left = limits.age.saturating_sub(open.since.elapsed());
            receiver.recv_timeout(left)
        }
    }
}

/// A group's open transaction: the replies of its operations wait for its commit.
struct Open {
    id: i64,
    weight: u64,
    since: Instant,
    seal: Option<Seal>,
    replies: Vec<Reply>,
    rows_before: u64,
}

/// Runs a grouped operation in its group's transaction (opening it, or closing another
/// group's first), and closes the group once it reaches its limits.
fn join(
    conn: &Connection,
    open: Option<Open>,
    mut op: Op,
    limits: GroupLimits,
    stats: &Stats,
) -> Option<Open> {
    let group = op.group.take()?;
    let mut open = match open {
        Some(open) if open.id == group.id => open,
        other => {
            close(conn, other, stats);
            if let Err(e) = begin_immediate(conn) {
                tracing::error!(error = %e, "could not start a write transaction");
                (op.abort)(StoreError::from_batch(&e));
                return None;
            }
            Open {
                id: group.id,
                weight: 0,
                since: Instant::now(),
                seal: None,
                replies: Vec::new(),
                rows_before: conn.total_changes(),
            }
        }
    };
    let Op { run, abort, .. } = op;
    let (status, reply) = match catch_unwind(AssertUnwindSafe(|| run(&Db::sqlite(conn)))) {
        Ok(done) => done,
        Err(_) => {
            tracing::error!("a write operation panicked; its group was rolled back");
            abort(StoreError::WriterGone);
            undo(conn, open, &StoreError::WriterGone, false);
            return None;
        }
    };
    match status {
        Status::Ok => {
            open.replies.push(reply);
            open.weight = open.weight.saturating_add(group.weight);
            open.seal = Some(group.seal);
        }
        Status::Failed(why) => {
            reply(None);
            undo(conn, open, &why, false);
            return None;
        }
        Status::LeaseLost(why) => {
            reply(None);
            undo(conn, open, &why, true);
            return None;
        }
    }
    if open.weight >= limits.weight || open.since.elapsed() >= limits.age {
        close(conn, Some(open), stats);
        return None;
    }
    Some(open)
}

/// Rolls a group back and answers each of its operations with `why`; a stale lease is
/// counted after the rollback, so the count survives.
fn undo(conn: &Connection, open: Open, why: &StoreError, lease_lost: bool) {
    let _ = conn.execute_batch("ROLLBACK");
    if lease_lost && let Err(e) = counters::bump(&Db::sqlite(conn), Counter::FenceRejections, 1) {
        tracing::error!(error = %e, "could not count a fence rejection");
    }
    tracing::warn!(error = %why, ops = open.replies.len(), "write group rolled back");
    open.replies
        .into_iter()
        .for_each(|reply| reply(Some(echo(why))));
}

/// Commits an open group once its seal holds, and answers its operations.
fn close(conn: &Connection, open: Option<Open>, stats: &Stats) {
    let Some(mut open) = open else { return };
    if let Some(seal) = open.seal.take()
        && let Err(e) = seal(&Db::sqlite(conn))
    {
        let lost = e.is_lease_lost();
        return undo(conn, open, &e, lost);
    }
    match conn.execute_batch("COMMIT") {
        Ok(()) => {
            stats
                .ops
                .fetch_add(open.replies.len() as u64, Ordering::SeqCst);
            let rows = conn.total_changes().saturating_sub(open.rows_before);
            stats.rows.fetch_add(rows, Ordering::SeqCst);
            open.replies.into_iter().for_each(|reply| reply(None));
        }
        Err(e) => {
            if !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK");
            }
            tracing::error!(error = %e, "write group rolled back");
            let why = StoreError::from_batch(&e);
            open.replies
                .into_iter()
                .for_each(|reply| reply(Some(echo(&why))));
        }
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
    let Op { run, abort, .. } = op;
    let (status, reply) = match catch_unwind(AssertUnwindSafe(|| run(&Db::sqlite(conn)))) {
        Ok(done) => done,
        Err(_) => {
            tracing::error!("a write operation panicked; it was rolled back");
            let _ = conn.execute_batch("ROLLBACK");
            return abort(StoreError::WriterGone);
        }
    };
    let outcome = match status {
        Status::Ok => conn.execute_batch("COMMIT"),
        Status::Failed(_) => conn.execute_batch("ROLLBACK"),
        // Counted after the rollback, in a transaction of its own, so the count survives.
        Status::LeaseLost(_) => conn
            .execute_batch("ROLLBACK")
            .and_then(|()| count_rejection(conn)),
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
    let Op { run, abort, .. } = op;
    let (status, reply) = match catch_unwind(AssertUnwindSafe(|| run(&Db::sqlite(conn)))) {
        Ok((status, reply)) => (status, Some(reply)),
        Err(_) => {
            tracing::error!("a write operation panicked; it was rolled back");
            abort(StoreError::WriterGone);
            (Status::Failed(StoreError::WriterGone), None)
        }
    };
    let end = match status {
        Status::Ok => conn.execute_batch("RELEASE op"),
        Status::Failed(_) => conn.execute_batch("ROLLBACK TO op; RELEASE op"),
        Status::LeaseLost(_) => conn
            .execute_batch("ROLLBACK TO op; RELEASE op")
            .and_then(|()| count_rejection(conn)),
    };
    match (end, reply) {
        (Ok(()), reply) => Ok(reply),
        (Err(e), Some(reply)) => Err((reply, e)),
        (Err(e), None) => Err((Box::new(|_| {}), e)),
    }
}

/// Counts a write refused for a stale lease, as the SQLite loop's own statements fail: a
/// busy or full database keeps its code, so `StoreError::from_batch` sorts it as before.
fn count_rejection(conn: &Connection) -> rusqlite::Result<()> {
    counters::bump(&Db::sqlite(conn), Counter::FenceRejections, 1).map_err(|e| {
        let code = match e {
            StoreError::Sqlite(e) => return e,
            StoreError::Locked => rusqlite::ffi::SQLITE_BUSY,
            StoreError::DiskFull => rusqlite::ffi::SQLITE_FULL,
            _ => rusqlite::ffi::SQLITE_ERROR,
        };
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), Some(e.to_string()))
    })
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
        (
            dir,
            Writer::start(conn, 64, GroupLimits::default()).expect("start"),
        )
    }

    fn count(w: &Writer) -> i64 {
        w.call(|c| c.one("SELECT count(*) FROM t", args!(), |r| r.get(0)))
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
                        c.execute("INSERT INTO t (x) VALUES (?1)", args!(i))?;
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
            .call(|c| c.one("SELECT value FROM counters", args!(), |r| r.get(0)))
            .expect("counter");
        assert_eq!(rejections, 1);
    }

    #[test]
    fn an_op_alone_in_its_batch_runs_without_a_savepoint_and_still_rolls_back_alone() {
        let (_dir, w) = writer();
        // Alone in its batch, the op is the transaction: there is no savepoint to release.
        let released: Result<(), StoreError> =
            w.call(|c| Ok(c.lite()?.execute_batch("RELEASE op")?));
        assert!(released.is_err(), "a sole op ran inside a savepoint");
        let failed: Result<(), StoreError> = w.call(|c| {
            c.execute("INSERT INTO t (x) VALUES (1)", args!())?;
            Err(StoreError::Conflict("boom".into()))
        });
        assert!(matches!(failed, Err(StoreError::Conflict(_))));
        let stale: Result<(), StoreError> = w.call(|c| {
            c.execute("INSERT INTO t (x) VALUES (2)", args!())?;
            Err(StoreError::LeaseLost {
                target: Target::Job,
                id: 1,
                generation: 1,
            })
        });
        assert!(matches!(stale, Err(StoreError::LeaseLost { .. })));
        w.call(|c| c.execute("INSERT INTO t (x) VALUES (3)", args!()))
            .expect("insert");
        assert_eq!(count(&w), 1, "the failed and the stale op were undone");
        let rejections: i64 = w
            .call(|c| c.one("SELECT value FROM counters", args!(), |r| r.get(0)))
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
        w.call(|c| c.execute("INSERT INTO t (x) VALUES (1)", args!()))
            .expect("the writer still works");
        assert_eq!(count(&w), 1);
    }

    fn grouped_writer(limits: GroupLimits) -> (tempfile::TempDir, Writer, Connection) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("w.db");
        let conn = Connection::open(&path).expect("open");
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             CREATE TABLE t (x INTEGER) STRICT;
             CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) STRICT;",
        )
        .expect("schema");
        let other = Connection::open(&path).expect("second connection");
        (dir, Writer::start(conn, 64, limits).expect("start"), other)
    }

    fn on_disk(other: &Connection) -> i64 {
        other
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .expect("count")
    }

    fn insert(w: &Writer, x: i64, seal: Seal) -> Committed {
        let group = Group {
            id: 1,
            weight: 1,
            seal,
        };
        let (_, committed) = w
            .call_grouped(group, move |c| {
                c.execute("INSERT INTO t (x) VALUES (?1)", args!(x))
            })
            .expect("grouped insert");
        committed
    }

    fn holds() -> Seal {
        Box::new(|_| Ok(()))
    }

    fn lost() -> StoreError {
        StoreError::LeaseLost {
            target: Target::ScanRun,
            id: 1,
            generation: 1,
        }
    }

    /// A group open for an hour, committed by its weight only.
    fn by_weight(weight: u64) -> GroupLimits {
        GroupLimits {
            weight,
            age: Duration::from_secs(3600),
        }
    }

    #[test]
    fn a_group_commits_when_its_weight_reaches_the_bound_and_not_before() {
        let (_dir, w, other) = grouped_writer(by_weight(3));
        let first = insert(&w, 1, holds());
        let second = insert(&w, 2, holds());
        // Both have run; the writer now waits for more with the transaction open.
        assert_eq!(on_disk(&other), 0, "a group below its bound committed");
        assert!(first.settled().is_none() && second.settled().is_none());
        let third = insert(&w, 3, holds());
        third.wait().expect("the group committed");
        assert_eq!(on_disk(&other), 3);
        first.wait().expect("the first batch committed with it");
        second.wait().expect("the second batch committed with it");
        assert_eq!(w.stats().ops, 3);
    }

    #[test]
    fn another_operation_commits_the_open_group_first() {
        let (_dir, w, other) = grouped_writer(by_weight(1_000));
        let first = insert(&w, 1, holds());
        w.call(|_| Ok(())).expect("a plain op");
        assert_eq!(first.settled().map(|r| r.is_ok()), Some(true));
        assert_eq!(on_disk(&other), 1);
    }

    #[test]
    fn a_group_open_longer_than_its_age_commits_with_nothing_else_coming() {
        let limits = GroupLimits {
            weight: 1_000,
            age: Duration::from_millis(20),
        };
        let (_dir, w, other) = grouped_writer(limits);
        let first = insert(&w, 1, holds());
        let (done_tx, done_rx) = bounded(1);
        std::thread::spawn(move || done_tx.send(first.wait()));
        // The bound on the wait only turns a writer that never commits into a failure.
        let done = done_rx.recv_timeout(Duration::from_secs(60));
        assert!(matches!(done, Ok(Ok(()))), "{done:?}");
        assert_eq!(on_disk(&other), 1);
    }

    #[test]
    fn a_failed_operation_rolls_its_whole_group_back() {
        let (_dir, w, other) = grouped_writer(by_weight(1_000));
        let first = insert(&w, 1, holds());
        let group = Group {
            id: 1,
            weight: 1,
            seal: holds(),
        };
        let stale: Result<((), Committed), StoreError> = w.call_grouped(group, |c| {
            c.execute("INSERT INTO t (x) VALUES (2)", args!())?;
            Err(lost())
        });
        assert!(matches!(stale, Err(StoreError::LeaseLost { .. })));
        assert!(matches!(first.wait(), Err(StoreError::LeaseLost { .. })));
        w.call(|_| Ok(())).expect("a plain op");
        assert_eq!(on_disk(&other), 0, "the group landed in part");
        let rejections: i64 = other
            .query_row("SELECT value FROM counters", [], |r| r.get(0))
            .expect("counter");
        assert_eq!(rejections, 1);
    }

    #[test]
    fn a_group_whose_seal_fails_at_the_commit_lands_nothing() {
        let (_dir, w, other) = grouped_writer(by_weight(1_000));
        let first = insert(&w, 1, holds());
        let second = insert(&w, 2, Box::new(|_| Err(lost())));
        w.call(|_| Ok(())).expect("a plain op");
        assert!(matches!(first.wait(), Err(StoreError::LeaseLost { .. })));
        assert!(matches!(second.wait(), Err(StoreError::LeaseLost { .. })));
        assert_eq!(on_disk(&other), 0);
    }

    /// The scan asks a batch's commit handle whether it settled, then again for the error:
    /// each answer is the group's own (a full disk pauses the scan; a "writer has stopped"
    /// failed it for good, CI's full-disk scenario a).
    #[test]
    fn a_commit_handle_answers_its_groups_outcome_however_often_it_is_asked() {
        let (_dir, w, _other) = grouped_writer(by_weight(1_000));
        let first = insert(&w, 1, Box::new(|_| Err(StoreError::DiskFull)));
        w.call(|_| Ok(())).expect("a plain op");
        assert!(matches!(first.settled(), Some(Err(StoreError::DiskFull))));
        assert!(matches!(first.settled(), Some(Err(StoreError::DiskFull))));
        assert!(matches!(first.wait(), Err(StoreError::DiskFull)));
        let second = insert(&w, 2, holds());
        w.call(|_| Ok(())).expect("a plain op");
        assert!(matches!(second.settled(), Some(Ok(()))));
        assert!(matches!(second.settled(), Some(Ok(()))));
        assert!(matches!(second.wait(), Ok(())));
    }

    #[test]
    fn a_group_of_another_id_commits_the_open_one_first() {
        let (_dir, w, other) = grouped_writer(by_weight(1_000));
        let first = insert(&w, 1, holds());
        let group = Group {
            id: 2,
            weight: 1,
            seal: holds(),
        };
        let (_, second) = w
            .call_grouped(group, |c| {
                c.execute("INSERT INTO t (x) VALUES (2)", args!())
            })
            .expect("insert");
        first.wait().expect("the first group committed");
        assert_eq!(on_disk(&other), 1);
        w.call(|_| Ok(())).expect("a plain op");
        second.wait().expect("the second group committed");
        assert_eq!(on_disk(&other), 2);
    }
}
