//! XMP sidecars and Google Takeout JSON through the scan (issue 15 items 4 and 5): what a
//! photo takes from beside it, the same asset after its sidecar changed or went, a sidecar
//! that comes after its photo, the naming precedence, Takeout's date after EXIF, a corrupt
//! sidecar as its own problem, and nothing written into any of those files. A sidecar edit
//! is never lost (issue 25 defects 4 and 5): not by a run that ends between the sidecar's
//! batch and its photo's, nor by a scan of the sidecar alone, nor while its photo is in the
//! trash. An asset shown by byte copies has the sidecar facts of its present copy of the
//! lowest library and path, again when that copy goes (issue 25, finding 13).

use crate::support::{self, Env, env};
use mediadex::model::{Asset, Provenance, RunState};
use mediadex::scan::job::ScanConfig;
use mediadex::scan::pipeline::{Batch, CommitHook, Settings};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A sidecar as darktable writes it: simple properties as attributes, the rest elements.
fn xmp(rating: i8, tags: &[&str], title: &str, extra: &str) -> String {
    let tags: String = tags
        .iter()
        .map(|t| format!("<rdf:li>{t}</rdf:li>"))
        .collect();
    format!(
        r#"<?xpacket begin='' id='W5M0MpCehiHzreSzNTczkc9d'?>
<x:xmpmeta xmlns:x="adobe:ns:meta/">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/"
    xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:exif="http://ns.adobe.com/exif/1.0/"
    xmp:Rating="{rating}" {extra}>
   <dc:subject><rdf:Bag>{tags}</rdf:Bag></dc:subject>
   <dc:title><rdf:Alt><rdf:li xml:lang="x-default">{title}</rdf:li></rdf:Alt></dc:title>
   <dc:description><rdf:Alt><rdf:li xml:lang="x-default">About {title}</rdf:li></rdf:Alt></dc:description>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
<?xpacket end="w"?>"#
    )
}

const DATED: &str = r#"exif:DateTimeOriginal="2019-06-21T18:45:12+02:00"
    exif:GPSLatitude="48,51.3935N" exif:GPSLongitude="2,17,40.2E""#;

/// A library folder `name` under the test's temp dir.
fn library(env: &Env, name: &str) -> (i64, PathBuf) {
    let root = env.dir.path().join(name);
    std::fs::create_dir_all(&root).expect("mkdir");
    let root = std::fs::canonicalize(&root).expect("canonical");
    let lib = mediadex::app::add_library(&env.store, name, &root.to_string_lossy()).expect("add");
    (lib.id, root)
}

/// Every live asset, by the path of its first file.
fn assets(env: &Env) -> std::collections::BTreeMap<String, Asset> {
    let list = env.store.assets(false).expect("assets");
    list.into_iter()
        .map(|a| (a.paths[0].rel_path_text.clone(), a))
        .collect()
}

fn asset(env: &Env, rel: &str) -> Asset {
    assets(env)
        .remove(rel)
        .unwrap_or_else(|| panic!("no asset at {rel}"))
}

/// Writes `text` to `path` with an mtime `secs` after the epoch (a rewrite of the same size
/// must still look changed).
fn write_at(path: &Path, text: &str, secs: u64) {
    std::fs::write(path, text).expect("write");
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    let file = std::fs::File::options()
        .write(true)
        .open(path)
        .expect("open");
    file.set_modified(when).expect("mtime");
}

fn reasons_of(env: &Env, run: i64) -> Vec<(Provenance, i64)> {
    env.store.run_reasons(run).expect("reasons")
}

