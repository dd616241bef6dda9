//! A scan killed mid-way (SIGKILL, no chance to hand its lease back) and a restart: the
//! restarted process rescues the killed run once its lease runs out (`failed` /
//! `lease_expired`), its successor finishes the library, and the restart duplicates
//! nothing: one asset per distinct content, every file under exactly one asset, and the
//! duplicates are exactly the byte-identical copies the test made.
//!
//! Everything goes through the real binary. There is no hook in the scan to stop it
//! mid-way. The first scan runs in short slices between SIGSTOP and SIGCONT, and the test
//! looks at its progress while it is frozen: once a batch is committed (and, 10,000 files
//! being ten batches, the scan far from done) it is SIGKILLed exactly in the state the test
//! saw, on a fast machine as on a slow one.
//!
//! The first scan holds its leases for far longer than the test can take
//! (`MEDIADEX_LEASE_TTL_MS`, a testing knob), so that no freeze, however long on a loaded
//! machine, lets them run out while it lives: with a 1 s ttl a freeze of over a second let
//! the scan's own maintenance loop retire its run before the kill (seen once under load).
//! Once it is dead the test ends its leases itself, the deterministic stand-in for waiting
//! out the ttl, and the restart rescues the run at once.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Distinct photos (distinct contents). Ten batches of 1,024: with three, a fast scan
/// sometimes committed them all within one slice, before the test could see it mid-way.
const PHOTOS: usize = 10_000;
/// Photos per directory (the scan commits 1,024 entries per batch).
const PER_DIR: usize = 250;
/// Byte-identical copies of some of the photos, each in another directory than its
/// original (so that the killed run and its successor are likely to see one each).
const COPIES: usize = 6;
/// The first scan's lease ttl: longer than the whole test's guard rails.
const TTL_MS: &str = "600000";
/// The restart's lease TTL (see there).
const RESTART_TTL_MS: &str = "4000";
/// How long the first scan runs between two looks at its progress.
const SLICE: Duration = Duration::from_millis(15);
/// Whole-test guard rails; a normal run takes a few seconds.
const SEE_PROGRESS_WITHIN: Duration = Duration::from_secs(60);
const RESTART_WITHIN: Duration = Duration::from_secs(60);

fn mediadex(data: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mediadex"));
    cmd.arg("--data")
        .arg(data)
        .env("MEDIADEX_LEASE_TTL_MS", TTL_MS)
        .env_remove("MEDIADEX_DATA")
        .env("RUST_LOG", "info,nom_exif=error");
    cmd
}

