//! Output of the command line: the `--json` shapes of runs, jobs, walks and status (a
//! stable contract, documented in docs/json.md, deliberately separate from `model` so that a
//! model change cannot silently change it; libraries, assets and duplicates are the wire
//! contract's, `mediadex::wire`, assets rendered by `assets.rs`) and the human tables. Pure functions from rows to text; must not touch the
//! store or the disk. Human output never lets a name forge a line: control characters are
//! escaped, and paths show their non-UTF-8 bytes as `\xNN` (`human_path`).

use mediadex::model::{Job, JobState, Library, Millis, Provenance, RunState, ScanRun};
use mediadex::wire;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

#[derive(Serialize)]
struct RunOut<'a> {
    id: i64,
    library_id: i64,
    library_name: Option<&'a str>,
    scope: &'a str,
    trigger: &'static str,
    watch_event: Option<&'a str>,
    state: &'static str,
    reason: Option<&'a str>,
    attempt: i64,
    generation: i64,
    predecessor_id: Option<i64>,
    lease_owner: Option<&'a str>,
    lease_expires_at: Option<Millis>,
    progress: Option<&'a str>,
    requested_at: Millis,
    accepted_at: Millis,
    run_at: Millis,
    started_at: Option<Millis>,
    finished_at: Option<Millis>,
    updated_at: Millis,
    forced: bool,
    /// Files processed by this run, by why: new, size, mtime, inode, forced, error,
    /// unchanged, missing, duplicate.
    reasons: BTreeMap<&'static str, i64>,
}

#[derive(Serialize)]
struct JobOut<'a> {
    id: i64,
    kind: &'a str,
    unique_key: Option<&'a str>,
    state: &'static str,
    attempts: i64,
    max_attempts: i64,
    generation: i64,
    payload: &'a str,
    checkpoint: Option<&'a str>,
    last_error: Option<&'a str>,
    lease_owner: Option<&'a str>,
    lease_expires_at: Option<Millis>,
    run_at: Millis,
    created_at: Millis,
    updated_at: Millis,
    finished_at: Option<Millis>,
}

use mediadex::ops::library::Joined;
use mediadex::ops::status::{DiskStatus, Status};

#[derive(Serialize)]
struct StatusOut<'a> {
    version: &'a str,
    data_dir: &'a str,
    host: &'a str,
    db_path: &'a str,
    libraries: usize,
    runs_by_state: BTreeMap<&'static str, i64>,
    jobs_by_state: BTreeMap<&'static str, i64>,
    counters: BTreeMap<&'static str, i64>,
    /// Per walk kind this binary runs: schemes, record and live chain.
    walks: BTreeMap<&'static str, super::walks::WalkOut>,
    disk: &'a DiskStatus,
    no_thumbnails: &'a [&'static str],
}

pub fn added(library: &Library, joined: &Joined, json: bool) -> serde_json::Result<String> {
    if json {
        return to_json(&wire::Library::of(library, None));
    }
    let (name, id, root) = (
        escape_controls(&library.name),
        library.id,
        escape_controls(&library.root),
    );
    Ok(match joined {
        Joined::New => format!("added library '{name}' (id {id}) at {root}\n"),
        Joined::Attached => {
            format!("attached {root} to library '{name}' (id {id}), known by its marker\n")
        }
        Joined::Relinked { from } => format!(
            "re-linked library '{name}' (id {id}) from {} to {root}: its index is kept\n",
            escape_controls(from)
        ),
    })
}

/// Each library with why it cannot be scanned now, or `None`.
pub fn libraries(
    libraries: &[(Library, Option<String>)],
    json: bool,
) -> serde_json::Result<String> {
    if json {
        let out: Vec<_> = (libraries.iter())
            .map(|(l, why)| wire::Library::of(l, why.clone()))
            .collect();
        return to_json(&out);
    }
    if libraries.is_empty() {
        return Ok("no libraries yet; add one with `mediadex library add PATH`\n".into());
    }
    let rows = libraries
        .iter()
        .map(|(l, why)| {
            vec![
                l.id.to_string(),
                l.name.clone(),
                local_time(l.created_at),
                if why.is_some() { "no" } else { "yes" }.to_string(),
                l.root.clone(),
            ]
        })
        .collect();
    let mut out = table(&["ID", "NAME", "ADDED", "AVAILABLE", "ROOT"], rows);
    for (l, why) in libraries {
        if let Some(why) = why {
            let name = escape_controls(&l.name);
            out.push_str(&format!(
                "library {} ({name}): {}\n",
                l.id,
                escape_controls(why)
            ));
        }
    }
    Ok(out)
}

