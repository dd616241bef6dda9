//! Synthetic assets for tests and benchmarks: rows made through the store's own fenced
//! ingest (a claimed scan run, batches, a completion), without files to read. Shared by
//! `tests/it/http.rs` and `examples/bench_fill.rs`.
#![allow(dead_code)]

use mediadex::model::{
    FileReason, FileStamp, IngestItem, Lease, MediaFacts, MediaKind, RunOutcome, ScanRequest,
    Trigger,
};
use mediadex::store::{Store, StoreError};

/// The facts of synthetic asset `i`: dated over several years (every 10th undated), three
/// cameras, every 3rd with GPS, every 7th a video.
pub fn facts(i: u64) -> MediaFacts {
    let video = i.is_multiple_of(7);
    let cameras = [
        ("Canon", "EOS R6"),
        ("Apple", "iPhone 15"),
        ("FUJIFILM", "X-T5"),
    ];
    let (make, model) = cameras[(i % 3) as usize];
    MediaFacts {
        kind: Some(if video {
            MediaKind::Video
        } else {
            MediaKind::Image
        }),
        mime: Some(if video { "video/mp4" } else { "image/jpeg" }.to_string()),
        width: Some(4000),
        height: Some(3000),
        display_width: Some(4000),
        display_height: Some(3000),
        taken_local: (!i.is_multiple_of(10)).then(|| {
            let day = i % 2000;
            format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:00",
                2019 + day / 365,
                1 + (day % 365) / 31,
                1 + day % 28,
                i % 24,
                i % 60
            )
        }),
        make: Some(make.to_string()),
        model: Some(model.to_string()),
        lat: i.is_multiple_of(3).then_some(48.85),
        lon: i.is_multiple_of(3).then_some(2.35),
        ..MediaFacts::default()
    }
}

/// An item whose checksum is derived from `seed` (distinct seeds, distinct assets).
pub fn item(path: &str, seed: u64, facts: MediaFacts) -> IngestItem {
    let mut checksum = [0u8; 32];
    checksum[..8].copy_from_slice(&seed.to_le_bytes());
    checksum[31] = 0xA5;
    IngestItem {
        rel_path: path.as_bytes().to_vec(),
        rel_path_text: path.to_string(),
        stamp: FileStamp {
            size: seed.wrapping_add(1000),
            mtime_ns: 1,
            dev: 1,
            inode: seed,
        },
        reason: FileReason::New,
        checksum: Some(checksum),
        content_hash: None,
        facts: Some(facts),
        error: None,
        namesake: true,
    }
}

/// Claims a scan of `library_id` (scoped to `scope`, so that nothing goes missing),
/// ingests `items` in batches of 1024 and completes the run: the assets become visible.
pub fn ingest(
    store: &Store,
    library_id: i64,
    scope: &str,
    items: Vec<IngestItem>,
) -> Result<Lease, StoreError> {
    store.request_scan(ScanRequest {
        library_id,
        scope: scope.to_string(),
        trigger: Trigger::Manual,
        watch_event: None,
    })?;
    let (lease, _) = store
        .claim_scan_run(600_000)?
        .ok_or_else(|| StoreError::NotFound("no scan run to claim".into()))?;
    let mut items = items;
    while !items.is_empty() {
        let rest = items.split_off(items.len().min(1024));
        store.ingest_batch(&lease, library_id, items, "{}")?;
        items = rest;
    }
    store.complete_scan(&lease, RunOutcome::Completed, None)?;
    Ok(lease)
}

/// `n` synthetic assets under `<scope>/`, numbered from `first`.
pub fn fill(
    store: &Store,
    library_id: i64,
    scope: &str,
    first: u64,
    n: u64,
) -> Result<(), StoreError> {
    fill_with(store, library_id, scope, first, n, facts)
}

/// [`fill`] with the facts of each asset from `facts_of`.
pub fn fill_with(
    store: &Store,
    library_id: i64,
    scope: &str,
    first: u64,
    n: u64,
    facts_of: fn(u64) -> MediaFacts,
) -> Result<(), StoreError> {
    let items = (first..first + n)
        .map(|i| item(&format!("{scope}/{i:07}.jpg"), i, facts_of(i)))
        .collect();
    ingest(store, library_id, scope, items).map(|_| ())
}

/// The facts of a library like the 1M small JPEGs, where most filters are selective:
/// every asset a dated JPEG without camera, except one in 1,000 with GPS and one in 1,000 a
/// video, so `has_gps=true` and `kind=video` match few rows.
pub fn sparse_facts(i: u64) -> MediaFacts {
    let mut facts = facts(i);
    let video = i.is_multiple_of(1000);
    facts.kind = Some(if video {
        MediaKind::Video
    } else {
        MediaKind::Image
    });
    facts.mime = Some(if video { "video/mp4" } else { "image/jpeg" }.to_string());
    (facts.make, facts.model) = (None, None);
    let gps = i % 1000 == 500;
    (facts.lat, facts.lon) = if gps {
        (Some(48.85), Some(2.35))
    } else {
        (None, None)
    };
    facts
}
