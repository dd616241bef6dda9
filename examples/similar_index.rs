//! Measures the grouping of perceptual hashes (`mediadex::similar::index`) at scale: N hashes
//! in clusters of 10 (a centre and copies a few bits from it, as a library's near-copies and
//! bursts are), the rest of each hash random, grouped at each distance asked for; prints the
//! time to build the index and to group, and the groups found. The quadratic comparison is
//! timed on a sample for the ratio. `cargo run --release --example similar_index [N]
//! [DISTANCE...]` (defaults: 1,000,000 and 4 7 8 11).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mediadex::model::PictureHash;
use mediadex::similar::index::Index;
use rand::{RngCore, SeedableRng};
use std::time::Instant;

/// Deterministic: the same hashes on every run.
fn hashes(n: usize) -> Vec<PictureHash> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x9E37_79B9_7F4A_7C15);
    let mut centre = 0;
    (0..n)
        .map(|i| {
            if i % 10 == 0 {
                centre = rng.next_u64();
            }
            let flips = rng.next_u64() % 5;
            let hash = (0..flips).fold(centre, |h, _| h ^ (1 << (rng.next_u64() % 64)));
            PictureHash {
                id: i as i64 + 1,
                hash,
                content: None,
            }
        })
        .collect()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(1_000_000, |a| a.parse().expect("N"));
    let mut distances: Vec<u32> = args.map(|a| a.parse().expect("distance")).collect();
    if distances.is_empty() {
        distances = vec![4, 7, 8, 11];
    }
    let entries = hashes(n);
    let t = Instant::now();
    let index = Index::new(entries.clone());
    println!(
        "{n} hashes: index built in {:.3} s",
        t.elapsed().as_secs_f64()
    );
    for d in distances {
        let t = Instant::now();
        let groups = index.groups(d);
        let secs = t.elapsed().as_secs_f64();
        let members: usize = groups.iter().map(Vec::len).sum();
        println!(
            "distance {d:2}: {} groups, {members} pictures, {secs:.3} s",
            groups.len()
        );
    }
    // The quadratic comparison on a sample, scaled to n: what the index saves.
    let sample = 20_000.min(n);
    let t = Instant::now();
    let mut pairs = 0u64;
    for (i, a) in entries[..sample].iter().enumerate() {
        for b in &entries[i + 1..sample] {
            pairs += u64::from((a.hash ^ b.hash).count_ones() <= 7);
        }
    }
    let secs = t.elapsed().as_secs_f64();
    let scaled = secs * (n as f64 / sample as f64).powi(2);
    println!(
        "quadratic, {sample} hashes: {secs:.3} s ({pairs} pairs); at {n}: about {scaled:.0} s"
    );
}
