//! Live Photos and motion photos (issue 15 item 3): a still and its MOV are one asset with a
//! clip, paired by the ContentIdentifier both carry, or by folder, basename and capture
//! second when only the MOV carries one; the decoy (same name, another identifier, two
//! hours later) stays apart, whatever the order and the batches the two are stored in. A
//! motion photo's embedded MP4 is found and stored; `/motion` serves either clip with Range.
//! The MOVs and the motion photo are the make-corpus extras' own files (tests/fixtures/live);
//! the stills are made here, since exiftool cannot write the Apple MakerNote they carry.

use crate::support::{self, Env, env, exif, synthetic};
use ::exif::{Field, In, Tag, Value};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use mediadex::http::{HttpConfig, Security};
use mediadex::model::{Asset, IngestItem};
use mediadex::thumbs::Thumbs;
use std::path::{Path, PathBuf};

const LIVE_ID: &str = "1F7B6A52-3C1D-4E8B-9C0A-5D2E7F4B8A61";
const DECOY_ID: &str = "C3A9E0D4-72B5-4F16-8E3D-0B9A1C6F2E57";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/live")
        .join(name)
}

/// An iPhone JPEG taken at `when` (EXIF local time) + `subsec`, UTC+2, with a MakerNote
/// ContentIdentifier when `id` is given; `shade` keeps two stills apart.
fn still(when: &str, subsec: &str, id: Option<&str>, shade: u32) -> Vec<u8> {
    let mut fields = vec![
        exif::ascii(Tag::Make, "Apple"),
        exif::ascii(Tag::Model, "iPhone 12 Pro"),
        exif::ascii(Tag::DateTimeOriginal, when),
        exif::ascii(Tag::SubSecTimeOriginal, subsec),
        exif::ascii(Tag::OffsetTimeOriginal, "+02:00"),
    ];
    if let Some(id) = id {
        fields.push(Field {
            tag: Tag::MakerNote,
            ifd_num: In::PRIMARY,
            value: Value::Undefined(exif::apple_note(id), 0),
        });
    }
    exif::jpeg_with_exif(16 + shade, 12, &fields)
}

/// The Live Photo still of the corpus (12:00:00.25 +02:00, the MOV's instant).
fn live_still(id: Option<&str>) -> Vec<u8> {
    still("2021:08:14 12:00:00", "250", id, 0)
}

/// The decoy's still: 12:05:00.61 +02:00, its MOV two hours later.
fn decoy_still() -> Vec<u8> {
    still("2021:08:14 12:05:00", "610", None, 1)
}

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn root(env: &Env, lib: &str) -> PathBuf {
    env.dir.path().join(lib)
}

/// Every asset of the index (the hidden clips too), by the path of its first file.
fn by_path(env: &Env) -> std::collections::BTreeMap<String, Asset> {
    let ids = env.sql().ints("SELECT id FROM assets ORDER BY id", &[]);
    ids.into_iter()
        .map(|id| env.store.asset(id).unwrap().unwrap())
        .map(|a| (a.paths[0].rel_path_text.clone(), a))
        .collect()
}

fn listed(env: &Env) -> Vec<String> {
    let list = env.store.assets(false).unwrap();
    list.iter()
        .map(|a| a.paths[0].rel_path_text.clone())
        .collect()
}

/// The corpus's Live Photo folder: the pair and the decoy.
fn live_folder(env: &Env) -> i64 {
    let lib = env.library("lib");
    let r = root(env, "lib");
    write(&r, "Live/IMG_7001.JPG", &live_still(None));
    write(
        &r,
        "Live/IMG_7001.MOV",
        &std::fs::read(fixture("IMG_7001.MOV")).unwrap(),
    );
    write(&r, "Live/IMG_7002.JPG", &decoy_still());
    write(
        &r,
        "Live/IMG_7002.MOV",
        &std::fs::read(fixture("IMG_7002.MOV")).unwrap(),
    );
    lib
}

