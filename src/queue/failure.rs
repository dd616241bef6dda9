//! Why an attempt at work failed, typed so the pool can tell a cause that passes by itself
//! (another process holding the database's write lock, a NAS that dropped off for a moment)
//! from one that fails again however often it is tried (bad data, corrupt media, a bug).
//! Owns the classification only: what the pool does with each class is `pool`'s, and the
//! store's own errors say for themselves whether they pass (`StoreError::is_transient`).

use crate::store::StoreError;
use std::io;

/// Whether trying the same work again, unchanged, can succeed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// The cause passes by itself: try again after a backoff.
    Transient,
    /// The same input fails the same way: fail with the reason.
    Permanent,
}

/// Why an attempt failed. The text is the reason the run or job record shows the user.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// A store operation failed (locked, its read pool exhausted, a SQL error, ...).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Reading or listing the library failed; `what` names the file or folder.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    /// The library (its root, a share) is not there right now: unmounted, or gone offline
    /// while the work ran. Nothing it saw may decide anything; it is looked at again later.
    #[error("{0}")]
    Unavailable(String),
    /// The work was stopped part-way by something that has passed since (its lease was live
    /// again when it looked): the same work is simply done again.
    #[error("{0}")]
    Interrupted(String),
    /// The input is not what it must be (a row gone, data that cannot be read as what it
    /// claims to be): the same input fails again.
    #[error("{0}")]
    BadData(String),
    /// A bug: a handler or one of its threads panicked, an invariant did not hold.
    #[error("{0}")]
    Bug(String),
}

impl Failure {
    /// How a store error retries: as it says itself.
    pub fn store_retry(e: &StoreError) -> Retry {
        if e.is_transient() {
            Retry::Transient
        } else {
            Retry::Permanent
        }
    }

    pub fn retry(&self) -> Retry {
        let transient = match self {
            Failure::Store(e) => return Failure::store_retry(e),
            Failure::Io { source, .. } => io_retry(source) == Retry::Transient,
            Failure::Unavailable(_) | Failure::Interrupted(_) => true,
            Failure::BadData(_) | Failure::Bug(_) => false,
        };
        if transient {
            Retry::Transient
        } else {
            Retry::Permanent
        }
    }
}

/// Whether an I/O error on a library file or folder can pass by itself. Network file
/// systems (NFS, SMB) answer a server that is away for a moment with these: a timeout, a
/// broken or lost connection, a stale handle (the share was remounted), "try again", an
/// interrupted call, a busy resource, and EIO (a soft NFS mount reports a server that did not
/// answer in time as an I/O error). Everything else (not found, permission denied, not a
/// directory, invalid data) says the same thing on the next try.
pub fn io_retry(e: &io::Error) -> Retry {
    use io::ErrorKind as K;
    let by_kind = matches!(
        e.kind(),
        K::TimedOut
            | K::Interrupted
            | K::WouldBlock
            | K::NotConnected
            | K::ConnectionReset
            | K::ConnectionAborted
            | K::BrokenPipe
            | K::HostUnreachable
            | K::NetworkUnreachable
            | K::NetworkDown
            | K::ResourceBusy
    );
    if by_kind || e.raw_os_error().is_some_and(transient_errno) {
        Retry::Transient
    } else {
        Retry::Permanent
    }
}

/// The raw codes the standard library has no stable kind for.
#[cfg(unix)]
fn transient_errno(code: i32) -> bool {
    [libc::EIO, libc::ESTALE, libc::EHOSTDOWN].contains(&code)
}

#[cfg(not(unix))]
fn transient_errno(_code: i32) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(code: i32) -> io::Error {
        io::Error::from_raw_os_error(code)
    }

    #[cfg(unix)]
    #[test]
    fn a_nas_blip_is_transient_and_a_missing_or_forbidden_file_is_not() {
        for code in [
            libc::EIO,
            libc::ETIMEDOUT,
            libc::ENOTCONN,
            libc::ESTALE,
            libc::EAGAIN,
            libc::EINTR,
            libc::ECONNRESET,
            libc::EHOSTDOWN,
            libc::EHOSTUNREACH,
        ] {
            assert_eq!(io_retry(&os(code)), Retry::Transient, "{}", os(code));
        }
        for code in [
            libc::ENOENT,
            libc::EACCES,
            libc::EPERM,
            libc::ENOTDIR,
            libc::EISDIR,
            libc::EINVAL,
            libc::ELOOP,
            libc::ENAMETOOLONG,
        ] {
            assert_eq!(io_retry(&os(code)), Retry::Permanent, "{}", os(code));
        }
        let bad = io::Error::new(io::ErrorKind::InvalidData, "truncated");
        assert_eq!(io_retry(&bad), Retry::Permanent);
    }

    #[test]
    fn a_locked_store_is_transient_and_bad_data_or_a_bug_is_permanent() {
        assert_eq!(Failure::Store(StoreError::Locked).retry(), Retry::Transient);
        let sql = StoreError::Conflict("move 3 has unsettled intents".into());
        assert_eq!(Failure::Store(sql).retry(), Retry::Permanent);
        assert_eq!(
            Failure::Unavailable("unmounted".into()).retry(),
            Retry::Transient
        );
        assert_eq!(
            Failure::BadData("library 3 is gone".into()).retry(),
            Retry::Permanent
        );
        assert_eq!(
            Failure::Bug("the handler panicked".into()).retry(),
            Retry::Permanent
        );
        let io = Failure::Io {
            what: "cannot start the walker".into(),
            source: io::Error::from(io::ErrorKind::WouldBlock),
        };
        assert_eq!(io.retry(), Retry::Transient);
        assert_eq!(
            io.to_string(),
            "cannot start the walker: operation would block"
        );
    }
}
