//! The guard around one claimed lease (DESIGN.md section 4): cancellation registered first,
//! the first fenced heartbeat before any side effect, then a heartbeat thread renewing every
//! ttl/3 that trips the cancellation when the lease is lost, and a local expiry check
//! (a slept machine) before every write. Owns no domain logic and no SQL.

use super::cancel::{CancelReason, CancelToken, Registry};
use crate::model::{Counter, Lease, Millis};
use crate::store::{Store, StoreError};
use crossbeam_channel::{Receiver, Sender, bounded};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// Why a guarded write did not happen.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    #[error("the lease on {0:?} {1} is lost; nothing was written")]
    LeaseLost(crate::model::Target, i64),
    #[error("work on {0:?} {1} was cancelled ({2:?})")]
    Cancelled(crate::model::Target, i64, CancelReason),
    #[error(transparent)]
    Store(StoreError),
}

/// Test seams: a test pauses a worker at these points on a barrier to stage a race
/// deterministically. The default does nothing.
pub trait Hooks: Send + Sync + 'static {
    /// After the claim and the cancellation registration, before the first heartbeat.
    fn before_first_heartbeat(&self, _lease: &Lease, _token: &CancelToken) {}
    /// After the handler returned, before the completion or failure is written.
    fn before_ack(&self, _lease: &Lease) {}
}

/// No hooks.
pub struct NoHooks;
impl Hooks for NoHooks {}

pub struct LeaseGuard {
    store: Store,
    lease: Lease,
    ttl: Millis,
    token: CancelToken,
    registry: Arc<Registry>,
    /// The lease's expiry as of its last successful renew; shared with the heartbeat thread.
    expires_at: Arc<AtomicI64>,
    heartbeat: Mutex<Option<(Sender<()>, JoinHandle<()>)>>,
}

impl LeaseGuard {
    /// Step one of a claim: registers the lease's cancellation token, before anything else
    /// happens, so a cancel arriving from now on is seen.
    pub fn register(store: &Store, lease: Lease, ttl: Millis, registry: &Arc<Registry>) -> Self {
        let token = registry.register(lease.target, lease.id);
        LeaseGuard {
            store: store.clone(),
            expires_at: Arc::new(AtomicI64::new(lease.expires_at)),
            lease,
            ttl,
            token,
            registry: registry.clone(),
            heartbeat: Mutex::new(None),
        }
    }

    /// Step two: the first fenced heartbeat, before any side effect, then the heartbeat
    /// thread. Fails, having written nothing, when the lease was lost or the work cancelled
    /// before it could start.
    pub fn begin(&self, heartbeat_every: Duration, hooks: &dyn Hooks) -> Result<(), GuardError> {
        hooks.before_first_heartbeat(&self.lease, &self.token);
        self.first_heartbeat()?;
        self.spawn_heartbeat(heartbeat_every);
        Ok(())
    }

    fn first_heartbeat(&self) -> Result<(), GuardError> {
        self.ensure_live()?;
        let lease = self.guarded(|store, lease| store.renew(lease, self.ttl))?;
        self.expires_at.store(lease.expires_at, Ordering::SeqCst);
        // A cancel may have landed while the heartbeat was in flight.
        self.ensure_live()
    }

    /// A fenced renew right now, for a side effect that no fenced write covers (a file's
    /// rename): the lease is known held, for a whole ttl, just before it. Refused, having
    /// written nothing, once the time since the last renew exceeds the ttl.
    pub fn confirm(&self) -> Result<(), GuardError> {
        self.first_heartbeat()
    }

    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    pub fn token(&self) -> &CancelToken {
        &self.token
    }

    /// Checks, without writing, that local work may go on and may write: not cancelled,
    /// and the lease has not outlived its ttl since the last successful renew (a machine
    /// that slept through its heartbeats must not write before it knows it still holds it).
    pub fn ensure_live(&self) -> Result<(), GuardError> {
        if let Some(reason) = self.token.reason() {
            return Err(self.cancelled_error(reason));
        }
        self.ensure_unexpired()
    }

    fn ensure_unexpired(&self) -> Result<(), GuardError> {
        if self.store.now() >= self.expires_at.load(Ordering::SeqCst) {
            self.token.cancel(CancelReason::LeaseLost);
            // A rejection that never reached the database is still a fence rejection.
            let _ = self.store.bump_counter(Counter::FenceRejections);
            return Err(GuardError::LeaseLost(self.lease.target, self.lease.id));
        }
        Ok(())
    }