#[test]
fn a_live_photo_is_one_asset_with_its_clip_and_the_decoy_stays_apart() {
    let env = env();
    let lib = live_folder(&env);
    support::scan_now(&env, lib, "");
    let all = by_path(&env);
    let (pair, clip) = (&all["Live/IMG_7001.JPG"], &all["Live/IMG_7001.MOV"]);
    assert_eq!(clip.facts.content_identifier.as_deref(), Some(LIVE_ID));
    assert_eq!(
        pair.facts.content_identifier, None,
        "made without a MakerNote"
    );
    let shown = pair.live_clip.as_ref().expect("the still shows its clip");
    assert_eq!(shown.asset_id, clip.id);
    assert_eq!(shown.mime.as_deref(), Some("video/quicktime"));
    assert_eq!(shown.duration_ms, clip.facts.duration_ms);
    assert!(shown.duration_ms.is_some_and(|d| d > 1000));
    let decoy = &all["Live/IMG_7002.MOV"];
    assert_eq!(decoy.facts.content_identifier.as_deref(), Some(DECOY_ID));
    assert_eq!(
        all["Live/IMG_7002.JPG"].live_clip, None,
        "the decoy is 2 h later"
    );
    assert_eq!(
        listed(&env),
        [
            "Live/IMG_7001.JPG",
            "Live/IMG_7002.JPG",
            "Live/IMG_7002.MOV"
        ],
        "the clip is no second photo in the grid; the decoy MOV is a video of its own"
    );
    assert_ne!(pair.checksum, clip.checksum, "each keeps its own checksum");
}

#[test]
fn assets_json_names_the_clip_of_a_live_photo() {
    let env = env();
    let lib = live_folder(&env);
    support::scan_now(&env, lib, "");
    let json = env.cli_json(&["assets", "--json"]);
    let items = json.as_array().unwrap();
    assert_eq!(items.len(), 3, "{json}");
    let still = items
        .iter()
        .find(|a| a["paths"][0] == "Live/IMG_7001.JPG")
        .unwrap();
    let clip = &by_path(&env)["Live/IMG_7001.MOV"];
    assert_eq!(still["motion"]["kind"], "live");
    assert_eq!(still["motion"]["asset_id"], clip.id);
    assert_eq!(still["motion"]["mime"], "video/quicktime");
    let decoy = items
        .iter()
        .find(|a| a["paths"][0] == "Live/IMG_7002.JPG")
        .unwrap();
    assert_eq!(decoy["motion"], serde_json::Value::Null);
}

/// The facts a scan reads from `bytes` named `name`, as an ingest item of distinct seed.
fn read(name: &str, bytes: &[u8], seed: u64) -> IngestItem {
    let facts = mediadex::media::extract_from(Path::new(name), Some(bytes));
    assert_eq!(facts.error, None, "{name}");
    synthetic::item(name, seed, facts)
}

fn mov(name: &str, fixture_name: &str, seed: u64) -> IngestItem {
    read(name, &std::fs::read(fixture(fixture_name)).unwrap(), seed)
}

fn clip_of(env: &Env, rel: &str) -> Option<i64> {
    by_path(env)[rel].live_clip.as_ref().map(|c| c.asset_id)
}

#[test]
fn an_identifier_pairs_across_names_and_folders_and_beats_a_same_named_mov() {
    let env = env();
    let lib = env.library("lib");
    let items = vec![
        // The same name and instant as the MOV, but another capture's identifier.
        read("a/IMG_7001.JPG", &live_still(Some(DECOY_ID)), 1),
        mov("a/IMG_7001.MOV", "IMG_7001.MOV", 2),
        // Another name, in another folder, with the MOV's identifier.
        read("b/renamed.jpg", &live_still(Some(LIVE_ID)), 3),
    ];
    assert_eq!(
        items[2]
            .facts
            .as_ref()
            .unwrap()
            .content_identifier
            .as_deref(),
        Some(LIVE_ID)
    );
    synthetic::ingest(&env.store, lib, "", items).unwrap();
    let all = by_path(&env);
    assert_eq!(
        clip_of(&env, "a/IMG_7001.JPG"),
        None,
        "names lose to identifiers"
    );
    assert_eq!(
        clip_of(&env, "b/renamed.jpg"),
        Some(all["a/IMG_7001.MOV"].id)
    );
}