#[test]
fn a_sidecar_s_facts_are_its_photo_s_and_the_sidecar_is_no_asset() {
    let env = env();
    let (lib, root) = library(&env, "photos");
    support::photo(&root.join("a.png"), 1);
    let sidecar = xmp(4, &["Paris", "tower", "paris"], "Tower", DATED);
    write_at(&root.join("a.png.xmp"), &sidecar, 1_600_000_000);
    let before = support::digest(&root.join("a.png"));
    let run = support::scan_now(&env, lib, "");
    let all = assets(&env);
    assert_eq!(
        all.keys().collect::<Vec<_>>(),
        ["a.png"],
        "the sidecar is no asset"
    );
    let a = &all["a.png"];
    let n = &a.facts.notes;
    assert_eq!(n.rating, Some(4));
    assert_eq!(n.tags, ["Paris", "tower"], "each tag once, without case");
    assert_eq!(n.title.as_deref(), Some("Tower"));
    assert_eq!(n.description.as_deref(), Some("About Tower"));
    assert_eq!(
        a.facts.taken_at().as_deref(),
        Some("2019-06-21T18:45:12+02:00")
    );
    assert_eq!(a.facts.taken_at_source.map(|s| s.as_str()), Some("sidecar"));
    let (lat, lon) = (a.facts.lat.expect("lat"), a.facts.lon.expect("lon"));
    assert!((lat - (48.0 + 51.3935 / 60.0)).abs() < 1e-9, "{lat}");
    assert!(
        (lon - (2.0 + 17.0 / 60.0 + 40.2 / 3600.0)).abs() < 1e-9,
        "{lon}"
    );
    // Both new in one batch: the photo is read once, with its sidecar.
    let reasons = reasons_of(&env, run.id);
    assert!(
        !reasons.iter().any(|(p, _)| *p == Provenance::Sidecar),
        "{reasons:?}"
    );
    // The CLI says the same.
    let cli = env.cli_json(&["assets", "--json"]);
    let item = &cli.as_array().expect("array")[0];
    assert_eq!(item["rating"], 4);
    assert_eq!(item["tags"], serde_json::json!(["Paris", "tower"]));
    assert_eq!(item["title"], "Tower");
    assert_eq!(item["description"], "About Tower");
    assert_eq!(item["taken_at_source"], "sidecar");
    // Never written into.
    assert_eq!(support::digest(&root.join("a.png")), before);
    assert_eq!(
        std::fs::read_to_string(root.join("a.png.xmp")).expect("read"),
        sidecar
    );
}

#[test]
fn a_changed_sidecar_rereads_its_photo_into_the_same_asset_and_a_deleted_one_takes_its_facts_away()
{
    let env = env();
    let (lib, root) = library(&env, "photos");
    support::photo(&root.join("sub/a.png"), 1);
    // Enough other files that the deleted sidecar stays under the circuit breaker's share.
    for i in 0..6 {
        support::photo(&root.join(format!("other/{i}.png")), 10 + i);
    }
    let sidecar = root.join("sub/a.png.xmp");
    write_at(&sidecar, &xmp(4, &["Paris"], "Tower", DATED), 1_600_000_000);
    support::scan_now(&env, lib, "");
    let first = asset(&env, "sub/a.png");

    write_at(&sidecar, &xmp(2, &["Lyon"], "Bridge", ""), 1_600_000_100);
    let run = support::scan_now(&env, lib, "");
    let changed = asset(&env, "sub/a.png");
    assert_eq!(changed.id, first.id, "the same asset");
    assert_eq!(changed.facts.notes.rating, Some(2));
    assert_eq!(changed.facts.notes.tags, ["Lyon"]);
    assert_eq!(changed.facts.notes.title.as_deref(), Some("Bridge"));
    // The new sidecar has no date or place: the photo's own (none) and its mtime remain.
    assert_eq!(
        changed.facts.taken_at_source.map(|s| s.as_str()),
        Some("mtime")
    );
    assert_eq!((changed.facts.lat, changed.facts.lon), (None, None));
    let reasons = reasons_of(&env, run.id);
    assert!(reasons.contains(&(Provenance::Sidecar, 1)), "{reasons:?}");
    assert!(
        reasons.contains(&(Provenance::Size, 1)),
        "the sidecar itself: {reasons:?}"
    );

    std::fs::remove_file(&sidecar).expect("rm");
    support::scan_now(&env, lib, "");
    let gone = asset(&env, "sub/a.png");
    assert_eq!(gone.id, first.id);
    assert_eq!(gone.facts.notes, mediadex::model::Notes::default());
    // And an unchanged rescan reads nothing.
    let run = support::scan_now(&env, lib, "");
    let reasons = reasons_of(&env, run.id);
    assert_eq!(reasons, [(Provenance::Unchanged, 7)], "{reasons:?}");
}

