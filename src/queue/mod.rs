//! The lease protocol at work (DESIGN.md section 4): the worker pool, the per-lease guard
//! (cancellation, heartbeat, local expiry), and the maintenance loop. The statements
//! themselves live in `store/`; this module holds no SQL and no domain logic.
//!
//! Must not import: scan, walks, trash, thumbs, http, ops, rusqlite

pub mod cancel;
pub mod guard;
pub mod maintenance;
pub mod pool;

pub use cancel::{CancelReason, CancelToken, Registry};
pub use guard::{GuardError, Hooks, LeaseGuard, NoHooks};
pub use maintenance::{Maintenance, MaintenanceConfig};
pub use pool::{
    Handlers, JobDone, JobHandler, PoolConfig, ScanDone, ScanHandler, WorkContext, WorkError,
    WorkerPool,
};