    fn cancelled_error(&self, reason: CancelReason) -> GuardError {
        match reason {
            CancelReason::LeaseLost => GuardError::LeaseLost(self.lease.target, self.lease.id),
            r => GuardError::Cancelled(self.lease.target, self.lease.id, r),
        }
    }

    /// Runs one fenced store write under this lease: refused locally when the lease is
    /// no longer live; a `LeaseLost` from the database trips the cancellation.
    pub fn guarded<T>(
        &self,
        write: impl FnOnce(&Store, &Lease) -> Result<T, StoreError>,
    ) -> Result<T, GuardError> {
        self.ensure_live()?;
        self.write(write)
    }

    /// The final write of a claim (complete, fail, hand back). Like `guarded`, except that a
    /// shutdown does not block it: the lease is still ours until it is handed back.
    pub fn ack<T>(
        &self,
        write: impl FnOnce(&Store, &Lease) -> Result<T, StoreError>,
    ) -> Result<T, GuardError> {
        match self.ensure_live() {
            Err(GuardError::Cancelled(_, _, CancelReason::Shutdown)) => self.ensure_unexpired()?,
            other => other?,
        }
        self.write(write)
    }

    fn write<T>(
        &self,
        write: impl FnOnce(&Store, &Lease) -> Result<T, StoreError>,
    ) -> Result<T, GuardError> {
        write(&self.store, &self.lease).map_err(|e| {
            if e.is_lease_lost() {
                self.token.cancel(CancelReason::LeaseLost);
                GuardError::LeaseLost(self.lease.target, self.lease.id)
            } else {
                GuardError::Store(e)
            }
        })
    }

    fn spawn_heartbeat(&self, every: Duration) {
        let (stop_tx, stop_rx) = bounded::<()>(0);
        let beat = Heartbeat {
            store: self.store.clone(),
            lease: self.lease.clone(),
            ttl: self.ttl,
            token: self.token.clone(),
            expires_at: self.expires_at.clone(),
        };
        let spawned = std::thread::Builder::new()
            .name(format!("mediadex-heartbeat-{}", self.lease.id))
            .spawn(move || beat.run(every, &stop_rx));
        match spawned {
            Ok(handle) => {
                *self
                    .heartbeat
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some((stop_tx, handle));
            }
            // Without a heartbeat the lease will expire; stop the work rather than race it.
            Err(_) => {
                self.token.cancel(CancelReason::LeaseLost);
            }
        }
    }

    /// Stops the heartbeat thread and waits for a renew in flight, so the final ack is not
    /// followed by a heartbeat that would find the row finished. True if a heartbeat was
    /// still running (a handler that writes its own completion stops it first: after that
    /// commit, this answers false).
    pub fn stop_heartbeat(&self) -> bool {
        let taken = self
            .heartbeat
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let running = taken.is_some();
        if let Some((stop, handle)) = taken {
            drop(stop);
            let _ = handle.join();
        }
        running
    }
}

impl Drop for LeaseGuard {
    fn drop(&mut self) {
        self.stop_heartbeat();
        self.registry
            .unregister(self.lease.target, self.lease.id, &self.token);
    }
}

struct Heartbeat {
    store: Store,
    lease: Lease,
    ttl: Millis,
    token: CancelToken,
    expires_at: Arc<AtomicI64>,
}

impl Heartbeat {
    fn run(self, every: Duration, stop: &Receiver<()>) {
        // The stop sender is dropped, never used: a disconnect is the stop signal.
        while let Err(crossbeam_channel::RecvTimeoutError::Timeout) = stop.recv_timeout(every) {
            if self.token.is_cancelled() {
                return;
            }
            if self.store.now() >= self.expires_at.load(Ordering::SeqCst) {
                tracing::warn!(
                    id = self.lease.id,
                    "lease outlived its ttl (slept?): stopping"
                );
                self.token.cancel(CancelReason::LeaseLost);
                let _ = self.store.bump_counter(Counter::FenceRejections);
                return;
            }
            match self.store.renew(&self.lease, self.ttl) {
                Ok(lease) => self.expires_at.store(lease.expires_at, Ordering::SeqCst),
                Err(e) if e.is_lease_lost() => {
                    tracing::warn!(id = self.lease.id, "lease lost: cancelling local work");
                    self.token.cancel(CancelReason::LeaseLost);
                    return;
                }
                // A busy database is retried at the next beat; the expiry check above
                // stops the work if the renewals never get through.
                Err(e) => tracing::warn!(id = self.lease.id, error = %e, "heartbeat failed"),
            }
        }
    }
}
