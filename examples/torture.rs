//! Crash torture of the real binary (issue 13, parts 1 and 2): `mediadex serve` lives are SIGKILLed
//! at seeded random moments while forced rescans, walks and racing `trash`/`restore`
//! processes run (some of them killed too), and the library changes between lives as a
//! real one does. A quiet final life lets the work settle; the index is then checked against
//! the disk and against a reference: a fresh index of the same files built without faults.
//! While the lives run, a watcher checks at every observation that each walk kind has at
//! most one chain and each library at most one running scan, that no row's generation goes
//! down or changes owner without a new generation, and (in the two-engines phase: the
//! desktop mode and `serve` on one data dir, one of them SIGSTOPped past the lease ttl in
//! turn) that nothing of a stopped engine lands; the woken engine's stale writes must then
//! show as fence rejections.
//!
//! With `--database URL` every process shares one PostgreSQL index (issue 30), and
//! `--hosts N --hosts-secs SECS` adds the phase of several hosts: N `serve` processes, each
//! with a data dir and host id of its own and the library reached by a path of its own (a
//! symlink), host 1's clock off by `--skew` (a libfaketime offset, e.g. `+300s`, with the
//! library `--faketime-lib` preloaded), under a stream
//! of requests sent to any host, while one host at a time is SIGKILLed and started again or
//! SIGSTOPped past the ttl, and the database server is restarted (`--pg-restart CMD`, a
//! shell command) mid-work. The watcher's rules hold across hosts; afterwards fence
//! rejections must have been counted, and the checks compare the shared index with a fresh
//! SQLite index of the same files.
//!
//! `cargo run --release --example torture -- --bin PATH --library DIR --work DIR
//!  [--seed S] [--kills N] [--two-engines SECS] [--database URL --hosts N --hosts-secs SECS
//!  --skew OFFSET --faketime-lib PATH --pg-restart CMD]`; `scripts/torture.sh` builds the library and runs it,
//! `scripts/hosts-torture.sh` the hosts on a PostgreSQL of its own.
//! Prints `torture: N kills, M violations, seed S` and exits 1 when M > 0. The same seed
//! replays the same schedule (what the processes do in that time is up to the machine).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test, example or bench: a panic is the report

use mediadex::model::{Asset, FileState, JobState, RunState, TRASH_DIR, WalkKindId, trash_place};
use mediadex::store::{Store, StoreOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The lease ttl of every process: short, so that lives reclaim each other's work.
const TTL_MS: &str = "1500";
/// How long the quiet final life may take to settle.
const QUIET_LIMIT: Duration = Duration::from_secs(600);

struct Args {
    bin: PathBuf,
    library: PathBuf,
    work: PathBuf,
    seed: u64,
    kills: u32,
    /// Seconds of the two-engines phase (0: none).
    two_engines: u64,
    /// The PostgreSQL index every process shares (`MEDIADEX_DATABASE_URL`), if any.
    database: Option<String>,
    /// How many hosts the hosts phase runs, and for how many seconds (0: none).
    hosts: usize,
    hosts_secs: u64,
    /// Host 1's clock offset, for libfaketime (`+300s`), and the library to preload.
    skew: Option<String>,
    faketime_lib: Option<String>,
    /// A shell command that restarts the database server.
    pg_restart: Option<String>,
}

fn args() -> anyhow::Result<Args> {
    let mut map = BTreeMap::new();
    let mut it = std::env::args().skip(1);
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        map.insert(k, v);
    }
    let get = |k: &str| {
        map.get(k)
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("missing {k}; see the header of examples/torture.rs"))
    };
    Ok(Args {
        bin: std::fs::canonicalize(get("--bin")?)?,
        library: std::fs::canonicalize(get("--library")?)?,
        work: get("--work")?.into(),
        seed: map.get("--seed").map_or(Ok(1), |s| s.parse())?,
        kills: map.get("--kills").map_or(Ok(100), |s| s.parse())?,
        two_engines: map.get("--two-engines").map_or(Ok(0), |s| s.parse())?,
        database: map.get("--database").cloned(),
        hosts: map.get("--hosts").map_or(Ok(1), |s| s.parse())?,
        hosts_secs: map.get("--hosts-secs").map_or(Ok(0), |s| s.parse())?,
        skew: map.get("--skew").cloned(),
        faketime_lib: map.get("--faketime-lib").cloned(),
        pg_restart: map.get("--pg-restart").cloned(),
    })
}

