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
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    live: HashMap<(Target, i64), CancelToken>,
    /// Set by `close`: work registered afterwards starts cancelled.
    closed: Option<CancelReason>,
}

impl Registry {
    fn state(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves a usable map: recover it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers fresh work on a row. After `close`, the token comes back already tripped,
    /// so work claimed while the process was stopping never starts.
    pub fn register(&self, target: Target, id: i64) -> CancelToken {
        let token = CancelToken::new();
        let mut state = self.state();
        if let Some(reason) = state.closed {
            token.cancel(reason);
        }
        state.live.insert((target, id), token.clone());
        token
    }

    pub fn unregister(&self, target: Target, id: i64, token: &CancelToken) {
        let live = &mut self.state().live;
        if live
            .get(&(target, id))
            .is_some_and(|t| Arc::ptr_eq(&t.0, &token.0))
        {
            live.remove(&(target, id));
        }
    }

    /// Trips the token of local work on a row, if any. True if there was such work.
    pub fn trip(&self, target: Target, id: i64, reason: CancelReason) -> bool {
        self.state()
            .live
            .get(&(target, id))
            .map(|t| t.cancel(reason))
            .is_some()
    }

    /// Trips every token, and every token registered from now on.
    pub fn close(&self, reason: CancelReason) {
        let mut state = self.state();
        state.closed = Some(reason);
        state.live.values().for_each(|t| {
            t.cancel(reason);
        });
    }

    pub fn len(&self) -> usize {
        self.state().live.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_registered_after_close_starts_cancelled() {
        let registry = Registry::default();
        let before = registry.register(Target::Job, 1);
        registry.close(CancelReason::Shutdown);
        let after = registry.register(Target::Job, 2);
        assert_eq!(before.reason(), Some(CancelReason::Shutdown));
        assert_eq!(after.reason(), Some(CancelReason::Shutdown));
    }

    #[test]
    fn the_first_reason_wins_and_unregister_spares_a_newer_token() {
        let registry = Registry::default();
        let old = registry.register(Target::ScanRun, 7);
        assert!(old.cancel(CancelReason::LeaseLost));
        assert!(!old.cancel(CancelReason::Cancelled));
        assert_eq!(old.reason(), Some(CancelReason::LeaseLost));
        let new = registry.register(Target::ScanRun, 7);
        registry.unregister(Target::ScanRun, 7, &old);
        assert!(registry.trip(Target::ScanRun, 7, CancelReason::Cancelled));
        assert_eq!(new.reason(), Some(CancelReason::Cancelled));
    }
}
