//! An asset's bytes, by asset id only: its thumbnail and, for a picture, its preview (the
//! viewer's large picture; both made on first request, cached by checksum, sent immutable
//! with an ETag), its original file (streamed; one byte range of it on request,
//! `range.rs`) and its motion clip (a Live Photo's MOV, or the window of a motion photo's JPEG that
//! is its MP4, served as a file of its own). The file is the one `crate::locate` finds (the rules
//! the walks and the thumbnail job read by): inside its library root, with the stamp its scan
//! recorded, a missing one first in the trash folder; nothing outside a library is ever read, and
//! no other bytes are ever served under the asset's checksum. A face's crop (the People
//! view's cards) is cut from its picture's preview and served as a thumbnail is. Also which
//! formats get only a
//! placeholder thumbnail here (their decoding program is missing; a picture over the pixel
//! cap, or a HEIF whose decode timed out, gets one too). A decode that timed out on a
//! request is remembered in the index for the file's stamp, and one remembered is not run
//! again (`store::decode_timeouts`).

use super::assets::get_asset;
use super::error::{ApiError, Code};
use super::range;
use super::{AppState, blocking};
use crate::locate::{Candidate, LocateError, locate_candidate};
use crate::model::{Asset, DecodeTimeout, EmbeddedVideo, MediaKind, WalkAsset, hex};
use crate::store::Store;
use crate::thumbs::{
    FACE_SIZE, FACE_VERSION, Source, Stored, THUMB_VERSION, Thumb, Thumbs, Unmade, placeholder,
    placeholder_why,
};
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::path::PathBuf;
use tokio::io::{AsyncReadExt, AsyncSeekExt};

const IMMUTABLE: &str = "private, max-age=31536000, immutable";
const CHUNK: usize = 64 * 1024;

/// The asset's file that still holds its bytes, by `crate::locate`'s rules (the walks' and
/// the thumbnail job's): `Ok(None)` when every file there was rewritten since its scan.
pub(super) fn located(store: &Store, asset: &Asset) -> Result<Option<Candidate>, ApiError> {
    let files = WalkAsset {
        id: asset.id,
        checksum: asset.checksum,
        trashed: asset.trashed_at.is_some(),
        files: store.asset_files(asset.id)?,
        timed_out: None,
        same_pixels: None,
        known: None,
    };
    match locate_candidate(&files) {
        Ok(found) => Ok(Some(found)),
        Err(LocateError::Changed) => Ok(None),
        Err(LocateError::Outside) => Err(ApiError::new(
            Code::OutsideLibrary,
            format!(
                "asset {}'s file resolves outside its library; refused",
                asset.id
            ),
        )),
        Err(LocateError::Gone) => Err(missing(asset.id, "is readable now")),
    }
}

/// The file `original` and `motion` serve: the asset's, which must still hold its bytes.
pub(super) fn served_file(store: &Store, asset: &Asset) -> Result<PathBuf, ApiError> {
    located(store, asset)?
        .map(|c| c.path)
        .ok_or_else(|| missing(asset.id, "still holds the bytes its scan indexed"))
}

pub(super) fn missing(id: i64, why: &str) -> ApiError {
    ApiError::new(Code::FileMissing, format!("no file of asset {id} {why}"))
}

pub(super) fn etag(checksum_hex: &str, suffix: &str) -> String {
    format!("\"{checksum_hex}{suffix}\"")
}

fn not_modified(headers: &HeaderMap, tag: &str) -> bool {
    headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == tag || t.trim() == "*"))
}

fn thumb_response(thumb: Thumb, tag: &str) -> Response {
    let mut r = ([(header::CONTENT_TYPE, thumb.content_type)], thumb.bytes).into_response();
    let h = r.headers_mut();
    if thumb.immutable {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static(IMMUTABLE));
        if let Ok(v) = HeaderValue::from_str(tag) {
            h.insert(header::ETAG, v);
        }
    } else {
        // A placeholder may become a real thumbnail (ffmpeg installed later).
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    }
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

pub async fn thumbnail(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Path(id) = id?;
    let (store, thumbs) = (s.ops.store.clone(), s.thumbs.clone());
    blocking(move || picture(&store, &thumbs, id, &headers, Made::Thumbnail)).await
}

/// `GET /api/assets/{id}/preview`: the viewer's large picture of a picture (HEIC, AVIF, a
/// RAW's preview, anything the browser cannot show itself), made and cached as a thumbnail
/// is, at `PREVIEW_SIZE`; 404 `not_found` for a video.
pub async fn preview(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Path(id) = id?;
    let (store, previews) = (s.ops.store.clone(), s.previews.clone());
    blocking(move || picture(&store, &previews, id, &headers, Made::Preview)).await
}