type Violations = Arc<Mutex<Vec<String>>>;

fn violation(v: &Violations, what: String) {
    if let Ok(mut v) = v.lock() {
        v.push(what);
    }
}

fn main() -> anyhow::Result<()> {
    let args = args()?;
    std::fs::create_dir_all(&args.work)?;
    let violations: Violations = Arc::new(Mutex::new(Vec::new()));
    let data = args.work.join("data");
    let mut t = Torture {
        args: &args,
        data: data.clone(),
        hosts: vec![Host { data, skew: None }],
        rng: ChaCha8Rng::seed_from_u64(args.seed),
        trashed: Vec::new(),
        assets: 1,
    };
    let library = args.library.to_string_lossy().into_owned();
    t.run(&t.data, &["library", "add", &library])?;
    let watch = Watch::start(t.open()?, violations.clone());
    let (mut kills, mut lives) = (0, 0);
    while kills < args.kills {
        if lives > 0 {
            mutate(&args.library, &mut t.rng)?;
        }
        kills += t.life()?;
        lives += 1;
    }
    if args.two_engines > 0 {
        t.two_engines(&watch, &violations)?;
    }
    if args.hosts > 1 && args.hosts_secs > 0 {
        t.several_hosts(&watch, &violations)?;
    }
    t.quiet_life(&violations)?;
    watch.stop();
    check(&t, &violations)?;
    let found = violations.lock().map(|v| v.clone()).unwrap_or_default();
    for v in &found {
        eprintln!("violation: {v}");
    }
    eprintln!(
        "torture: {lives} lives over a library of {} files",
        files_on_disk(&args.library).len()
    );
    println!(
        "torture: {kills} kills, {} violations, seed {}",
        found.len(),
        args.seed
    );
    if !found.is_empty() {
        std::process::exit(1);
    }
    Ok(())
}

/// The index of data dir `data`: its SQLite file, or the shared `database`.
fn open_index(data: &Path, database: Option<&str>) -> anyhow::Result<Store> {
    let options = StoreOptions {
        owner: format!("torture:{}:check", std::process::id()),
        database: database.map(str::to_string),
        ..StoreOptions::default()
    };
    let clock = Arc::new(mediadex::clock::SystemClock);
    Ok(Store::open(&data.join("mediadex.db"), clock, options)?)
}

/// A machine of the hosts phase: its data dir (and so its host id), and its clock's offset.
struct Host {
    data: PathBuf,
    skew: Option<String>,
}

struct Torture<'a> {
    args: &'a Args,
    data: PathBuf,
    /// The hosts requests go to: the first is `data`'s, the others only in the hosts phase.
    hosts: Vec<Host>,
    rng: ChaCha8Rng,
    /// Assets a `trash` of this run left trashed (exit 0): what `restore` picks from.
    trashed: Vec<i64>,
    /// The highest asset id seen: what `trash` picks below.
    assets: i64,
}

