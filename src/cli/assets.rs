//! Rendering of assets and duplicate groups, for people and as JSON. Owns the JSON shapes of
//! `mediadex assets --json` and `mediadex duplicates --json` (documented in docs/json.md). A
//! path is its text in `paths`; where that text is lossy the exact bytes ride beside it in
//! `paths_bytes` (`model::AssetPath::bytes_if_lossy`, the HTTP API's `path_bytes` rule).

use super::render::{human_path, table, to_json};
use mediadex::model::{
    Asset, AssetPath, ContentTwins, DetectedFace, DuplicateGroup, FileState, hex,
};
use serde::Serialize;

#[derive(Serialize)]
struct AssetOut<'a> {
    id: i64,
    /// Library-relative paths of the files showing it, present ones first.
    paths: Vec<&'a str>,
    /// Only when some path's text is lossy: per path, its base64 bytes, or null where the
    /// text is exact.
    #[serde(skip_serializing_if = "Option::is_none")]
    paths_bytes: Option<Vec<Option<String>>>,
    size: u64,
    checksum: String,
    kind: Option<&'static str>,
    mime: Option<&'a str>,
    /// As displayed (EXIF orientation applied).
    width: Option<u32>,
    height: Option<u32>,
    /// As stored in the file.
    stored_width: Option<u32>,
    stored_height: Option<u32>,
    taken_at: Option<String>,
    make: Option<&'a str>,
    model: Option<&'a str>,
    lat: Option<f64>,
    lon: Option<f64>,
    orientation: Option<u16>,
    duration_ms: Option<i64>,
    trashed: bool,
    /// Hex blake3 of the picture's essence, and the scheme that computed it.
    content_hash: Option<String>,
    content_hash_scheme: Option<i64>,
    /// The faces stored for the asset's detector version.
    /// Each in stored pixels: `x`, `y`, `w`, `h`, `score`, five `landmarks` `[x, y]`.
    faces: Vec<DetectedFace>,
}

fn paths(paths: &[AssetPath]) -> Vec<&str> {
    paths.iter().map(|p| p.rel_path_text.as_str()).collect()
}

/// The `paths_bytes` beside `paths`: absent when every text is exact, so that the common
/// case reads as before.
fn paths_bytes<'a>(paths: impl Iterator<Item = &'a AssetPath>) -> Option<Vec<Option<String>>> {
    let bytes: Vec<Option<String>> = paths.map(AssetPath::bytes_if_lossy).collect();
    bytes.iter().any(Option::is_some).then_some(bytes)
}

fn asset_out(a: &Asset) -> AssetOut<'_> {
    let f = &a.facts;
    AssetOut {
        id: a.id,
        paths: paths(&a.paths),
        paths_bytes: paths_bytes(a.paths.iter()),
        size: a.size,
        checksum: hex(&a.checksum),
        kind: f.kind.map(|k| k.as_str()),
        mime: f.mime.as_deref(),
        width: f.display_width.or(f.width),
        height: f.display_height.or(f.height),
        stored_width: f.width,
        stored_height: f.height,
        taken_at: f.taken_at(),
        make: f.make.as_deref(),
        model: f.model.as_deref(),
        lat: f.lat,
        lon: f.lon,
        orientation: f.orientation,
        duration_ms: f.duration_ms,
        trashed: a.trashed_at.is_some(),
        content_hash: a.content_hash.map(|c| hex(&c.hash)),
        content_hash_scheme: a.content_hash.map(|c| c.scheme),
        faces: a.faces.clone(),
    }
}

pub fn assets(assets: &[Asset], json: bool) -> serde_json::Result<String> {
    if json {
        return to_json(&assets.iter().map(asset_out).collect::<Vec<_>>());
    }
    if assets.is_empty() {
        return Ok("no assets\n".into());
    }
    let rows = assets
        .iter()
        .map(|a| {
            let o = asset_out(a);
            let dims = match (o.width, o.height) {
                (Some(w), Some(h)) => format!("{w}x{h}"),
                _ => String::new(),
            };
            let camera = [o.make, o.model].into_iter().flatten().collect::<Vec<_>>();
            vec![
                o.id.to_string(),
                o.taken_at.unwrap_or_default(),
                o.mime.unwrap_or("").to_string(),
                dims,
                camera.join(" "),
                a.paths
                    .first()
                    .map(|p| human_path(&p.rel_path))
                    .unwrap_or_default(),
            ]
        })
        .collect();
    Ok(table(
        &["ID", "TAKEN", "TYPE", "SIZE", "CAMERA", "PATH"],
        rows,
    ))
}

