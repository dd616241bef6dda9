//! Hostile files (issue 13, part 5): a seeded mutating fuzzer for every parser in
//! `src/media/` and the HTTP Range parser, on stable Rust (cargo-fuzz needs nightly).
//! Seeds are the files under tests/fixtures (the saved findings included) and under each
//! directory of FUZZ_CORPUS (colon-separated: the make-corpus library). Each target runs
//! for FUZZ_SECS seconds (default 10) on inputs mutated from seed FUZZ_SEED (default: the
//! clock; printed, and the same seed replays the same inputs). A panic, a broken invariant,
//! an input running over 2 s or allocating over 256 MiB is a finding, saved under
//! FUZZ_OUT/<target>/ (default tests/fixtures/fuzz, where the regression test replays
//! them). FUZZ_TARGETS (comma-separated) picks targets.
//!
//! `cargo run --release --example fuzz`; `scripts/fuzz.sh` builds the corpus and runs it.
//! Prints per target its inputs, exec/s and findings, then
//! `fuzz: N targets, M inputs, K findings, seed S`, and exits 1 when K > 0.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test, example or bench: a panic is the report

#[cfg(target_os = "linux")]
mod abort;
mod mutate;
mod targets;

use mutate::{Draw, Rng, Seed, mutate};
use rand::SeedableRng;
use std::collections::{BTreeMap, BTreeSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use targets::{BLOWN, MEMORY_LIMIT, TARGETS, TIME_LIMIT, Target, limit_memory};

#[global_allocator]
static ALLOC: targets::Counting = targets::Counting;

/// Seeds larger than this are left out: they only slow every input down.
const MAX_SEED: u64 = 2 << 20;
/// Seeds kept per sniffed type, spread over its sizes.
const SEEDS_PER_TYPE: usize = 8;

/// The message of the last panic on any thread, caught or not (`extract_from` catches a
/// parser's panic itself: that is still a finding).
static PANIC: Mutex<Option<String>> = Mutex::new(None);

struct Config {
    secs: u64,
    seed: u64,
    corpus: Vec<PathBuf>,
    out: PathBuf,
    only: Option<Vec<String>>,
}

fn config() -> anyhow::Result<Config> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let clock = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
    Ok(Config {
        secs: env("FUZZ_SECS").map_or(Ok(10), |s| s.parse())?,
        seed: env("FUZZ_SEED").map_or(Ok(clock.as_secs()), |s| s.parse())?,
        corpus: env("FUZZ_CORPUS").map_or(vec![], |c| c.split(':').map(PathBuf::from).collect()),
        out: env("FUZZ_OUT").map_or("tests/fixtures/fuzz".into(), PathBuf::from),
        only: env("FUZZ_TARGETS").map(|t| t.split(',').map(String::from).collect()),
    })
}

fn main() -> anyhow::Result<()> {
    let config = config()?;
    #[cfg(target_os = "linux")]
    abort::install();
    std::panic::set_hook(Box::new(|info| {
        if let Ok(mut last) = PANIC.lock() {
            *last = Some(info.to_string());
        }
    }));
    let mut dirs = vec![PathBuf::from("tests/fixtures")];
    dirs.extend(config.corpus.iter().cloned());
    if let Some(unknown) = config
        .only
        .iter()
        .flatten()
        .find(|n| targets::target(n).is_none())
    {
        anyhow::bail!("no fuzz target {unknown}; the targets are in examples/fuzz/targets.rs");
    }
    let seeds = load_seeds(&dirs)?;
    println!(
        "fuzz: {} seed files from {dirs:?}, seed {}",
        seeds.len(),
        config.seed
    );
    let (mut ran, mut inputs, mut findings) = (0, 0, 0);
    for target in TARGETS {
        if config
            .only
            .as_ref()
            .is_some_and(|o| !o.iter().any(|n| n == target.name))
        {
            continue;
        }
        let stats = fuzz_target(target, target_seeds(target, &seeds), &config);
        ran += 1;
        inputs += stats.inputs;
        findings += stats.findings;
    }
    println!(
        "fuzz: {ran} targets, {inputs} inputs, {findings} findings, seed {}",
        config.seed
    );
    // A hung or blown input's thread never returns: exit rather than wait for it.
    std::process::exit(if findings > 0 { 1 } else { 0 });
}