impl Torture<'_> {
    fn spawn(&self, data: &Path, args: &[&str]) -> anyhow::Result<Child> {
        self.spawn_with(data, args, &[])
    }

    /// The shared index, as the checks read it.
    fn open(&self) -> anyhow::Result<Store> {
        open_index(&self.data, self.args.database.as_deref())
    }

    fn spawn_with(
        &self,
        data: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> anyhow::Result<Child> {
        let log = std::fs::File::options()
            .create(true)
            .append(true)
            .open(self.args.work.join("processes.log"))?;
        // A host's clock is off by libfaketime preloaded into its processes (the real clock
        // calls, not a seam of ours; preloaded, not the `faketime` wrapper, which forks, so
        // that the pid signalled is the process's); monotonic time stays true, as a wrong
        // wall clock has.
        let skew = self
            .hosts
            .iter()
            .find(|h| h.data == data)
            .and_then(|h| h.skew.clone());
        let mut command = Command::new(&self.args.bin);
        if let (Some(offset), Some(lib)) = (&skew, &self.args.faketime_lib) {
            command.env("LD_PRELOAD", lib).env("FAKETIME", offset);
            command.env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
        }
        // The reference index is a SQLite file of its own, never the shared database.
        let shared = self
            .args
            .database
            .as_deref()
            .filter(|_| !data.ends_with("reference"));
        match shared {
            Some(url) => command.env("MEDIADEX_DATABASE_URL", url),
            None => command.env_remove("MEDIADEX_DATABASE_URL"),
        };
        Ok(command
            .arg("--data")
            .arg(data)
            .args(args)
            .env("MEDIADEX_LEASE_TTL_MS", TTL_MS)
            .env("MEDIADEX_WATCH", "off")
            .envs(env.iter().copied())
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()?)
    }

    fn run(&self, data: &Path, args: &[&str]) -> anyhow::Result<()> {
        let status = self.spawn(data, args)?.wait()?;
        anyhow::ensure!(status.success(), "mediadex {args:?} failed: {status}");
        Ok(())
    }

    /// One life: the service and a seeded stream of requests, then SIGKILL at a seeded
    /// moment. Returns the kills it made (the service's, and those of CLI processes).
    fn life(&mut self) -> anyhow::Result<u32> {
        let mut service = self.spawn(&self.data, &["serve", "--bind", "127.0.0.1:0"])?;
        let end = Instant::now() + Duration::from_millis(300 + self.rng.random_range(0..3_000));
        let mut kills = 1;
        while Instant::now() < end {
            kills += self.one_request(30)?;
        }
        service.kill()?;
        service.wait()?;
        Ok(kills)
    }

    /// One request of a life; answers the asset a `trash` names.
    fn request(&mut self) -> anyhow::Result<(Child, Option<i64>)> {
        let data = match self.hosts.len() {
            1 => self.data.clone(),
            n => self.hosts[self.rng.random_range(0..n)].data.clone(),
        };
        Ok(match self.rng.random_range(0..7) {
            0 => (self.spawn(&data, &["scan", "--force"])?, None),
            1 => (self.spawn(&data, &["scan"])?, None),
            2 => (
                self.spawn(&data, &["walk", "content-hash", "--restart"])?,
                None,
            ),
            3 => (self.spawn(&data, &["walk", "faces"])?, None),
            4 | 5 if !self.trashed.is_empty() => {
                let at = self.rng.random_range(0..self.trashed.len());
                let id = self.trashed.swap_remove(at).to_string();
                (self.spawn(&data, &["restore", &id])?, None)
            }
            _ => {
                if self.assets < 2 {
                    // The database may be restarting (the hosts phase): pick blind then.
                    let assets = self.open().and_then(|s| Ok(s.assets(false)?));
                    self.assets = assets.iter().flatten().map(|a| a.id).max().unwrap_or(1);
                }
                let id = 1 + self.rng.random_range(0..self.assets as u64) as i64;
                (self.spawn(&data, &["trash", &id.to_string()])?, Some(id))
            }
        })
    }

    /// Two engines on one data dir, the desktop mode and `serve`, under a stream of
    /// requests; one of them at a time is SIGSTOPped past the lease ttl and SIGCONTed, in
    /// turn. The watcher checks that nothing of the stopped one lands; afterwards fence
    /// rejections must have been counted (the woken engine's stale writes were refused).
    fn two_engines(&mut self, watch: &Watch, violations: &Violations) -> anyhow::Result<()> {
        let before = fence_rejections(&self.open()?)?;
        let mut engines = [
            self.spawn_with(&self.data, &[], &[("MEDIADEX_BROWSER", "true")])?,
            self.spawn(&self.data, &["serve", "--bind", "127.0.0.1:0"])?,
        ];
        let end = Instant::now() + Duration::from_secs(self.args.two_engines);
        let (mut pauses, mut next) = (0usize, Instant::now() + Duration::from_secs(1));
        while Instant::now() < end {
            if Instant::now() >= next {
                self.pause_past_ttl(engines[pauses % 2].id(), watch)?;
                pauses += 1;
                next =
                    Instant::now() + Duration::from_millis(500 + self.rng.random_range(0..1_500));
            }
            self.one_request(0)?;
        }
        for engine in &mut engines {
            signal(engine.id(), "TERM")?;
            engine.wait()?;
        }
        let rejected = fence_rejections(&self.open()?)? - before;
        let compared = watch.compared.load(Ordering::SeqCst);
        eprintln!(
            "torture: two engines, {pauses} pauses, {rejected} fence rejections, \
             {compared} observations of rows held by a stopped engine"
        );
        if rejected == 0 {
            violation(
                violations,
                format!("{pauses} pauses past the ttl and no fence rejection"),
            );
        }
        Ok(())
    }

    /// SIGSTOPs `pid` for the lease ttl and 0.3-1 s more while requests go on (the watcher
    /// checks that nothing of it lands meanwhile), then SIGCONTs it.
    fn pause_past_ttl(&mut self, pid: u32, watch: &Watch) -> anyhow::Result<()> {
        signal(pid, "STOP")?;
        watch.pause(Some(pid));
        let ttl = Duration::from_millis(TTL_MS.parse()?);
        let until =
            Instant::now() + ttl + Duration::from_millis(300 + self.rng.random_range(0..700));
        while Instant::now() < until {
            self.one_request(0)?;
        }
        watch.pause(None);
        signal(pid, "CONT")
    }

    /// A request of the stream, SIGKILLed 0-60 ms in with a chance of `kill_percent`, else
    /// waited for. Returns the kills it made.
    fn one_request(&mut self, kill_percent: u32) -> anyhow::Result<u32> {
        let (mut child, trashing) = self.request()?;
        let mut kills = 0;
        if kill_percent > 0 && self.rng.random_ratio(kill_percent, 100) {
            std::thread::sleep(Duration::from_millis(self.rng.random_range(0..60)));
            if child.try_wait()?.is_none() {
                child.kill()?;
                kills += 1;
            }
        }
        if let (true, Some(id)) = (child.wait()?.success(), trashing) {
            self.trashed.push(id);
        }
        std::thread::sleep(Duration::from_millis(self.rng.random_range(0..120)));
        Ok(kills)
    }

    /// The final life: no kill; a plain scan, then the service until nothing is left
    /// running or pending, then a graceful stop.
    fn quiet_life(&self, violations: &Violations) -> anyhow::Result<()> {
        let mut service = self.spawn(&self.data, &["serve", "--bind", "127.0.0.1:0"])?;
        self.run(&self.data, &["scan", "--wait"])?;
        let store = self.open()?;
        let start = Instant::now();
        while let Some(busy) = busy(&store)? {
            if start.elapsed() > QUIET_LIMIT {
                violation(
                    violations,
                    format!("not quiet after {QUIET_LIMIT:?}: {busy}"),
                );
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        signal(service.id(), "TERM")?;
        service.wait()?;
        Ok(())
    }
}

/// What the hosts phase did, for its line of figures.
#[derive(Default)]
struct HostEvents {
    kills: u32,
    pauses: u32,
    restarts: u32,
}

impl Torture<'_> {
    /// The hosts phase (see the header): returns once its time is up and every host has
    /// stopped gracefully; a host's service found dead then is a violation.
    fn several_hosts(&mut self, watch: &Watch, violations: &Violations) -> anyhow::Result<()> {
        let before = fence_rejections(&self.open()?)?;
        self.add_hosts()?;
        let mut services = (0..self.hosts.len())
            .map(|host| self.serve(host))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let end = Instant::now() + Duration::from_secs(self.args.hosts_secs);
        let (mut tally, mut next) = (HostEvents::default(), Instant::now());
        while Instant::now() < end {
            if Instant::now() >= next {
                self.host_event(&mut services, watch, &mut tally)?;
                next =
                    Instant::now() + Duration::from_millis(1_000 + self.rng.random_range(0..2_000));
            }
            self.one_request(10)?;
        }
        for (host, service) in services.iter_mut().enumerate() {
            if let Some(status) = service.try_wait()? {
                violation(
                    violations,
                    format!("host {host}'s service ended by itself: {status}"),
                );
                continue;
            }
            signal(service.id(), "TERM")?;
            service.wait()?;
        }
        self.hosts.truncate(1);
        let rejected = fence_rejections(&self.open()?)? - before;
        eprintln!(
            "torture: {} hosts, {} kills, {} pauses past the ttl, {} database restarts, \
             {rejected} fence rejections",
            services.len(),
            tally.kills,
            tally.pauses,
            tally.restarts
        );
        if rejected == 0 {
            violation(
                violations,
                "several hosts and no fence rejection".to_string(),
            );
        }
        Ok(())
    }

    /// Hosts 1.. with data dirs (and host ids) of their own, each seeing the library through
    /// a symlink of its own; host 1's clock is off by `--skew`.
    fn add_hosts(&mut self) -> anyhow::Result<()> {
        for host in 1..self.args.hosts {
            let data = self.args.work.join(format!("data-host{host}"));
            let view = self.args.work.join(format!("view-host{host}"));
            if !view.exists() {
                std::os::unix::fs::symlink(&self.args.library, &view)?;
            }
            let skew = self.args.skew.clone().filter(|_| host == 1);
            self.hosts.push(Host {
                data: data.clone(),
                skew,
            });
            self.run(&data, &["library", "add", &view.to_string_lossy()])?;
        }
        Ok(())
    }

    fn serve(&self, host: usize) -> anyhow::Result<Child> {
        let data = self.hosts[host].data.clone();
        self.spawn(&data, &["serve", "--bind", "127.0.0.1:0"])
    }

    /// One seeded event: a host SIGKILLed and started again, a host SIGSTOPped past the ttl
    /// while requests go on (the watcher checks nothing of it lands), or the database server
    /// restarted under everyone.
    fn host_event(
        &mut self,
        services: &mut [Child],
        watch: &Watch,
        tally: &mut HostEvents,
    ) -> anyhow::Result<()> {
        let host = self.rng.random_range(0..services.len());
        match self.rng.random_range(0..3) {
            0 => {
                services[host].kill()?;
                services[host].wait()?;
                services[host] = self.serve(host)?;
                tally.kills += 1;
            }
            1 => {
                self.pause_past_ttl(services[host].id(), watch)?;
                tally.pauses += 1;
            }
            _ => {
                if let Some(restart) = &self.args.pg_restart {
                    let status = Command::new("sh").args(["-c", restart]).status()?;
                    anyhow::ensure!(status.success(), "the database restart failed: {status}");
                    tally.restarts += 1;
                }
            }
        }
        Ok(())
    }
}

fn signal(pid: u32, which: &str) -> anyhow::Result<()> {
    let status = Command::new("kill")
        .args([&format!("-{which}"), &pid.to_string()])
        .status()?;
    anyhow::ensure!(status.success(), "kill -{which} {pid} failed");
    Ok(())
}

fn fence_rejections(store: &Store) -> anyhow::Result<i64> {
    Ok(store
        .counters()?
        .into_iter()
        .find(|(c, _)| *c == mediadex::model::Counter::FenceRejections)
        .map_or(0, |(_, n)| n))
}

/// What is still in flight: scans, moves, the content-hash chain. The face walk may go
/// on (it is checked for honesty, not for completion).
fn busy(store: &Store) -> anyhow::Result<Option<String>> {
    let runs = store.scan_runs(None, 10_000)?;
    if let Some(run) = runs.iter().find(|r| !r.state.is_terminal()) {
        return Ok(Some(format!("scan run {} is {}", run.id, run.state)));
    }
    let live = |j: &mediadex::model::Job| matches!(j.state, JobState::Queued | JobState::Running);
    let jobs = store.jobs(100_000)?;
    let chain = WalkKindId::ContentHash.job_kind();
    if let Some(job) = jobs
        .iter()
        .find(|j| live(j) && (j.kind == chain || j.kind == mediadex::model::MOVE_JOB_KIND))
    {
        return Ok(Some(format!(
            "{} job {} is {}",
            job.kind, job.id, job.state
        )));
    }
    Ok(None)
}

/// Polls the database while the lives run: one chain per walk kind, one running scan per
/// library, at every observation.
struct Watch {
    stop: Arc<AtomicBool>,
    /// The pid of the engine SIGSTOPped right now, if any.
    paused: Arc<Mutex<Option<u32>>>,
    compared: Arc<std::sync::atomic::AtomicUsize>,
    thread: std::thread::JoinHandle<()>,
}

impl Watch {
    fn start(store: Store, violations: Violations) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let paused = Arc::new(Mutex::new(None));
        let (flag, pause) = (stop.clone(), paused.clone());
        let compared = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut seen = Leases {
            compared: compared.clone(),
            ..Leases::default()
        };
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::SeqCst) {
                let stopped = pause.lock().map(|p| *p).unwrap_or(None);
                if let Err(e) = observe(&store, &violations, &mut seen, stopped) {
                    eprintln!("torture: observation failed (retrying): {e}");
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        Watch {
            stop,
            paused,
            compared,
            thread,
        }
    }

    fn pause(&self, pid: Option<u32>) {
        if let Ok(mut p) = self.paused.lock() {
            *p = pid;
        }
    }

    fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.thread.join();
    }
}