/// Each order, each item in a run of its own (so in batches of their own).
fn ingest_apart(env: &Env, lib: i64, items: Vec<IngestItem>) {
    for item in items {
        synthetic::ingest(&env.store, lib, "", vec![item]).unwrap();
    }
}

/// One side of a pair, made afresh for each order.
type Made = fn() -> IngestItem;

#[test]
fn pairing_does_not_depend_on_which_of_the_two_is_stored_first() {
    let pairs: [(&str, Made, Made); 2] = [
        (
            "by name",
            || read("Live/IMG_7001.JPG", &live_still(None), 1),
            || mov("Live/IMG_7001.MOV", "IMG_7001.MOV", 2),
        ),
        (
            "by identifier",
            || read("x/still.jpg", &live_still(Some(LIVE_ID)), 1),
            || mov("y/clip.mov", "IMG_7001.MOV", 2),
        ),
    ];
    for (how, still, clip) in pairs {
        for still_first in [true, false] {
            let env = env();
            let lib = env.library("lib");
            let (s, c) = (still(), clip());
            let (still_path, clip_path) = (s.rel_path_text.clone(), c.rel_path_text.clone());
            let items = if still_first { vec![s, c] } else { vec![c, s] };
            ingest_apart(&env, lib, items);
            let want = by_path(&env)[&clip_path].id;
            assert_eq!(
                clip_of(&env, &still_path),
                Some(want),
                "{how}, still first: {still_first}"
            );
            assert_eq!(
                listed(&env),
                [still_path],
                "{how}, still first: {still_first}"
            );
        }
    }
}

/// An index made before migration 14 knows neither identifier: a forced rescan reads the
/// files again, brings the identifiers and the embedded video to their assets (the same
/// bytes, so the same assets) and pairs them.
#[test]
fn a_forced_rescan_brings_identifiers_and_videos_to_assets_indexed_before_them() {
    let env = env();
    let lib = env.library("lib");
    let mut clip = mov("L/IMG_7001.MOV", "IMG_7001.MOV", 2);
    let still = read("L/IMG_7001.JPG", &live_still(None), 1);
    let pxl = read(PXL, &std::fs::read(fixture(PXL)).unwrap(), 3);
    let (mut old_clip, mut old_pxl) = (clip.clone(), pxl.clone());
    old_clip.facts.as_mut().unwrap().content_identifier = None;
    old_pxl.facts.as_mut().unwrap().embedded_video = None;
    synthetic::ingest(&env.store, lib, "", vec![old_clip, still.clone(), old_pxl]).unwrap();
    assert_eq!(clip_of(&env, "L/IMG_7001.JPG"), None);
    let before: Vec<i64> = by_path(&env).values().map(|a| a.id).collect();
    clip.reason = mediadex::model::FileReason::Forced;
    synthetic::ingest(&env.store, lib, "", vec![clip, pxl]).unwrap();
    let all = by_path(&env);
    assert_eq!(
        all.values().map(|a| a.id).collect::<Vec<_>>(),
        before,
        "the same assets"
    );
    assert_eq!(
        clip_of(&env, "L/IMG_7001.JPG"),
        Some(all["L/IMG_7001.MOV"].id)
    );
    assert_eq!(
        all[PXL].facts.embedded_video.map(|v| v.length),
        Some(PXL_VIDEO)
    );
}

