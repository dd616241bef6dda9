//! Server-sent events: scan queued, started, progress and finished, and `walk` (a walk's
//! state after a batch committed, a chain was queued, claimed or released, or it finished).
//! One poller per server reads the run history and the walk chains from the pool and
//! publishes what changed on a broadcast channel; every `/api/events` stream relays it.
//! Polling the database (not hooks in the workers) means an event is only ever published
//! after the fenced commit it reports has landed, and also shows work that another process
//! on the same data dir does. Streams end when the server shuts down. Owns no writes.

use super::WalkKinds;
use super::walks::{WalkOut, one_state};
use crate::model::{RunState, ScanRun, WalkKindId, WalkRecord};
use crate::store::Store;
use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use std::collections::HashMap;
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::{broadcast, watch};

/// How many recent runs the poller compares.
const WINDOW: i64 = 200;

/// One change, as sent to the page.
#[derive(Clone, Debug)]
pub struct BusEvent {
    /// `scan_queued`, `scan_started`, `scan_progress`, `scan_finished` or `walk`.
    pub kind: &'static str,
    pub data: Data,
}

#[derive(Clone, Debug, serde::Serialize)]
#[serde(untagged)]
pub enum Data {
    Run(ScanRun),
    Walk(WalkOut),
}

/// The event bus of one server.
#[derive(Clone)]
pub struct Events {
    tx: broadcast::Sender<BusEvent>,
    shutdown: watch::Receiver<bool>,
}

/// A run as the poller last saw it: state, progress, and when it last started.
type RunMark = (RunState, Option<String>, Option<crate::model::Millis>);
type Seen = HashMap<i64, RunMark>;