/// Each leased row as last observed: (table, id) -> (generation, owner, updated_at), and the
/// pid that was stopped then.
#[derive(Default)]
struct Leases {
    rows: BTreeMap<(&'static str, i64), (i64, Option<String>, i64)>,
    stopped: Option<u32>,
    /// How many row observations were compared while their holder was stopped.
    compared: Arc<std::sync::atomic::AtomicUsize>,
}

impl Leases {
    /// A row's generation never goes down; its owner never changes without a new
    /// generation (a completion only clears it); and a row leased by the stopped process
    /// does not change while it stays stopped: nothing of a paused process lands.
    fn see(&mut self, key: (&'static str, i64), now: (i64, Option<String>, i64), v: &Violations) {
        let (table, id) = key;
        if let Some((generation, owner, updated)) = self.rows.get(&key) {
            if now.0 < *generation {
                violation(
                    v,
                    format!("{table} {id}: generation {} after {generation}", now.0),
                );
            }
            if now.0 == *generation && now.1.is_some() && now.1 != *owner {
                violation(
                    v,
                    format!("{table} {id}: owner changed within generation {generation}"),
                );
            }
            let held_by_stopped = self.stopped.is_some_and(|pid| {
                let mark = format!(":{pid}:");
                [owner, &now.1]
                    .iter()
                    .all(|o| o.as_deref().is_some_and(|o| o.contains(&mark)))
            });
            if held_by_stopped {
                self.compared.fetch_add(1, Ordering::SeqCst);
            }
            if held_by_stopped && now.2 != *updated {
                violation(
                    v,
                    format!("{table} {id}: written while its holder was stopped"),
                );
            }
        }
        self.rows.insert(key, now);
    }
}

fn observe(
    store: &Store,
    violations: &Violations,
    seen: &mut Leases,
    stopped: Option<u32>,
) -> anyhow::Result<()> {
    let mut chains: BTreeMap<String, usize> = BTreeMap::new();
    let jobs = store.jobs(100_000)?;
    let runs = store.scan_runs(None, 100_000)?;
    // Compare only across two observations made with the same process stopped.
    seen.stopped = stopped.filter(|pid| seen.stopped == Some(*pid));
    for job in &jobs {
        let walk = [
            WalkKindId::ContentHash,
            WalkKindId::Faces,
            WalkKindId::Similar,
        ]
        .iter()
        .any(|k| k.job_kind() == job.kind);
        if walk && matches!(job.state, JobState::Queued | JobState::Running) {
            *chains.entry(job.kind.clone()).or_default() += 1;
        }
        let now = (job.generation, job.lease_owner.clone(), job.updated_at);
        seen.see(("job", job.id), now, violations);
    }
    let mut running: BTreeMap<i64, usize> = BTreeMap::new();
    for run in &runs {
        if run.state == RunState::Running {
            *running.entry(run.library_id).or_default() += 1;
        }
        let now = (run.generation, run.lease_owner.clone(), run.updated_at);
        seen.see(("scan run", run.id), now, violations);
    }
    seen.stopped = stopped;
    for (kind, n) in chains.into_iter().filter(|(_, n)| *n > 1) {
        violation(
            violations,
            format!("{n} live chains of the {kind} walk at once"),
        );
    }
    for (lib, n) in running.into_iter().filter(|(_, n)| *n > 1) {
        violation(
            violations,
            format!("{n} running scans of library {lib} at once"),
        );
    }
    Ok(())
}

/// The library's media files outside the trash folder and the folders a scan skips, by
/// library-relative path.
fn files_on_disk(root: &Path) -> Vec<(Vec<u8>, PathBuf)> {
    walkdir::WalkDir::new(root)
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !skipped(&e.file_name().to_string_lossy()))
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| {
            let rel = e
                .path()
                .strip_prefix(root)
                .ok()?
                .as_os_str()
                .as_bytes()
                .to_vec();
            Some((rel, e.path().to_path_buf()))
        })
        .collect()
}

