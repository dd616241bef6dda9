//! Measures perceptual hashes on the corpus (make-corpus with CORPUS_EXTRAS=1): for each hash
//! configuration tried, the distances within each near-duplicate group of Extras/Similar
//! (`coffee`, `clock`, `street` and their `_half`, `_q60`, `_crop90`, `_tint` copies), within
//! the look-alike scene that must not be grouped (Scene/DSC_050{1,2,3}), and the smallest
//! distance from a group's member to any other picture of the library (what a distance would
//! wrongly link). `cargo run --example similar_distances CORPUS_DIR`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use image_hasher::{HashAlg, HasherConfig};
use std::path::PathBuf;

fn configs() -> Vec<(&'static str, HasherConfig)> {
    let c = || HasherConfig::new().hash_size(8, 8);
    vec![
        ("mean+dct", c().hash_alg(HashAlg::Mean).preproc_dct()),
        ("median+dct", c().hash_alg(HashAlg::Median).preproc_dct()),
        ("gradient", c().hash_alg(HashAlg::Gradient)),
        ("blockhash", c().hash_alg(HashAlg::Blockhash)),
        ("mean", c().hash_alg(HashAlg::Mean)),
    ]
}

fn group_of(path: &str) -> Option<String> {
    let rest = path.split("Extras/Similar/").nth(1)?;
    if rest.starts_with("Scene/") {
        return Some("scene".into());
    }
    Some(rest.split(['_', '.']).next()?.to_string())
}

fn main() {
    let root = std::env::args().nth(1).expect("the corpus folder");
    let mut pictures: Vec<(PathBuf, image::DynamicImage)> = Vec::new();
    for entry in walkdir::WalkDir::new(&root).sort_by_file_name() {
        let entry = entry.expect("walk");
        if entry.file_type().is_file()
            && let Ok(img) =
                mediadex::faces::upright_picture(entry.path(), mediadex::similar::DECODE_SIDE)
        {
            pictures.push((entry.path().to_path_buf(), img));
        }
    }
    println!("{} pictures", pictures.len());
    for (name, config) in configs() {
        let hasher = config.to_hasher();
        let hashes: Vec<(String, Option<String>, u64)> = pictures
            .iter()
            .map(|(p, img)| {
                let h = hasher.hash_image(img);
                let mut b = [0u8; 8];
                b.copy_from_slice(&h.as_bytes()[..8]);
                let p = p.display().to_string();
                (p.clone(), group_of(&p), u64::from_be_bytes(b))
            })
            .collect();
        let mut within: std::collections::BTreeMap<String, Vec<u32>> = Default::default();
        let mut nearest_other = u32::MAX;
        let mut between = u32::MAX;
        let mut all = Vec::new();
        for (i, (pa, ga, ha)) in hashes.iter().enumerate() {
            for (pb, gb, hb) in &hashes[i + 1..] {
                let d = (ha ^ hb).count_ones();
                all.push(d);
                match (ga, gb) {
                    (Some(a), Some(b)) if a == b => within.entry(a.clone()).or_default().push(d),
                    (Some(_), Some(_)) => between = between.min(d),
                    (Some(a), _) | (_, Some(a)) if a != "scene" && d < nearest_other => {
                        nearest_other = d;
                        eprintln!("{name}: {d} {pa} {pb}");
                    }
                    _ => {}
                }
            }
        }
        all.sort_unstable();
        println!(
            "{name}: median of all pairs {}, 1st percentile {}",
            all[all.len() / 2],
            all[all.len() / 100]
        );
        for (g, ds) in &within {
            println!("  within {g}: {ds:?}");
        }
        println!("  nearest pair of two groups (the scene too): {between}");
        println!("  nearest picture outside Extras/Similar to a group member: {nearest_other}");
    }
}
