//! Assets as the rest of the program sees them: identities, paths, duplicate groups, the asset
//! list's filter and pages, queue and metrics snapshots. Plain data (see the parent module);
//! must not depend on any other module of the crate.

use super::*;

/// The identity of a library root for the circuit breaker: the root's device id and the id
/// in its `.mediadex-library` marker, as recorded at `library add`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LibraryIdentity {
    pub root_dev: Option<u64>,
    pub marker_id: Option<String>,
}

/// One path of an asset.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AssetPath {
    pub file_id: i64,
    pub library_id: i64,
    pub rel_path: Vec<u8>,
    pub rel_path_text: String,
    pub state: FileState,
}

impl AssetPath {
    /// The exact path bytes in base64, only where `rel_path_text` is not them (a name that
    /// is not UTF-8 shows U+FFFD; a backslash shows as `/`): the JSON outputs carry these
    /// beside the text so that a script can open every file. Base64 rather than an array of
    /// numbers: a 4,000-byte path stays one short string, and `base64 -d` or one standard
    /// library call gives the bytes back.
    pub fn bytes_if_lossy(&self) -> Option<String> {
        let exact = std::str::from_utf8(&self.rel_path) == Ok(self.rel_path_text.as_str());
        (!exact).then(|| {
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &self.rel_path)
        })
    }
}

/// An asset with the paths that show it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Asset {
    pub id: i64,
    pub owner: String,
    pub checksum: [u8; 32],
    pub size: u64,
    /// What the extractors found (its `error` is always `None` here: errors stay on files).
    pub facts: MediaFacts,
    pub created_at: Millis,
    pub trashed_at: Option<Millis>,
    pub trash_reason: Option<TrashReason>,
    /// Present paths first, then missing ones; by library and path.
    pub paths: Vec<AssetPath>,
    /// The content hash and the scheme that computed it; `None` until stamped.
    pub content_hash: Option<ContentHash>,
    /// The detector version `faces` came from; `None` until a detector ran on it.
    pub faces_scheme: Option<i64>,
    /// The faces stored for `faces_scheme`.
    pub faces: Vec<DetectedFace>,
    /// A Live Photo still's clip, while that clip is not in the trash.
    pub live_clip: Option<LiveClip>,
    /// The RAW+JPEG stack the asset is in: its primary first, then its RAWs; empty when it
    /// is in none (or its partners are gone).
    pub stack: Vec<StackMember>,
}

/// One file of a stack, with the asset it shows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StackMember {
    pub asset_id: i64,
    pub file_id: i64,
    pub rel_path_text: String,
    pub mime: Option<String>,
    /// The shown file (the JPEG or HEIC); the others are the RAWs behind it.
    pub primary: bool,
}

/// Files sharing one asset: byte-identical copies.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DuplicateGroup {
    pub asset_id: i64,
    pub checksum: [u8; 32],
    pub size: u64,
    /// The present files, two or more.
    pub files: Vec<AssetPath>,
}

/// Assets that are the same picture with different metadata: one content hash (under one
/// scheme), different checksums. At least one of them is live; trashed ones are listed too.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ContentTwins {
    pub content_hash: ContentHash,
    /// By id, each with its paths.
    pub assets: Vec<Asset>,
}

/// Lowercase hex of a checksum.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Which assets a page of the asset list shows. Every `None` is "any".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AssetFilter {
    /// The trash instead of the live assets.
    pub trashed: bool,
    pub kind: Option<MediaKind>,
    /// Taken at or after this local wall time (`YYYY-MM-DD[THH:MM:SS]`).
    pub taken_from: Option<String>,
    /// Taken strictly before this local wall time.
    pub taken_before: Option<String>,
    pub make: Option<String>,
    pub model: Option<String>,
    /// A camera whose make or model holds this text, without ASCII case ("canon", "iPhone").
    pub camera: Option<String>,
    /// A place other than 0,0 (which is where a camera without a fix writes zeros).
    pub has_gps: Option<bool>,
    /// Assets whose current face results hold at least one face (or none).
    pub has_faces: Option<bool>,
    /// Rated at least this (`rating>=`); an unrated asset is left out.
    pub rating_min: Option<i8>,
    /// Tagged with this tag (without ASCII case).
    pub tag: Option<String>,
    /// Showing this person (a face of theirs).
    pub person: Option<i64>,
}