#[test]
fn a_sidecar_created_after_its_photo_is_read_by_a_scan_of_its_folder() {
    let env = env();
    let (lib, root) = library(&env, "photos");
    support::photo(&root.join("trip/a.png"), 1);
    support::photo(&root.join("trip/b.png"), 2);
    support::scan_now(&env, lib, "");
    let first = asset(&env, "trip/a.png");
    assert_eq!(first.facts.notes.rating, None);
    // What the watcher asks for on a new file: a scan of its folder.
    write_at(
        &root.join("trip/a.png.xmp"),
        &xmp(5, &["sea"], "Sea", DATED),
        1_600_000_000,
    );
    support::scan_now(&env, lib, "trip");
    let later = asset(&env, "trip/a.png");
    assert_eq!(later.id, first.id);
    assert_eq!(later.facts.notes.rating, Some(5));
    assert_eq!(
        later.facts.taken_at_source.map(|s| s.as_str()),
        Some("sidecar")
    );
    assert_eq!(asset(&env, "trip/b.png").facts.notes.rating, None);
}

#[test]
fn photo_ext_xmp_wins_over_photo_xmp_and_a_lightroom_xmp_serves_every_photo_of_its_name() {
    let env = env();
    let (lib, root) = library(&env, "photos");
    support::photo(&root.join("a.png"), 1);
    write_at(
        &root.join("a.png.xmp"),
        &xmp(5, &[], "darktable", ""),
        1_600_000_000,
    );
    write_at(
        &root.join("a.xmp"),
        &xmp(1, &[], "lightroom", ""),
        1_600_000_000,
    );
    support::photo(&root.join("b.png"), 2);
    std::fs::write(root.join("b.jpg"), crate::support::exif::jpeg(8, 8)).expect("write");
    write_at(&root.join("b.xmp"), &xmp(3, &[], "shot", ""), 1_600_000_000);
    support::scan_now(&env, lib, "");
    let all = assets(&env);
    assert_eq!(all.len(), 3, "{:?}", all.keys());
    assert_eq!(all["a.png"].facts.notes.rating, Some(5));
    assert_eq!(all["b.png"].facts.notes.rating, Some(3));
    assert_eq!(all["b.jpg"].facts.notes.rating, Some(3));
}

fn takeout(taken: i64, description: &str) -> String {
    format!(
        r#"{{"title": "x.jpg", "description": "{description}",
            "photoTakenTime": {{"timestamp": "{taken}", "formatted": ""}},
            "geoData": {{"latitude": 50.087451, "longitude": 14.420671, "altitude": 0.0}}}}"#
    )
}

#[test]
fn a_takeout_date_dates_a_photo_without_one_and_not_one_with_exif() {
    use support::exif::{ascii, jpeg_with_exif};
    let env = env();
    let (lib, root) = library(&env, "takeout");
    support::photo(&root.join("c.png"), 1);
    std::fs::write(root.join("c.png.json"), takeout(1_555_086_615, "Old Town")).expect("w");
    let exif = [ascii(exif::Tag::DateTimeOriginal, "2020:02:29 23:59:59")];
    std::fs::write(root.join("d.jpg"), jpeg_with_exif(8, 8, &exif)).expect("write");
    std::fs::write(
        root.join("d.jpg.supplemental-metadata.json"),
        takeout(1_555_086_615, ""),
    )
    .expect("write");
    support::scan_now(&env, lib, "");
    let all = assets(&env);
    assert_eq!(all.len(), 2, "{:?}", all.keys());
    let c = &all["c.png"].facts;
    assert_eq!(c.taken_at().as_deref(), Some("2019-04-12T16:30:15+00:00"));
    assert_eq!(c.taken_at_source.map(|s| s.as_str()), Some("takeout"));
    assert_eq!((c.lat, c.lon), (Some(50.087451), Some(14.420671)));
    assert_eq!(c.notes.description.as_deref(), Some("Old Town"));
    assert_eq!(c.notes.title, None, "Takeout's title is the file's name");
    let d = &all["d.jpg"].facts;
    assert_eq!(d.taken_at().as_deref(), Some("2020-02-29T23:59:59"));
    assert_eq!(d.taken_at_source.map(|s| s.as_str()), Some("exif"));
    assert_eq!(
        (d.lat, d.lon),
        (Some(50.087451), Some(14.420671)),
        "it lacks a place"
    );
}