pub fn runs(
    runs: &[ScanRun],
    libraries: &[Library],
    reasons: &HashMap<i64, Vec<(Provenance, i64)>>,
    json: bool,
) -> serde_json::Result<String> {
    let name_of = |id: i64| {
        libraries
            .iter()
            .find(|l| l.id == id)
            .map(|l| l.name.as_str())
    };
    if json {
        let out: Vec<_> = runs
            .iter()
            .map(|r| run_out(r, name_of(r.library_id), reasons))
            .collect();
        return to_json(&out);
    }
    if runs.is_empty() {
        return Ok("no scan runs\n".into());
    }
    let rows = runs
        .iter()
        .map(|r| {
            vec![
                r.id.to_string(),
                name_of(r.library_id).map_or_else(|| r.library_id.to_string(), str::to_string),
                r.state.to_string(),
                r.trigger.to_string(),
                if r.scope.is_empty() {
                    "(all)".into()
                } else {
                    r.scope.clone()
                },
                r.attempt.to_string(),
                local_time(r.requested_at),
                opt_time(r.finished_at),
                r.reason.clone().unwrap_or_default(),
            ]
        })
        .collect();
    Ok(table(
        &[
            "ID",
            "LIBRARY",
            "STATE",
            "TRIGGER",
            "SCOPE",
            "ATTEMPT",
            "REQUESTED",
            "FINISHED",
            "REASON",
        ],
        rows,
    ))
}

/// One run's `--json` shape, with its library's name and its reason counts.
fn run_out<'a>(
    r: &'a ScanRun,
    library_name: Option<&'a str>,
    reasons: &HashMap<i64, Vec<(Provenance, i64)>>,
) -> RunOut<'a> {
    RunOut {
        id: r.id,
        library_id: r.library_id,
        library_name,
        scope: &r.scope,
        trigger: r.trigger.as_str(),
        watch_event: r.watch_event.as_deref(),
        state: r.state.as_str(),
        reason: r.reason.as_deref(),
        attempt: r.attempt,
        generation: r.generation,
        predecessor_id: r.predecessor_id,
        lease_owner: r.lease_owner.as_deref(),
        lease_expires_at: r.lease_expires_at,
        progress: r.progress.as_deref(),
        requested_at: r.requested_at,
        accepted_at: r.accepted_at,
        run_at: r.run_at,
        started_at: r.started_at,
        finished_at: r.finished_at,
        updated_at: r.updated_at,
        forced: r.forced,
        reasons: reasons
            .get(&r.id)
            .map(|v| v.iter().map(|&(p, n)| (p.as_str(), n)).collect())
            .unwrap_or_default(),
    }
}

pub fn jobs(jobs: &[Job], json: bool) -> serde_json::Result<String> {
    if json {
        let out: Vec<_> = jobs
            .iter()
            .map(|j| JobOut {
                id: j.id,
                kind: &j.kind,
                unique_key: j.unique_key.as_deref(),
                state: j.state.as_str(),
                attempts: j.attempts,
                max_attempts: j.max_attempts,
                generation: j.generation,
                payload: &j.payload,
                checkpoint: j.checkpoint.as_deref(),
                last_error: j.last_error.as_deref(),
                lease_owner: j.lease_owner.as_deref(),
                lease_expires_at: j.lease_expires_at,
                run_at: j.run_at,
                created_at: j.created_at,
                updated_at: j.updated_at,
                finished_at: j.finished_at,
            })
            .collect();
        return to_json(&out);
    }
    if jobs.is_empty() {
        return Ok("no jobs\n".into());
    }
    let rows = jobs
        .iter()
        .map(|j| {
            vec![
                j.id.to_string(),
                j.kind.clone(),
                j.state.to_string(),
                format!("{}/{}", j.attempts, j.max_attempts),
                local_time(j.run_at),
                local_time(j.updated_at),
                j.last_error.clone().unwrap_or_default(),
            ]
        })
        .collect();
    Ok(table(
        &[
            "ID",
            "KIND",
            "STATE",
            "ATTEMPTS",
            "RUN AT",
            "UPDATED",
            "LAST ERROR",
        ],
        rows,
    ))
}

