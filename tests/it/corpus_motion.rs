//! Extended tier (issue 15 item 3): Live Photos and motion photos through a real scan of the
//! `make-corpus --extras` library, roles `live_still`, `live_video`, `live_decoy` and
//! `motion_photo`. exiftool is the oracle for the ContentIdentifier (`-ContentIdentifier`:
//! 12.57 reads the Keys tag only when asked by name) and for the motion photo's video
//! (`MicroVideoOffset`, or the length of the `Container:Directory` item `MotionPhoto`, read
//! with `-struct`); the manifest's `group` says which still a video belongs to. Prints a
//! role -> field -> agreement table and fails on any disagreement. Run with
//! `MEDIADEX_CORPUS=/path/to/lib cargo test --test it corpus_motion:: -- --ignored --nocapture`
//! (or `scripts/corpus-tier.sh`).

use crate::support;
use mediadex::model::Asset;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

const ROLES: [&str; 4] = ["live_still", "live_video", "live_decoy", "motion_photo"];

/// The manifest beside the library: path -> (role, group).
fn manifest(lib: &Path) -> BTreeMap<String, (String, String)> {
    use crate::support::corpus::{col, manifest_rows};
    manifest_rows(lib)
        .iter()
        .filter_map(|c| Some((col(c, 0)?, (col(c, 1)?, col(c, 2)?))))
        .collect()
}

fn oracle(path: &Path) -> Map<String, Value> {
    let tags = ["-ContentIdentifier", "-MicroVideoOffset", "-Directory"];
    crate::support::corpus::exiftool(path, &[&["-n", "-struct"][..], &tags].concat())
}

/// The length of the motion photo's video, as its XMP declares it.
fn video_length(tags: &Map<String, Value>) -> Option<u64> {
    if let Some(n) = tags.get("MicroVideoOffset").and_then(Value::as_u64) {
        return Some(n);
    }
    let items = tags.get("Directory")?.as_array()?;
    items
        .iter()
        .map(|i| &i["Item"])
        .find(|i| i["Semantic"] == "MotionPhoto")
        .and_then(|i| i["Length"].as_u64())
}

/// Every asset of the index, the clips the asset list leaves out too.
fn every_asset(env: &support::Env) -> Vec<Asset> {
    let ids = env.sql().ints("SELECT id FROM assets ORDER BY id", &[]);
    ids.into_iter()
        .map(|id| env.store.asset(id).expect("asset").expect("row"))
        .collect()
}

type Table = BTreeMap<(String, &'static str), (u32, Vec<String>)>;

fn record(
    table: &mut Table,
    role: &str,
    field: &'static str,
    rel: &str,
    ours: String,
    want: String,
) {
    let entry = table.entry((role.to_string(), field)).or_default();
    if ours == want {
        entry.0 += 1;
    } else {
        entry
            .1
            .push(format!("{rel} {field}: ours {ours}, oracle {want}"));
    }
}

#[test]
#[ignore = "needs MEDIADEX_CORPUS (a make-corpus --extras library) and exiftool; see scripts/corpus-tier.sh"]
fn live_photos_pair_the_decoy_stays_apart_and_motion_photos_keep_their_video() {
    let lib = std::env::var_os("MEDIADEX_CORPUS").expect("MEDIADEX_CORPUS");
    let lib = std::fs::canonicalize(lib).expect("corpus dir");
    let man = manifest(&lib);
    for role in ROLES {
        assert!(
            man.values().any(|(r, _)| r == role),
            "no {role}: a corpus without --extras"
        );
    }
    let env = support::env();
    let library =
        mediadex::app::add_library(&env.store, "corpus", &lib.to_string_lossy()).expect("add");
    support::scan_now(&env, library.id, "");
    let all = every_asset(&env);
    let listed: Vec<i64> = env
        .store
        .assets(false)
        .expect("list")
        .iter()
        .map(|a| a.id)
        .collect();
    let role_of = |a: &Asset| {
        man.get(&a.paths[0].rel_path_text)
            .cloned()
            .unwrap_or_default()
    };
    // The video of each Live Photo group, and the still that shows each clip.
    let video_of: BTreeMap<String, i64> = all
        .iter()
        .filter(|a| role_of(a).0 == "live_video")
        .map(|a| (role_of(a).1, a.id))
        .collect();
    let shown_by: BTreeMap<i64, String> = all
        .iter()
        .filter_map(|a| {
            Some((
                a.live_clip.as_ref()?.asset_id,
                a.paths[0].rel_path_text.clone(),
            ))
        })
        .collect();
    let mut table = Table::new();
    for a in &all {
        let (role, group) = role_of(a);
        if !ROLES.contains(&role.as_str()) {
            continue;
        }
        let rel = a.paths[0].rel_path_text.clone();
        let path = support::join_bytes(&lib, &a.paths[0].rel_path);
        let tags = oracle(&path);
        let id = tags
            .get("ContentIdentifier")
            .and_then(Value::as_str)
            .map(String::from);
        record(
            &mut table,
            &role,
            "content_identifier",
            &rel,
            format!("{:?}", a.facts.content_identifier),
            format!("{id:?}"),
        );
        let size = std::fs::metadata(&path).expect("stat").len();
        let want_video = video_length(&tags).map(|n| (size - n, n));
        let ours_video = a.facts.embedded_video.map(|v| (v.offset, v.length));
        record(
            &mut table,
            &role,
            "embedded_video",
            &rel,
            format!("{ours_video:?}"),
            format!("{want_video:?}"),
        );
        let (ours_clip, want_clip) = match role.as_str() {
            "live_still" => (
                a.live_clip.as_ref().map(|c| c.asset_id),
                video_of.get(&group).copied(),
            ),
            _ => (None, None),
        };
        record(
            &mut table,
            &role,
            "paired clip",
            &rel,
            format!("{ours_clip:?}"),
            format!("{want_clip:?}"),
        );
        let hidden = role == "live_video";
        let ours_listed = listed.contains(&a.id);
        record(
            &mut table,
            &role,
            "in the asset list",
            &rel,
            ours_listed.to_string(),
            (!hidden).to_string(),
        );
        if role == "live_decoy" {
            let by = shown_by.get(&a.id).cloned();
            record(
                &mut table,
                &role,
                "shown by a still",
                &rel,
                format!("{by:?}"),
                "None".into(),
            );
        }
    }
    println!("{:<14} {:<20} agree/files", "role", "field");
    let mut wrong = Vec::new();
    for ((role, field), (ok, bad)) in &table {
        println!("{role:<14} {field:<20} {ok}/{}", *ok as usize + bad.len());
        wrong.extend(bad.iter().cloned());
    }
    for role in ROLES {
        assert!(
            table.keys().any(|(r, _)| r == role),
            "no asset of role {role} was indexed"
        );
    }
    let stray: Vec<&String> = shown_by
        .values()
        .filter(|rel| man.get(*rel).is_none_or(|(r, _)| r != "live_still"))
        .collect();
    println!("stills of other roles that show a clip: {}", stray.len());
    assert!(stray.is_empty(), "paired but no live_still: {stray:?}");
    assert!(wrong.is_empty(), "disagreements:\n{}", wrong.join("\n"));
}