fn skipped(name: &str) -> bool {
    name.starts_with('.') || name.starts_with('@') || name.starts_with('#')
}

/// Between lives, what happens to a real library: a touch, a new file, a delete, a move,
/// a copy onto a new name, a file replaced with other bytes.
fn mutate(root: &Path, rng: &mut ChaCha8Rng) -> anyhow::Result<()> {
    let files = files_on_disk(root);
    if files.is_empty() {
        return Ok(());
    }
    for _ in 0..1 + rng.random_range(0..12) {
        let (_, path) = &files[rng.random_range(0..files.len())];
        if !path.exists() {
            continue;
        }
        let fresh = root.join(format!("torture/{:016x}.jpg", rng.random::<u64>()));
        if let Some(dir) = fresh.parent() {
            std::fs::create_dir_all(dir)?;
        }
        match rng.random_range(0..6) {
            0 => std::fs::File::options()
                .write(true)
                .open(path)?
                .set_modified(std::time::SystemTime::now())?,
            1 => {
                let mut bytes = std::fs::read(path)?;
                bytes.extend_from_slice(&rng.random::<u64>().to_le_bytes());
                std::fs::write(&fresh, bytes)?;
            }
            2 => std::fs::remove_file(path)?,
            3 => std::fs::rename(path, &fresh)?,
            4 => drop(std::fs::copy(path, &fresh)?),
            _ => {
                let (_, other) = &files[rng.random_range(0..files.len())];
                if other.exists() {
                    let mut bytes = std::fs::read(other)?;
                    bytes.extend_from_slice(&rng.random::<u64>().to_le_bytes());
                    std::fs::write(path, bytes)?;
                }
            }
        }
    }
    Ok(())
}