/// One asset (after trash or restore).
pub fn one(asset: &Asset, json: bool) -> serde_json::Result<String> {
    if json {
        return to_json(&asset_out(asset));
    }
    let state = if asset.trashed_at.is_some() {
        "in the trash"
    } else {
        "live"
    };
    Ok(format!("asset {} is {state}\n", asset.id))
}

/// A duplicate group of either kind. `identical`: one asset shown by several files (the
/// asset fields are set). `same_content`: several assets with one content hash and other
/// metadata (`content_hash` and `assets` are set). `paths` lists the present files of both.
#[derive(Serialize)]
struct GroupOut<'a> {
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    asset_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    checksum: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content_hash_scheme: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    assets: Option<Vec<TwinOut<'a>>>,
    paths: Vec<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    paths_bytes: Option<Vec<Option<String>>>,
    /// The same paths for people (`human_path`), not serialized.
    #[serde(skip)]
    shown: Vec<String>,
}

#[derive(Serialize)]
struct TwinOut<'a> {
    asset_id: i64,
    checksum: String,
    size: u64,
    trashed: bool,
    paths: Vec<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    paths_bytes: Option<Vec<Option<String>>>,
}

fn present(files: &[AssetPath]) -> impl Iterator<Item = &AssetPath> {
    files.iter().filter(|f| f.state == FileState::Present)
}

fn present_text(files: &[AssetPath]) -> Vec<&str> {
    present(files).map(|f| f.rel_path_text.as_str()).collect()
}

fn present_shown(files: &[AssetPath]) -> Vec<String> {
    present(files).map(|f| human_path(&f.rel_path)).collect()
}

fn identical(g: &DuplicateGroup) -> GroupOut<'_> {
    GroupOut {
        kind: "identical",
        asset_id: Some(g.asset_id),
        checksum: Some(hex(&g.checksum)),
        size: Some(g.size),
        content_hash: None,
        content_hash_scheme: None,
        assets: None,
        paths: present_text(&g.files),
        paths_bytes: paths_bytes(present(&g.files)),
        shown: present_shown(&g.files),
    }
}

fn same_content(t: &ContentTwins) -> GroupOut<'_> {
    let assets: Vec<TwinOut<'_>> = t
        .assets
        .iter()
        .map(|a| TwinOut {
            asset_id: a.id,
            checksum: hex(&a.checksum),
            size: a.size,
            trashed: a.trashed_at.is_some(),
            paths: present_text(&a.paths),
            paths_bytes: paths_bytes(present(&a.paths)),
        })
        .collect();
    let files = || t.assets.iter().flat_map(|a| present(&a.paths));
    GroupOut {
        kind: "same_content",
        asset_id: None,
        checksum: None,
        size: None,
        content_hash: Some(hex(&t.content_hash.hash)),
        content_hash_scheme: Some(t.content_hash.scheme),
        paths: assets
            .iter()
            .flat_map(|a| a.paths.iter().copied())
            .collect(),
        paths_bytes: paths_bytes(files()),
        shown: files().map(|f| human_path(&f.rel_path)).collect(),
        assets: Some(assets),
    }
}

pub fn duplicates(
    groups: &[DuplicateGroup],
    twins: &[ContentTwins],
    json: bool,
) -> serde_json::Result<String> {
    let out: Vec<GroupOut<'_>> = groups
        .iter()
        .map(identical)
        .chain(twins.iter().map(same_content))
        .collect();
    if json {
        return to_json(&out);
    }
    if out.is_empty() {
        return Ok("no duplicates\n".into());
    }
    let rows = out
        .iter()
        .map(|g| {
            let what = match &g.assets {
                Some(a) => {
                    let ids: Vec<String> = a.iter().map(|t| t.asset_id.to_string()).collect();
                    format!("same picture, other metadata: assets {}", ids.join(", "))
                }
                None => format!("identical bytes: asset {}", g.asset_id.unwrap_or_default()),
            };
            vec![what, g.shown.join("  ")]
        })
        .collect();
    Ok(table(&["KIND", "PATHS"], rows))
}