/// What a walk's event depends on, read cheaply (no counting) each poll: the live chain
/// row's id, state, generation and payload, and the record. Heartbeats change none of it.
type WalkMark = (Option<(i64, &'static str, i64, String)>, Option<WalkRecord>);
type WalksSeen = HashMap<WalkKindId, WalkMark>;

fn walk_mark(store: &Store, kind: WalkKindId) -> Result<WalkMark, crate::store::StoreError> {
    let chain = store
        .live_job(kind.job_kind())?
        .map(|j| (j.id, j.state.as_str(), j.generation, j.payload));
    Ok((chain, store.walk_record(kind)?))
}

fn walk_marks(store: &Store, walks: &WalkKinds) -> Result<WalksSeen, crate::store::StoreError> {
    walks
        .iter()
        .map(|&(kind, _)| Ok((kind, walk_mark(store, kind)?)))
        .collect()
}

impl Events {
    /// Takes the baseline now (so that only later changes are events) and starts the
    /// poller on the current tokio runtime. It stops when `shutdown` turns true.
    pub fn start(
        store: Store,
        every: Duration,
        walks: WalkKinds,
        shutdown: watch::Receiver<bool>,
    ) -> Result<Events, crate::store::StoreError> {
        let (tx, _) = broadcast::channel(1024);
        let seen = super::off_runtime(|| -> Result<Baseline, crate::store::StoreError> {
            Ok(Baseline {
                runs: snapshot(&store.scan_runs(None, WINDOW)?),
                walks: walk_marks(&store, &walks)?,
            })
        })?;
        let events = Events { tx, shutdown };
        tokio::spawn(poll(store, every, walks, seen, events.clone()));
        Ok(events)
    }

    pub fn subscribe(&self) -> broadcast::Receiver<BusEvent> {
        self.tx.subscribe()
    }
}

fn snapshot(runs: &[ScanRun]) -> Seen {
    runs.iter()
        .map(|r| (r.id, (r.state, r.progress.clone(), r.started_at)))
        .collect()
}

/// What became of `run` since it was last `seen`.
fn change(run: &ScanRun, seen: Option<&RunMark>) -> Option<&'static str> {
    let terminal = run.state.is_terminal();
    match seen {
        None if terminal => Some("scan_finished"),
        None if run.state == RunState::Running => Some("scan_started"),
        None => Some("scan_queued"),
        Some((state, ..)) if *state != run.state && terminal => Some("scan_finished"),
        Some((state, ..)) if *state != run.state && run.state == RunState::Running => {
            Some("scan_started")
        }
        Some((state, ..)) if *state != run.state => Some("scan_queued"),
        Some((_, progress, _)) if *progress != run.progress && !terminal => Some("scan_progress"),
        Some(_) => None,
    }
}

/// The events that announce what became of `run` since it was last `seen`. A run that
/// started and ended between two polls is announced as started, then finished, so that every
/// run that ran reads the same to a client (queued, started, finished) whatever the timing:
/// the page's live view never misses a scan that was quicker than a poll.
fn run_events(run: &ScanRun, seen: Option<&RunMark>) -> Vec<BusEvent> {
    let Some(kind) = change(run, seen) else {
        return Vec::new();
    };
    let event = |kind, run: ScanRun| BusEvent {
        kind,
        data: Data::Run(run),
    };
    // Started unseen: a claim the poller did not see as running (a fresh `started_at`).
    let started_unseen = run.started_at.is_some()
        && seen.is_none_or(|(state, _, at)| *state != RunState::Running && *at != run.started_at);
    let mut out = Vec::with_capacity(2);
    if kind == "scan_finished" && started_unseen {
        let started = ScanRun {
            state: RunState::Running,
            reason: None,
            finished_at: None,
            ..run.clone()
        };
        out.push(event("scan_started", started));
    }
    out.push(event(kind, run.clone()));
    out
}

/// What the poller saw last.
struct Baseline {
    runs: Seen,
    walks: WalksSeen,
}

/// One poll: the events since `seen`, and the new baseline. Blocking (store reads).
/// A walk's event carries its state, whose `left` counts the assets still to visit: at a
/// million assets that count is a read of the whole table, and a walking chain changes its
/// mark at every batch. So it is made only while a stream `listening` will relay it; the
/// marks move on either way, so a stream that connects later gets no stale walk event (the
/// page reads `/api/walks` when it loads).
fn poll_once(
    store: &Store,
    walks: &WalkKinds,
    seen: &Baseline,
    listening: bool,
) -> Result<(Vec<BusEvent>, Baseline), crate::store::StoreError> {
    let runs = store.scan_runs(None, WINDOW)?;
    // Oldest first, so that a queued run is announced before its successor.
    let mut out: Vec<BusEvent> = runs
        .iter()
        .rev()
        .flat_map(|run| run_events(run, seen.runs.get(&run.id)))
        .collect();
    let marks = walk_marks(store, walks)?;
    for &(kind, scheme) in walks.iter() {
        if listening && marks.get(&kind) != seen.walks.get(&kind) {
            let walk = one_state(store, kind, scheme)?;
            out.push(BusEvent {
                kind: "walk",
                data: Data::Walk(walk),
            });
        }
    }
    let next = Baseline {
        runs: snapshot(&runs),
        walks: marks,
    };
    Ok((out, next))
}

async fn poll(store: Store, every: Duration, walks: WalkKinds, seen: Baseline, events: Events) {
    let mut shutdown = events.shutdown.clone();
    let mut tick = tokio::time::interval(every);
    let mut seen = std::sync::Arc::new(seen);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        let (reader, kinds, last) = (store.clone(), walks.clone(), seen.clone());
        let listening = events.tx.receiver_count() > 0;
        let polled =
            tokio::task::spawn_blocking(move || poll_once(&reader, &kinds, &last, listening)).await;
        let (published, next) = match polled {
            Ok(Ok(done)) => done,
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "event poll failed; trying again");
                continue;
            }
            Err(_) => return,
        };
        for event in published {
            let _ = events.tx.send(event);
        }
        seen = std::sync::Arc::new(next);
    }
}

