//! `GET /api/download?ids=1,2,3`: the originals of up to `MAX_IDS` assets as one zip,
//! streamed as it is written (stored, not compressed: photos and videos do not shrink; each
//! entry with a data descriptor and Zip64 where needed, by `rawzip`), so neither the server
//! nor the page holds the whole archive. Each file is the one
//! `media::located` finds (inside its library, with the bytes its scan indexed); one that
//! cannot be found or read is named, with why, in `not-included.txt` inside the zip. Every
//! id is checked before the first byte is sent, so a bad request is a JSON error; `HEAD`
//! checks the same and sends nothing (the page asks it first, to show that error).

use super::assets::get_asset;
use super::error::ApiError;
use super::{AppState, blocking};
use crate::model::Asset;
use crate::store::Store;
use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderValue, Method, header};
use axum::response::{IntoResponse, Response};
use std::collections::HashSet;
use std::io::Write;
use std::path::Path;
use tokio::sync::mpsc;

/// At most this many assets in one zip (as `POST /api/keep` and the bulk moves).
pub const MAX_IDS: usize = 500;
/// What the zip thread hands the response at a time.
const CHUNK: usize = 256 * 1024;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DownloadQuery {
    ids: String,
}

/// The ids of `ids=1,2,3`, each once, in the order given.
fn parse_ids(text: &str) -> Result<Vec<i64>, ApiError> {
    let mut seen = HashSet::new();
    let mut ids = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let id: i64 = part
            .parse()
            .map_err(|_| ApiError::bad_request(format!("ids: {part:?} is not an asset id")))?;
        if seen.insert(id) {
            ids.push(id);
        }
    }
    if ids.is_empty() || ids.len() > MAX_IDS {
        return Err(ApiError::bad_request(format!(
            "ids must name 1 to {MAX_IDS} assets (a comma-separated list)"
        )));
    }
    Ok(ids)
}

pub async fn download(
    State(s): State<AppState>,
    method: Method,
    q: Result<Query<DownloadQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(q) = q?;
    let ids = parse_ids(&q.ids)?;
    let store = s.ops.store.clone();
    let assets = blocking(move || {
        ids.iter()
            .map(|&id| get_asset(&store, id))
            .collect::<Result<Vec<_>, _>>()
    })
    .await?;
    let name = format!("mediadex-{}.zip", assets.len());
    let mut response = if method == Method::HEAD {
        ().into_response()
    } else {
        let (tx, rx) = mpsc::channel(4);
        let store = s.ops.store.clone();
        tokio::task::spawn_blocking(move || write_zip(&store, &assets, tx));
        let chunks = futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|chunk| (chunk, rx))
        });
        Body::from_stream(chunks).into_response()
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/zip"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
        headers.insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(response)
}

/// The response's end of the zip: buffers what the writer writes and hands it on a chunk
/// at a time; the client gone, the next hand-over fails and the writing stops.
struct Pipe {
    tx: mpsc::Sender<std::io::Result<Vec<u8>>>,
    buf: Vec<u8>,
}

impl Pipe {
    fn hand_over(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK));
        self.tx
            .blocking_send(Ok(chunk))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client left"))
    }
}

impl Write for Pipe {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.hand_over()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.hand_over()
    }
}

/// Writes the zip of `assets` into `tx`. A failure part-way ends the response with an
/// error, so the client sees a broken download rather than a zip that looks whole.
fn write_zip(store: &Store, assets: &[Asset], tx: mpsc::Sender<std::io::Result<Vec<u8>>>) {
    let pipe = Pipe {
        tx: tx.clone(),
        buf: Vec::with_capacity(CHUNK),
    };
    let mut zip = rawzip::ZipArchiveWriter::new(pipe);
    let result = add_all(store, assets, &mut zip).and_then(|()| {
        zip.finish()?.flush()?;
        Ok(())
    });
    if let Err(e) = result {
        tracing::warn!(error = %e, "a download stopped part-way");
        let _ = tx.blocking_send(Err(std::io::Error::other(e.to_string())));
    }
}