/// The pairing is part of the second file's fenced batch: a worker whose lease expired
/// writes neither the file nor the pair.
#[test]
fn a_stale_worker_pairs_nothing() {
    let env = env();
    let lib = env.library("lib");
    synthetic::ingest(
        &env.store,
        lib,
        "",
        vec![mov("L/IMG_7001.MOV", "IMG_7001.MOV", 2)],
    )
    .unwrap();
    let lease = env.claimed_scan(lib, "");
    env.clock.advance(support::TTL + 1);
    let still = read("L/IMG_7001.JPG", &live_still(None), 1);
    let refused = env.store.ingest_batch(&lease, lib, vec![still], "{}");
    assert!(refused.is_err(), "the lease expired");
    let linked = (env.sql()).int(
        "SELECT count(*) FROM assets WHERE live_video_id IS NOT NULL",
        &[],
    );
    assert_eq!(linked, Some(0));
    assert_eq!(by_path(&env).len(), 1, "only the MOV");
}

#[test]
fn the_decoy_pairs_in_neither_order_nor_a_still_of_another_name_or_camera() {
    let not_apple = {
        let fields = [
            exif::ascii(Tag::Make, "Google"),
            exif::ascii(Tag::DateTimeOriginal, "2021:08:14 12:00:00"),
            exif::ascii(Tag::OffsetTimeOriginal, "+02:00"),
        ];
        exif::jpeg_with_exif(20, 12, &fields)
    };
    let cases: [(&str, Made, Vec<u8>, &str); 3] = [
        (
            "the decoy",
            || mov("L/IMG_7002.MOV", "IMG_7002.MOV", 2),
            decoy_still(),
            "L/IMG_7002.JPG",
        ),
        (
            "another stem",
            || mov("L/IMG_7001.MOV", "IMG_7001.MOV", 2),
            live_still(None),
            "L/IMG_7001a.JPG",
        ),
        (
            "not an iPhone",
            || mov("L/IMG_7001.MOV", "IMG_7001.MOV", 2),
            not_apple,
            "L/IMG_7001.JPG",
        ),
    ];
    for (what, clip, still_bytes, still_path) in cases {
        for still_first in [true, false] {
            let env = env();
            let lib = env.library("lib");
            let (s, c) = (read(still_path, &still_bytes, 1), clip());
            let items = if still_first { vec![s, c] } else { vec![c, s] };
            ingest_apart(&env, lib, items);
            assert_eq!(
                clip_of(&env, still_path),
                None,
                "{what}, still first: {still_first}"
            );
            assert_eq!(listed(&env).len(), 2, "{what}: both in the grid");
        }
    }
}

#[test]
fn a_trashed_still_lets_its_clip_show_and_a_restore_hides_it_again() {
    let env = env();
    let lib = live_folder(&env);
    support::scan_now(&env, lib, "");
    let r = root(&env, "lib");
    let kept = r.parent().unwrap().join("kept.jpg");
    std::fs::rename(r.join("Live/IMG_7001.JPG"), &kept).unwrap();
    // One file of four goes missing: past the circuit breaker's default share.
    let config = mediadex::scan::job::ScanConfig {
        max_missing_share: 1.0,
        ..Default::default()
    };
    support::scan_now_with(&env, lib, "", config);
    assert_eq!(
        listed(&env),
        [
            "Live/IMG_7001.MOV",
            "Live/IMG_7002.JPG",
            "Live/IMG_7002.MOV"
        ],
        "the still went to the trash: its clip is a video of its own again"
    );
    std::fs::rename(&kept, r.join("Live/IMG_7001.JPG")).unwrap();
    support::scan_now(&env, lib, "");
    let still = &by_path(&env)["Live/IMG_7001.JPG"];
    assert_eq!(still.trashed_at, None, "restored");
    assert!(still.live_clip.is_some());
    assert_eq!(
        listed(&env),
        [
            "Live/IMG_7001.JPG",
            "Live/IMG_7002.JPG",
            "Live/IMG_7002.MOV"
        ]
    );
}