/// The checks after the quiet life, against the disk and the reference index.
fn check(t: &Torture, violations: &Violations) -> anyhow::Result<()> {
    let v = |what: String| violation(violations, what);
    let store = t.open()?;
    for problem in store.integrity_check()? {
        v(format!("integrity_check: {problem}"));
    }
    let reference = t.args.work.join("reference");
    let library = t.args.library.to_string_lossy().into_owned();
    t.run(&reference, &["library", "add", &library])?;
    t.run(&reference, &["scan", "--wait"])?;
    let reference = open_index(&reference, None)?;
    let (got, want) = (by_path(&store)?, by_path(&reference)?);
    compare(&got, &want, &t.args.library, &v)?;
    check_live_files(&store, &t.args.library, &v)?;
    check_trash(&store, &t.args.library, &v)?;
    check_settled(&store, &v)?;
    Ok(())
}

/// The live assets by the library-relative path bytes of their present files.
fn by_path(store: &Store) -> anyhow::Result<BTreeMap<Vec<u8>, Asset>> {
    let mut by_path = BTreeMap::new();
    for asset in store.assets(false)? {
        for p in asset.paths.iter().filter(|p| p.state == FileState::Present) {
            by_path.insert(p.rel_path.clone(), asset.clone());
        }
    }
    Ok(by_path)
}

