//! Server-sent events: scan queued, started, progress and finished. One poller per server
//! reads the run history from the pool and publishes what changed on a broadcast channel;
//! every `/api/events` stream relays it. Polling the database (not hooks in the workers)
//! also shows scans that another process on the same data dir runs. Streams end when the
//! server shuts down. Owns no writes.

use crate::model::{RunState, ScanRun};
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

/// One change of a scan run, as sent to the page.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RunEvent {
    /// `scan_queued`, `scan_started`, `scan_progress` or `scan_finished`.
    pub kind: &'static str,
    pub run: ScanRun,
}

/// The event bus of one server.
#[derive(Clone)]
pub struct Events {
    tx: broadcast::Sender<RunEvent>,
    shutdown: watch::Receiver<bool>,
}

type Seen = HashMap<i64, (RunState, Option<String>)>;

impl Events {
    /// Takes the baseline now (so that only later changes are events) and starts the
    /// poller on the current tokio runtime. It stops when `shutdown` turns true.
    pub fn start(
        store: Store,
        every: Duration,
        shutdown: watch::Receiver<bool>,
    ) -> Result<Events, crate::store::StoreError> {
        let (tx, _) = broadcast::channel(1024);
        let seen = snapshot(&store.scan_runs(None, WINDOW)?);
        let events = Events { tx, shutdown };
        tokio::spawn(poll(store, every, seen, events.clone()));
        Ok(events)
    }

    pub fn subscribe(&self) -> broadcast::Receiver<RunEvent> {
        self.tx.subscribe()
    }
}

fn snapshot(runs: &[ScanRun]) -> Seen {
    runs.iter()
        .map(|r| (r.id, (r.state, r.progress.clone())))
        .collect()
}

/// What became of `run` since it was last `seen`.
fn change(run: &ScanRun, seen: Option<&(RunState, Option<String>)>) -> Option<&'static str> {
    let terminal = run.state.is_terminal();
    match seen {
        None if terminal => Some("scan_finished"),
        None if run.state == RunState::Running => Some("scan_started"),
        None => Some("scan_queued"),
        Some((state, _)) if *state != run.state && terminal => Some("scan_finished"),
        Some((state, _)) if *state != run.state && run.state == RunState::Running => {
            Some("scan_started")
        }
        Some((state, _)) if *state != run.state => Some("scan_queued"),
        Some((_, progress)) if *progress != run.progress && !terminal => Some("scan_progress"),
        Some(_) => None,
    }
}

async fn poll(store: Store, every: Duration, mut seen: Seen, events: Events) {
    let mut shutdown = events.shutdown.clone();
    let mut tick = tokio::time::interval(every);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        let reader = store.clone();
        let runs = match tokio::task::spawn_blocking(move || reader.scan_runs(None, WINDOW)).await {
            Ok(Ok(runs)) => runs,
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "event poll failed; trying again");
                continue;
            }
            Err(_) => return,
        };
        // Oldest first, so that a queued run is announced before its successor.
        for run in runs.iter().rev() {
            if let Some(kind) = change(run, seen.get(&run.id)) {
                let _ = events.tx.send(RunEvent {
                    kind,
                    run: run.clone(),
                });
            }
        }
        seen = snapshot(&runs);
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
                        .json_data(&e.run)
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