type ZipOut = rawzip::ZipArchiveWriter<Pipe>;

/// Each asset's original under its file name (made unique), then the list of those left out.
fn add_all(store: &Store, assets: &[Asset], zip: &mut ZipOut) -> Result<(), rawzip::Error> {
    let mut names = HashSet::new();
    let mut left_out = String::new();
    for asset in assets {
        let path = match super::media::located(store, asset) {
            Ok(Some(found)) => found.path,
            Ok(None) => {
                left_out += &format!(
                    "asset {}: its file changed since it was indexed\n",
                    asset.id
                );
                continue;
            }
            Err(e) => {
                left_out += &format!("asset {}: {}\n", asset.id, e.message);
                continue;
            }
        };
        let mut file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(e) => {
                left_out += &format!("asset {} ({}): {e}\n", asset.id, path.display());
                continue;
            }
        };
        let name = entry_name(&path, asset.id, &mut names);
        let modified = zip_time(&file.metadata()?);
        add(zip, &name, modified, &mut file)?;
    }
    if !left_out.is_empty() {
        let name = entry_name(Path::new(LEFT_OUT), 0, &mut names);
        let now = unix_time(std::time::SystemTime::now());
        add(zip, &name, now, &mut left_out.as_bytes())?;
    }
    Ok(())
}

/// One stored entry: `data` under `name`, its CRC and size in the descriptor after it.
fn add(
    zip: &mut ZipOut,
    name: &str,
    modified: rawzip::time::UtcDateTime,
    data: &mut impl std::io::Read,
) -> Result<(), rawzip::Error> {
    let (mut entry, config) = zip
        .new_file(name)
        .compression_method(rawzip::CompressionMethod::STORE)
        .last_modified(modified)
        .start()?;
    let mut writer = config.wrap(&mut entry);
    std::io::copy(data, &mut writer)?;
    let (_, descriptor) = writer.finish()?;
    entry.finish(descriptor)?;
    Ok(())
}

/// The entry that names the assets left out of the zip, and why.
pub const LEFT_OUT: &str = "not-included.txt";

/// The file's name, or `stem-ID.ext` when the zip already has one of that name (two
/// folders' IMG_0001.JPG).
fn entry_name(path: &Path, id: i64, names: &mut HashSet<String>) -> String {
    let base = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| format!("asset-{id}"));
    let name = if names.contains(&base) {
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        let ext = path.extension().map(|e| e.to_string_lossy().into_owned());
        match (stem, ext) {
            (Some(stem), Some(ext)) => format!("{stem}-{id}.{ext}"),
            _ => format!("{base}-{id}"),
        }
    } else {
        base
    };
    names.insert(name.clone());
    name
}

/// The file's modification time (the zip records it in UTC, in its extended timestamp).
fn zip_time(meta: &std::fs::Metadata) -> rawzip::time::UtcDateTime {
    unix_time(meta.modified().unwrap_or(std::time::UNIX_EPOCH))
}

fn unix_time(t: std::time::SystemTime) -> rawzip::time::UtcDateTime {
    let secs = match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    };
    rawzip::time::UtcDateTime::from_unix(secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_a_list_of_1_to_500_each_once() {
        assert_eq!(parse_ids("3, 1,3,,2").unwrap(), [3, 1, 2]);
        assert!(parse_ids("").is_err());
        assert!(parse_ids("1,x").is_err());
        let many: Vec<String> = (1..=501).map(|i| i.to_string()).collect();
        assert!(parse_ids(&many.join(",")).is_err());
        assert_eq!(parse_ids(&many[..500].join(",")).unwrap().len(), 500);
    }

    #[test]
    fn a_name_met_twice_gets_the_asset_id() {
        let mut names = HashSet::new();
        let a = entry_name(Path::new("/x/IMG_1.JPG"), 1, &mut names);
        let b = entry_name(Path::new("/y/IMG_1.JPG"), 2, &mut names);
        assert_eq!((a.as_str(), b.as_str()), ("IMG_1.JPG", "IMG_1-2.JPG"));
    }
}