#[test]
fn a_clip_whose_file_went_missing_is_in_the_trash_and_its_still_shows_none() {
    let env = env();
    let lib = live_folder(&env);
    support::scan_now(&env, lib, "");
    let r = root(&env, "lib");
    std::fs::remove_file(r.join("Live/IMG_7001.MOV")).unwrap();
    let config = mediadex::scan::job::ScanConfig {
        max_missing_share: 1.0,
        ..Default::default()
    };
    support::scan_now_with(&env, lib, "", config);
    let trash = env.store.assets(true).unwrap();
    let trashed: Vec<&str> = trash
        .iter()
        .map(|a| a.paths[0].rel_path_text.as_str())
        .collect();
    assert_eq!(
        trashed,
        ["Live/IMG_7001.MOV"],
        "listed in the trash, whatever its still"
    );
    assert_eq!(by_path(&env)["Live/IMG_7001.JPG"].live_clip, None);
}

/// The Pixel 7 motion photo of the corpus: its `Container:Directory` says the MP4 is the
/// last 20,971 bytes (exiftool 12.57: DirectoryItemLength 20971).
const PXL: &str = "PXL_20230812_101530123.MP.jpg";
const PXL_VIDEO: u64 = 20_971;

#[test]
fn a_motion_photo_stores_where_its_video_is() {
    let bytes = std::fs::read(fixture(PXL)).unwrap();
    let facts = mediadex::media::extract(&fixture(PXL));
    assert_eq!(facts.error, None);
    let video = facts.embedded_video.expect("the embedded video");
    assert_eq!(
        (video.offset, video.length),
        (bytes.len() as u64 - PXL_VIDEO, PXL_VIDEO)
    );
    assert_eq!(&bytes[video.offset as usize + 4..][..4], b"ftyp");
    // Pixel 3 style, built here: GCamera:MicroVideoOffset counts from the end.
    let mp4 = &bytes[video.offset as usize..];
    let jpeg = &bytes[..video.offset as usize];
    let micro = micro_video(jpeg, mp4);
    let facts = mediadex::media::extract_from(Path::new("MVIMG_1.jpg"), Some(&micro));
    let video = facts.embedded_video.expect("the MicroVideo");
    assert_eq!(video.offset + video.length, micro.len() as u64);
    assert_eq!(&micro[video.offset as usize..], mp4);
    // An offset that lands anywhere but an MP4 is no video.
    let mut wrong = micro.clone();
    let at = wrong.len() - mp4.len() + 4;
    wrong[at..at + 4].copy_from_slice(b"free");
    let facts = mediadex::media::extract_from(Path::new("MVIMG_1.jpg"), Some(&wrong));
    assert_eq!(facts.embedded_video, None);
    // Stored with the asset.
    let env = env();
    let lib = env.library("lib");
    write(&root(&env, "lib"), PXL, &bytes);
    support::scan_now(&env, lib, "");
    let asset = &by_path(&env)[PXL];
    assert_eq!(
        asset.facts.embedded_video.map(|v| v.length),
        Some(PXL_VIDEO)
    );
}

/// `jpeg` (a JPEG without XMP, from SOI to EOI) with a GCamera MicroVideo packet put in
/// after SOI and `mp4` appended.
fn micro_video(jpeg: &[u8], mp4: &[u8]) -> Vec<u8> {
    let xmp = format!(
        "http://ns.adobe.com/xap/1.0/\0<x:xmpmeta xmlns:x=\"adobe:ns:meta/\"><rdf:RDF><rdf:Description \
         xmlns:GCamera=\"http://ns.google.com/photos/1.0/camera/\" GCamera:MicroVideo=\"1\" \
         GCamera:MicroVideoVersion=\"1\" GCamera:MicroVideoOffset=\"{}\"/></rdf:RDF></x:xmpmeta>",
        mp4.len()
    );
    let mut out = jpeg[..2].to_vec();
    out.extend_from_slice(&[0xFF, 0xE1]);
    out.extend_from_slice(&((xmp.len() + 2) as u16).to_be_bytes());
    out.extend_from_slice(xmp.as_bytes());
    out.extend_from_slice(&jpeg[2..]);
    out.extend_from_slice(mp4);
    out
}

