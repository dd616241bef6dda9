//! `/metrics` in the Prometheus text format (version 0.0.4). Renders a `MetricsSnapshot`
//! read from the database, so every process sharing the data dir reports the same figures.
//! Labels are bounded: the kind of work (job kinds the binary knows, `scan`), the asset
//! kind, and the library (one series per library the user added). Reads nothing itself.
//!
//! Must not import: store, http, ops, rusqlite

use crate::model::{MetricsSnapshot, Millis};
use std::fmt::Write;

pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

fn secs(ms: Millis) -> f64 {
    ms as f64 / 1000.0
}

/// A label value with `\`, `"` and newlines escaped as the format asks.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

struct Out(String);

impl Out {
    fn head(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        let labels: Vec<String> = labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
            .collect();
        let labels = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{}}}", labels.join(","))
        };
        let _ = writeln!(self.0, "{name}{labels} {value}");
    }
}

fn counter(s: &MetricsSnapshot, name: &str) -> f64 {
    s.counters
        .iter()
        .find(|(n, _)| n == name)
        .map_or(0.0, |(_, v)| *v as f64)
}

fn queues(o: &mut Out, s: &MetricsSnapshot) {
    type Pick = fn(&crate::model::QueueStats) -> f64;
    let series: [(&str, &str, Pick); 5] = [
        ("mediadex_queue_depth", "Waiting work items by kind.", |q| {
            q.waiting as f64
        }),
        (
            "mediadex_queue_oldest_age_seconds",
            "Age of the oldest waiting work item by kind.",
            |q| secs(q.oldest_waiting_ms),
        ),
        (
            "mediadex_running",
            "Work items held under a lease by kind.",
            |q| q.running as f64,
        ),
        (
            "mediadex_worker_heartbeat_age_seconds",
            "Longest time since a running item's last heartbeat, by kind.",
            |q| secs(q.max_heartbeat_age_ms),
        ),
        (
            "mediadex_lease_age_seconds",
            "Longest time a running item has held its lease, by kind.",
            |q| secs(q.max_lease_age_ms),
        ),
    ];
    for (name, help, pick) in series {
        o.head(name, "gauge", help);
        for q in &s.queues {
            o.sample(name, &[("kind", &q.kind)], pick(q));
        }
    }
}

fn counters(o: &mut Out, s: &MetricsSnapshot) {
    let simple = [
        (
            "mediadex_fence_rejections_total",
            "fence_rejections",
            "Stale writes refused by the lease fence.",
        ),
        (
            "mediadex_job_retries_total",
            "job_retries",
            "Job attempts that failed and were retried.",
        ),
        (
            "mediadex_scheme_restarts_total",
            "scheme_restarts",
            "Walk chains restarted because their scheme changed.",
        ),
        (
            "mediadex_files_hashed_total",
            "files_hashed",
            "Files read and hashed by scans.",
        ),
        (
            "mediadex_bytes_hashed_total",
            "bytes_hashed",
            "Bytes read and hashed by scans.",
        ),
    ];
    for (name, key, help) in simple {
        o.head(name, "counter", help);
        o.sample(name, &[], counter(s, key));
    }
    let name = "mediadex_reclaims_total";
    o.head(name, "counter", "Expired leases reclaimed, by outcome.");
    for (what, key) in [
        ("job_requeued", "reclaimed_jobs_requeued"),
        ("job_failed", "reclaimed_jobs_failed"),
        ("run_retired", "reclaimed_runs_retired"),
        ("run_successor", "reclaim_successors"),
    ] {
        o.sample(name, &[("outcome", what)], counter(s, key));
    }
}

/// The whole exposition.
/// The watch status of each library (what this process's watcher does).
pub fn render_watch(statuses: &[crate::watch::WatchStatus]) -> String {
    let mut o = Out(String::new());
    let name = "mediadex_watch_polling";
    o.head(
        name,
        "gauge",
        "1 when a library is polled instead of watched with kernel events.",
    );
    for st in statuses {
        let id = st.library_id.to_string();
        let polling = st.mode == crate::watch::WatchMode::Polling;
        o.sample(name, &[("library_id", &id)], f64::from(u8::from(polling)));
    }
    let name = "mediadex_watch_degraded";
    o.head(name, "gauge", "1 when kernel watching failed (e.g. the watch limit) and the library fell back to polling.");
    for st in statuses {
        let id = st.library_id.to_string();
        o.sample(
            name,
            &[("library_id", &id)],
            f64::from(u8::from(st.degraded)),
        );
    }
    o.0
}

pub fn render(s: &MetricsSnapshot) -> String {
    let mut o = Out(String::new());
    queues(&mut o, s);
    counters(&mut o, s);
    let name = "mediadex_last_successful_scan_timestamp_seconds";
    o.head(
        name,
        "gauge",
        "When each library's last completed scan finished (0: never).",
    );
    for (id, lib, at) in &s.last_scan {
        let id = id.to_string();
        o.sample(
            name,
            &[("library_id", &id), ("library", lib)],
            at.map_or(0.0, secs),
        );
    }
    let name = "mediadex_assets";
    o.head(name, "gauge", "Visible live assets by kind.");
    for (kind, n) in &s.assets_by_kind {
        o.sample(name, &[("kind", kind)], *n as f64);
    }
    o.0
}