/// Every picture on disk is indexed once, live, with b3sum's checksum and the reference's
/// content hash; nothing is indexed that the reference does not index.
fn compare(
    got: &BTreeMap<Vec<u8>, Asset>,
    want: &BTreeMap<Vec<u8>, Asset>,
    root: &Path,
    v: &dyn Fn(String),
) -> anyhow::Result<()> {
    let on_disk: BTreeMap<Vec<u8>, PathBuf> = files_on_disk(root).into_iter().collect();
    for (rel, asset) in want {
        let Some(file) = on_disk.get(rel) else {
            continue;
        };
        let path = String::from_utf8_lossy(rel);
        if asset.checksum != *blake3::hash(&std::fs::read(file)?).as_bytes() {
            v(format!("{path}: the reference's checksum is not b3sum's"));
        }
        match got.get(rel) {
            None => v(format!(
                "{path}: on disk, a picture, not indexed as a live asset"
            )),
            Some(a) if a.checksum != asset.checksum => v(format!("{path}: wrong checksum")),
            Some(a) if a.content_hash != asset.content_hash => v(format!(
                "{path}: content hash {:?} is not the reference's",
                a.content_hash
            )),
            Some(_) => {}
        }
    }
    for (rel, asset) in got.iter().filter(|(rel, _)| !want.contains_key(*rel)) {
        let path = String::from_utf8_lossy(rel);
        v(format!(
            "{path}: indexed (asset {}) but not by the reference",
            asset.id
        ));
    }
    Ok(())
}

