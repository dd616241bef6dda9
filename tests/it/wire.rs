//! The wire contract against its documentation (issue 14 item 4): each wire type serialises
//! a fixed value, and its field names and JSON types must be the ones of its field table in
//! docs/json.md (the markdown is parsed), so that neither can drift from the other. The
//! real outputs of a scanned library are compared with each other in `http.rs`
//! (`the_api_and_the_cli_give_an_asset_the_same_fields_and_values`).

use mediadex::model::{
    Asset, AssetPath, ContentHash, ContentTwins, DetectedFace, DuplicateGroup, EmbeddedVideo,
    FileState, LiveClip, MediaFacts, MediaKind, Notes, StackMember, TakenAtSource, TrashReason,
};
use mediadex::wire::{self, PathForm};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

const DOC: &str = include_str!("../../docs/json.md");

/// The field table after the line that starts with `heading`: each field name with its
/// type cell (a row may name several fields: "`width`, `height`").
fn table(heading: &str) -> BTreeMap<String, String> {
    let mut lines = DOC.lines().skip_while(|l| !l.starts_with(heading));
    assert!(lines.next().is_some(), "docs/json.md has no {heading:?}");
    let rows: Vec<&str> = lines
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2) // the header and its rule
        .collect();
    let mut fields = BTreeMap::new();
    for row in rows {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (names, ty) = (cells[1], cells[2]);
        for name in names.split('`').skip(1).step_by(2) {
            fields.insert(name.to_string(), ty.to_string());
        }
    }
    assert!(!fields.is_empty(), "{heading:?} has no table");
    fields
}

fn tables(headings: &[&str]) -> BTreeMap<String, String> {
    headings.iter().flat_map(|h| table(h)).collect()
}

/// Whether `value` is of the documented type: its first word (`integer`, `number`,
/// `string`, `boolean`, `array`, `object`), or null where the type says "or null".
fn fits(value: &Value, ty: &str) -> bool {
    let base = ty.split([' ', ',']).next().unwrap_or("");
    match value {
        Value::Null => ty.contains("or null"),
        Value::Bool(_) => base == "boolean",
        Value::Number(n) => base == "number" || (base == "integer" && !n.is_f64()),
        Value::String(_) => base == "string",
        Value::Array(_) => base == "array",
        Value::Object(_) => base == "object",
    }
}

/// `value`'s fields are the table's (a row marked "only when" may be absent), each of its
/// documented type. Answers the fields it has.
fn check(what: &str, value: &Value, doc: &BTreeMap<String, String>) -> BTreeSet<String> {
    let object = value
        .as_object()
        .unwrap_or_else(|| panic!("{what} is not an object: {value}"));
    for (name, v) in object {
        let ty = doc
            .get(name)
            .unwrap_or_else(|| panic!("{what}: field `{name}` is not in docs/json.md"));
        assert!(
            fits(v, ty),
            "{what}: `{name}` is {v}, docs/json.md says {ty}"
        );
    }
    for (name, ty) in doc {
        assert!(
            object.contains_key(name) || ty.contains("only when"),
            "{what}: docs/json.md lists `{name}`, the JSON lacks it: {value}"
        );
    }
    object.keys().cloned().collect()
}

/// Every documented field appeared in one of the fixed values.
fn all_seen(what: &str, seen: &BTreeSet<String>, doc: &BTreeMap<String, String>) {
    let documented: BTreeSet<String> = doc.keys().cloned().collect();
    assert_eq!(&documented, seen, "{what}: fields documented vs seen");
}

fn path(rel: &[u8], state: FileState) -> AssetPath {
    AssetPath {
        file_id: 1,
        library_id: 1,
        rel_path: rel.to_vec(),
        rel_path_text: String::from_utf8_lossy(rel).into_owned(),
        state,
    }
}

