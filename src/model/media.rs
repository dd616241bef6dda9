//! What a file is: media kinds, extracted facts and their provenance, file states. Plain data
//! (see the parent module); must not depend on any other module of the crate.

use super::*;

/// What kind of media a file is, by its content (not its name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MediaKind {
    Image,
    Video,
    /// Sniffed as something that is neither (a document, an archive, unknown bytes).
    Other,
}

impl MediaKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MediaKind::Image => "image",
            MediaKind::Video => "video",
            MediaKind::Other => "other",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "image" => Some(MediaKind::Image),
            "video" => Some(MediaKind::Video),
            "other" => Some(MediaKind::Other),
            _ => None,
        }
    }
}

/// The facts the pure extractors of `media/` read from one file. Every field is optional:
/// a corrupt, truncated or mislabelled file yields what could be read, plus `error`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MediaFacts {
    pub kind: Option<MediaKind>,
    /// MIME type by content sniffing, e.g. `image/jpeg`, `video/quicktime`.
    pub mime: Option<String>,
    /// Stored pixel dimensions.
    pub width: Option<u32>,
    pub height: Option<u32>,
    /// Dimensions as displayed (after EXIF orientation: swapped for 5..=8).
    pub display_width: Option<u32>,
    pub display_height: Option<u32>,
    /// Capture time as the camera wrote it, `YYYY-MM-DDTHH:MM:SS[.fff]` local wall time.
    pub taken_local: Option<String>,
    /// The UTC offset of `taken_local` in minutes, when the file says so.
    pub taken_offset_minutes: Option<i32>,
    /// Where `taken_local` came from; `None` exactly when there is no date.
    pub taken_at_source: Option<TakenAtSource>,
    pub make: Option<String>,
    pub model: Option<String>,
    pub lat: Option<f64>,
    pub lon: Option<f64>,
    /// EXIF orientation 1..=8.
    pub orientation: Option<u16>,
    pub duration_ms: Option<i64>,
    pub video_codec: Option<String>,
    /// What a sidecar or Takeout JSON beside the file says of it (`media::beside`).
    pub notes: Notes,
    /// Apple's ContentIdentifier, shared by a Live Photo's still and its MOV.
    pub content_identifier: Option<String>,
    /// The MP4 a motion photo carries after its JPEG's end.
    pub embedded_video: Option<EmbeddedVideo>,
    /// What could not be read, for the file row; `None` when everything parsed.
    pub error: Option<String>,
}

/// What the user wrote about a picture in another program, read from beside it (an XMP
/// sidecar; a Takeout JSON's description): empty when nothing lies beside it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Notes {
    /// `xmp:Rating`: -1 (rejected) to 5.
    pub rating: Option<i8>,
    /// Each once (compared without ASCII case), in the order written.
    pub tags: Vec<String>,
    pub title: Option<String>,
    pub description: Option<String>,
}

impl MediaFacts {
    /// The capture time as shown to users: RFC 3339 with the offset when the file says it,
    /// else the camera's local wall time.
    pub fn taken_at(&self) -> Option<String> {
        let local = self.taken_local.as_deref()?;
        Some(match self.taken_offset_minutes {
            Some(m) => {
                let sign = if m < 0 { '-' } else { '+' };
                format!("{local}{sign}{:02}:{:02}", m.abs() / 60, m.abs() % 60)
            }
            None => local.to_string(),
        })
    }
}

string_enum!(
    /// Where an asset's capture date came from. The chain tries them in this order and keeps
    /// the first that gives a date (issue 15 item 6).
    TakenAtSource {
        /// The file's EXIF (`DateTimeOriginal`, then `DateTimeDigitized`, then `DateTime`).
        Exif => "exif",
        /// The XMP packet embedded in the file.
        Xmp => "xmp",
        /// An XMP sidecar beside the file (`photo.ext.xmp`, else `photo.xmp`).
        Sidecar => "sidecar",
        /// A Google Takeout JSON beside the file (`photoTakenTime`, as UTC).
        Takeout => "takeout",
        /// The video container's creation time (QuickTime/MP4; a Matroska date counts too),
        /// or the movie header's of an image sequence or animated AVIF.
        Quicktime => "quicktime",
        /// A date in the file's name (`IMG_20190305_131457.jpg`): local wall time, no offset.
        Filename => "filename",
        /// The file's modification time, as UTC (offset 0): the last resort.
        Mtime => "mtime",
    }
);

string_enum!(
    /// Why a scan processed (read) a file: the diff's verdict, kept on the file row.
    FileReason {
        New => "new",
        Size => "size",
        Mtime => "mtime",
        Inode => "inode",
        Forced => "forced",
        Error => "error",
        /// Unchanged itself, read again because its sidecar or Takeout JSON was created,
        /// changed or deleted.
        Sidecar => "sidecar",
        /// Unchanged itself, read again because it came back from the trash: its pairs and
        /// what lies beside it may have changed while it was away.
        Back => "back",
    }
);

string_enum!(
    /// What a run's provenance counts are kept by: the file reasons, plus files seen
    /// unchanged, files marked missing and files that turned out to duplicate a live asset.
    Provenance {
        New => "new",
        Size => "size",
        Mtime => "mtime",
        Inode => "inode",
        Forced => "forced",
        Error => "error",
        Unchanged => "unchanged",
        Missing => "missing",
        Duplicate => "duplicate",
        Sidecar => "sidecar",
        Back => "back",
    }
);

impl From<FileReason> for Provenance {
    fn from(r: FileReason) -> Self {
        match r {
            FileReason::New => Provenance::New,
            FileReason::Size => Provenance::Size,
            FileReason::Mtime => Provenance::Mtime,
            FileReason::Inode => Provenance::Inode,
            FileReason::Forced => Provenance::Forced,
            FileReason::Error => Provenance::Error,
            FileReason::Sidecar => Provenance::Sidecar,
            FileReason::Back => Provenance::Back,
        }
    }
}

string_enum!(
    /// Whether a known path was found by the last full scan that could say so.
    FileState {
        Present => "present",
        Missing => "missing",
    }
);

string_enum!(
    /// How one ingested file's checksum was matched to an asset (DESIGN.md section 6).
    Claim {
        /// No asset had this checksum: a new one was created.
        Created => "created",
        /// A live asset had it and the file did not point at it before: a duplicate.
        Duplicate => "duplicate",
        /// The file already pointed at the live asset with this checksum.
        Kept => "kept",
        /// A trashed asset had it: restored by id.
        Restored => "restored",
        /// A trashed asset had it while a move of it is in flight: linked, left trashed;
        /// the move ends it, and the next full scan heals what it left (finding 20).
        Held => "held",
        /// The trashed asset was swept meanwhile: stored afresh under a new id.
        Recreated => "recreated",
        /// The file could not be read (no checksum): recorded with its error, link kept.
        Unreadable => "unreadable",
        /// A move (the user's trash) took the file after the scan read it: nothing of the
        /// read was written, and the row stays as the move left it.
        Moved => "moved",
    }
);

string_enum!(
    /// Why an asset is in the trash.
    TrashReason {
        /// Its last file went missing in a full scan.
        Missing => "missing",
        /// Its last file was overwritten with other content.
        Replaced => "replaced",
        /// The user trashed it.
        User => "user",
    }
);

string_enum!(
    /// What a trash journal intent moves.
    TrashAction {
        Trash => "trash",
        Restore => "restore",
    }
);

string_enum!(
    /// Life of a trash journal intent: pending until the move is committed (or given up).
    IntentState {
        Pending => "pending",
        Done => "done",
        Aborted => "aborted",
    }
);