/// `GET /api/events`: the stream of run events. A client that fell behind gets a `resync`
/// event (reload the run list) instead of the events it missed.
pub async fn stream(
    State(events): State<Events>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let rx = events.subscribe();
    let shutdown = events.shutdown.clone();
    let stream =
        futures_util::stream::unfold((rx, shutdown), |(mut rx, mut shutdown)| async move {
            if *shutdown.borrow() {
                return None;
            }
            let event = tokio::select! {
                got = rx.recv() => match got {
                    Ok(e) => Event::default()
                        .event(e.kind)
                        .json_data(&e.data)
                        .unwrap_or_else(|_| Event::default().event("resync").data("{}")),
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        Event::default().event("resync").data("{}")
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
                _ = shutdown.changed() => return None,
            };
            Some((Ok(event), (rx, shutdown)))
        });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Trigger;

    fn run(state: RunState, started_at: Option<i64>) -> ScanRun {
        ScanRun {
            id: 1,
            library_id: 1,
            scope: String::new(),
            trigger: Trigger::Api,
            watch_event: None,
            state,
            reason: None,
            generation: 1,
            attempt: 1,
            run_at: 0,
            lease_owner: None,
            lease_expires_at: None,
            progress: None,
            requested_at: 0,
            accepted_at: 0,
            started_at,
            finished_at: None,
            updated_at: 0,
            predecessor_id: None,
            forced: false,
        }
    }

    fn kinds(run: &ScanRun, seen: Option<&RunMark>) -> Vec<(&'static str, RunState)> {
        run_events(run, seen)
            .into_iter()
            .map(|e| match e.data {
                Data::Run(r) => (e.kind, r.state),
                Data::Walk(_) => panic!("a run gives run events"),
            })
            .collect()
    }

    #[test]
    fn a_run_that_started_and_ended_between_two_polls_is_announced_started_then_finished() {
        let done = run(RunState::Completed, Some(5));
        let started = ("scan_started", RunState::Running);
        let finished = ("scan_finished", RunState::Completed);
        // Never seen, or seen waiting: it ran unseen.
        assert_eq!(kinds(&done, None), [started, finished]);
        let waiting = (RunState::Accepted, None, None);
        assert_eq!(kinds(&done, Some(&waiting)), [started, finished]);
        // Seen running: its start was announced already.
        let running = (RunState::Running, None, Some(5));
        assert_eq!(kinds(&done, Some(&running)), [finished]);
        // Handed back after it ran (same start), then cancelled: no second start.
        let handed_back = (RunState::Accepted, None, Some(5));
        let cancelled = run(RunState::Cancelled, Some(5));
        assert_eq!(
            kinds(&cancelled, Some(&handed_back)),
            [("scan_finished", RunState::Cancelled)]
        );
        // Cancelled before it ever started: no start.
        let never = run(RunState::Cancelled, None);
        assert_eq!(
            kinds(&never, Some(&waiting)),
            [("scan_finished", RunState::Cancelled)]
        );
    }

    /// Nobody listening: a walk queued meanwhile is not announced (its state, which counts
    /// the assets left, is not made), and not announced late to a stream that connects after.
    #[test]
    fn a_walk_change_is_announced_only_while_a_stream_listens() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock: crate::clock::SharedClock = std::sync::Arc::new(crate::clock::SystemClock);
        let options = crate::store::StoreOptions::default();
        let store = Store::open(&dir.path().join("m.db"), clock, options).expect("store");
        let walks: WalkKinds = std::sync::Arc::from([(WalkKindId::ContentHash, 1)]);
        let walk_events = |seen: &Baseline, listening: bool| {
            let (events, next) = poll_once(&store, &walks, seen, listening).expect("poll");
            let n = events.iter().filter(|e| e.kind == "walk").count();
            (n, next)
        };
        let start = Baseline {
            runs: Seen::new(),
            walks: walk_marks(&store, &walks).expect("marks"),
        };
        crate::walks::request(&store, WalkKindId::ContentHash, 1, true).expect("queue");
        let (unheard, later) = walk_events(&start, false);
        assert_eq!(unheard, 0, "announced with nobody listening");
        assert_eq!(walk_events(&later, true).0, 0, "announced late");
        assert_eq!(
            walk_events(&start, true).0,
            1,
            "a listener hears the change"
        );
    }
}