/// No live asset lacks a readable file.
fn check_live_files(store: &Store, root: &Path, v: &dyn Fn(String)) -> anyhow::Result<()> {
    for asset in store.assets(false)? {
        let readable = asset.paths.iter().any(|p| {
            let path = root.join(std::ffi::OsStr::from_bytes(&p.rel_path));
            p.state == FileState::Present && std::fs::File::open(path).is_ok()
        });
        if !readable {
            v(format!("live asset {} has no readable file", asset.id));
        }
    }
    Ok(())
}

/// Every file in a trash folder belongs to a trashed asset with its checksum.
fn check_trash(store: &Store, root: &Path, v: &dyn Fn(String)) -> anyhow::Result<()> {
    let trash = root.join(TRASH_DIR);
    let entries = walkdir::WalkDir::new(&trash)
        .into_iter()
        .filter_map(Result::ok);
    for e in entries.filter(|e| e.file_type().is_file()) {
        let rel = e.path().strip_prefix(&trash)?;
        // `<asset>-<move>/<path>`, or `<asset>/<path>` from older versions.
        let from_root = e.path().strip_prefix(root)?.as_os_str().as_bytes();
        let id = trash_place(from_root).map(|p| p.asset_id);
        let asset = match id {
            Some(id) => store.asset(id)?,
            None => None,
        };
        let sum = blake3::hash(&std::fs::read(e.path())?);
        match asset {
            None => v(format!("{}: in the trash, no asset", rel.display())),
            Some(a) if a.trashed_at.is_none() => v(format!(
                "{}: in the trash, asset {} is live",
                rel.display(),
                a.id
            )),
            Some(a) if a.checksum != *sum.as_bytes() => v(format!(
                "{}: in the trash, not asset {}'s bytes",
                rel.display(),
                a.id
            )),
            Some(_) => {}
        }
    }
    Ok(())
}

/// No run left running, no move or intent left pending, and honest walk records.
fn check_settled(store: &Store, v: &dyn Fn(String)) -> anyhow::Result<()> {
    if let Some(busy) = busy(store)? {
        v(format!("after the quiet life: {busy}"));
    }
    for intent in store.pending_intents()? {
        v(format!("trash intent {} is pending", intent.id));
    }
    let live = store.assets(false)?;
    for kind in [
        WalkKindId::ContentHash,
        WalkKindId::Faces,
        WalkKindId::Similar,
    ] {
        let Some(record) = store.walk_record(kind)? else {
            continue;
        };
        let chain = store.jobs(100_000)?.into_iter().any(|j| {
            j.kind == kind.job_kind() && matches!(j.state, JobState::Queued | JobState::Running)
        });
        if chain || record.completed_at.is_none() {
            continue;
        }
        for a in &live {
            let stamp = match kind {
                WalkKindId::ContentHash => a.content_hash.as_ref().map(|c| c.scheme),
                WalkKindId::Faces => a.faces_scheme,
                WalkKindId::Similar => store.picture_hash_stamp(a.id)?.map(|(_, s)| s),
                // Not in the list above: its stamp is not on the asset model.
                WalkKindId::Embeddings => None,
            };
            if stamp.is_some_and(|s| s < record.scheme) {
                v(format!(
                    "asset {}: {kind} stamp {stamp:?} under a complete record {}",
                    a.id, record.scheme
                ));
            }
        }
    }
    Ok(())
}
