//! Motion clips of stills (issue 15 item 3): the MP4 a Google/Android motion photo carries
//! inside its JPEG, and the MOV that is a Live Photo's clip. Plain data (see the parent
//! module); must not depend on any other module of the crate.

use super::*;

/// Where the MP4 of a motion photo sits in its JPEG: `offset` bytes from the start of the
/// file, `length` bytes long (to the end of the file), checked to start with an `ftyp` box.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct EmbeddedVideo {
    pub offset: u64,
    pub length: u64,
}

/// A Live Photo's clip as its still shows it: the MOV asset paired with the still.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LiveClip {
    pub asset_id: i64,
    pub mime: Option<String>,
    pub duration_ms: Option<i64>,
}
