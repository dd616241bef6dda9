//! The hashing hot path of a scan (issue 16 item 1), warm page cache, through the lib's
//! public API where the lib has the strategy and through blake3 and memmap2 directly where
//! the figure is what chooses between strategies:
//! - `blake3_memory`: blake3 over buffers of 4 KiB .. 64 MiB, one thread and `update_rayon`;
//! - `file_read`, `file_mmap`, `file_mmap_rayon`: a file of each size hashed by reading it
//!   into a reused buffer, through a map on one thread, through a map on rayon's threads;
//!   `file_mapped` is what `mediadex::mapped::blake3_file` does with it;
//! - `content_hash`: the content-hash rule per format (JPEG, PNG, WebP, other) over bytes
//!   in memory, a camera-sized JPEG among them;
//! - `one_vs_two_reads`: checksum and content hash from one read (`scan::hash::read_once`)
//!   against a checksum read and a content-hash read;
//! - `extract`: `media::extract_from` per format on the test fixtures;
//! - `small_batch`: 2,000 small files read once each, spread across rayon.
//!
//! `cargo bench --bench hash` (add `-- --quick`, or a group name, for a fast look).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test, example or bench: a panic is the report

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mediadex::media::content_hash;
use mediadex::model::MediaFacts;
use mediadex::scan::hash::read_once;
use rayon::prelude::*;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

const SIZES: [usize; 7] = [
    4 << 10,
    64 << 10,
    256 << 10,
    1 << 20,
    4 << 20,
    16 << 20,
    64 << 20,
];

fn label(size: usize) -> String {
    if size >= 1 << 20 {
        format!("{}MiB", size >> 20)
    } else {
        format!("{}KiB", size >> 10)
    }
}

/// Bytes that do not repeat in any way blake3 could care about.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

type Group<'a> = criterion::BenchmarkGroup<'a, criterion::measurement::WallTime>;

fn quick<'a>(c: &'a mut Criterion, name: &str) -> Group<'a> {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    group
}

fn blake3_memory(c: &mut Criterion) {
    let mut group = quick(c, "blake3_memory");
    for size in SIZES {
        let bytes = noise(size, size as u64);
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_function(BenchmarkId::new("update", label(size)), |b| {
            b.iter(|| blake3::hash(&bytes))
        });
        group.bench_function(BenchmarkId::new("update_rayon", label(size)), |b| {
            b.iter(|| blake3::Hasher::new().update_rayon(&bytes).finalize())
        });
    }
}

/// Reads the whole file into `buffer` (kept between files, as a scan thread would) and
/// hashes it.
fn hash_by_read(path: &Path, buffer: &mut Vec<u8>) -> blake3::Hash {
    buffer.clear();
    File::open(path).unwrap().read_to_end(buffer).unwrap();
    blake3::hash(buffer)
}

fn hash_by_map(path: &Path, rayon: bool) -> blake3::Hash {
    let file = File::open(path).unwrap();
    // SAFETY: a bench's own file, not changed while it is mapped.
    let map = unsafe { memmap2::Mmap::map(&file).unwrap() };
    let mut hasher = blake3::Hasher::new();
    if rayon {
        hasher.update_rayon(&map);
    } else {
        hasher.update(&map);
    }
    hasher.finalize()
}

fn file_strategies(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut group = quick(c, "file");
    let mut buffer = Vec::new();
    for size in SIZES {
        let path = dir.path().join(label(size));
        std::fs::write(&path, noise(size, 7 + size as u64)).unwrap();
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_function(BenchmarkId::new("read", label(size)), |b| {
            b.iter(|| hash_by_read(&path, &mut buffer))
        });
        group.bench_function(BenchmarkId::new("mmap", label(size)), |b| {
            b.iter(|| hash_by_map(&path, false))
        });
        group.bench_function(BenchmarkId::new("mmap_rayon", label(size)), |b| {
            b.iter(|| hash_by_map(&path, true))
        });
        group.bench_function(BenchmarkId::new("mapped", label(size)), |b| {
            b.iter(|| mediadex::mapped::blake3_file(&File::open(&path).unwrap()).unwrap())
        });
    }
}

/// A JPEG of `width` x `height` noise at quality 90 (entropy data that does not compress,
/// as a camera's does not), with an Exif APP1 of `exif` bytes after its SOI.
fn jpeg(width: u32, height: u32, exif: usize) -> Vec<u8> {
    let pixels = noise((width * height * 3) as usize, 11);
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 90)
        .encode(&pixels, width, height, image::ExtendedColorType::Rgb8)
        .unwrap();
    // A real Exif header and an empty IFD0, as a camera's APP1 starts: without one, EXIF
    // readers look for it through the whole entropy-coded data.
    let mut payload = b"Exif\0\0MM\0*\0\0\0\x08\0\0".to_vec();
    payload.extend(noise(exif, 3));
    let mut app1 = vec![0xFF, 0xE1];
    app1.extend_from_slice(&((payload.len() + 2) as u16).to_be_bytes());
    app1.extend(payload);
    out.splice(2..2, app1);
    out
}

