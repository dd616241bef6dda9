//! Duplicate groups, both kinds: byte-identical files of one asset, and several assets that
//! are the same picture with other metadata (one content hash).

use super::assets::{PathForm, Paths};
use crate::model::{self, ContentTwins, hex};
use serde::Serialize;

/// A group of either kind. `identical`: one asset shown by several files (`asset_id`,
/// `checksum`, `size`). `same_content`: several assets with one content hash (`content_hash`,
/// `content_hash_scheme`, `assets`). The paths are the present files of the group.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DuplicateGroup {
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asset_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_hash_scheme: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assets: Option<Vec<Twin>>,
    /// `same_content`: the asset to keep (`model::suggest_keep`), `null` when all are trashed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggested: Option<Option<i64>>,
    #[serde(flatten)]
    pub paths: Paths,
}

/// One asset of a `same_content` group, with its present files.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Twin {
    pub asset_id: i64,
    pub checksum: String,
    pub size: u64,
    pub trashed: bool,
    #[serde(flatten)]
    pub paths: Paths,
}

impl DuplicateGroup {
    pub fn identical(g: &model::DuplicateGroup, form: PathForm) -> DuplicateGroup {
        DuplicateGroup {
            kind: "identical",
            asset_id: Some(g.asset_id),
            checksum: Some(hex(&g.checksum)),
            size: Some(g.size),
            content_hash: None,
            content_hash_scheme: None,
            assets: None,
            suggested: None,
            paths: Paths::present(form, &g.files),
        }
    }

    pub fn same_content(t: &ContentTwins, form: PathForm) -> DuplicateGroup {
        let assets = t
            .assets
            .iter()
            .map(|a| Twin {
                asset_id: a.id,
                checksum: hex(&a.checksum),
                size: a.size,
                trashed: a.trashed_at.is_some(),
                paths: Paths::present(form, &a.paths),
            })
            .collect();
        let files: Vec<model::AssetPath> = t.assets.iter().flat_map(|a| a.paths.clone()).collect();
        DuplicateGroup {
            kind: "same_content",
            asset_id: None,
            checksum: None,
            size: None,
            content_hash: Some(hex(&t.content_hash.hash)),
            content_hash_scheme: Some(t.content_hash.scheme),
            assets: Some(assets),
            suggested: Some(model::suggest_keep(&t.assets)),
            paths: Paths::present(form, &files),
        }
    }

    /// Every group: the byte-identical ones, then the same pictures with other metadata.
    pub fn all(
        groups: &[model::DuplicateGroup],
        twins: &[ContentTwins],
        form: PathForm,
    ) -> Vec<DuplicateGroup> {
        groups
            .iter()
            .map(|g| DuplicateGroup::identical(g, form))
            .chain(twins.iter().map(|t| DuplicateGroup::same_content(t, form)))
            .collect()
    }
}