#[test]
fn the_content_hash_of_a_motion_photo_keeps_its_video() {
    let bytes = std::fs::read(fixture(PXL)).unwrap();
    let mut other = bytes.clone();
    let last = other.len() - 1;
    other[last] ^= 1;
    let hash = |b: &[u8]| mediadex::media::content_hash::content_hash(b);
    assert_ne!(hash(&bytes), hash(&other), "another video, another picture");
}

/// The API over `env`'s store, as on loopback (no detector: not needed here), and the
/// sender whose drop stops its background tasks.
fn router(env: &Env) -> (axum::Router, support::Stop) {
    router_with(env, None)
}

/// `router`, converting clips through `ffmpeg`.
fn router_with(env: &Env, ffmpeg: Option<PathBuf>) -> (axum::Router, support::Stop) {
    let (stop, stop_rx) = support::Stop::channel();
    let token = Some("0123456789abcdef".repeat(4));
    let config = HttpConfig {
        security: Security::for_bind("127.0.0.1:7468".parse().unwrap(), token, false),
        thumbs: Thumbs::with_ffmpeg(env.dir.path(), ffmpeg),
        event_poll: std::time::Duration::from_millis(10),
        ops: mediadex::ops::Services::new(env.store.clone()),
    };
    let state = support::app_state(config, stop_rx);
    (mediadex::http::router(state), stop)
}

struct Got {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: Vec<u8>,
}

async fn get(router: &axum::Router, uri: &str, range: Option<&str>) -> Got {
    let mut b = Request::builder().uri(uri).header("host", "127.0.0.1:7468");
    if let Some(range) = range {
        b = b.header("range", range);
    }
    let (parts, body) = support::respond(router, b.body(Body::empty()).unwrap(), 64 << 20).await;
    let body = body.to_vec();
    Got {
        status: parts.status,
        headers: parts.headers,
        body,
    }
}

fn header<'a>(got: &'a Got, name: &str) -> &'a str {
    got.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

#[test]
fn motion_serves_the_embedded_mp4_and_the_live_mov_with_range() {
    support::block_on(async {
        let env = env();
        let lib = live_folder(&env);
        let bytes = std::fs::read(fixture(PXL)).unwrap();
        write(&root(&env, "lib"), PXL, &bytes);
        support::scan_now(&env, lib, "");
        let all = by_path(&env);
        let server = router(&env);
        let router = &server.0;
        let mp4 = &bytes[bytes.len() - PXL_VIDEO as usize..];
        let uri = format!("/api/assets/{}/motion", all[PXL].id);
        let whole = get(router, &uri, None).await;
        assert_eq!(whole.status, StatusCode::OK);
        assert_eq!(header(&whole, "content-type"), "video/mp4");
        let head = &whole.body[..whole.body.len().min(12)];
        assert!(
            whole.body == mp4,
            "not the stored window: {} bytes from {head:?}",
            whole.body.len()
        );
        let part = get(router, &uri, Some("bytes=4-11")).await;
        assert_eq!(part.status, StatusCode::PARTIAL_CONTENT);
        assert_eq!(part.body, b"ftypisom");
        assert_eq!(
            header(&part, "content-range"),
            format!("bytes 4-11/{PXL_VIDEO}")
        );
        let tail = get(router, &uri, Some("bytes=-3")).await;
        assert_eq!(tail.body, &bytes[bytes.len() - 3..]);
        let past = get(router, &uri, Some(&format!("bytes={PXL_VIDEO}-"))).await;
        assert_eq!(past.status, StatusCode::RANGE_NOT_SATISFIABLE);

        let live = get(
            router,
            &format!("/api/assets/{}/motion", all["Live/IMG_7001.JPG"].id),
            Some("bytes=0-7"),
        )
        .await;
        assert_eq!(live.status, StatusCode::PARTIAL_CONTENT);
        assert_eq!(header(&live, "content-type"), "video/quicktime");
        let mov = std::fs::read(fixture("IMG_7001.MOV")).unwrap();
        assert_eq!(live.body, &mov[..8]);
        assert_eq!(
            header(&live, "content-range"),
            format!("bytes 0-7/{}", mov.len())
        );

        for plain in ["Live/IMG_7002.JPG", "Live/IMG_7002.MOV"] {
            let none = get(
                router,
                &format!("/api/assets/{}/motion", all[plain].id),
                None,
            )
            .await;
            assert_eq!(none.status, StatusCode::NOT_FOUND, "{plain}");
        }
        let list = get(router, "/api/assets", None).await;
        let list: serde_json::Value = serde_json::from_slice(&list.body).unwrap();
        let ids: Vec<i64> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["id"].as_i64().unwrap())
            .collect();
        let clip = all["Live/IMG_7001.MOV"].id;
        assert_eq!(ids.len(), 4, "{list}");
        assert!(
            !ids.contains(&clip),
            "the clip is no item of the API's list: {ids:?}"
        );
        let still = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["id"] == all["Live/IMG_7001.JPG"].id)
            .unwrap();
        assert_eq!(still["motion"]["asset_id"], clip);
        assert_eq!(still["motion"]["mime"], "video/quicktime");
        let json = get(router, &format!("/api/assets/{}", all[PXL].id), None).await;
        let json: serde_json::Value = serde_json::from_slice(&json.body).unwrap();
        assert_eq!(json["motion"]["kind"], "embedded");
        assert_eq!(json["motion"]["length"], PXL_VIDEO);
    })
}