pub fn status(s: &Status, json: bool) -> serde_json::Result<String> {
    let runs = count(RunState::ALL, &s.runs, |st| st.as_str());
    let jobs = count(JobState::ALL, &s.jobs, |st| st.as_str());
    let counters: BTreeMap<_, _> = s.counters.iter().map(|&(c, v)| (c.name(), v)).collect();
    if json {
        return to_json(&StatusOut {
            version: s.version,
            data_dir: &s.data_dir,
            host: &s.host,
            db_path: &s.db_path,
            libraries: s.libraries,
            runs_by_state: runs,
            jobs_by_state: jobs,
            counters,
            walks: s
                .walks
                .iter()
                .map(|w| (w.kind.as_str(), super::walks::walk_out(w)))
                .collect(),
            disk: &s.disk,
            no_thumbnails: &s.no_thumbnails,
        });
    }
    let joined = |m: &BTreeMap<&str, i64>| {
        m.iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut rows = vec![
        vec!["version".into(), s.version.into()],
        vec!["data dir".into(), s.data_dir.clone()],
        vec!["host".into(), s.host.clone()],
        vec!["database".into(), s.db_path.clone()],
        vec!["libraries".into(), s.libraries.to_string()],
        vec!["runs".into(), joined(&runs)],
        vec!["jobs".into(), joined(&jobs)],
    ];
    rows.extend(
        counters
            .iter()
            .map(|(k, v)| vec![format!("counter {k}"), v.to_string()]),
    );
    rows.extend(
        s.walks
            .iter()
            .map(|w| vec![format!("walk {}", w.kind), super::walks::summary(w)]),
    );
    rows.push(vec!["disk".into(), disk_summary(&s.disk)]);
    let lacking = match s.no_thumbnails.as_slice() {
        [] => "none".to_string(),
        formats => formats.join(", "),
    };
    rows.push(vec!["no thumbnails".into(), lacking]);
    Ok(table_body(&rows))
}

fn disk_summary(d: &DiskStatus) -> String {
    match (&d.full, d.free_bytes) {
        (Some(full), _) => full.clone(),
        (None, Some(free)) => format!("{free} bytes free (reserve {})", d.reserve_bytes),
        (None, None) => format!("free space unknown (reserve {})", d.reserve_bytes),
    }
}

/// Every state appears, zero or not, so the shape does not depend on the data.
fn count<S: Copy + PartialEq>(
    all: &[S],
    seen: &[(S, i64)],
    name: fn(S) -> &'static str,
) -> BTreeMap<&'static str, i64> {
    all.iter()
        .map(|&s| {
            let n = seen.iter().find(|(x, _)| *x == s).map_or(0, |&(_, n)| n);
            (name(s), n)
        })
        .collect()
}

pub(super) fn to_json<T: Serialize>(value: &T) -> serde_json::Result<String> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    Ok(text)
}

/// Local time with its offset, to the second: `2026-11-29 15:16:12+01:00`.
fn local_time(ms: Millis) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(
        || ms.to_string(),
        |t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M:%S%:z")
                .to_string()
        },
    )
}

fn opt_time(ms: Option<Millis>) -> String {
    ms.map_or_else(|| "-".into(), local_time)
}

pub(super) fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut all = vec![header.iter().map(|h| h.to_string()).collect()];
    all.extend(rows);
    table_body(&all)
}

/// A path for people: its bytes where they are UTF-8, `\xNN` where they are not, and
/// control characters escaped so that a name holding a newline cannot forge a line.
pub(super) fn human_path(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(&escape_controls(chunk.valid()));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// `\n`, `\t`, `\u{1b}`, … for the control characters of `text`; everything else as is.
fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return text.into();
    }
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect::<String>()
        .into()
}

