//! Row decoding shared by the families and compositions that read `assets` rows (a helper,
//! no table family): the columns `asset_from_row` reads (`asset_cols!`), the 32-byte
//! checksum and content-hash columns, what a picture's pixels are known by (`Look`), a
//! file's stamp (and a trash intent's, which may be NULL), a photo's embedded video and
//! Live Photo clip id, and a file's path. Holds no statement and calls no family.

use super::StoreError;
use super::db::Row;
use crate::model::{
    Asset, AssetPath, ContentHash, EmbeddedVideo, FileStamp, FileState, LiveClip, MediaFacts,
    MediaKind, TakenAtSource, TrashReason,
};

macro_rules! asset_cols {
    () => {
        "id, owner, checksum, size, mime, kind, width, height, display_width, display_height, \
         taken_local, taken_offset_minutes, make, model, lat, lon, orientation, duration_ms, \
         video_codec, created_at, trashed_at, trash_reason, content_hash, content_hash_scheme, \
         faces_scheme, taken_at_source, rating, title, description, content_identifier, \
         motion_offset, motion_length, live_video_id"
    };
}

/// The columns `asset_from_row` reads, for queries built beside it.
pub(super) const ASSET_COLS: &str = asset_cols!();

/// What an asset's pixels are known by: its content hash, that hash's scheme and its
/// orientation. Two assets with the same differ in metadata only.
pub(super) type Pixels = (Vec<u8>, i64, Option<i64>);

/// An asset's `Pixels`, none before the content-hash walk reached it.
pub(super) type Look = Option<Pixels>;

/// A file's stamp in the four columns from `at`: size, mtime_ns, dev, inode (SQLite
/// integers are signed; the bits round-trip).
pub(super) fn file_stamp(r: &Row<'_>, at: usize) -> Result<FileStamp, StoreError> {
    Ok(FileStamp {
        size: r.get::<i64>(at)? as u64,
        mtime_ns: r.get(at + 1)?,
        dev: r.get::<i64>(at + 2)? as u64,
        inode: r.get::<i64>(at + 3)? as u64,
    })
}

/// A stamp in the four columns from `at`; `None` where they are NULL (a trash intent
/// written before stamps were recorded).
pub(super) fn stamp_at(r: &Row<'_>, at: usize) -> Result<Option<FileStamp>, StoreError> {
    let size: Option<i64> = r.get(at)?;
    match size {
        Some(_) => file_stamp(r, at).map(Some),
        None => Ok(None),
    }
}

/// A stamp as its four columns, for a statement's parameters (the bits round-trip).
pub(super) fn stamp_cols(s: Option<FileStamp>) -> [Option<i64>; 4] {
    match s {
        Some(s) => [
            Some(s.size as i64),
            Some(s.mtime_ns),
            Some(s.dev as i64),
            Some(s.inode as i64),
        ],
        None => [None; 4],
    }
}

/// The look in columns `at`, `at + 1` and `at + 2`: content_hash, content_hash_scheme,
/// orientation.
pub(super) fn look(r: &Row<'_>, at: usize) -> Result<Look, StoreError> {
    let hash: Option<Vec<u8>> = r.get(at)?;
    let scheme: Option<i64> = r.get(at + 1)?;
    Ok(match (hash, scheme) {
        (Some(hash), Some(scheme)) => Some((hash, scheme, r.get(at + 2)?)),
        _ => None,
    })
}

/// The content hash at `idx` and its scheme at `idx + 1`, when both are set.
pub(super) fn content_hash_cols(
    r: &Row<'_>,
    idx: usize,
) -> Result<Option<ContentHash>, StoreError> {
    let scheme: Option<i64> = r.get(idx + 1)?;
    let hash: Option<Vec<u8>> = r.get(idx)?;
    match (hash, scheme) {
        (Some(_), Some(scheme)) => Ok(Some(ContentHash {
            scheme,
            hash: checksum_col(r, idx)?,
        })),
        _ => Ok(None),
    }
}

pub(super) fn checksum_col(r: &Row<'_>, idx: usize) -> Result<[u8; 32], StoreError> {
    r.get(idx)
}

fn opt_enum<T>(
    r: &Row<'_>,
    idx: usize,
    parse: fn(&str) -> Option<T>,
) -> Result<Option<T>, StoreError> {
    let text: Option<String> = r.get(idx)?;
    Ok(text.as_deref().and_then(parse))
}

pub(super) fn asset_from_row(r: &Row<'_>) -> Result<Asset, StoreError> {
    Ok(Asset {
        id: r.get(0)?,
        owner: r.get(1)?,
        checksum: checksum_col(r, 2)?,
        size: r.get::<i64>(3)? as u64,
        facts: MediaFacts {
            mime: r.get(4)?,
            kind: opt_enum(r, 5, MediaKind::parse)?,
            width: r.get(6)?,
            height: r.get(7)?,
            display_width: r.get(8)?,
            display_height: r.get(9)?,
            taken_local: r.get(10)?,
            taken_offset_minutes: r.get(11)?,
            taken_at_source: opt_enum(r, 25, TakenAtSource::parse)?,
            make: r.get(12)?,
            model: r.get(13)?,
            lat: r.get(14)?,
            lon: r.get(15)?,
            orientation: r.get(16)?,
            duration_ms: r.get(17)?,
            video_codec: r.get(18)?,
            notes: crate::model::Notes {
                rating: r.get(26)?,
                tags: Vec::new(),
                title: r.get(27)?,
                description: r.get(28)?,
            },
            content_identifier: r.get(29)?,
            embedded_video: embedded_cols(r, 30)?,
            error: None,
        },
        created_at: r.get(19)?,
        trashed_at: r.get(20)?,
        trash_reason: opt_enum(r, 21, TrashReason::parse)?,
        paths: Vec::new(),
        content_hash: content_hash_cols(r, 22)?,
        faces_scheme: r.get(24)?,
        faces: Vec::new(),
        live_clip: clip_col(r, 32)?,
        stack: Vec::new(),
    })
}

/// `motion_offset` at `idx` and `motion_length` at `idx + 1`, when both are set.
fn embedded_cols(r: &Row<'_>, idx: usize) -> Result<Option<EmbeddedVideo>, StoreError> {
    let offset: Option<i64> = r.get(idx)?;
    let length: Option<i64> = r.get(idx + 1)?;
    Ok(offset.zip(length).map(|(o, l)| EmbeddedVideo {
        offset: o as u64,
        length: l as u64,
    }))
}

/// `live_video_id` at `idx`, to be completed by `motion::load_clip`.
fn clip_col(r: &Row<'_>, idx: usize) -> Result<Option<LiveClip>, StoreError> {
    let id: Option<i64> = r.get(idx)?;
    Ok(id.map(|asset_id| LiveClip {
        asset_id,
        mime: None,
        duration_ms: None,
    }))
}

pub(super) fn path_from_row(r: &Row<'_>, at: usize) -> Result<AssetPath, StoreError> {
    Ok(AssetPath {
        file_id: r.get(at)?,
        library_id: r.get(at + 1)?,
        rel_path: r.get(at + 2)?,
        rel_path_text: r.get(at + 3)?,
        state: super::parse_at(r, at + 4, FileState::parse)?,
    })
}
