//! The writer thread's loop on PostgreSQL (a helper): the same operations, replies and
//! counting as `writer`'s SQLite loop, on one connection to the server. Up to `max_batch`
//! operations share a transaction, each in its own savepoint; replies go out only after
//! the commit. A grouped operation (a scan's batch) runs in a transaction of its own with
//! its seal: PostgreSQL writes a commit's pages once whatever its size, so there is no
//! write amplification for groups to save (issue 29's reason on SQLite), and a group of
//! one lands whole or not at all as before.
//!
//! A connection that broke (the server restarted, the network dropped) fails the
//! operations it was running with `StoreError::Away`, which passes: the next operation
//! connects again. Nothing is answered before its commit, so nothing is lost.
//!
//! Must not import: http, scan, walks, queue, ops, axum
use super::StoreError;
use super::counters;
use super::db::Db;
use super::pg::{PgConn, Server};
use super::writer::{Op, Reply, Stats, Status, Writer, batch_from, echo};
use crate::model::Counter;
use crossbeam_channel::Receiver;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;

/// The writer's connection, made again when it broke.
pub(super) struct Link {
    server: Server,
    conn: Option<PgConn>,
}

impl Link {
    pub(super) fn new(server: Server, conn: PgConn) -> Link {
        Link {
            server,
            conn: Some(conn),
        }
    }

    fn conn(&mut self) -> Result<&mut PgConn, StoreError> {
        if self.conn.as_ref().is_none_or(|c| c.client.is_closed()) {
            self.conn = None;
            tracing::info!(server = %self.server.name(), "connecting the writer to the database again");
            self.conn = Some(self.server.connect(false)?);
        }
        self.conn.as_mut().ok_or(StoreError::WriterGone)
    }

    /// Forgets a connection whose batch failed because the server went away: the client
    /// may not know yet that its socket is dead (a terminated backend answers one error,
    /// the reset comes on the next round trip), and the next batch must not find out.
    fn forget_if_away(&mut self, error: &StoreError) {
        if matches!(error, StoreError::Away(_)) {
            self.conn = None;
        }
    }
}

/// The writer thread of a PostgreSQL store. Rows changed are not counted there
/// (`WriteStats::rows` stays 0).
pub(super) fn start(link: Link, max_batch: usize) -> Result<Writer, StoreError> {
    Writer::spawn(move |receiver, stats| run(link, receiver, max_batch.max(1), stats))
}

fn run(mut link: Link, receiver: Receiver<Op>, max_batch: usize, stats: &Stats) {
    let mut carried: Option<Op> = None;
    loop {
        let op = match carried.take() {
            Some(op) => op,
            None => match receiver.recv() {
                Ok(op) => op,
                Err(_) => break,
            },
        };
        let batch = if op.group.is_some() {
            vec![op]
        } else {
            let (batch, next) = batch_from(op, &receiver, max_batch);
            carried = next;
            batch
        };
        run_batch(&mut link, batch, stats);
    }
}

/// Runs a batch in one transaction, each operation in a savepoint (a grouped one alone,
/// with its seal last), and answers every operation once the commit's fate is known.
fn run_batch(link: &mut Link, batch: Vec<Op>, stats: &Stats) {
    let conn = match link.conn() {
        Ok(conn) => conn,
        Err(e) => {
            tracing::warn!(error = %e, "the database is away; the write waits for it");
            return batch.into_iter().for_each(|op| (op.abort)(echo(&e)));
        }
    };
    let mut replies: Vec<Reply> = Vec::with_capacity(batch.len());
    let mut ops = batch.into_iter();
    let outcome = (|| -> Result<(), StoreError> {
        let mut tx = conn.client.transaction()?;
        for op in ops.by_ref() {
            let db = Db::postgres(tx.savepoint("op")?, &mut conn.statements);
            let Some((status, reply)) = run_one(&db, op) else {
                continue;
            };
            match status {
                Status::Ok => {
                    db.commit()?;
                    replies.push(reply);
                }
                Status::Failed(_) => replies.push(reply),
                Status::LeaseLost(_) => {
                    drop(db);
                    let count = Db::postgres(tx.savepoint("count")?, &mut conn.statements);
                    counters::bump(&count, Counter::FenceRejections, 1)?;
                    count.commit()?;
                    replies.push(reply);
                }
            }
        }
        Ok(tx.commit()?)
    })();
    match outcome {
        Ok(()) => {
            stats.ops.fetch_add(replies.len() as u64, Ordering::SeqCst);
            replies.into_iter().for_each(|reply| reply(None));
        }
        Err(e) => {
            tracing::error!(error = %e, "write batch rolled back");
            replies.into_iter().for_each(|reply| reply(Some(echo(&e))));
            ops.for_each(|op| (op.abort)(echo(&e)));
            link.forget_if_away(&e);
        }
    }
}

/// Runs an operation in its savepoint, then a grouped one's seal: a seal that fails turns
/// the operation's outcome into its failure (its write must not land). A panicking
/// operation is answered at once and yields nothing to defer.
fn run_one(db: &Db<'_>, op: Op) -> Option<(Status, Reply)> {
    let Op { run, abort, group } = op;
    let (status, reply) = match catch_unwind(AssertUnwindSafe(|| run(db))) {
        Ok(done) => done,
        Err(_) => {
            tracing::error!("a write operation panicked; it was rolled back");
            abort(StoreError::WriterGone);
            return None;
        }
    };
    let status = match (status, group) {
        (Status::Ok, Some(group)) => match (group.seal)(db) {
            Ok(()) => Status::Ok,
            Err(e) if e.is_lease_lost() => Status::LeaseLost(e),
            Err(e) => Status::Failed(e),
        },
        (status, _) => status,
    };
    // A grouped operation's reply answers its commit: a failed seal is that answer.
    let reply: Reply = match &status {
        Status::Ok => reply,
        Status::Failed(e) | Status::LeaseLost(e) => {
            let e = echo(e);
            Box::new(move |outcome| reply(Some(outcome.unwrap_or(e))))
        }
    };
    Some((status, reply))
}