/// The user trashes what they see (issue 25): the grid shows a Live Photo once, so its
/// clip goes into the trash with the still and comes back with it.
#[test]
fn a_trashed_live_photo_takes_its_clip_into_the_trash_and_back() {
    let env = env();
    let lib = live_folder(&env);
    support::scan_now(&env, lib, "");
    let r = root(&env, "lib");
    let still = by_path(&env)["Live/IMG_7001.JPG"].id;
    let clip = by_path(&env)["Live/IMG_7001.JPG"]
        .live_clip
        .as_ref()
        .expect("a live photo")
        .asset_id;
    mediadex::trash::trash(&env.store, still).expect("trash");
    assert_eq!(
        listed(&env),
        ["Live/IMG_7002.JPG", "Live/IMG_7002.MOV"],
        "the clip stayed behind as a video of its own"
    );
    let trashed = |id: i64| env.store.asset(id).unwrap().unwrap().trashed_at.is_some();
    assert!(trashed(still) && trashed(clip));
    assert!(!r.join("Live/IMG_7001.MOV").exists());
    assert!(
        support::trashed_to(&env.store, &r, clip, "Live/IMG_7001.MOV").exists(),
        "the clip is in its own trash folder of the move"
    );
    // A full scan keeps it so: nothing of the pair is in the library folder.
    support::scan_now(&env, lib, "");
    assert_eq!(listed(&env), ["Live/IMG_7002.JPG", "Live/IMG_7002.MOV"]);

    mediadex::trash::restore(&env.store, still).expect("restore");
    assert!(
        !trashed(still) && !trashed(clip),
        "the clip came back with it"
    );
    assert!(r.join("Live/IMG_7001.MOV").exists() && r.join("Live/IMG_7001.JPG").exists());
    assert_eq!(
        listed(&env),
        [
            "Live/IMG_7001.JPG",
            "Live/IMG_7002.JPG",
            "Live/IMG_7002.MOV"
        ]
    );
    assert_eq!(
        by_path(&env)["Live/IMG_7001.JPG"]
            .live_clip
            .as_ref()
            .map(|c| c.asset_id),
        Some(clip)
    );
}