/// A lossless WebP of the fixture rocket, resized.
fn webp() -> Vec<u8> {
    let img = image::open(fixture("rocket.jpg")).unwrap().to_rgba8();
    let mut out = Vec::new();
    image::codecs::webp::WebPEncoder::new_lossless(&mut out)
        .encode(
            &img,
            img.width(),
            img.height(),
            image::ExtendedColorType::Rgba8,
        )
        .unwrap();
    out
}

/// The camera-sized JPEG of the figures: 2,400 x 1,800 noise, about 4 MB.
fn camera_jpeg() -> Vec<u8> {
    jpeg(2400, 1800, 30_000)
}

fn content_hash_rules(c: &mut Criterion) {
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "jpeg_fixture",
            std::fs::read(fixture("rocket.jpg")).unwrap(),
        ),
        ("jpeg_camera", camera_jpeg()),
        ("png", std::fs::read(fixture("astronaut.png")).unwrap()),
        ("webp", webp()),
        (
            "other_mp4",
            std::fs::read(fixture("astronaut.mp4")).unwrap(),
        ),
    ];
    let mut group = quick(c, "content_hash");
    for (name, bytes) in &cases {
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(BenchmarkId::new("essence", name), |b| {
            b.iter(|| content_hash::essence(bytes))
        });
        group.bench_function(BenchmarkId::new("content_hash", name), |b| {
            b.iter(|| content_hash::content_hash(bytes))
        });
        group.bench_function(BenchmarkId::new("both_hashes", name), |b| {
            b.iter(|| content_hash::hashes(bytes))
        });
    }
}

fn no_facts(_: &Path, _: Option<&[u8]>) -> MediaFacts {
    MediaFacts::default()
}

fn one_vs_two_reads(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("jpeg_100KB", std::fs::read(fixture("rocket.jpg")).unwrap()),
        ("jpeg_camera", camera_jpeg()),
        ("video_64MiB", noise(64 << 20, 5)),
    ];
    let mut group = quick(c, "one_vs_two_reads");
    for (name, bytes) in &cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let size = bytes.len() as u64;
        group.throughput(Throughput::Bytes(size));
        group.bench_function(BenchmarkId::new("one_read", name), |b| {
            b.iter(|| read_once(&path, size, &no_facts).unwrap())
        });
        group.bench_function(BenchmarkId::new("two_reads", name), |b| {
            b.iter(|| {
                let checksum = mediadex::mapped::blake3_file(&File::open(&path).unwrap());
                (
                    checksum.unwrap(),
                    content_hash::content_hash_file(&path).unwrap(),
                )
            })
        });
    }
}

fn extract(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let camera = dir.path().join("camera.jpg");
    std::fs::write(&camera, camera_jpeg()).unwrap();
    let webp_path = dir.path().join("rocket.webp");
    std::fs::write(&webp_path, webp()).unwrap();
    let files = [
        ("jpeg", fixture("rocket.jpg")),
        ("jpeg_camera", camera),
        ("png", fixture("astronaut.png")),
        ("webp", webp_path),
        ("heic", fixture("astronaut_exif6.heic")),
        ("mp4", fixture("astronaut.mp4")),
        ("dng", fixture("tiny_preview.dng")),
        ("cr3", fixture("tiny.cr3")),
    ];
    let mut group = quick(c, "extract");
    for (name, path) in &files {
        let bytes = std::fs::read(path).unwrap();
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| mediadex::media::extract_from(path, Some(&bytes)))
        });
    }
}

/// Small JPEG bodies made unique by a random tail, 1.7 .. 3.8 KB like issue 16's library.
fn small_library(dir: &Path, files: usize) -> Vec<(PathBuf, u64)> {
    let body = jpeg(64, 64, 0);
    (0..files)
        .map(|i| {
            let mut bytes = body.clone();
            bytes.extend(noise(16 + (i * 37) % 2032, i as u64));
            let path = dir.join(format!("{i:05}.jpg"));
            std::fs::write(&path, &bytes).unwrap();
            (path, bytes.len() as u64)
        })
        .collect()
}

fn small_batch(c: &mut Criterion) {
    const FILES: usize = 2_000;
    let dir = tempfile::tempdir().unwrap();
    let files = small_library(dir.path(), FILES);
    let extract = |path: &Path, bytes: Option<&[u8]>| mediadex::media::extract_from(path, bytes);
    let mut group = quick(c, "small_batch");
    group.throughput(Throughput::Elements(FILES as u64));
    group.bench_function("hash_only_rayon", |b| {
        b.iter(|| {
            files
                .par_iter()
                .map(|(p, s)| read_once(p, *s, &no_facts).unwrap().checksum[0])
                .max()
        })
    });
    group.bench_function("hash_and_extract_rayon", |b| {
        b.iter(|| {
            files
                .par_iter()
                .map(|(p, s)| read_once(p, *s, &extract).unwrap().checksum[0])
                .max()
        })
    });
    group.bench_function("hash_and_extract_one_thread", |b| {
        b.iter(|| {
            files
                .iter()
                .map(|(p, s)| read_once(p, *s, &extract).unwrap().checksum[0])
                .max()
        })
    });
}

criterion_group!(
    benches,
    blake3_memory,
    file_strategies,
    content_hash_rules,
    one_vs_two_reads,
    extract,
    small_batch
);
criterion_main!(benches);