#[test]
fn a_corrupt_sidecar_or_json_is_that_file_s_problem_and_the_photo_is_stored_with_its_own_facts() {
    let env = env();
    let (lib, root) = library(&env, "photos");
    support::photo(&root.join("e.png"), 1);
    let cut = xmp(4, &["x"], "x", "");
    let cut = &cut[..cut.find("</rdf:RDF>").expect("close")];
    std::fs::write(root.join("e.png.xmp"), cut).expect("write");
    support::photo(&root.join("f.png"), 2);
    std::fs::write(
        root.join("f.png.json"),
        "{\"photoTakenTime\": {\"timestamp\": \"soon\"}}",
    )
    .expect("write");
    let run = support::scan_now(&env, lib, "");
    assert_eq!(run.state.as_str(), "completed");
    let all = assets(&env);
    assert_eq!(all.len(), 2, "{:?}", all.keys());
    for photo in ["e.png", "f.png"] {
        let f = &all[photo].facts;
        assert_eq!(f.notes, mediadex::model::Notes::default(), "{photo}");
        assert_eq!(
            f.taken_at_source.map(|s| s.as_str()),
            Some("mtime"),
            "{photo}"
        );
    }
    let problems = env.store.run_problems(run.id, 0, 100).expect("problems");
    let mut at: Vec<(String, String)> = problems
        .into_iter()
        .map(|(_, p)| (p.rel_path_text, p.error))
        .collect();
    at.sort();
    assert_eq!(at.len(), 2, "{at:?}");
    assert_eq!(at[0].0, "e.png.xmp");
    assert!(at[0].1.contains("cut short"), "{at:?}");
    assert_eq!(at[1].0, "f.png.json");
    assert!(at[1].1.contains("soon"), "{at:?}");
}

/// A library of `sub/a.png` with a sidecar rated 4 beside it and six other photos (enough
/// that the breaker lets a file go), scanned once; then the sidecar is rewritten rated 2.
fn rated_then_edited(env: &Env) -> (i64, PathBuf) {
    let (lib, root) = library(env, "photos");
    support::photo(&root.join("sub/a.png"), 1);
    for i in 0..6 {
        support::photo(&root.join(format!("other/{i}.png")), 10 + i);
    }
    let sidecar = root.join("sub/a.png.xmp");
    write_at(&sidecar, &xmp(4, &["Paris"], "Tower", DATED), 1_600_000_000);
    support::scan_now(env, lib, "");
    assert_eq!(asset(env, "sub/a.png").facts.notes.rating, Some(4));
    write_at(&sidecar, &xmp(2, &["Lyon"], "Bridge", ""), 1_600_000_100);
    (lib, root)
}

/// One entry per batch, so the sidecar and its photo's re-read land in different batches
/// whatever the walk's order; `hook` sees each batch before it commits.
fn one_per_batch(hook: impl Fn(&Batch) + Send + Sync + 'static) -> ScanConfig {
    ScanConfig {
        pipeline: Settings {
            batch: 1,
            commit_hook: Some(CommitHook(Arc::new(hook))),
            ..Settings::default()
        },
        ..ScanConfig::default()
    }
}

