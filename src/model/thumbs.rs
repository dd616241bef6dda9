//! The thumbnail job's payload and the assets it works on. Plain data (see the parent module);
//! must not depend on any other module of the crate.

use super::*;

/// The job kind that makes the thumbnails of the assets a scan run published.
pub const THUMBS_JOB_KIND: &str = "thumbs";

/// A `thumbs` job row's payload: the scan run whose fenced completion published the assets,
/// the highest asset id it published (`last`), and the cursor (`after`: the last asset id
/// done; the first row starts just below the lowest id published). Each batch completes
/// its row and enqueues the next with the cursor moved on, in one fenced transaction.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThumbsPayload {
    pub run: i64,
    pub after: i64,
    pub last: i64,
    /// Assets visited by the rows before this one.
    #[serde(default)]
    pub visited: u64,
}

impl ThumbsPayload {
    /// The first row for the ids `first..=last` a completion of `run` published.
    pub fn published(run: i64, first: i64, last: i64) -> ThumbsPayload {
        ThumbsPayload {
            run,
            after: first - 1,
            last,
            visited: 0,
        }
    }

    /// `None` for a payload this binary cannot read.
    pub fn parse(text: &str) -> Option<ThumbsPayload> {
        serde_json::from_str(text).ok()
    }

    /// The job row carrying this payload: one live row per run (a chain advancing itself).
    pub fn job(&self) -> NewJob {
        let payload = serde_json::to_string(self).unwrap_or_else(|_| "{}".to_string());
        // A batch is cheap to redo (made thumbnails are skipped); the attempts only bound a
        // batch whose store reads keep failing.
        NewJob::new(THUMBS_JOB_KIND, payload)
            .unique(format!("{THUMBS_JOB_KIND}:{}", self.run))
            .max_attempts(10)
    }
}

/// An asset the thumbs job visits: the files that may show it (as a walk sees them) and
/// what the thumbnailer needs to know.
#[derive(Clone, Debug, PartialEq)]
pub struct ThumbAsset {
    pub asset: WalkAsset,
    pub kind: MediaKind,
    pub mime: Option<String>,
    pub orientation: Option<u16>,
    pub width: Option<u32>,
    pub height: Option<u32>,
}
