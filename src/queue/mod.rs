//! The lease protocol at work (DESIGN.md section 4): the worker pool, the per-lease guard
//! (cancellation, heartbeat, local expiry), the maintenance loop, and the failure types that
//! say whether work is retried (`failure`). The statements
//! themselves live in `store/`; this module holds no SQL and no domain logic.
//!
//! Must not import: scan, walks, trash, thumbs, http, ops, rusqlite

pub mod cancel;
pub mod failure;
pub mod guard;
pub mod maintenance;
pub mod pool;

pub use cancel::{CancelReason, CancelToken, Registry};
pub use failure::{Failure, Retry, io_retry};
pub use guard::{GuardError, Hooks, LeaseGuard, NoHooks};
pub use maintenance::{Maintenance, MaintenanceConfig};
pub use pool::{
    Handlers, JobDone, JobHandler, PoolConfig, ScanDone, ScanHandler, WorkContext, WorkError,
    WorkerPool,
};
