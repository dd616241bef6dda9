//! Scan throughput (issue 16 item 2), in process, through the same calls as
//! `mediadex scan --wait`: a first index, an unchanged rescan and a rescan after 1% of the
//! files changed, of a library generated in a tempdir (small JPEGs: one 64 px JPEG body
//! made unique by 16..2048 random bytes after its EOI, 1.7..3.8 KB like issue 16's library,
//! plus optional camera-sized photos). Each phase reports files/s, MB/s (10^6 bytes), the
//! writer's committed operations and rows, the bytes this process wrote (/proc/self/io
//! write_bytes) and the database's growth, and the time per stage
//! (`scan::pipeline::stage_totals`: walk and diff on their own threads, read, hash and
//! extract summed over rayon's threads, write on the committing thread).
//!
//! `cargo bench --bench scan`. Environment: SCAN_FILES (20000 small files), SCAN_PHOTOS
//! (0 camera-sized photos), SCAN_PHOTO_MB (4), SCAN_REPS (3; the median run of each phase
//! is printed), SCAN_DIR (the tempdir's parent; default the system's).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test, example or bench: a panic is the report

use mediadex::config::Config;
use mediadex::model::Trigger;
use mediadex::ops;
use mediadex::scan::pipeline::{Stages, stage_totals};
use mediadex::store::{Store, WriteStats};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// xorshift: the same library for the same parameters.
struct Noise(u64);

impl Noise {
    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len)
            .map(|_| {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                (self.0 >> 24) as u8
            })
            .collect()
    }
}

/// A `side` px JPEG: a gradient with `grain` bits of noise (0: smooth, about 1.1 KB at 64 px;
/// 8: pure noise, which compresses to about 1.1 bytes a pixel, as a camera's does not).
fn jpeg(side: u32, grain: u32, noise: &mut Noise) -> Vec<u8> {
    let mask = ((1u32 << grain) - 1) as u8;
    let grain = noise.bytes((side * side * 3) as usize);
    let pixels: Vec<u8> = (0..side * side * 3)
        .map(|i| {
            let (x, y) = ((i / 3) % side, (i / 3) / side);
            let smooth = ((x * 255 / side + y * 255 / side) / 2) as u8;
            smooth.wrapping_add(grain[i as usize] & mask)
        })
        .collect();
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 90)
        .encode(&pixels, side, side, image::ExtendedColorType::Rgb8)
        .unwrap();
    out
}

/// The library: small JPEGs in folders of 500, then the photos in their own folder.
fn generate(root: &Path, files: usize, photos: usize, photo_mb: usize) -> Vec<PathBuf> {
    let mut noise = Noise(0x9E37_79B9_7F4A_7C15);
    let small = jpeg(64, 2, &mut noise);
    let mut paths = Vec::with_capacity(files + photos);
    for i in 0..files {
        let dir = root.join(format!("small/{:04}", i / 500));
        std::fs::create_dir_all(&dir).unwrap();
        let mut bytes = small.clone();
        bytes.extend(noise.bytes(16 + (i * 7919) % 2032));
        let path = dir.join(format!("{i:07}.jpg"));
        std::fs::write(&path, bytes).unwrap();
        paths.push(path);
    }
    if photos > 0 {
        // Noise compresses to about 1.1 bytes a pixel at quality 90.
        let side = ((photo_mb as f64 * 1e6 / 1.1).sqrt()) as u32;
        let body = jpeg(side, 8, &mut noise);
        std::fs::create_dir_all(root.join("photos")).unwrap();
        for i in 0..photos {
            let mut bytes = body.clone();
            bytes.extend(noise.bytes(64));
            let path = root.join(format!("photos/{i:05}.jpg"));
            std::fs::write(&path, bytes).unwrap();
            paths.push(path);
        }
    }
    paths
}

/// Every 100th file gets new random bytes in place of its tail: a new checksum, same size.
fn change_one_percent(paths: &[PathBuf], round: u64) -> usize {
    let mut noise = Noise(0xD1B5_4A32_D192_ED03 ^ round);
    let changed: Vec<&PathBuf> = paths.iter().step_by(100).collect();
    for path in &changed {
        let mut bytes = std::fs::read(path).unwrap();
        let len = bytes.len();
        bytes[len - 8..].copy_from_slice(&noise.bytes(8));
        std::fs::write(path, bytes).unwrap();
    }
    changed.len()
}

