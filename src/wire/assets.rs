//! The asset projection, its path forms and its motion clip, and one asset's `preview` (a
//! picture, or a placeholder and why, as the HTTP layer tells it).

use crate::model::{self, AssetPath, DetectedFace, FileState, MediaKind, TakenAtSource, hex};
use serde::Serialize;

/// Which form a surface gives paths in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathForm {
    /// `paths`: texts; `paths_bytes`: the exact bytes where a text is lossy (the CLI).
    Text,
    /// `paths`: one object per file, with its library and state (the API).
    Files,
}

/// An asset's files, in the surface's form; flattened into the object that holds them.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Paths {
    Text {
        paths: Vec<String>,
        /// Only when some text is lossy: per path, its base64 bytes, or null where the text
        /// is exact.
        #[serde(skip_serializing_if = "Option::is_none")]
        paths_bytes: Option<Vec<Option<String>>>,
    },
    Files {
        paths: Vec<FilePath>,
    },
}

/// One file of an asset, in the API's form.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FilePath {
    pub library_id: i64,
    pub path: String,
    /// Only where `path` is lossy (not UTF-8, or a backslash shown as `/`): the exact bytes
    /// in base64.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    pub state: &'static str,
}

impl Paths {
    pub fn of<'a>(form: PathForm, files: impl Iterator<Item = &'a AssetPath>) -> Paths {
        match form {
            PathForm::Text => {
                let (paths, bytes): (Vec<String>, Vec<Option<String>>) = files
                    .map(|p| (p.rel_path_text.clone(), p.bytes_if_lossy()))
                    .unzip();
                // Absent when every text is exact, so that the common case reads simply.
                let lossy = bytes.iter().any(Option::is_some);
                Paths::Text {
                    paths,
                    paths_bytes: lossy.then_some(bytes),
                }
            }
            PathForm::Files => Paths::Files {
                paths: files
                    .map(|p| FilePath {
                        library_id: p.library_id,
                        path: p.rel_path_text.clone(),
                        path_bytes: p.bytes_if_lossy(),
                        state: p.state.as_str(),
                    })
                    .collect(),
            },
        }
    }

    /// The present files only (a duplicate group lists those).
    pub fn present(form: PathForm, files: &[AssetPath]) -> Paths {
        Paths::of(form, files.iter().filter(|f| f.state == FileState::Present))
    }
}

/// A face in the file's stored pixels: the box, the score, five `[x, y]` landmarks.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Face {
    pub x: f32,
    pub y: f32,
    pub w: f32,
    pub h: f32,
    pub score: f32,
    pub landmarks: [[f32; 2]; 5],
}

impl From<&DetectedFace> for Face {
    fn from(f: &DetectedFace) -> Face {
        Face {
            x: f.x,
            y: f.y,
            w: f.w,
            h: f.h,
            score: f.score,
            landmarks: f.landmarks.map(|(x, y)| [x, y]),
        }
    }
}

/// An asset as `assets --json` and `/api/assets` give it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Asset {
    pub id: i64,
    /// Every file showing it, present ones first.
    #[serde(flatten)]
    pub paths: Paths,
    pub size: u64,
    pub checksum: String,
    pub kind: Option<&'static str>,
    pub mime: Option<String>,
    /// As displayed (EXIF orientation applied).
    pub width: Option<u32>,
    pub height: Option<u32>,
    /// As stored in the file.
    pub stored_width: Option<u32>,
    pub stored_height: Option<u32>,
    pub taken_at: Option<String>,
    /// Where `taken_at` came from (`exif`, `xmp`, ..., `filename`, `mtime`).
    pub taken_at_source: Option<&'static str>,
    pub make: Option<String>,
    pub model: Option<String>,
    pub lat: Option<f64>,
    pub lon: Option<f64>,
    pub orientation: Option<u16>,
    pub duration_ms: Option<i64>,
    pub video_codec: Option<String>,
    /// From the XMP sidecar beside the file: -1 (rejected) to 5.
    pub rating: Option<i8>,
    /// From the XMP sidecar (`dc:subject`, then `lr:hierarchicalSubject`).
    pub tags: Vec<String>,
    /// From the XMP sidecar.
    pub title: Option<String>,
    /// From the XMP sidecar, else the Takeout JSON.
    pub description: Option<String>,
    pub created_at: i64,
    pub trashed: bool,
    pub trashed_at: Option<i64>,
    pub trash_reason: Option<&'static str>,
    /// Hex blake3 of the picture's essence, and the scheme that computed it.
    pub content_hash: Option<String>,
    pub content_hash_scheme: Option<i64>,
    /// The faces stored for the asset's detector version.
    pub faces: Vec<Face>,
    /// The motion clip of a Live Photo or a motion photo (`GET /api/assets/{id}/motion`).
    pub motion: Option<Motion>,
    /// The RAW+JPEG stack it is in, its shown (primary) file first; empty when in none.
    pub stack: Vec<StackFile>,
}

