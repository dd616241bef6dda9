//! Rendering of assets, duplicate groups and groups of similar pictures, for people and as JSON. The JSON is the wire
//! contract's (`mediadex::wire`, the shapes the API gives too, documented in docs/json.md) in
//! its text path form: a path is its text in `paths`; where that text is lossy the exact
//! bytes ride beside it in `paths_bytes`. Owns only the tables for people.

use super::render::{human_path, table, to_json};
use mediadex::model::{Asset, AssetPath, ContentTwins, DuplicateGroup, FileState, SimilarGroup};
use mediadex::wire::{self, PathForm};

fn asset_out(a: &Asset) -> wire::Asset {
    wire::Asset::new(a, PathForm::Text)
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
                o.mime.unwrap_or_default(),
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

/// What `keep` did: the kept asset and each trashed one.
pub fn kept(k: &mediadex::ops::trash::Kept, json: bool) -> serde_json::Result<String> {
    if json {
        let out = serde_json::json!({
            "kept": asset_out(&k.kept),
            "trashed": k.trashed.iter().map(asset_out).collect::<Vec<_>>(),
        });
        return to_json(&out);
    }
    let mut text = one(&k.kept, false)?;
    for a in &k.trashed {
        text.push_str(&one(a, false)?);
    }
    Ok(text)
}

fn present_shown(files: &[AssetPath]) -> Vec<String> {
    files
        .iter()
        .filter(|f| f.state == FileState::Present)
        .map(|f| human_path(&f.rel_path))
        .collect()
}

pub fn duplicates(
    groups: &[DuplicateGroup],
    twins: &[ContentTwins],
    json: bool,
) -> serde_json::Result<String> {
    if json {
        return to_json(&wire::DuplicateGroup::all(groups, twins, PathForm::Text));
    }
    if groups.is_empty() && twins.is_empty() {
        return Ok("no duplicates\n".into());
    }
    let identical = groups.iter().map(|g| {
        vec![
            format!("identical bytes: asset {}", g.asset_id),
            present_shown(&g.files).join("  "),
        ]
    });
    let same = twins.iter().map(|t| {
        let ids: Vec<String> = t.assets.iter().map(|a| a.id.to_string()).collect();
        let shown: Vec<String> = t
            .assets
            .iter()
            .flat_map(|a| present_shown(&a.paths))
            .collect();
        vec![
            format!("same picture, other metadata: assets {}", ids.join(", ")),
            shown.join("  "),
        ]
    });
    Ok(table(&["KIND", "PATHS"], identical.chain(same).collect()))
}

/// Groups of similar pictures: one row per group, its assets and their paths.
pub fn similar(groups: &[SimilarGroup], distance: u32, json: bool) -> serde_json::Result<String> {
    if json {
        let out: Vec<wire::SimilarGroup> = (groups.iter())
            .map(|g| wire::SimilarGroup::new(g, PathForm::Text))
            .collect();
        return to_json(&out);
    }
    if groups.is_empty() {
        return Ok(format!("no similar pictures within {distance} bits\n"));
    }
    let rows = groups
        .iter()
        .map(|g| {
            let ids: Vec<String> = g.assets.iter().map(|a| a.id.to_string()).collect();
            let shown: Vec<String> = g
                .assets
                .iter()
                .flat_map(|a| present_shown(&a.paths).into_iter().take(1))
                .collect();
            vec![ids.join(", "), shown.join("  ")]
        })
        .collect();
    Ok(table(&["ASSETS", "PATHS"], rows))
}