/// Which of an asset's pictures `picture` makes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Made {
    Thumbnail,
    Preview,
}

/// An asset's thumbnail or preview from `thumbs`: from its cache, else made now from the
/// file that still holds the asset's bytes, else the placeholder.
fn picture(
    store: &Store,
    thumbs: &Thumbs,
    id: i64,
    headers: &HeaderMap,
    made: Made,
) -> Result<Response, ApiError> {
    let asset = get_asset(store, id)?;
    let f = &asset.facts;
    if made == Made::Preview && f.kind != Some(MediaKind::Image) {
        let why = format!("asset {id} is not a picture: it has no preview");
        return Err(ApiError::new(Code::NotFound, why));
    }
    let sum = hex(&asset.checksum);
    // The size is in the tag: a new thumb_size must not be answered "not modified".
    let kind = if made == Made::Preview { "p" } else { "t" };
    let tag = etag(&sum, &format!("-{kind}{THUMB_VERSION}-{}", thumbs.size()));
    if not_modified(headers, &tag) {
        return Ok(StatusCode::NOT_MODIFIED.into_response());
    }
    Ok(thumb_response(
        picture_of(store, thumbs, &asset, &sum)?,
        &tag,
    ))
}

/// `picture`'s bytes for `asset` (checksum `sum`): the cached ones, else made now from the
/// file that still holds its bytes, else the placeholder.
fn picture_of(store: &Store, thumbs: &Thumbs, asset: &Asset, sum: &str) -> Result<Thumb, ApiError> {
    if let Some(t) = thumbs.cached(sum) {
        return Ok(t);
    }
    let file = located(store, asset)?;
    let src = source(asset, sum);
    // A decode that timed out on this file is not run again (the index remembers it for
    // the file's stamp), and only a file that still holds the bytes the checksum names may
    // give the thumbnail cached under it: one rewritten since its scan (not rescanned yet)
    // would give a picture of other bytes, cached for good.
    let why = thumbs.unmade(&src, store.decode_timeout(asset.id)?, file.is_some());
    let (Some(file), None) = (file, &why) else {
        return Ok(placeholder_for(&src, why.as_ref()));
    };
    let thumb = thumbs.get(&src, &file.path)?;
    if let Some(seconds) = thumb.timed_out {
        remember_timeout(store, asset.id, &file, seconds);
    }
    Ok(thumb)
}

/// `GET /api/faces/{id}/crop`: the face cut from its picture's preview with a margin,
/// upright and square (`thumbs::face`), cached and sent as a thumbnail is; the placeholder
/// while the picture has none; 404 `not_found` for a face id no detection holds.
pub async fn face_crop(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Path(id) = id?;
    let (store, previews) = (s.ops.store.clone(), s.previews.clone());
    blocking(move || {
        let face = store.face_box(id)?.ok_or_else(|| {
            ApiError::new(
                Code::NotFound,
                format!("no face {id}: a re-detection may have replaced it"),
            )
        })?;
        let asset = get_asset(&store, face.asset_id)?;
        let sum = hex(&asset.checksum);
        let tag = etag(&sum, &format!("-f{id}-v{FACE_VERSION}-{FACE_SIZE}"));
        if not_modified(&headers, &tag) {
            return Ok(StatusCode::NOT_MODIFIED.into_response());
        }
        if let Some(t) = previews.face_cached(&sum, id) {
            return Ok(thumb_response(t, &tag));
        }
        let preview = picture_of(&store, &previews, &asset, &sum)?;
        let stored = Stored {
            width: asset.facts.width,
            height: asset.facts.height,
            orientation: crate::media::turn(&asset.facts),
        };
        // A placeholder stands in (uncached) until the picture has a real preview.
        let crop = (preview.immutable)
            .then(|| previews.face_crop(&sum, &face, stored, &preview.bytes))
            .flatten();
        Ok(thumb_response(
            crop.unwrap_or_else(|| placeholder(&source(&asset, &sum))),
            &tag,
        ))
    })
    .await
}

/// What the thumbnailer needs to know of an asset whose checksum is `sum`.
fn source<'a>(asset: &'a Asset, sum: &'a str) -> Source<'a> {
    let f = &asset.facts;
    Source {
        checksum_hex: sum,
        kind: f.kind,
        mime: f.mime.as_deref(),
        orientation: f.orientation,
        pixels: f
            .width
            .zip(f.height)
            .map(|(w, h)| u64::from(w) * u64::from(h)),
    }
}