#[test]
fn a_sidecar_edit_survives_a_run_that_ends_between_the_sidecar_s_batch_and_its_photo_s() {
    let env = env();
    let (lib, _) = rated_then_edited(&env);
    let store = env.store.clone();
    // The run ends just before the photo's re-read commits (a cancel here; a crash, a lost
    // lease, a retry or a full disk end it the same way: the batch does not land).
    let config = one_per_batch(move |batch| {
        if batch
            .changed
            .iter()
            .any(|o| o.rel == Path::new("sub/a.png"))
        {
            store.cancel_scans(lib).expect("cancel");
        }
    });
    let ended = support::scan_now_with(&env, lib, "", config);
    assert_eq!(ended.state, RunState::Cancelled);
    assert_eq!(
        asset(&env, "sub/a.png").facts.notes.rating,
        Some(4),
        "not yet"
    );
    let run = support::scan_now(&env, lib, "");
    let a = asset(&env, "sub/a.png");
    assert_eq!(a.facts.notes.rating, Some(2), "the edit reached its photo");
    assert_eq!(a.facts.notes.tags, ["Lyon"]);
    let reasons = reasons_of(&env, run.id);
    assert!(reasons.contains(&(Provenance::Sidecar, 1)), "{reasons:?}");
    assert!(
        !reasons.iter().any(|(p, _)| *p == Provenance::Size),
        "the sidecar's new stamp had landed with the cancelled run: {reasons:?}"
    );
}

#[test]
fn a_sidecar_edit_seen_by_a_scan_of_the_sidecar_alone_reaches_its_photo() {
    let env = env();
    let (lib, _) = rated_then_edited(&env);
    // What the watcher asks for when the sidecar alone changed.
    let scoped = support::scan_now(&env, lib, "sub/a.png.xmp");
    assert_eq!(scoped.state, RunState::Completed);
    support::scan_now(&env, lib, "");
    let a = asset(&env, "sub/a.png");
    assert_eq!(a.facts.notes.rating, Some(2), "the edit reached its photo");
    assert_eq!(a.facts.notes.title.as_deref(), Some("Bridge"));
}

#[test]
fn a_sidecar_changed_while_its_photo_is_in_the_trash_is_applied_once_the_photo_is_back() {
    let env = env();
    let (lib, root) = library(&env, "photos");
    support::photo(&root.join("sub/a.png"), 1);
    let sidecar = root.join("sub/a.png.xmp");
    write_at(&sidecar, &xmp(4, &["Paris"], "Tower", DATED), 1_600_000_000);
    support::scan_now(&env, lib, "");
    let id = asset(&env, "sub/a.png").id;
    mediadex::trash::trash(&env.store, id).expect("trash");
    write_at(&sidecar, &xmp(2, &["Lyon"], "Bridge", ""), 1_600_000_100);
    support::scan_now(&env, lib, "");
    mediadex::trash::restore(&env.store, id).expect("restore");
    let run = support::scan_now(&env, lib, "");
    let reasons = reasons_of(&env, run.id);
    assert!(reasons.contains(&(Provenance::Back, 1)), "{reasons:?}");
    let back = asset(&env, "sub/a.png");
    assert_eq!(back.id, id, "the same asset");
    assert_eq!(
        back.facts.notes.rating,
        Some(2),
        "the edit made while it was away"
    );
    assert_eq!(back.facts.notes.tags, ["Lyon"]);
}

