//! Similar photos on request (DESIGN.md section 8): the groups of the live pictures whose
//! perceptual hashes are within `Services::similar_distance` (applied at every call to the
//! stored hashes, so a new distance needs no walk), a page of them, and the
//! pictures similar to one asset, found through the store's band indexes. The grouping rule is
//! `similar::index`'s; this only reads, pages and loads the assets.

use super::{Error, Services, Thing};
use crate::model::{Asset, SimilarGroup as Group};
use crate::similar::index::{Index, band_probes};

/// A page of groups, and the key to pass for the next one (`None` on the last).
#[derive(Clone, Debug, PartialEq)]
pub struct GroupPage {
    pub groups: Vec<Group>,
    pub next: Option<i64>,
}

/// Every group, as asset ids (each group's ids ascend; groups by their first id).
pub fn group_ids(s: &Services) -> Result<Vec<Vec<i64>>, Error> {
    let index = Index::new(s.store.picture_hashes()?);
    Ok(index.groups(s.similar_distance))
}

/// Up to `limit` groups whose first id is above `after`, with their assets.
pub fn page(s: &Services, after: Option<i64>, limit: usize) -> Result<GroupPage, Error> {
    let mut ids: Vec<Vec<i64>> = group_ids(s)?
        .into_iter()
        .filter(|g| after.is_none_or(|a| g[0] > a))
        .take(limit.saturating_add(1))
        .collect();
    let more = ids.len() > limit;
    ids.truncate(limit);
    let next = more.then(|| ids.last().map(|g| g[0])).flatten();
    let groups = ids
        .iter()
        .map(|g| {
            Ok(Group {
                assets: assets(s, g)?,
            })
        })
        .collect::<Result<_, Error>>()?;
    Ok(GroupPage { groups, next })
}

/// The live pictures similar to asset `id`, nearest first, each with its distance in bits.
/// Empty while the asset has no hash (a video, a picture not yet walked, one that cannot be
/// hashed); `NotFound` for no such asset.
pub fn of_asset(s: &Services, id: i64) -> Result<Vec<(Asset, u32)>, Error> {
    if s.store.asset(id)?.is_none() {
        return Err(Error::NotFound(Thing::Asset, id));
    }
    let Some(probe) = s.store.picture_hash(id)? else {
        return Ok(Vec::new());
    };
    let distance = s.similar_distance;
    let candidates = s
        .store
        .pictures_in_bands(&band_probes(probe.hash, distance))?;
    let near = Index::new(candidates).near(&probe, distance);
    let mut out = Vec::with_capacity(near.len());
    for (entry, d) in near {
        // Swept between the two reads: not similar to anything any more.
        if let Some(asset) = s.store.asset(entry.id)? {
            out.push((asset, d));
        }
    }
    Ok(out)
}

fn assets(s: &Services, ids: &[i64]) -> Result<Vec<Asset>, Error> {
    let mut out = Vec::with_capacity(ids.len());
    for &id in ids {
        if let Some(asset) = s.store.asset(id)? {
            out.push(asset);
        }
    }
    Ok(out)
}
