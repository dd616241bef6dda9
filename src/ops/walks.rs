//! Walk chains on request: which kinds this process runs (and under which scheme), a walk's
//! state, a start (the live chain, or a new one; one chain per kind through the unique
//! index), a start in this process (`mediadex walk`: the walk's start, clamp and rollback
//! first, as at any start) and an operator's force-release of the running chain.

use super::{Error, Services};
use crate::model::{Millis, WalkKindId};
use crate::walks::{Release, WalkState};

/// The kind `name` names, with this process's scheme for it; `UnknownWalk` for a name that
/// is no walk, or a walk this process cannot run (faces without a detector).
pub fn kind(s: &Services, name: &str) -> Result<(WalkKindId, i64), Error> {
    let unknown = || Error::UnknownWalk {
        name: name.to_string(),
        known: s
            .walks
            .iter()
            .map(|(k, _)| k.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    };
    let kind = WalkKindId::parse(name).ok_or_else(unknown)?;
    scheme(s, kind)
        .map(|scheme| (kind, scheme))
        .ok_or_else(unknown)
}

/// This process's scheme for `kind`, when it runs that walk.
pub fn scheme(s: &Services, kind: WalkKindId) -> Option<i64> {
    s.walks
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|&(_, scheme)| scheme)
}

/// The state of every walk this process runs.
pub fn states(s: &Services) -> Result<Vec<WalkState>, Error> {
    s.walks
        .iter()
        .map(|&(kind, scheme)| Ok(crate::walks::state(&s.store, kind, scheme)?))
        .collect()
}

/// Asks for a walk of `kind` (the live chain, or a new one; `restart` replaces it with one
/// that re-visits every asset); answers whether a chain was created, and the walk's state.
pub fn start(
    s: &Services,
    kind: WalkKindId,
    scheme: i64,
    restart: bool,
) -> Result<(bool, WalkState), Error> {
    let enqueued = crate::walks::request(&s.store, kind, scheme, restart)?;
    (s.wake)();
    Ok((
        enqueued.created,
        crate::walks::state(&s.store, kind, scheme)?,
    ))
}

/// `mediadex walk`'s request: this process starts here, so the walk's start (clamp,
/// rollback) comes first; its chain (a rollback's when it is one), else a new one; a
/// `restart` replaces it with one that re-visits every asset.
pub fn start_here(
    s: &Services,
    kind: WalkKindId,
    scheme: i64,
    restart: bool,
    ttl: Millis,
) -> Result<(), Error> {
    let boot = crate::walks::boot(&s.store, kind, scheme, ttl)?;
    if restart || boot.chain.is_none() {
        let payload = crate::walks::Payload {
            rollback: boot.rollback,
            ..crate::walks::Payload::fresh(scheme, restart)
        };
        crate::walks::ask(&s.store, kind, payload, restart)?;
    }
    (s.wake)();
    Ok(())
}

/// Puts the running chain row back under a new generation; its holder's later writes land
/// nothing, and a worker claims it again. Answers the walk's state.
pub fn release(s: &Services, kind: WalkKindId, scheme: i64) -> Result<WalkState, Error> {
    match crate::walks::release(&s.store, kind)? {
        Release::Released(_) => {}
        Release::NoChain => return Err(Error::NoChain(kind)),
        Release::NotRunning(id) => return Err(Error::ChainWaiting(kind, id)),
        Release::Finished(id) => return Err(Error::ChainEnded(kind, id)),
    }
    (s.wake)();
    Ok(crate::walks::state(&s.store, kind, scheme)?)
}