/// Finding 13 (issue 25's simulation): an asset shows the facts of the sidecar of one present
/// file of its bytes, the one of the lowest library and path, whatever order the copies came
/// in, and again when that copy goes or another comes before it.
#[test]
fn an_asset_shown_by_copies_has_the_sidecar_facts_of_its_first_present_copy() {
    let env = env();
    let (lib, root) = library(&env, "photos");
    // Enough other files that the deleted copies stay under the circuit breaker's share.
    for i in 0..6 {
        support::photo(&root.join(format!("other/{i}.png")), 10 + i);
    }
    support::photo(&root.join("b.png"), 1);
    write_at(
        &root.join("b.png.xmp"),
        &xmp(2, &["Lyon"], "B", ""),
        1_600_000_000,
    );
    support::scan_now(&env, lib, "");
    let first = asset(&env, "b.png");
    assert_eq!(first.facts.notes.title.as_deref(), Some("B"));

    // A copy that comes before it in path order, with a sidecar of its own, gives its facts.
    std::fs::copy(root.join("b.png"), root.join("a.png")).expect("copy");
    write_at(
        &root.join("a.png.xmp"),
        &xmp(4, &["Paris"], "A", DATED),
        1_600_000_000,
    );
    support::scan_now(&env, lib, "");
    let both = asset(&env, "a.png");
    assert_eq!(both.id, first.id, "one asset for the two copies");
    let facts = |a: &Asset| (a.facts.notes.rating, a.facts.notes.title.clone());
    assert_eq!(facts(&both), (Some(4), Some("A".into())), "a.png's sidecar");
    assert_eq!(both.facts.notes.tags, ["Paris"]);
    assert_eq!(
        both.facts.taken_at_source.map(|s| s.as_str()),
        Some("sidecar")
    );

    // That copy deleted: the other's sidecar, its date and tags included.
    std::fs::remove_file(root.join("a.png")).expect("rm");
    support::scan_now(&env, lib, "");
    let left = asset(&env, "b.png");
    assert_eq!(left.id, first.id);
    assert_eq!(facts(&left), (Some(2), Some("B".into())), "b.png's sidecar");
    assert_eq!(left.facts.notes.tags, ["Lyon"]);
    assert_eq!(
        left.facts.taken_at_source.map(|s| s.as_str()),
        Some("mtime")
    );

    // A copy without a sidecar before it: nothing beside the first copy, no notes.
    std::fs::copy(root.join("b.png"), root.join("a0.png")).expect("copy");
    support::scan_now(&env, lib, "");
    assert_eq!(
        facts(&asset(&env, "a0.png")),
        (None, None),
        "a0.png has no sidecar"
    );
}

/// Finding 13: a copy that brings back an asset trashed as missing gives it its own sidecar's
/// facts, not those the asset had when it went.
#[test]
fn a_copy_that_brings_an_asset_back_from_the_trash_gives_it_its_own_sidecar_s_facts() {
    let env = env();
    let (lib, root) = library(&env, "photos");
    for i in 0..12 {
        support::photo(&root.join(format!("other/{i}.png")), 10 + i);
    }
    support::photo(&root.join("a.png"), 1);
    write_at(
        &root.join("a.png.xmp"),
        &xmp(4, &["Paris"], "A", ""),
        1_600_000_000,
    );
    support::scan_now(&env, lib, "");
    let first = asset(&env, "a.png");
    std::fs::rename(root.join("a.png"), env.dir.path().join("kept.png")).expect("away");
    std::fs::remove_file(root.join("a.png.xmp")).expect("rm");
    support::scan_now(&env, lib, "");
    let gone = env.store.asset(first.id).expect("read").expect("row");
    assert!(gone.trashed_at.is_some(), "trashed as missing");

    std::fs::rename(env.dir.path().join("kept.png"), root.join("b.png")).expect("back");
    write_at(
        &root.join("b.png.xmp"),
        &xmp(2, &["Lyon"], "B", ""),
        1_600_000_000,
    );
    support::scan_now(&env, lib, "");
    let back = asset(&env, "b.png");
    assert_eq!(back.id, first.id, "the same asset, restored");
    assert_eq!(
        (back.facts.notes.rating, back.facts.notes.title.as_deref()),
        (Some(2), Some("B"))
    );
    assert_eq!(back.facts.notes.tags, ["Lyon"]);
}