/// An asset with every field set and a path whose text is lossy (so `paths_bytes` and
/// `path_bytes` are there).
fn full_asset(id: i64) -> Asset {
    Asset {
        id,
        owner: "local".into(),
        checksum: [id as u8; 32],
        size: 1234,
        facts: MediaFacts {
            kind: Some(MediaKind::Video),
            mime: Some("video/mp4".into()),
            width: Some(1920),
            height: Some(1080),
            display_width: Some(1080),
            display_height: Some(1920),
            taken_local: Some("2024-05-01T10:30:00".into()),
            taken_offset_minutes: Some(120),
            taken_at_source: Some(TakenAtSource::Quicktime),
            make: Some("Apple".into()),
            model: Some("iPhone".into()),
            lat: Some(48.85),
            lon: Some(2.35),
            orientation: Some(6),
            duration_ms: Some(4000),
            video_codec: Some("hevc".into()),
            notes: Notes {
                rating: Some(4),
                tags: vec!["Paris".into(), "Places|France|Paris".into()],
                title: Some("Tower".into()),
                description: Some("Evening walk".into()),
            },
            content_identifier: Some("1F7B6A52-3C1D-4E8B-9C0A-5D2E7F4B8A61".into()),
            embedded_video: Some(EmbeddedVideo {
                offset: 40_375,
                length: 20_971,
            }),
            error: None,
        },
        created_at: 1_800_000_000_000,
        trashed_at: Some(1_800_000_000_001),
        trash_reason: Some(TrashReason::User),
        paths: vec![
            path(b"2024/caf\xe9.mp4", FileState::Present),
            path(b"old/a.mp4", FileState::Missing),
        ],
        content_hash: Some(ContentHash {
            scheme: 1,
            hash: [9; 32],
        }),
        faces_scheme: Some(2),
        faces: vec![DetectedFace {
            x: 1.0,
            y: 2.0,
            w: 3.0,
            h: 4.0,
            score: 0.9,
            landmarks: [(1.0, 1.5); 5],
        }],
        live_clip: Some(LiveClip {
            asset_id: 7,
            mime: Some("video/quicktime".into()),
            duration_ms: Some(1530),
        }),
        stack: vec![StackMember {
            asset_id: id,
            file_id: 1,
            rel_path_text: "2024/DSC_1.JPG".into(),
            mime: Some("image/jpeg".into()),
            primary: true,
        }],
    }
}

/// An asset with nothing but what every asset has.
fn bare_asset() -> Asset {
    Asset {
        facts: MediaFacts::default(),
        trashed_at: None,
        trash_reason: None,
        content_hash: None,
        faces_scheme: None,
        faces: Vec::new(),
        live_clip: None,
        stack: Vec::new(),
        paths: vec![path(b"a.jpg", FileState::Present)],
        ..full_asset(3)
    }
}

fn json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("serialises")
}

const ASSET: &str = "**An asset**";
const CLI_PATHS: &str = "**Paths in the CLI**";
const API_PATHS: &str = "**Paths in the API**";
const PATH_OBJECT: &str = "**A path object**";
const FACE: &str = "**A face**";
const MOTION: &str = "**A motion clip**";
const STACK_FILE: &str = "**A stack file**";
const GROUP: &str = "**A duplicate group**";
const TWIN: &str = "**A twin**";

/// Both kinds of clip, each with the fields of its kind only.
#[test]
fn a_motion_clip_of_either_kind_has_the_documented_fields_and_types() {
    let doc = table(MOTION);
    let live = json(&wire::Asset::new(&full_asset(1), PathForm::Files));
    let mut seen = check("a live clip", &live["motion"], &doc);
    assert_eq!(live["motion"]["kind"], "live");
    assert_eq!(live["motion"]["asset_id"], 7);
    assert!(live["motion"].get("offset").is_none(), "{live}");
    let embedded = Asset {
        live_clip: None,
        ..full_asset(1)
    };
    let embedded = json(&wire::Asset::new(&embedded, PathForm::Files));
    seen.extend(check("an embedded clip", &embedded["motion"], &doc));
    assert_eq!(embedded["motion"]["kind"], "embedded");
    assert_eq!(embedded["motion"]["offset"], 40_375);
    assert!(embedded["motion"].get("asset_id").is_none(), "{embedded}");
    all_seen("a motion clip", &seen, &doc);
    let bare = json(&wire::Asset::new(&bare_asset(), PathForm::Files));
    assert_eq!(bare["motion"], Value::Null);
}

#[test]
fn an_asset_in_the_cli_has_the_documented_fields_and_types() {
    let mut doc = tables(&[ASSET, CLI_PATHS]);
    // Only the API's one asset has it: the CLI decodes nothing to tell.
    doc.remove("preview");
    let full = json(&wire::Asset::new(&full_asset(1), PathForm::Text));
    let seen = check("a CLI asset", &full, &doc);
    check(
        "a bare CLI asset",
        &json(&wire::Asset::new(&bare_asset(), PathForm::Text)),
        &doc,
    );
    all_seen("a CLI asset", &seen, &doc);
    let face = table(FACE);
    all_seen("a face", &check("a face", &full["faces"][0], &face), &face);
    let stack = table(STACK_FILE);
    let member = check("a stack file", &full["stack"][0], &stack);
    all_seen("a stack file", &member, &stack);
}

#[test]
fn an_asset_says_where_its_date_came_from_in_the_cli_and_the_api() {
    for form in [PathForm::Text, PathForm::Files] {
        let full = json(&wire::Asset::new(&full_asset(1), form));
        assert_eq!(full["taken_at_source"], "quicktime", "{form:?}");
        let bare = json(&wire::Asset::new(&bare_asset(), form));
        assert_eq!(bare["taken_at_source"], Value::Null, "{form:?}");
    }
}

