//! The content-hash walk: backfills and re-stamps `content_hash` under the current scheme.
//! Visits every asset, trashed ones too (they still catch duplicates). A file is used only
//! if it still holds the asset's bytes: its stamp is the one the scan recorded (then only the
//! content hash is computed), or else its checksum is the asset's (it may have been replaced
//! since the scan). An asset with no such file keeps its old stamp and does not block the
//! walk.

use super::WalkKind;
use crate::locate::{Resolver, candidates_in};
use crate::media::content_hash::{self, content_hash_file, hash_file};
use crate::model::{ContentHash, WalkAsset, WalkKindId, WalkResults};
use rayon::prelude::*;

/// Assets per batch (per job row and per fenced commit). Each batch costs a claim, a first
/// heartbeat and a commit (three fsync'd transactions) while the cores idle, so batches are
/// large: with 1,024 small files a batch these were half of the walk's time (issue 29).
pub const BATCH: usize = 8192;
/// Bytes a batch reads at most, so that a batch of large files still takes seconds, well
/// within a lease (the heartbeat runs meanwhile), and a crash re-reads at most this much.
pub const BATCH_BYTES: u64 = 512 << 20;

pub struct ContentHashWalk {
    pub scheme: i64,
    pub batch: usize,
}

impl ContentHashWalk {
    /// This binary's scheme unless overridden (`MEDIADEX_CONTENT_HASH_SCHEME`).
    pub fn new(scheme_override: Option<i64>) -> Self {
        ContentHashWalk {
            scheme: scheme_override.unwrap_or(content_hash::SCHEME),
            batch: BATCH,
        }
    }
}

/// The content hash of the asset's bytes, from the first candidate file that still holds
/// them; `None` when none does.
fn hash_asset(asset: &WalkAsset, resolver: &Resolver) -> Option<[u8; 32]> {
    candidates_in(asset, resolver).into_iter().find_map(|c| {
        if c.unchanged() {
            return content_hash_file(&c.path).ok();
        }
        let h = hash_file(&c.path).ok()?;
        (h.checksum == asset.checksum).then_some(h.content_hash)
    })
}

impl WalkKind for ContentHashWalk {
    fn id(&self) -> WalkKindId {
        WalkKindId::ContentHash
    }

    fn scheme(&self) -> i64 {
        self.scheme
    }

    fn batch_size(&self) -> usize {
        self.batch.max(1)
    }

    fn batch_bytes(&self) -> Option<u64> {
        Some(BATCH_BYTES)
    }

    fn process(&self, batch: &[WalkAsset]) -> WalkResults {
        let scheme = self.scheme;
        let resolver = Resolver::default();
        WalkResults::ContentHashes(
            batch
                .par_iter()
                .filter_map(|a| {
                    Some((
                        a.id,
                        ContentHash {
                            scheme,
                            hash: hash_asset(a, &resolver)?,
                        },
                    ))
                })
                .collect(),
        )
    }
}
