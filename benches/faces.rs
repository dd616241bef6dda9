//! Face detection throughput: images per second through `RetinaFace::detect` (decode, EXIF
//! orientation, scale to 1024 px long side, net, decode, the closer look where it applies,
//! NMS) on 1 and 2 rayon threads sharing one loaded model. `faces_detect_1024`: the test
//! fixtures plus a 3000x2000 camera-sized JPEG, so decoding and downscaling a real photo is
//! part of the figure; `faces_walk_1024px`: pictures 1024 px on the long side.
//!
//! Face embedding throughput: faces per second through `faces::align::chip` (the astronaut's
//! landmarks on the 512x512 fixture) and `FaceEmbedder::embed`, on 1 and 2 rayon threads.
//!
//! `cargo bench --bench faces` (add `-- --quick` for a fast look).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test, example or bench: a panic is the report

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use image::ImageFormat;
use image::imageops::FilterType;
use mediadex::faces::{FaceDetector, FaceEmbedder, RetinaFace, align};
use rayon::prelude::*;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Eight files: each fixture and the big JPEG twice.
fn images(dir: &Path) -> Vec<PathBuf> {
    let big = dir.join("big.jpg");
    image::open(fixture("astronaut.png"))
        .expect("fixture")
        .resize_exact(3000, 2000, FilterType::Triangle)
        .to_rgb8()
        .save_with_format(&big, ImageFormat::Jpeg)
        .expect("write big.jpg");
    let one = [
        fixture("astronaut.png"),
        fixture("chelsea.png"),
        fixture("rocket.jpg"),
        big,
    ];
    one.iter().chain(one.iter()).cloned().collect()
}

fn detect_all(det: &RetinaFace, files: &[PathBuf]) -> usize {
    files
        .par_iter()
        .map(|p| det.detect(p).expect("detects").len())
        .sum()
}

fn faces(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = images(dir.path());
    let det = RetinaFace::new().expect("model loads");
    let mut group = c.benchmark_group("faces_detect_1024");
    group.sample_size(10);
    group.throughput(Throughput::Elements(files.len() as u64));
    for threads in [1usize, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool");
        group.bench_with_input(BenchmarkId::new("threads", threads), &threads, |b, _| {
            b.iter(|| pool.install(|| detect_all(&det, &files)))
        });
    }
    group.finish();
}

/// Eight pictures 1024 px on the long side, as a phone's export or a resized library holds
/// them: the fixtures enlarged or cut, the astronaut's face, the cat, the rocket, the clock.
fn pictures_1024(dir: &Path) -> Vec<PathBuf> {
    let sized = [
        ("astronaut.png", 1024, 1024),
        ("chelsea.png", 1024, 681),
        ("rocket.jpg", 1024, 683),
        ("clock_motion.png", 1024, 768),
    ];
    let mut out = Vec::new();
    for (name, w, h) in sized {
        let path = dir.join(format!("{name}.1024.jpg"));
        image::open(fixture(name))
            .expect("fixture")
            .resize_exact(w, h, FilterType::Triangle)
            .to_rgb8()
            .save_with_format(&path, ImageFormat::Jpeg)
            .expect("write");
        out.push(path);
    }
    out.iter().chain(out.iter()).cloned().collect()
}

/// The face walk's detection at 1024 px (issue 28 item 6's target: 5 pictures/s on 2 threads).
fn faces_1024(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = pictures_1024(dir.path());
    let det = RetinaFace::new().expect("model loads");
    let mut group = c.benchmark_group("faces_walk_1024px");
    group.sample_size(10);
    group.throughput(Throughput::Elements(files.len() as u64));
    for threads in [1usize, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool");
        group.bench_with_input(BenchmarkId::new("threads", threads), &threads, |b, _| {
            b.iter(|| pool.install(|| detect_all(&det, &files)))
        });
    }
    group.finish();
}

/// Eight faces: the astronaut's, aligned and embedded.
fn embed_all(
    embedder: &FaceEmbedder,
    picture: &image::RgbImage,
    face: &[mediadex::faces::Point; 5],
) -> usize {
    (0..8)
        .into_par_iter()
        .map(|_| {
            let chip = align::chip(picture, face).expect("a chip");
            embedder.embed(&chip).expect("embeds").len()
        })
        .sum()
}

fn embeddings(c: &mut Criterion) {
    let det = RetinaFace::new().expect("detector loads");
    let found = det.detect(&fixture("astronaut.png")).expect("detects");
    let landmarks = found.first().expect("her face").landmarks;
    let picture = image::open(fixture("astronaut.png"))
        .expect("fixture")
        .to_rgb8();
    let embedder = FaceEmbedder::new().expect("model loads");
    let mut group = c.benchmark_group("faces_embed");
    group.sample_size(10);
    group.throughput(Throughput::Elements(8));
    for threads in [1usize, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool");
        group.bench_with_input(BenchmarkId::new("threads", threads), &threads, |b, _| {
            b.iter(|| pool.install(|| embed_all(&embedder, &picture, &landmarks)))
        });
    }
    group.finish();
}

criterion_group!(benches, faces, faces_1024, embeddings);
criterion_main!(benches);