#[test]
fn an_asset_carries_what_its_sidecar_says_in_the_cli_and_the_api() {
    for form in [PathForm::Text, PathForm::Files] {
        let full = json(&wire::Asset::new(&full_asset(1), form));
        assert_eq!(full["rating"], 4, "{form:?}");
        assert_eq!(
            full["tags"],
            serde_json::json!(["Paris", "Places|France|Paris"])
        );
        assert_eq!(
            (full["title"].as_str(), full["description"].as_str()),
            (Some("Tower"), Some("Evening walk"))
        );
        let bare = json(&wire::Asset::new(&bare_asset(), form));
        assert_eq!(bare["tags"], serde_json::json!([]), "{form:?}");
        assert_eq!(bare["rating"], Value::Null, "{form:?}");
    }
}

#[test]
fn an_asset_in_the_api_has_the_documented_fields_and_types() {
    let doc = tables(&[ASSET, API_PATHS]);
    let full = json(&wire::AssetDetail {
        asset: wire::Asset::new(&full_asset(1), PathForm::Files),
        preview: wire::Preview::of(None),
    });
    let seen = check("an API asset", &full, &doc);
    check(
        "a bare API asset",
        &json(&wire::Asset::new(&bare_asset(), PathForm::Files)),
        &doc,
    );
    all_seen("an API asset", &seen, &doc);
    let object = table(PATH_OBJECT);
    let mut seen = BTreeSet::new();
    for p in full["paths"].as_array().expect("paths") {
        seen.extend(check("a path object", p, &object));
    }
    all_seen("a path object", &seen, &object);
}

/// Issue 26 deliverable 8: a placeholder's preview says why; a picture's has no cause.
#[test]
fn a_preview_has_the_documented_fields_and_types() {
    let doc = table("**A preview**");
    let placeholder =
        wire::Preview::of(Some(("timed_out", "decoding timed out after 30 s".into())));
    let seen = check("a placeholder's preview", &json(&placeholder), &doc);
    check("a picture's preview", &json(&wire::Preview::of(None)), &doc);
    all_seen("a preview", &seen, &doc);
    for cause in ["unsupported", "timed_out", "too_large", "unreadable"] {
        assert!(
            DOC.contains(&format!("`{cause}` (")),
            "{cause} undocumented"
        );
    }
}

#[test]
fn duplicate_groups_of_both_kinds_have_the_documented_fields_and_types() {
    let full = full_asset(1);
    let identical = DuplicateGroup {
        asset_id: 1,
        checksum: full.checksum,
        size: full.size,
        files: full.paths.clone(),
    };
    let twins = ContentTwins {
        content_hash: ContentHash {
            scheme: 1,
            hash: [9; 32],
        },
        assets: vec![full, bare_asset()],
    };
    for (form, paths) in [(PathForm::Text, CLI_PATHS), (PathForm::Files, API_PATHS)] {
        let doc = tables(&[GROUP, paths]);
        let groups = json(&wire::DuplicateGroup::all(
            std::slice::from_ref(&identical),
            std::slice::from_ref(&twins),
            form,
        ));
        let mut seen = check(&format!("{form:?} identical"), &groups[0], &doc);
        seen.extend(check(&format!("{form:?} same_content"), &groups[1], &doc));
        all_seen(&format!("{form:?} duplicate group"), &seen, &doc);
        let twin = tables(&[TWIN, paths]);
        let mut seen = BTreeSet::new();
        for t in groups[1]["assets"].as_array().expect("assets") {
            seen.extend(check(&format!("{form:?} twin"), t, &twin));
        }
        all_seen(&format!("{form:?} twin"), &seen, &twin);
    }
}

#[test]
fn similar_groups_and_pictures_have_the_documented_fields_and_types() {
    let group = mediadex::model::SimilarGroup {
        assets: vec![full_asset(1), bare_asset()],
    };
    let doc = table("**A group of similar pictures**");
    for form in [PathForm::Text, PathForm::Files] {
        let g = json(&wire::SimilarGroup::new(&group, form));
        let seen = check(&format!("{form:?} similar group"), &g, &doc);
        all_seen("a similar group", &seen, &doc);
        assert_eq!(
            g["assets"][0],
            json(&wire::Asset::new(&group.assets[0], form))
        );
    }
    let doc = table("**A similar picture**");
    let near = json(&wire::Similar::new(&(full_asset(2), 5), PathForm::Files));
    let seen = check("a similar picture", &near, &doc);
    all_seen("a similar picture", &seen, &doc);
    assert_eq!(near["distance"], 5);
}