/// A camera the index knows, with how many live assets it took: the camera filter's
/// suggestions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Camera {
    pub make: Option<String>,
    pub model: Option<String>,
    pub count: u64,
}

/// Where a page of the timeline (newest taken first, undated last, then by id) ends: the
/// next page starts strictly after it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AssetCursor {
    /// The last item's capture time as stored, `""` when undated.
    pub taken: String,
    pub id: i64,
}

/// One page of the asset list. Items carry no paths (ask for one asset for those).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AssetPage {
    pub items: Vec<Asset>,
    /// `None` on the last page.
    pub next: Option<AssetCursor>,
}

/// Queue figures of one kind of work (a job kind, or `scan` for scan runs).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct QueueStats {
    pub kind: String,
    /// Waiting (queued or accepted) rows.
    pub waiting: i64,
    /// Age of the oldest waiting row, ms (0 when none waits).
    pub oldest_waiting_ms: Millis,
    pub running: i64,
    /// The longest time since a running row's last heartbeat, ms.
    pub max_heartbeat_age_ms: Millis,
    /// The longest time a running row has held its current lease, ms (since its claim for
    /// scan runs; since its last state change for jobs, which keep no claim time).
    pub max_lease_age_ms: Millis,
}

/// Everything /metrics reports that lives in the database.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MetricsSnapshot {
    pub queues: Vec<QueueStats>,
    /// Persistent counters by name (every `Counter`, plus `scheme_restarts` when present).
    pub counters: Vec<(String, i64)>,
    /// Per library: id, name, when its last completed scan finished.
    pub last_scan: Vec<(i64, String, Option<Millis>)>,
    /// Visible live assets by kind (`unknown` when not sniffed).
    pub assets_by_kind: Vec<(String, i64)>,
}

/// The one of a group to keep (docs/api.md, "Keep one of a group"): the most pixels, then the
/// biggest file, then the most metadata (a date, a camera make, a model, a place, a rating,
/// tags, a title, a description: one point each), then the lowest id. Trashed ones are not
/// suggested; `None` when every one is trashed.
pub fn suggest_keep(assets: &[Asset]) -> Option<i64> {
    assets
        .iter()
        .filter(|a| a.trashed_at.is_none())
        .max_by_key(|a| (pixels(&a.facts), a.size, completeness(&a.facts), -a.id))
        .map(|a| a.id)
}

fn pixels(f: &MediaFacts) -> u64 {
    u64::from(f.width.unwrap_or(0)) * u64::from(f.height.unwrap_or(0))
}

fn completeness(f: &MediaFacts) -> usize {
    let n = &f.notes;
    [
        f.taken_local.is_some(),
        f.make.is_some(),
        f.model.is_some(),
        f.lat.is_some() && f.lon.is_some(),
        n.rating.is_some(),
        !n.tags.is_empty(),
        n.title.is_some(),
        n.description.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asset(id: i64, (w, h): (u32, u32), size: u64, dated: bool) -> Asset {
        Asset {
            id,
            owner: "local".into(),
            checksum: [0; 32],
            size,
            facts: MediaFacts {
                width: Some(w),
                height: Some(h),
                taken_local: dated.then(|| "2024-01-01T00:00:00".into()),
                ..MediaFacts::default()
            },
            created_at: 0,
            trashed_at: None,
            trash_reason: None,
            paths: vec![],
            content_hash: None,
            faces_scheme: None,
            faces: vec![],
            live_clip: None,
            stack: vec![],
        }
    }

    #[test]
    fn the_one_to_keep_has_the_most_pixels_then_bytes_then_metadata_then_the_lowest_id() {
        let big = asset(1, (40, 30), 10, false);
        let heavy = asset(2, (30, 40), 99, false);
        assert_eq!(suggest_keep(&[big.clone(), heavy.clone()]), Some(2));
        let small = asset(3, (20, 10), 999, true);
        assert_eq!(suggest_keep(&[small.clone(), big.clone()]), Some(1));
        let dated = asset(4, (40, 30), 10, true);
        assert_eq!(suggest_keep(&[big.clone(), dated.clone()]), Some(4));
        let twin = asset(5, (40, 30), 10, false);
        assert_eq!(suggest_keep(&[twin, big.clone()]), Some(1));
        let mut trashed = heavy;
        trashed.trashed_at = Some(1);
        assert_eq!(suggest_keep(&[big, trashed.clone()]), Some(1));
        assert_eq!(suggest_keep(&[trashed]), None);
    }
}
