//! The injected clock. Everything that compares times against a lease takes `now` from here,
//! so tests can step time (a slept laptop, an expiry exactly at a boundary) deterministically.
//! Wall time on purpose: a monotonic clock stops while a machine sleeps, which is exactly the
//! case a lease must notice.
//!
//! Must not import: store, queue, http, ops

use crate::model::Millis;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Millis;
}

pub type SharedClock = Arc<dyn Clock>;

#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Millis {
        chrono::Utc::now().timestamp_millis()
    }
}

/// A clock that moves only when told to.
#[derive(Debug)]
pub struct FakeClock(AtomicI64);

impl FakeClock {
    pub fn new(start: Millis) -> Arc<Self> {
        Arc::new(FakeClock(AtomicI64::new(start)))
    }

    pub fn advance(&self, by: Millis) -> Millis {
        self.0.fetch_add(by, Ordering::SeqCst) + by
    }

    pub fn set(&self, to: Millis) {
        self.0.store(to, Ordering::SeqCst);
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Millis {
        self.0.load(Ordering::SeqCst)
    }
}