/// The placeholder, saying a timeout under its label (the other reasons are longer than a
/// tile is wide: the viewer shows them, from the asset's `preview`).
fn placeholder_for(src: &Source<'_>, why: Option<&Unmade>) -> Thumb {
    match why {
        Some(t @ Unmade::TimedOut(_)) => placeholder_why(src, Some(&t.reason())),
        _ => placeholder(src),
    }
}

/// Why the asset's thumbnail and preview are a placeholder here, told without decoding
/// (`GET /api/assets/{id}`'s `preview`); `None` when a picture is, or will be, made.
pub(super) fn unmade(
    store: &Store,
    thumbs: &Thumbs,
    asset: &Asset,
) -> Result<Option<Unmade>, ApiError> {
    let sum = hex(&asset.checksum);
    if thumbs.cache_path(&sum).is_file() {
        return Ok(None);
    }
    let readable = located(store, asset).is_ok_and(|f| f.is_some());
    let timed_out = store.decode_timeout(asset.id)?;
    Ok(thumbs.unmade(&source(asset, &sum), timed_out, readable))
}

/// Remembers a decode of `file` that ran to its deadline on a request. A request holds no
/// lease: the fact is about the file's bytes, kept by its stamp; a failure costs a retry.
fn remember_timeout(store: &Store, asset_id: i64, file: &Candidate, seconds: u64) {
    let fact = DecodeTimeout {
        asset_id,
        size: file.stamp.size,
        mtime_ns: file.stamp.mtime_ns,
        seconds,
    };
    if let Err(e) = store.remember_decode_timeout(fact) {
        tracing::warn!(asset = asset_id, error = %e, "could not remember a timed-out decode");
    }
}

pub async fn original(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Path(id) = id?;
    let store = s.ops.store.clone();
    let (asset, path) = blocking(move || {
        let asset = get_asset(&store, id)?;
        // The bytes its checksum names: those its `ETag` (and so `If-Range`) promises.
        let path = served_file(&store, &asset)?;
        Ok((asset, path))
    })
    .await?;
    let tag = etag(&hex(&asset.checksum), "");
    let mime = asset.facts.mime.clone();
    send(
        &path,
        &headers,
        Sent {
            id,
            tag,
            mime,
            window: None,
        },
    )
    .await
}

/// What `send` serves: the asset it is for, its tag and type, and the bytes of the file
/// that are the body (`None`: all of them).
pub(super) struct Sent {
    pub(super) id: i64,
    pub(super) tag: String,
    pub(super) mime: Option<String>,
    pub(super) window: Option<EmbeddedVideo>,
}

/// Streams the file at `path` (or its `window`, addressed as a file of its own), one range
/// of it on request.
pub(super) async fn send(
    path: &std::path::Path,
    headers: &HeaderMap,
    sent: Sent,
) -> Result<Response, ApiError> {
    let Sent {
        id,
        tag,
        mime,
        window,
    } = sent;
    if not_modified(headers, &tag) {
        return Ok(StatusCode::NOT_MODIFIED.into_response());
    }
    let mut file = tokio::fs::File::open(path)
        .await
        .map_err(|e| unreadable(id, &e))?;
    let file_len = file.metadata().await.map_err(|e| unreadable(id, &e))?.len();
    let (base, len) = match window {
        // A file rewritten shorter than its scan saw has lost the clip's end.
        Some(w) if w.offset.saturating_add(w.length) > file_len => {
            return Err(missing(id, "still holds the clip its scan indexed"));
        }
        Some(w) => (w.offset, w.length),
        None => (0, file_len),
    };
    let (status, start, body_len, content_range) = match range::plan(headers, len, &tag) {
        range::Plan::Full => (StatusCode::OK, 0, len, None),
        range::Plan::Unsatisfiable => return Ok(unsatisfiable(id, len)),
        range::Plan::Part { start, end } => {
            let range = format!("bytes {start}-{end}/{len}");
            (
                StatusCode::PARTIAL_CONTENT,
                start,
                end - start + 1,
                Some(range),
            )
        }
    };
    file.seek(std::io::SeekFrom::Start(base + start))
        .await
        .map_err(|e| unreadable(id, &e))?;
    // Only the asked-for bytes are read, a chunk at a time as the client takes them.
    let mut r = Response::new(Body::from_stream(chunks(file.take(body_len))));
    *r.status_mut() = status;
    original_headers(
        r.headers_mut(),
        mime.as_deref(),
        body_len,
        content_range,
        &tag,
    );
    Ok(r)
}