/// A still's motion clip: a Live Photo's MOV (an asset of its own, left out of the asset
/// list) or the MP4 inside a motion photo's JPEG.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Motion {
    /// `live` or `embedded`.
    pub kind: &'static str,
    pub mime: Option<String>,
    pub duration_ms: Option<i64>,
    /// The clip's asset (`live` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asset_id: Option<i64>,
    /// Where the MP4 sits in the JPEG (`embedded` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub length: Option<u64>,
}

impl Motion {
    /// A Live Photo's clip wins over an embedded video (a still has one or the other).
    pub fn of(a: &model::Asset) -> Option<Motion> {
        if let Some(clip) = &a.live_clip {
            return Some(Motion {
                kind: "live",
                mime: clip.mime.clone(),
                duration_ms: clip.duration_ms,
                asset_id: Some(clip.asset_id),
                offset: None,
                length: None,
            });
        }
        let video = a.facts.embedded_video?;
        Some(Motion {
            kind: "embedded",
            mime: Some("video/mp4".into()),
            duration_ms: None,
            asset_id: None,
            offset: Some(video.offset),
            length: Some(video.length),
        })
    }
}

/// One file of a stack.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StackFile {
    pub asset_id: i64,
    pub path: String,
    pub mime: Option<String>,
    pub primary: bool,
}

impl From<&model::StackMember> for StackFile {
    fn from(m: &model::StackMember) -> StackFile {
        StackFile {
            asset_id: m.asset_id,
            path: m.rel_path_text.clone(),
            mime: m.mime.clone(),
            primary: m.primary,
        }
    }
}

impl Asset {
    pub fn new(a: &model::Asset, form: PathForm) -> Asset {
        let f = &a.facts;
        Asset {
            id: a.id,
            paths: Paths::of(form, a.paths.iter()),
            size: a.size,
            checksum: hex(&a.checksum),
            kind: f.kind.map(MediaKind::as_str),
            mime: f.mime.clone(),
            width: f.display_width.or(f.width),
            height: f.display_height.or(f.height),
            stored_width: f.width,
            stored_height: f.height,
            taken_at: f.taken_at(),
            taken_at_source: f.taken_at_source.map(TakenAtSource::as_str),
            make: f.make.clone(),
            model: f.model.clone(),
            lat: f.lat,
            lon: f.lon,
            orientation: f.orientation,
            duration_ms: f.duration_ms,
            video_codec: f.video_codec.clone(),
            rating: f.notes.rating,
            tags: f.notes.tags.clone(),
            title: f.notes.title.clone(),
            description: f.notes.description.clone(),
            created_at: a.created_at,
            trashed: a.trashed_at.is_some(),
            trashed_at: a.trashed_at,
            trash_reason: a.trash_reason.map(|r| r.as_str()),
            content_hash: a.content_hash.map(|c| hex(&c.hash)),
            content_hash_scheme: a.content_hash.map(|c| c.scheme),
            faces: a.faces.iter().map(Face::from).collect(),
            motion: Motion::of(a),
            stack: a.stack.iter().map(StackFile::from).collect(),
        }
    }
}

/// What the viewer shows for an asset (`GET /api/assets/{id}`'s `preview`): `picture` (its
/// thumbnail and preview are, or will be, made), or `placeholder` with why (`cause`:
/// `timed_out`, `too_large`, `unsupported`, `unreadable`; `reason`: the words shown).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Preview {
    pub state: &'static str,
    pub cause: Option<&'static str>,
    pub reason: Option<String>,
}

impl Preview {
    /// `Some((cause, reason))` for a placeholder, `None` for a picture.
    pub fn of(placeholder: Option<(&'static str, String)>) -> Preview {
        match placeholder {
            None => Preview {
                state: "picture",
                cause: None,
                reason: None,
            },
            Some((cause, reason)) => Preview {
                state: "placeholder",
                cause: Some(cause),
                reason: Some(reason),
            },
        }
    }
}

/// One asset as `GET /api/assets/{id}` gives it: the listed fields and its `preview`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AssetDetail {
    #[serde(flatten)]
    pub asset: Asset,
    pub preview: Preview,
}
