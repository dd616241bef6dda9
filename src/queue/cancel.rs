//! Local cancellation: one token per claimed lease, registered before the lease's first
//! heartbeat, tripped by a lost lease, a user's cancel or shutdown. The token is what stops
//! local work; the database fence is what stops its writes.

use crate::model::Target;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Why local work was told to stop. The first reason wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelReason {
    /// A fenced write or heartbeat matched nothing, or the lease outlived its ttl locally.
    LeaseLost = 1,
    /// The user (or an operator) cancelled the row.
    Cancelled = 2,
    /// The process is shutting down: the lease is handed back, not lost.
    Shutdown = 3,
}

#[derive(Clone, Debug, Default)]
pub struct CancelToken(Arc<AtomicU8>);

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }

    /// Trips the token; returns false if it had already been tripped (for another reason).
    pub fn cancel(&self, reason: CancelReason) -> bool {
        self.0
            .compare_exchange(0, reason as u8, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst) != 0
    }

    pub fn reason(&self) -> Option<CancelReason> {
        match self.0.load(Ordering::SeqCst) {
            1 => Some(CancelReason::LeaseLost),
            2 => Some(CancelReason::Cancelled),
            3 => Some(CancelReason::Shutdown),
            _ => None,
        }
    }
}

/// The tokens of the work this process is doing right now, by row.
#[derive(Debug, Default)]
pub struct Registry {
    live: Mutex<HashMap<(Target, i64), CancelToken>>,
}

impl Registry {
    fn map(&self) -> MutexGuard<'_, HashMap<(Target, i64), CancelToken>> {
        // A panic elsewhere while holding the lock leaves a usable map: recover it.
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers fresh work on a row. A shutdown already under way trips it at once.
    pub fn register(&self, target: Target, id: i64) -> CancelToken {
        let token = CancelToken::new();
        self.map().insert((target, id), token.clone());
        token
    }

    pub fn unregister(&self, target: Target, id: i64, token: &CancelToken) {
        let mut map = self.map();
        if map
            .get(&(target, id))
            .is_some_and(|t| Arc::ptr_eq(&t.0, &token.0))
        {
            map.remove(&(target, id));
        }
    }

    /// Trips the token of local work on a row, if any. True if there was such work.
    pub fn trip(&self, target: Target, id: i64, reason: CancelReason) -> bool {
        self.map()
            .get(&(target, id))
            .map(|t| t.cancel(reason))
            .is_some()
    }

    pub fn trip_all(&self, reason: CancelReason) {
        self.map().values().for_each(|t| {
            t.cancel(reason);
        });
    }

    pub fn len(&self) -> usize {
        self.map().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
