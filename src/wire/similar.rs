//! Similar photos: a group of pictures whose perceptual hashes are within the distance (each
//! asset in full, as the asset list gives it), and a picture similar to one asset with its
//! distance in bits.

use super::assets::{Asset, PathForm};
use serde::Serialize;

/// A group of similar pictures, its assets by id.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimilarGroup {
    pub assets: Vec<Asset>,
    /// The asset to keep (`model::suggest_keep`).
    pub suggested: Option<i64>,
}

impl SimilarGroup {
    pub fn new(g: &crate::model::SimilarGroup, form: PathForm) -> SimilarGroup {
        SimilarGroup {
            assets: g.assets.iter().map(|a| Asset::new(a, form)).collect(),
            suggested: crate::model::suggest_keep(&g.assets),
        }
    }
}

/// A picture similar to another: how many of the 64 hash bits differ, and the asset.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Similar {
    pub distance: u32,
    pub asset: Asset,
}

impl Similar {
    pub fn new((a, distance): &(crate::model::Asset, u32), form: PathForm) -> Similar {
        Similar {
            distance: *distance,
            asset: Asset::new(a, form),
        }
    }
}
