//! Clips converted for a browser that cannot play them (`thumbs::clip`): a video asset's
//! file and a still's motion clip, as H.264 in an MP4. The first request waits while
//! `ffmpeg` converts; later ones, and every Range request, are served from the cache under
//! an immutable ETag, as `media` serves originals. Which file is read is `media`'s rule
//! (`served_file`, `motion_of`); the conversion is handed no other. 503 `unavailable` where
//! ffmpeg is not installed.

use super::assets::get_asset;
use super::error::{ApiError, Code};
use super::media::{Sent, etag, motion_of, send, served_file};
use super::{AppState, blocking};
use crate::model::{MediaKind, hex};
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;

/// `GET /api/assets/{id}/playable`: the video, converted.
pub async fn video(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Path(id) = id?;
    let store = s.ops.store.clone();
    let thumbs = s.thumbs.clone();
    let (path, key) = blocking(move || {
        let asset = get_asset(&store, id)?;
        if asset.facts.kind != Some(MediaKind::Video) {
            let why = format!("asset {id} is not a video");
            return Err(ApiError::new(Code::NotFound, why));
        }
        let file = served_file(&store, &asset)?;
        let key = hex(&asset.checksum);
        Ok((thumbs.playable_clip(&file, None, &key)?, key))
    })
    .await?;
    send(&path, &headers, converted(id, &key)).await
}

/// `GET /api/assets/{id}/motion/playable`: the still's motion clip, converted.
pub async fn motion(
    State(s): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Path(id) = id?;
    let store = s.ops.store.clone();
    let thumbs = s.thumbs.clone();
    let (path, key) = blocking(move || {
        let (asset, window) = motion_of(&store, id)?;
        let file = served_file(&store, &asset)?;
        // A clip inside a still is other bytes than the still's: its own name.
        let key = match window {
            Some(_) => format!("{}-motion", hex(&asset.checksum)),
            None => hex(&asset.checksum),
        };
        Ok((thumbs.playable_clip(&file, window, &key)?, key))
    })
    .await?;
    send(&path, &headers, converted(id, &key)).await
}

fn converted(id: i64, key: &str) -> Sent {
    Sent {
        id,
        tag: etag(key, "-h264"),
        mime: Some("video/mp4".to_string()),
        window: None,
    }
}