fn process_write_bytes() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    io.lines()
        .find_map(|l| l.strip_prefix("write_bytes: "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn db_bytes(config: &Config) -> u64 {
    let wal = config.db_path.with_extension("db-wal");
    [config.db_path.clone(), wal]
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

/// One measured scan: everything the table prints.
struct Phase {
    wall: Duration,
    stages: Stages,
    writes: WriteStats,
    write_bytes: u64,
    db_growth: i64,
}

fn scan(config: &Config, store: &Store) -> Phase {
    let s = mediadex::app::command_services(config, store.clone(), false);
    let targets = ops::library::targets(&s, None).unwrap();
    let (stages, writes) = (stage_totals(), store.write_stats());
    let (io, db) = (process_write_bytes(), db_bytes(config));
    let ask = ops::scans::Ask {
        scope: ops::Scope::parse("").unwrap(),
        force: false,
        trigger: Trigger::Manual,
        key: None,
    };
    let start = Instant::now();
    ops::scans::request_each(&s, &targets, &ask).unwrap();
    let ids: Vec<i64> = targets.iter().map(|l| l.id).collect();
    mediadex::app::work_until_idle(store, config, &ids).unwrap();
    let wall = start.elapsed();
    let (after, written) = (stage_totals(), store.write_stats());
    Phase {
        wall,
        stages: minus(after, stages),
        writes: WriteStats {
            ops: written.ops - writes.ops,
            rows: written.rows - writes.rows,
        },
        write_bytes: process_write_bytes() - io,
        db_growth: db_bytes(config) as i64 - db as i64,
    }
}

fn minus(a: Stages, b: Stages) -> Stages {
    Stages {
        walk: a.walk - b.walk,
        diff: a.diff - b.diff,
        read: a.read - b.read,
        hash: a.hash - b.hash,
        extract: a.extract - b.extract,
        write: a.write - b.write,
    }
}

fn ms(d: Duration) -> String {
    format!("{:.0}", d.as_secs_f64() * 1e3)
}

fn print(name: &str, p: &Phase, files: usize, bytes: u64) {
    let secs = p.wall.as_secs_f64();
    let s = &p.stages;
    println!(
        "{name:<18} {secs:>8.3} {:>10.0} {:>8.1} {:>7} {:>8} {:>11} {:>10} | {:>6} {:>6} {:>6} {:>6} {:>7} {:>6}",
        files as f64 / secs,
        bytes as f64 / 1e6 / secs,
        p.writes.ops,
        p.writes.rows,
        p.write_bytes,
        p.db_growth,
        ms(s.walk),
        ms(s.diff),
        ms(s.read),
        ms(s.hash),
        ms(s.extract),
        ms(s.write),
    );
}

/// A fresh data dir and store for one round, with the library added.
fn fresh(base: &Path, root: &Path, round: usize) -> (Config, Store) {
    let config = Config::load(Some(base.join(format!("data{round}")))).unwrap();
    let store = mediadex::app::open_store(
        &config,
        mediadex::store::StartCheck::FullUpTo(mediadex::store::COMMAND_CHECK_BYTES),
    )
    .unwrap();
    let s = mediadex::app::command_services(&config, store.clone(), false);
    let new = ops::library::NewLibrary::check(root, Some("bench".into())).unwrap();
    ops::library::add(&s, &new).unwrap();
    (config, store)
}

fn median(mut phases: Vec<Phase>) -> Phase {
    phases.sort_by_key(|p| p.wall);
    phases.swap_remove(phases.len() / 2)
}

fn main() {
    let (files, photos) = (env("SCAN_FILES", 20_000), env("SCAN_PHOTOS", 0));
    let (photo_mb, reps) = (env("SCAN_PHOTO_MB", 4), env("SCAN_REPS", 3).max(1));
    let parent = std::env::var_os("SCAN_DIR").map(PathBuf::from);
    let base = match parent {
        Some(p) => tempfile::tempdir_in(p),
        None => tempfile::tempdir(),
    }
    .unwrap();
    let root = base.path().join("library");
    let paths = generate(&root, files, photos, photo_mb);
    let bytes: u64 = paths.iter().map(|p| p.metadata().unwrap().len()).sum();
    let count = paths.len();
    println!(
        "library: {files} small files and {photos} photos of {photo_mb} MB, {bytes} bytes; median of {reps} runs"
    );
    let (mut first, mut unchanged, mut changed) = (vec![], vec![], vec![]);
    let mut changed_files = 0;
    for round in 0..reps {
        let (config, store) = fresh(base.path(), &root, round);
        first.push(scan(&config, &store));
        unchanged.push(scan(&config, &store));
        changed_files = change_one_percent(&paths, round as u64);
        changed.push(scan(&config, &store));
    }
    println!(
        "{:<18} {:>8} {:>10} {:>8} {:>7} {:>8} {:>11} {:>10} | {:>6} {:>6} {:>6} {:>6} {:>7} {:>6}",
        "phase",
        "secs",
        "files/s",
        "MB/s",
        "ops",
        "rows",
        "write_bytes",
        "db_growth",
        "walk",
        "diff",
        "read",
        "hash",
        "extract",
        "write"
    );
    println!("{:>93}", "(stage figures in ms)");
    print("first index", &median(first), count, bytes);
    print("unchanged rescan", &median(unchanged), count, bytes);
    let changed_bytes = bytes / 100;
    print("1% changed rescan", &median(changed), count, changed_bytes);
    println!("(the 1% rescan changed {changed_files} files; its MB/s counts the library's 1%)");
}
