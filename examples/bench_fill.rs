//! Fills a data dir for the HTTP latency benchmark (benches/http-latency.sh): a library
//! `bench` at ROOT holding N synthetic assets, made through the store's own fenced ingest
//! (no files are read; only the first asset has a real picture behind it, for the
//! thumbnail hit). With SCAN_DIR, also writes 200 noisy 600x600 PNGs (about 1 MiB each)
//! there for the concurrent scan to hash. `BENCH_PEOPLE=K` also gives every 8th asset a
//! face and puts each face in one of K people, half of them in the first (someone in every
//! other photo), through the store's own writes (the person queries of
//! benches/people-latency.sh). Usage: bench_fill DATA_DIR ROOT N [SCAN_DIR]
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test, example or bench: a panic is the report

#[path = "../tests/it/support/synthetic.rs"]
mod synthetic;

use mediadex::config::Config;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (data, root, n, scan_dir) = match args.as_slice() {
        [_, d, r, n] => (d, r, n, None),
        [_, d, r, n, s] => (d, r, n, Some(s)),
        _ => anyhow::bail!("usage: bench_fill DATA_DIR ROOT N [SCAN_DIR]"),
    };
    if let Some(dir) = scan_dir {
        noisy_pictures(std::path::Path::new(dir))?;
    }
    let n: u64 = n.parse()?;
    let config = Config::load(Some(data.into()))?;
    let store = mediadex::app::open_store(
        &config,
        mediadex::store::StartCheck::FullUpTo(mediadex::store::COMMAND_CHECK_BYTES),
    )?;
    let (root, name) =
        mediadex::config::library_root(std::path::Path::new(root), Some("bench".into()))?;
    let library = mediadex::app::add_library(&store, &name, &root)?;
    // Asset 0 is a real picture, `thumb.jpg` in ROOT: a 3000x2000 JPEG.
    let path = std::path::Path::new(&root).join("thumb.jpg");
    image::RgbImage::from_fn(3000, 2000, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, 90])
    })
    .save(&path)?;
    let picture = std::fs::read(&path)?;
    let mut facts = synthetic::facts(1);
    facts.taken_local = Some("2099-01-01T00:00:00".into());
    let mut first = synthetic::item("thumb.jpg", u64::MAX, facts);
    first.checksum = Some(*blake3::hash(&picture).as_bytes());
    // Its real stamp: a thumbnail is made only from a file as its scan recorded it.
    first.stamp = mediadex::model::FileStamp::of(&std::fs::metadata(&path)?);
    synthetic::ingest(&store, library.id, "", vec![first])?;
    // BENCH_FILL=sparse: facts like a real library of small JPEGs, where filters are selective.
    let facts_of = match std::env::var("BENCH_FILL").as_deref() {
        Ok("sparse") => synthetic::sparse_facts,
        _ => synthetic::facts,
    };
    let start = std::time::Instant::now();
    let mut done = 0;
    while done < n {
        let chunk = (n - done).min(20_000);
        synthetic::fill_with(
            &store,
            library.id,
            &format!("s{done}"),
            done,
            chunk,
            facts_of,
        )?;
        done += chunk;
    }
    eprintln!(
        "filled {n} assets in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    if let Ok(k) = std::env::var("BENCH_PEOPLE") {
        people(&store, n, k.parse()?)?;
    }
    Ok(())
}

/// A face on every 8th synthetic asset (ids 2..=n+1: asset 1 is the picture); even faces
/// in the first person, the others spread over the other `k - 1`. The first face of each
/// person makes them, the others are moved in.
fn people(store: &mediadex::store::Store, n: u64, k: u64) -> anyhow::Result<()> {
    let start = std::time::Instant::now();
    let face = mediadex::model::DetectedFace {
        x: 10.0,
        y: 10.0,
        w: 40.0,
        h: 40.0,
        score: 0.99,
        landmarks: [(20.0, 20.0); 5],
    };
    let mut person_of: Vec<Option<i64>> = vec![None; k as usize];
    let mut faces = 0u64;
    for id in (2..=n as i64 + 1).step_by(8) {
        anyhow::ensure!(store.store_faces(id, 1, vec![face])?, "asset {id} is gone");
        let face_id = store.photo_people(id)?[0].face_id;
        let who = if faces.is_multiple_of(2) || k < 2 {
            0
        } else {
            1 + (faces / 2) % (k - 1)
        };
        let slot = &mut person_of[who as usize];
        *slot = Some(
            store
                .move_face(face_id, *slot)?
                .map_err(|e| anyhow::anyhow!("{e:?}"))?,
        );
        faces += 1;
    }
    eprintln!(
        "{faces} faces in {k} people in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Pictures that do not compress: a scan has to read and hash every byte.
fn noisy_pictures(dir: &std::path::Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut state: u32 = 0x1234_5678;
    for i in 0..200 {
        let img = image::RgbImage::from_fn(600, 600, |_, _| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            let [a, b, c, _] = state.to_le_bytes();
            image::Rgb([a, b, c])
        });
        img.save(dir.join(format!("noise{i:03}.png")))?;
    }
    Ok(())
}