/// Every file under `dirs`, sniffed, deduplicated, up to `SEEDS_PER_TYPE` per type from the
/// generated corpus; every file of tests/fixtures (the first dir) is a seed, as each was
/// added for a case of its own (issue 26's odd places among them).
fn load_seeds(dirs: &[PathBuf]) -> anyhow::Result<Vec<(Vec<u8>, String)>> {
    // By type, then by size and hash: sorted by size, duplicates once.
    type BySize = BTreeMap<(u64, [u8; 32]), Vec<u8>>;
    let mut by_type: BTreeMap<String, BySize> = BTreeMap::new();
    let mut seeds = Vec::new();
    let mut pinned = std::collections::HashSet::new();
    for (i, dir) in dirs.iter().enumerate() {
        for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
            let entry = entry?;
            if !entry.file_type().is_file() || entry.metadata()?.len() > MAX_SEED {
                continue;
            }
            let bytes = std::fs::read(entry.path())?;
            let head = &bytes[..bytes.len().min(mediadex::media::HEAD_LEN)];
            let mime = mediadex::media::sniff(head).1.unwrap_or_default();
            let hash = *blake3::hash(&bytes).as_bytes();
            if i == 0 {
                if pinned.insert(hash) {
                    seeds.push((bytes, mime));
                }
            } else if !pinned.contains(&hash) {
                let key = (bytes.len() as u64, hash);
                by_type.entry(mime).or_default().insert(key, bytes);
            }
        }
    }
    for (mime, files) in by_type {
        let files: Vec<Vec<u8>> = files.into_values().collect();
        let step = files.len().div_ceil(SEEDS_PER_TYPE).max(1);
        for bytes in files.into_iter().step_by(step) {
            seeds.push((bytes, mime.clone()));
        }
    }
    Ok(seeds)
}

/// The seeds a target wants; a target no seed file fits is fed them all.
fn target_seeds(target: &Target, all: &[(Vec<u8>, String)]) -> Vec<Seed> {
    match target.name {
        "range" => return range_seeds(),
        "filename_date" => return name_seeds(),
        _ => {}
    }
    let wanted: Vec<_> = all.iter().filter(|(_, m)| (target.wants)(m)).collect();
    let chosen = if wanted.is_empty() {
        println!(
            "fuzz: {}: no seed of its types, fed every seed",
            target.name
        );
        all.iter().collect()
    } else {
        wanted
    };
    chosen
        .into_iter()
        .map(|(b, m)| Seed::new(b.clone(), m.clone()))
        .collect()
}

/// File names of the shapes the parser reads (and one of each kind it refuses).
fn name_seeds() -> Vec<Seed> {
    [
        "IMG_20190305_131457.jpg",
        "PXL_20210704_093012345.MP.jpg",
        "Screenshot_2022-01-15-10-20-30.png",
        "signal-2023-02-01-123456.jpg",
        "IMG-20190305-WA0001.jpg",
        "2019-03-05 13.14.57.jpg",
        "20190305131457.jpg",
        "IMG_20191305_131457.jpg",
        "2019-03-0513.14.57.jpg",
    ]
    .into_iter()
    .map(|n| Seed::new(n.as_bytes().to_vec(), String::new()))
    .collect()
}

fn range_seeds() -> Vec<Seed> {
    let values = [
        "bytes=0-9",
        "bytes=-10",
        "bytes=90-",
        "bytes=0-1,5-6",
        " bytes= 5 - 7 ",
        "bytes=-0",
        "bytes=18446744073709551615-",
        "bytes=0-18446744073709551616",
        "bytes=-18446744073709551615",
    ];
    let lens = [0u64, 1, 100, 1 << 40, u64::MAX];
    let mut seeds = Vec::new();
    for len in lens {
        for value in values {
            let bytes = [&len.to_le_bytes()[..], value.as_bytes()].concat();
            seeds.push(Seed::new(bytes, String::new()));
        }
    }
    seeds
}

#[derive(Default)]
struct Shared {
    /// The input running now, and since when (ms after `epoch`; 0 while none runs).
    input: Mutex<Option<(Arc<Vec<u8>>, String)>>,
    started_ms: AtomicU64,
    inputs: AtomicU64,
    findings: AtomicU64,
    stop: AtomicBool,
}

struct Stats {
    inputs: u64,
    findings: u64,
}