/// Finding 15 (issue 25's simulation, seed 36 step 975): a photo read with a new sidecar by
/// a run cut after the photo's batch committed and before the sidecar's own row did. The
/// sidecar deleted then, the next full scan must take its facts away, though it never had a
/// row to miss.
#[test]
fn a_sidecar_whose_row_a_cut_run_never_wrote_is_missed_when_it_is_deleted() {
    let env = env();
    let (lib, root) = library(&env, "photos");
    for i in 0..6 {
        support::photo(&root.join(format!("other/{i}.png")), 10 + i);
    }
    support::scan_now(&env, lib, "");
    support::photo(&root.join("sub/a.png"), 1);
    let sidecar = root.join("sub/a.png.xmp");
    write_at(&sidecar, &xmp(4, &["Paris"], "Tower", ""), 1_600_000_000);
    let store = env.store.clone();
    // The run is cut (a cancel; a lost lease or a crash the same) before the batch with the
    // sidecar's own row commits; the photo's batch before it has committed.
    let config = one_per_batch(move |batch| {
        if (batch.changed.iter()).any(|o| o.rel == Path::new("sub/a.png.xmp")) {
            store.cancel_scans(lib).expect("cancel");
        }
    });
    let cut = support::scan_now_with(&env, lib, "", config);
    assert_eq!(cut.state, RunState::Cancelled);
    // Its asset is held pending by the cut run until a completion publishes it.
    let rating = env.sql().int(
        "SELECT a.rating FROM assets a JOIN files f ON f.asset_id = a.id
          WHERE f.rel_path = CAST('sub/a.png' AS BLOB)",
        &[],
    );
    assert_eq!(rating, Some(4), "read with its sidecar");

    std::fs::remove_file(&sidecar).expect("rm");
    support::scan_now(&env, lib, "");
    let a = asset(&env, "sub/a.png");
    assert_eq!(
        (a.facts.notes.rating, a.facts.notes.title.as_deref()),
        (None, None),
        "the deleted sidecar's facts are gone"
    );
    assert!(a.facts.notes.tags.is_empty(), "{:?}", a.facts.notes.tags);

    // A run that is not cut leaves no mark behind: its later batch stored the sidecar and
    // read the photo again, and the next scan reads nothing.
    support::photo(&root.join("sub/b.png"), 2);
    write_at(
        &root.join("sub/b.png.xmp"),
        &xmp(3, &[], "B", ""),
        1_600_000_000,
    );
    let whole = support::scan_now_with(&env, lib, "", one_per_batch(|_| {}));
    assert_eq!(whole.state, RunState::Completed);
    assert_eq!(asset(&env, "sub/b.png").facts.notes.rating, Some(3));
    let next = support::scan_now(&env, lib, "");
    let reasons = reasons_of(&env, next.id);
    assert!(
        reasons.iter().all(|(p, _)| *p == Provenance::Unchanged),
        "{reasons:?}"
    );
}

/// Finding 13: copies in two libraries. The asset shows the sidecar of its copy in the
/// library added first; once that library is removed, the other copy's.
#[test]
fn an_asset_whose_first_copy_goes_with_its_library_takes_the_other_copy_s_sidecar() {
    let env = env();
    let (first_lib, first) = library(&env, "first");
    let (second_lib, second) = library(&env, "second");
    support::photo(&first.join("p.png"), 1);
    write_at(
        &first.join("p.png.xmp"),
        &xmp(4, &["Paris"], "A", ""),
        1_600_000_000,
    );
    support::photo(&second.join("p.png"), 1);
    write_at(
        &second.join("p.png.xmp"),
        &xmp(2, &["Lyon"], "B", ""),
        1_600_000_000,
    );
    support::scan_now(&env, second_lib, "");
    support::scan_now(&env, first_lib, "");
    let facts = |a: &Asset| (a.facts.notes.rating, a.facts.notes.title.clone());
    let both = asset(&env, "p.png");
    assert_eq!(
        facts(&both),
        (Some(4), Some("A".into())),
        "the first library's copy"
    );

    env.store.remove_library(first_lib).expect("remove");
    let left = asset(&env, "p.png");
    assert_eq!(left.id, both.id);
    assert_eq!(facts(&left), (Some(2), Some("B".into())), "the copy left");
    assert_eq!(left.facts.notes.tags, ["Lyon"]);
}