#[test]
fn without_ffmpeg_a_clip_is_not_converted_and_says_why() {
    support::block_on(async {
        let env = env();
        let lib = live_folder(&env);
        support::scan_now(&env, lib, "");
        let all = by_path(&env);
        let server = router(&env);
        let router = &server.0;
        let still = all["Live/IMG_7001.JPG"].id;
        let got = get(
            router,
            &format!("/api/assets/{still}/motion/playable"),
            None,
        )
        .await;
        assert_eq!(got.status, StatusCode::SERVICE_UNAVAILABLE);
        let said: serde_json::Value = serde_json::from_slice(&got.body).unwrap();
        assert_eq!(said["error"]["code"], "unavailable");
        assert!(
            said["error"]["message"]
                .as_str()
                .unwrap()
                .contains("ffmpeg"),
            "{said}"
        );
        let plain = all["Live/IMG_7002.JPG"].id;
        let none = get(
            router,
            &format!("/api/assets/{plain}/motion/playable"),
            None,
        )
        .await;
        assert_eq!(none.status, StatusCode::NOT_FOUND, "a still without a clip");
        let picture = get(router, &format!("/api/assets/{still}/playable"), None).await;
        assert_eq!(
            picture.status,
            StatusCode::NOT_FOUND,
            "a picture is no video"
        );
        let tools = get(router, "/api/thumbnails", None).await;
        let tools: serde_json::Value = serde_json::from_slice(&tools.body).unwrap();
        assert_eq!(tools["converts_clips"], false, "{tools}");
    })
}

/// The codec ffprobe finds in `bytes`' first video stream.
fn video_codec(bytes: &[u8]) -> String {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), bytes).unwrap();
    let out = std::process::Command::new("ffprobe")
        .args(["-v", "error", "-select_streams", "v:0", "-show_entries"])
        .args(["stream=codec_name", "-of", "csv=p=0"])
        .arg(file.path())
        .output()
        .expect("ffprobe runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Run by `scripts/corpus-tier.sh`, which installs ffmpeg.
#[test]
#[ignore = "needs ffmpeg"]
fn an_hevc_live_clip_and_a_motion_photos_mp4_are_converted_to_h264_once() {
    support::block_on(async {
        let ffmpeg = mediadex::thumbs::find_on_path("ffmpeg")
            .expect("ffmpeg is on PATH (apt-get install ffmpeg; scripts/corpus-tier.sh does)");
        let env = env();
        let lib = live_folder(&env);
        write(
            &root(&env, "lib"),
            PXL,
            &std::fs::read(fixture(PXL)).unwrap(),
        );
        support::scan_now(&env, lib, "");
        let all = by_path(&env);
        let server = router_with(&env, Some(ffmpeg));
        let router = &server.0;
        assert_eq!(
            video_codec(&std::fs::read(fixture("IMG_7001.MOV")).unwrap()),
            "hevc"
        );
        let still = all["Live/IMG_7001.JPG"].id;
        let uri = format!("/api/assets/{still}/motion/playable");
        let got = get(router, &uri, None).await;
        assert_eq!(
            got.status,
            StatusCode::OK,
            "{}",
            String::from_utf8_lossy(&got.body)
        );
        assert_eq!(header(&got, "content-type"), "video/mp4");
        assert_eq!(video_codec(&got.body), "h264");
        let key = mediadex::model::hex(&all["Live/IMG_7001.MOV"].checksum);
        let cached = env
            .dir
            .path()
            .join("thumbs")
            .join(&key[..2])
            .join(format!("{key}-h264.mp4"));
        let made = std::fs::metadata(&cached)
            .expect("cached")
            .modified()
            .unwrap();
        let again = get(router, &uri, Some("bytes=4-7")).await;
        assert_eq!(again.status, StatusCode::PARTIAL_CONTENT);
        assert_eq!(again.body, b"ftyp");
        assert_eq!(
            std::fs::metadata(&cached).unwrap().modified().unwrap(),
            made,
            "made once"
        );
        let clip = all["Live/IMG_7002.MOV"].id;
        let video = get(router, &format!("/api/assets/{clip}/playable"), None).await;
        assert_eq!(video.status, StatusCode::OK);
        assert_eq!(video_codec(&video.body), "h264");
        let motion = get(
            router,
            &format!("/api/assets/{}/motion/playable", all[PXL].id),
            None,
        )
        .await;
        assert_eq!(motion.status, StatusCode::OK);
        assert_eq!(video_codec(&motion.body), "h264");
    })
}