/// Runs a command to its end and parses its stdout as JSON.
fn json(data: &Path, args: &[&str]) -> Value {
    let out = mediadex(data).args(args).output().expect("run mediadex");
    assert!(
        out.status.success(),
        "mediadex {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "mediadex {args:?} printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn runs(data: &Path) -> Vec<Value> {
    json(data, &["runs", "--json", "--limit", "100"])
        .as_array()
        .expect("runs is an array")
        .clone()
}

/// `runs`, while the scan is frozen (SIGSTOP): a reader can meet SQLite's WAL locks held by
/// the frozen process mid-way through a WAL restart and give up with SQLITE_PROTOCOL
/// ("locking protocol"; seen once at load 9). That is the freeze's doing, not the scan's:
/// `None`, and the loop gives the scan another slice. Any other failure fails the test.
fn runs_beside_a_frozen_writer(data: &Path) -> Option<Vec<Value>> {
    let out = mediadex(data)
        .args(["runs", "--json", "--limit", "100"])
        .output()
        .expect("run mediadex");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && stderr.contains("locking protocol") {
        return None;
    }
    assert!(out.status.success(), "mediadex runs failed: {stderr}");
    let runs: Value = serde_json::from_slice(&out.stdout).expect("runs prints JSON");
    Some(runs.as_array().expect("runs is an array").clone())
}

/// Ends every lease the (dead) first scan held, as its ttl running out would: the rows stay
/// `running` with their lease, only its expiry moves into the past.
fn expire_leases(data: &Path) {
    let db = rusqlite::Connection::open(data.join("mediadex.db")).expect("open the index");
    for table in ["scan_runs", "jobs"] {
        db.execute(
            &format!("UPDATE {table} SET lease_expires_at = 1 WHERE state = 'running'"),
            [],
        )
        .unwrap_or_else(|e| panic!("expire the leases of {table}: {e}"));
    }
}

/// Files committed so far by a running run, from its progress text.
fn committed(run: &Value) -> u64 {
    run["progress"]
        .as_str()
        .and_then(|p| serde_json::from_str::<Value>(p).ok())
        .and_then(|p| p["files"].as_u64())
        .unwrap_or(0)
}

/// Sends a signal with kill(1) (std can only SIGKILL).
/// Sends `SIGSTOP` or `SIGCONT` to `pid` with kill(2) itself: spawning kill(1) for each
/// signal took so long on a loaded machine that the child ran far past its slice and
/// finished the whole scan before the test could see it mid-way (seen at load 9).
fn signal(which: &str, pid: u32) {
    use rustix::process::{Pid, Signal, kill_process};
    let sig = match which {
        "-STOP" => Signal::STOP,
        "-CONT" => Signal::CONT,
        other => panic!("no such signal here: {other}"),
    };
    let pid = Pid::from_raw(pid as i32).expect("a child's pid is positive");
    kill_process(pid, sig).unwrap_or_else(|e| panic!("kill {which} {pid:?}: {e}"));
}

/// Kills the child on the way out of a failing test, so no scan outlives it.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Writes the library: `PHOTOS` distinct 8×6 PNGs and `COPIES` copies. Returns every
/// library-relative path and the expected duplicate groups (sorted paths).
fn make_library(root: &Path) -> (BTreeSet<String>, BTreeSet<Vec<String>>) {
    let mut paths = BTreeSet::new();
    let rel = |i: usize| format!("dir{:02}/p{i:05}.png", i / PER_DIR);
    for i in 0..PHOTOS {
        let path = rel(i);
        let file = root.join(&path);
        if i % PER_DIR == 0 {
            std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        }
        // A distinct colour per photo: distinct bytes, distinct checksums.
        let colour = image::Rgb([(i % 256) as u8, (i / 256) as u8, 0x5a]);
        image::RgbImage::from_pixel(8, 6, colour)
            .save(&file)
            .expect("write png");
        paths.insert(path);
    }
    let dirs = PHOTOS.div_ceil(PER_DIR);
    let mut groups = BTreeSet::new();
    for k in 0..COPIES {
        let original = k * (PHOTOS / COPIES) + 7;
        let copy = format!(
            "dir{:02}/copy-of-p{original:05}.png",
            (original / PER_DIR + dirs / 2) % dirs
        );
        std::fs::copy(root.join(rel(original)), root.join(&copy)).expect("copy");
        let mut group = vec![rel(original), copy.clone()];
        group.sort();
        groups.insert(group);
        paths.insert(copy);
    }
    (paths, groups)
}

#[test]
fn a_killed_scan_is_finished_by_its_successor_without_duplicates() {
    let started = Instant::now();
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let lib = tmp.path().join("lib");
    let (paths, copies) = make_library(&lib);
    let made = started.elapsed();
    let total = paths.len() as u64;
    let added = json(
        &data,
        &["library", "add", lib.to_str().expect("utf-8"), "--json"],
    );
    let library_id = added["id"].as_i64().expect("library id");

    // The first scan, in a process of its own, killed once it has committed some files.
    let log = tmp.path().join("first-scan.log");
    // Small commits: with the default group (65,536 files or 1 s) a fast machine commits
    // the whole library at once, and there is no scan half done to kill.
    let child = mediadex(&data)
        .env("MEDIADEX_WRITE_GROUP_FILES", "256")
        .args(["scan", "--wait"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("start the first scan");
    let mut child = Reaped(child);
    let pid = child.0.id();
    // At the lowest priority, so that on a loaded machine this thread is scheduled promptly
    // to stop it after its slice (at load 9 the child once ran the whole scan unseen).
    let _ = rustix::process::setpriority_process(rustix::process::Pid::from_raw(pid as i32), 19);
    let scan_started = Instant::now();
    // The child runs in short slices and is frozen (SIGSTOP) while the test looks at the
    // runs, so what the test sees is exactly what the kill interrupts: no race between
    // "some files committed" and "already finished", however fast this machine is.
    let killed = loop {
        assert!(
            scan_started.elapsed() < SEE_PROGRESS_WITHIN,
            "no progress seen; log: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        signal("-CONT", pid);
        std::thread::sleep(SLICE);
        signal("-STOP", pid);
        if let Some(status) = child.0.try_wait().expect("try_wait") {
            panic!(
                "the first scan ended ({status}) before it could be killed; log: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        let Some(all) = runs_beside_a_frozen_writer(&data) else {
            continue;
        };
        if let Some(run) = all.iter().find(|r| r["state"] == "running")
            && committed(run) > 0
        {
            // SIGKILL, delivered to the frozen process: it never runs another instruction.
            child.0.kill().expect("SIGKILL the first scan");
            child.0.wait().expect("reap the first scan");
            break run.clone();
        }
        if let Some(run) = all.iter().find(|r| r["state"] == "completed") {
            panic!("the first scan finished before it could be killed: make PHOTOS bigger ({run})");
        }
    };
    let killed_after = scan_started.elapsed();
    let killed_id = killed["id"].as_i64().expect("run id");
    let committed_at_kill = committed(&killed);
    // The kill landed mid-scan, or this test proves nothing.
    let after_kill = runs(&data)
        .into_iter()
        .find(|r| r["id"] == killed_id)
        .expect("the killed run is listed");
    assert_eq!(after_kill["state"], "running", "{after_kill}");
    assert_eq!(committed(&after_kill), committed_at_kill, "{after_kill}");
    assert!(
        committed_at_kill < total,
        "the killed run had committed everything ({committed_at_kill} of {total})"
    );

    // The dead process's leases run out: the only step of the ttl the test does not wait for.
    expire_leases(&data);

    // The restart: same data dir, a new process. It finds the dead process's lease expired,
    // rescues the run and finishes the library.
    let restart_started = Instant::now();
    let restart_log = tmp.path().join("restart.log");
    // The restart holds its own lease for a few seconds, so a loaded machine (a heartbeat
    // late by more than a second) does not retire the successor too and make the history
    // one attempt longer.
    let restart = mediadex(&data)
        .env("MEDIADEX_LEASE_TTL_MS", RESTART_TTL_MS)
        .args(["scan", "--wait", "--json"])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&restart_log).expect("log file"))
        .spawn()
        .expect("start the restart");
    let mut restart = Reaped(restart);
    let status = loop {
        if let Some(status) = restart.0.try_wait().expect("try_wait") {
            break status;
        }
        assert!(
            restart_started.elapsed() < RESTART_WITHIN,
            "the restarted scan did not end within {RESTART_WITHIN:?}; log: {}",
            std::fs::read_to_string(&restart_log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let restart_took = restart_started.elapsed();
    assert!(
        status.success(),
        "the restart failed ({status}): {}",
        std::fs::read_to_string(&restart_log).unwrap_or_default()
    );
    // The answer is one run, far below a pipe's buffer: reading after the exit is safe.
    let mut stdout = Vec::new();
    restart
        .0
        .stdout
        .take()
        .expect("piped stdout")
        .read_to_end(&mut stdout)
        .expect("read the restart's answer");
    let answered: Value = serde_json::from_slice(&stdout).expect("scan --json");
    let answered = answered.as_array().expect("array");
    assert_eq!(answered.len(), 1, "{answered:?}");
    assert_eq!(answered[0]["state"], "completed", "{answered:?}");

    // History: the killed run retired for its lease, its successor completed.
    let history = runs(&data);
    let killed = history
        .iter()
        .find(|r| r["id"] == killed_id)
        .expect("the killed run is still listed");
    assert_eq!(killed["state"], "failed", "{killed}");
    assert_eq!(killed["reason"], "lease_expired", "{killed}");
    let successor = history
        .iter()
        .find(|r| r["predecessor_id"] == killed_id)
        .unwrap_or_else(|| panic!("no successor of run {killed_id}: {history:#?}"));
    assert_eq!(successor["state"], "completed", "{successor}");
    assert_eq!(successor["library_id"], library_id);
    assert_eq!(successor["scope"], "");
    assert_eq!(successor["attempt"], 2, "{successor}");
    // The new request coalesced into the successor (it was waiting when the rescue came),
    // and that is the run the restart answered with.
    assert_eq!(answered[0]["id"], successor["id"], "{history:#?}");
    for run in &history {
        assert!(
            run["id"] == killed_id || run["state"] == "completed",
            "a run other than the killed one did not complete: {run}"
        );
    }
    let counters = json(&data, &["status", "--json"])["counters"].clone();
    assert_eq!(counters["reclaimed_runs_retired"], 1, "{counters}");
    assert_eq!(counters["reclaim_successors"], 1, "{counters}");
    // The successor did not redo what the killed run had committed: those files were
    // unchanged to it, and together the two runs read every file once.
    let reasons = &successor["reasons"];
    let unchanged = reasons["unchanged"].as_u64().unwrap_or(0);
    assert!(
        unchanged >= committed_at_kill,
        "the successor re-read files the killed run committed: {reasons} vs {committed_at_kill}"
    );
    let by_reason: u64 = reasons
        .as_object()
        .expect("reasons object")
        .iter()
        .filter(|(k, _)| *k != "duplicate")
        .map(|(_, v)| v.as_u64().expect("count"))
        .sum();
    assert_eq!(by_reason, total, "{reasons}");

    // Nothing duplicated: one asset per distinct content, every file under exactly one.
    let assets = json(&data, &["assets", "--json"]);
    let assets = assets.as_array().expect("assets array");
    assert_eq!(assets.len(), PHOTOS, "one asset per distinct photo");
    let checksums: BTreeSet<&str> = assets
        .iter()
        .map(|a| a["checksum"].as_str().expect("checksum"))
        .collect();
    assert_eq!(checksums.len(), PHOTOS, "two assets share a checksum");
    let mut owner_of: BTreeMap<String, usize> = BTreeMap::new();
    for a in assets {
        assert_eq!(a["trashed"], false, "{a}");
        for p in a["paths"].as_array().expect("paths") {
            *owner_of
                .entry(p.as_str().expect("path").to_string())
                .or_default() += 1;
        }
    }
    let twice: Vec<_> = owner_of.iter().filter(|(_, n)| **n != 1).collect();
    assert!(
        twice.is_empty(),
        "paths under more than one asset: {twice:?}"
    );
    let listed: BTreeSet<String> = owner_of.into_keys().collect();
    assert_eq!(
        listed, paths,
        "the assets' paths are not the library's files"
    );

    // The duplicates are exactly the copies made.
    let groups: BTreeSet<Vec<String>> = json(&data, &["duplicates", "--json"])
        .as_array()
        .expect("duplicates array")
        .iter()
        .map(|g| {
            let mut paths: Vec<String> = g["paths"]
                .as_array()
                .expect("paths")
                .iter()
                .map(|p| p.as_str().expect("path").to_string())
                .collect();
            paths.sort();
            paths
        })
        .collect();
    assert_eq!(groups, copies);

    eprintln!(
        "crash test: library made in {made:?}; killed after {killed_after:?} with \
         {committed_at_kill} of {total} files committed; restart \
         took {restart_took:?}; whole test {:?}",
        started.elapsed()
    );
}
