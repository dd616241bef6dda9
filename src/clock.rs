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

    /// Whether this clock tells the time of day (a host's own clock, right or skewed),
    /// rather than a time a test steps. A store shared by several hosts takes lease times
    /// from its database server instead of such a clock: hosts' clocks differ.
    fn tells_the_time_of_day(&self) -> bool {
        false
    }
}

pub type SharedClock = Arc<dyn Clock>;

#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Millis {
        chrono::Utc::now().timestamp_millis()
    }

    fn tells_the_time_of_day(&self) -> bool {
        true
    }
}

/// The system clock off by a fixed amount: a host whose clock is wrong (tests of several
/// hosts on one database).
#[derive(Debug, Clone, Copy)]
pub struct SkewedClock(pub Millis);

impl Clock for SkewedClock {
    fn now(&self) -> Millis {
        SystemClock.now() + self.0
    }

    fn tells_the_time_of_day(&self) -> bool {
        true
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