#[test]
fn people_and_a_photos_faces_have_the_documented_fields_and_types() {
    let person = mediadex::model::Person {
        id: 3,
        name: Some("Anna".into()),
        hidden: false,
        faces: 5,
        photos: 4,
        cover_face: Some(17),
    };
    let doc = table("**A person**");
    let p = json(&wire::Person::new(&person));
    all_seen("a person", &check("a person", &p, &doc), &doc);
    let face = mediadex::model::PhotoFace {
        face_id: 17,
        person_id: Some(3),
        name: Some("Anna".into()),
        confirmed: true,
        x: 1.5,
        y: 2.0,
        w: 30.0,
        h: 40.0,
    };
    let doc = table("**A face's person**");
    let f = json(&wire::FacePerson::new(&face));
    all_seen("a face's person", &check("a face's person", &f, &doc), &doc);
}

/// The parser reads what it is given: a field missing from a table, or one of another type,
/// is caught (so a test above passing means the table matches).
#[test]
#[should_panic(expected = "is not in docs/json.md")]
fn a_field_the_table_lacks_is_caught() {
    let mut doc = tables(&[ASSET, CLI_PATHS]);
    doc.remove("video_codec");
    check(
        "a CLI asset",
        &json(&wire::Asset::new(&full_asset(1), PathForm::Text)),
        &doc,
    );
}

#[test]
fn check_findings_and_repairs_have_the_documented_fields_and_types() {
    use mediadex::model::{Check, Finding, FindingKind, Repair, RepairKind, Repaired};
    let finding = |path: Option<&[u8]>| Finding {
        kind: FindingKind::TrashUnexplained,
        library_id: Some(1),
        asset_id: None,
        path: path.map(<[u8]>::to_vec),
        message: "photos/x is in the trash folder but the index knows nothing of it".into(),
    };
    let found = vec![
        finding(Some(b".mediadex-trash/7/caf\xe9.png")),
        finding(Some(b"plain.png")),
        finding(None),
    ];
    let check_json = json(&wire::Check::new(&Check {
        libraries: 1,
        findings: found.clone(),
    }));
    let doc = table("**Check findings**");
    let seen = check("a check", &check_json, &doc);
    all_seen("a check", &seen, &doc);
    let doc = table("**A finding**");
    let mut seen = BTreeSet::new();
    for f in check_json["findings"].as_array().expect("findings") {
        seen.extend(check("a finding", f, &doc));
    }
    all_seen("a finding", &seen, &doc);
    assert_eq!(
        check_json["findings"][0]["path"],
        ".mediadex-trash/7/caf\u{fffd}.png"
    );
    assert_eq!(
        crate::support::base64_decode(
            check_json["findings"][0]["path_bytes"]
                .as_str()
                .expect("b64")
        ),
        b".mediadex-trash/7/caf\xe9.png"
    );
    assert!(check_json["findings"][1].get("path_bytes").is_none());

    let step = |kind, path: Option<&[u8]>| Repair {
        kind,
        library_id: Some(1),
        asset_id: Some(3),
        path: path.map(<[u8]>::to_vec),
        message: "done".into(),
    };
    let repaired = json(&wire::Repaired::new(&Repaired {
        found,
        done: vec![
            step(RepairKind::Adopted, Some(b"caf\xe9.png")),
            step(RepairKind::ScanRequested, None),
        ],
    }));
    let doc = table("**A repair**");
    let seen = check("a repair", &repaired, &doc);
    all_seen("a repair", &seen, &doc);
    let doc = table("**A repair step**");
    let mut seen = BTreeSet::new();
    for d in repaired["done"].as_array().expect("done") {
        seen.extend(check("a repair step", d, &doc));
    }
    all_seen("a repair step", &seen, &doc);
    assert_eq!(repaired["done"][0]["kind"], "adopted");
    assert_eq!(repaired["done"][1]["kind"], "scan_requested");
}

/// A library as `library add|list --json` and `/api/libraries` give it, available and not.
#[test]
fn a_library_has_the_documented_fields_and_types() {
    let doc = table("**`library add --json`**");
    let row = mediadex::model::Library {
        id: 1,
        name: "photos".into(),
        root: "/srv/photos".into(),
        created_at: 1,
    };
    let there = json(&wire::Library::of(&row, None));
    let mut seen = check("an available library", &there, &doc);
    assert_eq!(
        (&there["available"], &there["unavailable"]),
        (&Value::Bool(true), &Value::Null)
    );
    let away = json(&wire::Library::of(&row, Some("not there".into())));
    seen.extend(check("an unavailable library", &away, &doc));
    assert_eq!(away["available"], false);
    all_seen("a library", &seen, &doc);
}