/// A still's motion clip: a Live Photo's MOV (its own asset's file, under its checksum) or
/// the MP4 inside a motion photo's JPEG (that byte window of the still's file), with Range
/// as `original`; 404 `not_found` for an asset without one.
pub async fn motion(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Path(id) = id?;
    let store = s.ops.store.clone();
    let (path, sent) = blocking(move || {
        let (asset, window) = motion_of(&store, id)?;
        let path = served_file(&store, &asset)?;
        let sum = hex(&asset.checksum);
        let (tag, mime) = match window {
            Some(_) => (etag(&sum, "-motion"), Some("video/mp4".to_string())),
            None => (etag(&sum, ""), asset.facts.mime.clone()),
        };
        Ok((
            path,
            Sent {
                id,
                tag,
                mime,
                window,
            },
        ))
    })
    .await?;
    send(&path, &headers, sent).await
}

/// Whose bytes are still `id`'s motion clip: its Live clip's own asset (`None`), or the
/// still itself with the window of its file that is the MP4.
pub(super) fn motion_of(
    store: &Store,
    id: i64,
) -> Result<(Asset, Option<EmbeddedVideo>), ApiError> {
    let still = get_asset(store, id)?;
    match (&still.live_clip, still.facts.embedded_video) {
        (Some(clip), _) => Ok((get_asset(store, clip.asset_id)?, None)),
        (None, Some(video)) => Ok((still, Some(video))),
        (None, None) => {
            let why = format!("asset {id} has no motion clip");
            Err(ApiError::new(Code::NotFound, why))
        }
    }
}

/// An original's headers: its type as sniffed, its length and range, its tag, and the rules
/// that keep it from running as a page of this origin.
fn original_headers(
    h: &mut HeaderMap,
    mime: Option<&str>,
    body_len: u64,
    content_range: Option<String>,
    tag: &str,
) {
    let mime = mime.unwrap_or("application/octet-stream");
    let mime =
        HeaderValue::from_str(mime).unwrap_or(HeaderValue::from_static("application/octet-stream"));
    h.insert(header::CONTENT_TYPE, mime);
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(body_len));
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if let Some(v) = content_range.and_then(|c| HeaderValue::from_str(&c).ok()) {
        h.insert(header::CONTENT_RANGE, v);
    }
    if let Ok(v) = HeaderValue::from_str(tag) {
        h.insert(header::ETAG, v);
    }
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-cache"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // Whatever the bytes are, they never run as a page of this origin.
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("sandbox; default-src 'none'"),
    );
}

fn unreadable(id: i64, e: &std::io::Error) -> ApiError {
    ApiError::new(
        Code::FileUnreadable,
        format!("cannot read asset {id}'s file: {e}"),
    )
}

/// 416, saying how long the file is.
fn unsatisfiable(id: i64, len: u64) -> Response {
    let mut r = ApiError::new(
        Code::RangeNotSatisfiable,
        format!("asset {id}'s file has {len} bytes; the range asked for lies outside them"),
    )
    .into_response();
    if let Ok(v) = HeaderValue::from_str(&format!("bytes */{len}")) {
        r.headers_mut().insert(header::CONTENT_RANGE, v);
    }
    r.headers_mut()
        .insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    r
}

/// The file as a stream of chunks, read as the client takes them.
fn chunks<R>(file: R) -> impl futures_util::Stream<Item = std::io::Result<Vec<u8>>> + Send
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    futures_util::stream::unfold(Some(file), |file| async move {
        let mut file = file?;
        let mut buf = vec![0; CHUNK];
        match file.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(buf), Some(file)))
            }
            Err(e) => Some((Err(e), None)),
        }
    })
}

/// What `GET /api/thumbnails` answers: the formats this server gives only a placeholder
/// thumbnail, because the program that decodes them is not installed here (`status` says
/// the same as `no_thumbnails`).
#[derive(serde::Serialize)]
pub struct ThumbnailsOut {
    no_thumbnails: Vec<&'static str>,
    /// Clips a browser cannot play can be converted here (`/playable`: ffmpeg is installed).
    converts_clips: bool,
}

/// `GET /api/thumbnails`: which formats get only a placeholder here, so the page can say so.
pub async fn lacking(State(s): State<AppState>) -> axum::Json<ThumbnailsOut> {
    axum::Json(ThumbnailsOut {
        no_thumbnails: s.thumbs.lacking(),
        converts_clips: s.thumbs.converts_clips(),
    })
}
