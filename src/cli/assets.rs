//! Rendering of assets and duplicate groups, for people and as JSON. Owns the JSON shapes of
//! `mediadex assets --json` and `mediadex duplicates --json` (documented in the README).

use super::render::{table, to_json};
use mediadex::model::{Asset, AssetPath, DuplicateGroup, FileState, MediaFacts, hex};
use serde::Serialize;

#[derive(Serialize)]
struct AssetOut<'a> {
    id: i64,
    /// Library-relative paths of the files showing it, present ones first.
    paths: Vec<&'a str>,
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
}

/// RFC 3339 with the offset when the file says it, else the camera's local wall time.
fn taken_at(f: &MediaFacts) -> Option<String> {
    let local = f.taken_local.as_deref()?;
    Some(match f.taken_offset_minutes {
        Some(m) => {
            let sign = if m < 0 { '-' } else { '+' };
            format!("{local}{sign}{:02}:{:02}", m.abs() / 60, m.abs() % 60)
        }
        None => local.to_string(),
    })
}

fn paths(paths: &[AssetPath]) -> Vec<&str> {
    paths.iter().map(|p| p.rel_path_text.as_str()).collect()
}

fn asset_out(a: &Asset) -> AssetOut<'_> {
    let f = &a.facts;
    AssetOut {
        id: a.id,
        paths: paths(&a.paths),
        size: a.size,
        checksum: hex(&a.checksum),
        kind: f.kind.map(|k| k.as_str()),
        mime: f.mime.as_deref(),
        width: f.display_width.or(f.width),
        height: f.display_height.or(f.height),
        stored_width: f.width,
        stored_height: f.height,
        taken_at: taken_at(f),
        make: f.make.as_deref(),
        model: f.model.as_deref(),
        lat: f.lat,
        lon: f.lon,
        orientation: f.orientation,
        duration_ms: f.duration_ms,
        trashed: a.trashed_at.is_some(),
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
                o.paths.first().copied().unwrap_or("").to_string(),
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

#[derive(Serialize)]
struct GroupOut<'a> {
    asset_id: i64,
    checksum: String,
    size: u64,
    paths: Vec<&'a str>,
}

pub fn duplicates(groups: &[DuplicateGroup], json: bool) -> serde_json::Result<String> {
    let out: Vec<GroupOut<'_>> = groups
        .iter()
        .map(|g| GroupOut {
            asset_id: g.asset_id,
            checksum: hex(&g.checksum),
            size: g.size,
            paths: g
                .files
                .iter()
                .filter(|f| f.state == FileState::Present)
                .map(|f| f.rel_path_text.as_str())
                .collect(),
        })
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
            vec![
                g.asset_id.to_string(),
                g.size.to_string(),
                g.paths.join("  "),
            ]
        })
        .collect();
    Ok(table(&["ASSET", "BYTES", "PATHS"], rows))
}