/// Left-aligned columns two spaces apart; the last column is not padded, so lines carry no
/// trailing blanks. A cell is one line whatever it holds: its control characters are
/// escaped (names, roots and errors come from the disk).
fn table_body(rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| escape_controls(c).into_owned()).collect())
        .collect();
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c + 1 < row.len() {
                line.push_str(&format!("{cell:<w$}  ", w = widths[c]));
            } else {
                line.push_str(cell);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use mediadex::model::Counter;

    #[test]
    fn table_aligns_columns_without_trailing_blanks() {
        let t = table(
            &["ID", "NAME"],
            vec![vec!["1".into(), "a".into()], vec!["10".into(), "bb".into()]],
        );
        assert_eq!(t, "ID  NAME\n1   a\n10  bb\n");
    }

    #[test]
    fn a_cell_or_path_never_forges_a_line() {
        let t = table(&["PATH"], vec![vec!["a\nb\tc\r\u{1b}[31m".into()]]);
        assert_eq!(t, "PATH\na\\nb\\tc\\r\\u{1b}[31m\n");
        assert_eq!(human_path(b"caf\xe9/\n.png"), "caf\\xe9/\\n.png");
        assert_eq!(human_path("été.png".as_bytes()), "été.png");
    }

    #[test]
    fn an_added_library_is_one_line_whatever_its_folder_is_called() {
        let library = Library {
            id: 1,
            name: "a\nb".into(),
            root: "/x/a\nb".into(),
            created_at: 0,
        };
        let text = added(&library, &Joined::New, false).expect("text");
        assert_eq!(text, "added library 'a\\nb' (id 1) at /x/a\\nb\n");
    }

    #[test]
    fn status_json_lists_every_state_even_at_zero() {
        let s = Status {
            version: "0",
            data_dir: "d".into(),
            host: "h".into(),
            db_path: "d/mediadex.db".into(),
            libraries: 0,
            runs: vec![(RunState::Completed, 1)],
            jobs: vec![],
            counters: vec![(Counter::FenceRejections, 3)],
            walks: vec![],
            disk: DiskStatus::default(),
            no_thumbnails: vec!["image/heic", "video"],
        };
        let v: serde_json::Value =
            serde_json::from_str(&status(&s, true).expect("json")).expect("parse");
        assert_eq!(v["runs_by_state"]["completed"], 1);
        assert_eq!(v["runs_by_state"]["accepted"], 0);
        assert_eq!(v["jobs_by_state"]["queued"], 0);
        assert_eq!(v["counters"]["fence_rejections"], 3);
        assert_eq!(
            v["no_thumbnails"],
            serde_json::json!(["image/heic", "video"])
        );
        let human = status(&s, false).expect("text");
        assert!(human.contains("image/heic, video"), "{human}");
    }
}

#[derive(Serialize)]
struct CopiedTable<'a> {
    table: &'a str,
    rows: u64,
    copied_rows: u64,
    same: bool,
}

#[derive(Serialize)]
struct CopiedOut<'a> {
    tables: Vec<CopiedTable<'a>>,
    same: bool,
}

/// `migrate --to`: each table's rows on both sides and whether the copy is the same.
pub fn copied(check: &mediadex::store::CopyCheck, json: bool) -> serde_json::Result<String> {
    let tables: Vec<CopiedTable<'_>> = check
        .source
        .iter()
        .zip(&check.copy)
        .map(|(a, b)| CopiedTable {
            table: a.table,
            rows: a.rows,
            copied_rows: b.rows,
            same: a == b,
        })
        .collect();
    let same = tables.iter().all(|t| t.same);
    if json {
        return to_json(&CopiedOut { tables, same });
    }
    let rows = tables
        .iter()
        .map(|t| {
            let verdict = if t.same { "same" } else { "DIFFERS" };
            vec![t.table.to_string(), t.rows.to_string(), verdict.to_string()]
        })
        .collect();
    let mut out = table(&["table", "rows", "copy"], rows);
    out.push_str(if same {
        "the copy holds every row of the index, digest for digest\n"
    } else {
        "the copy differs from the index\n"
    });
    Ok(out)
}