/// Runs `target` for the budget on a thread of its own and watches it: an input running
/// past the time limit or blowing the memory limit is saved and ends the target.
fn fuzz_target(target: &'static Target, seeds: Vec<Seed>, config: &Config) -> Stats {
    let shared = Arc::new(Shared::default());
    let seeds_count = seeds.len();
    let epoch = Instant::now();
    let budget = Duration::from_secs(config.secs);
    let rng = Rng::seed_from_u64(config.seed ^ name_hash(target.name));
    let out = config.out.join(target.name);
    let worker = {
        let (shared, out) = (Arc::clone(&shared), out.clone());
        std::thread::spawn(move || work(target, &seeds, rng, epoch, budget, &shared, &out))
    };
    while !worker.is_finished() {
        std::thread::sleep(Duration::from_millis(10));
        let started = shared.started_ms.load(Ordering::SeqCst);
        let running = Duration::from_millis(elapsed_ms(epoch).saturating_sub(started));
        let blown = BLOWN.swap(0, Ordering::SeqCst);
        let what = if blown > 0 {
            format!(
                "allocated over {} MiB (a request of {blown} bytes)",
                MEMORY_LIMIT >> 20
            )
        } else if started > 0 && running > TIME_LIMIT {
            format!("ran over {} s", TIME_LIMIT.as_secs())
        } else {
            continue;
        };
        shared.stop.store(true, Ordering::SeqCst);
        shared.findings.fetch_add(1, Ordering::SeqCst);
        if let Ok(Some((input, mime))) = shared.input.lock().map(|i| i.clone()) {
            save(&out, target.name, &mime, &input, &what);
        }
        break; // the stuck thread is left behind; `main` exits past it
    }
    let secs = epoch.elapsed().as_secs_f64();
    let stats = Stats {
        inputs: shared.inputs.load(Ordering::SeqCst),
        findings: shared.findings.load(Ordering::SeqCst),
    };
    println!(
        "fuzz: {:<15} {:>9} inputs {:>9.0} exec/s {:>3} findings ({} seeds)",
        target.name,
        stats.inputs,
        stats.inputs as f64 / secs,
        stats.findings,
        seeds_count
    );
    stats
}

fn work(
    target: &Target,
    seeds: &[Seed],
    mut rng: Rng,
    epoch: Instant,
    budget: Duration,
    shared: &Shared,
    out: &Path,
) {
    let mut seen = BTreeSet::new();
    #[cfg(target_os = "linux")]
    let places = abort::Places::new(out, seeds.iter().map(|s| file_kind(&s.mime)));
    while epoch.elapsed() < budget && !shared.stop.load(Ordering::SeqCst) {
        let pick = rng.below(seeds.len());
        let input = Arc::new(mutate(&mut rng, seeds, pick));
        let mime = &seeds[pick].mime;
        if let Ok(mut slot) = shared.input.lock() {
            *slot = Some((Arc::clone(&input), mime.clone()));
        }
        if let Ok(mut last) = PANIC.lock() {
            *last = None;
        }
        shared
            .started_ms
            .store(elapsed_ms(epoch).max(1), Ordering::SeqCst);
        #[cfg(target_os = "linux")]
        abort::running(&places, pick, &input);
        limit_memory(MEMORY_LIMIT);
        let outcome = catch_unwind(AssertUnwindSafe(|| (target.run)(&input, mime)));
        limit_memory(0);
        #[cfg(target_os = "linux")]
        abort::idle();
        shared.started_ms.store(0, Ordering::SeqCst);
        shared.inputs.fetch_add(1, Ordering::SeqCst);
        let panicked = PANIC.lock().ok().and_then(|mut p| p.take());
        let finding = match outcome {
            Ok(Ok(())) => panicked.map(|p| format!("caught panic: {p}")),
            Ok(Err(broken)) => Some(panicked.unwrap_or(broken)),
            Err(_) => Some(panicked.unwrap_or_else(|| "panic".into())),
        };
        if let Some(what) = finding {
            shared.findings.fetch_add(1, Ordering::SeqCst);
            // One saved input per distinct message: the rest are the same bug.
            if seen.insert(what.clone()) {
                save(out, target.name, mime, &input, &what);
            }
        }
    }
}

/// Saves a finding as `<mime>-<hash>.bin` (the regression test reads the MIME type back
/// from the name).
fn save(dir: &Path, target: &str, mime: &str, input: &[u8], what: &str) {
    let hash = blake3::hash(input).to_hex();
    let path = dir.join(format!("{}-{}.bin", file_kind(mime), &hash[..16]));
    let saved = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, input));
    let place = match saved {
        Ok(()) => path.display().to_string(),
        Err(e) => format!("NOT SAVED ({e})"),
    };
    let what = what.replace('\n', " ");
    println!(
        "fuzz: {target}: FINDING: {what}: {} bytes -> {place}",
        input.len()
    );
}

/// A MIME type as the start of a saved input's name.
fn file_kind(mime: &str) -> String {
    if mime.is_empty() {
        "none".into()
    } else {
        mime.replace('/', "_")
    }
}

fn elapsed_ms(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// FNV-1a of a target's name: each target's inputs follow from the seed alone.
fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}
