//! Thumbnails: made on first request from a file the caller has already resolved inside its
//! library, and ahead of time for the pictures and videos a scan added (`job`), orientation
//! applied, cached on disk under `<data dir>/thumbs/` keyed by the asset's checksum
//! (content-addressed: a cached thumbnail never goes stale). Both paths make a thumbnail
//! through the same function and cache it under the same key; neither waits for the other.
//! Videos get a poster frame when `ffmpeg` is on PATH, HEIC/HEIF and AVIF pictures a decode
//! through `heif-dec` (`media::heif_dec`) when it is, camera RAWs their embedded preview or
//! their raw data binned (`media::raw`); what cannot be decoded here (a HEIF or a
//! video without its program, a broken file) gets a placeholder that is not cached, and
//! `lacking` names those formats for `status`. A picture is refused before it is decoded
//! when its declared size (the index's, else its header's) is over `MAX_PIXELS`, and an
//! in-process decode may allocate at most `MAX_DECODE_BYTES` (`image`'s `Limits`). A HEIF
//! whose decode ran to its deadline gets a placeholder saying "decoding timed out after N s"
//! (`placeholder_why`) and the answer says so (`Thumb::timed_out`, `Ensured::TimedOut`): the
//! caller remembers it in the index for the file's stamp (`store::decode_timeouts`, the one
//! source of truth) and, while it holds, asks for no decode again. `unmade` tells, without
//! decoding, why an asset gets a placeholder (timed out, too large, unsupported,
//! unreadable), for the API and the placeholder's words. The thumbnails
//! of an asset the sweep deleted are forgotten, every size. The cache never fills the disk
//! holding the database: below a reserve of free space (`disk::DEFAULT_RESERVE` unless
//! configured) it writes nothing and the job waits for space; with a cap (`cap`) it keeps
//! at most that many bytes, the least recently used going first. A thumbnail is made at the
//! configured size and cached under it, so a new size makes new thumbnails (the old ones
//! stay until the cap or the sweep takes them). Clips a browser cannot play are converted to
//! H.264 here too, on request, and cached the same way (`clip`). Touches no database and serves nothing
//! itself: the HTTP layer decides which file may be read.
//!
//! Must not import: http, ops, rusqlite

mod cap;
mod clip;
mod face;
pub mod job;

pub use clip::{CONVERT_TIMEOUT, ClipError, LONGEST_SIDE};
pub use face::{FACE_SIZE, FACE_VERSION, Stored};

use crate::disk::{DiskFull, SharedFreeSpace};
use crate::media::HEIF_MIMES;
use crate::media::heif_dec::{self, HeifDec};
use crate::media::raw::{self, RAW_MIMES};
use crate::model::MediaKind;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The longest side of a thumbnail, in pixels, unless `thumb_size` says otherwise.
pub const THUMB_SIZE: u32 = 320;
/// The longest side of a preview, the viewer's picture of a format the browser cannot show.
pub const PREVIEW_SIZE: u32 = 2048;
/// Bumped when thumbnails are made differently, so that caches and ETags move on.
pub const THUMB_VERSION: u32 = 1;
// Pictures larger than `MAX_PIXELS` (heif-dec's cap, one for every decoder) are not decoded
// for a thumbnail (a decompression bomb or a panorama too large to decode on a small NAS):
// they get the placeholder.
use crate::media::heif_dec::MAX_PIXELS;
/// Most memory one in-process decode may allocate (the decoder's `Limits`): `MAX_PIXELS`
/// at 4 bytes a pixel. A thumbnail worker's peak is this plus the thumbnail (and, for a
/// HEIF, the PNG `heif-dec` wrote, itself capped by `heif_dec::MAX_OUTPUT`), whatever the
/// file declares.
pub const MAX_DECODE_BYTES: u64 = MAX_PIXELS * 4;
/// An ffmpeg that has not produced a frame by then is stopped.
const FFMPEG_TIMEOUT: Duration = Duration::from_secs(20);

#[derive(Debug, thiserror::Error)]
pub enum ThumbError {
    #[error("cannot read {path}: {source}")]
    Source {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The disk holding the data dir is down to its reserve: caching is paused.
    #[error(transparent)]
    NoRoom(#[from] DiskFull),
}

/// What to send: the bytes, their type, and whether they may be cached forever.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Thumb {
    pub bytes: Vec<u8>,
    pub content_type: &'static str,
    /// A real thumbnail of these bytes (immutable); `false` for a placeholder.
    pub immutable: bool,
    /// This answer's decode ran to its deadline (seconds): a placeholder the caller remembers
    /// for the file's stamp.
    pub timed_out: Option<u64>,
}

/// What the thumbnailer needs to know about an asset.
#[derive(Clone, Debug)]
pub struct Source<'a> {
    pub checksum_hex: &'a str,
    pub kind: Option<MediaKind>,
    pub mime: Option<&'a str>,
    pub orientation: Option<u16>,
    /// Stored pixel dimensions, when known.
    pub pixels: Option<u64>,
}

#[derive(Clone)]
pub struct Thumbs {
    dir: PathBuf,
    data_dir: PathBuf,
    ffmpeg: Option<PathBuf>,
    heif: Option<HeifDec>,
    space: SharedFreeSpace,
    /// Bytes kept free on the disk holding the data dir, for the database.
    reserve: u64,
    /// The longest side of the thumbnails made, in pixels.
    size: u32,
    cap: Option<std::sync::Arc<cap::Cap>>,
}

impl Thumbs {
    /// Thumbnails cached in `<data_dir>/thumbs`, videos through the `ffmpeg` found on PATH
    /// and HEIF pictures through its `heif-dec`.
    pub fn new(data_dir: &Path) -> Thumbs {
        Thumbs::with_ffmpeg(data_dir, find_on_path("ffmpeg")).with_heif(heif_dec::system().cloned())
    }

    /// Decodes HEIC, HEIF and AVIF pictures with `heif` (none: they get the placeholder).
    pub fn with_heif(self, heif: Option<HeifDec>) -> Thumbs {
        Thumbs { heif, ..self }
    }

    /// The formats this process gives only a placeholder (its program is missing): the
    /// HEIF types without `heif-dec`, `video` without `ffmpeg`.
    pub fn lacking(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.heif.is_none() {
            out.extend_from_slice(HEIF_MIMES);
        }
        if self.ffmpeg.is_none() {
            out.push("video");
        }
        out
    }

    pub fn with_ffmpeg(data_dir: &Path, ffmpeg: Option<PathBuf>) -> Thumbs {
        Thumbs {
            dir: data_dir.join("thumbs"),
            data_dir: data_dir.to_path_buf(),
            ffmpeg,
            heif: None,
            space: crate::disk::system(),
            reserve: crate::disk::DEFAULT_RESERVE,
            size: THUMB_SIZE,
            cap: None,
        }
    }

    /// The viewer's previews: this cache's decoders, disk reserve and cap, at `PREVIEW_SIZE`.
    /// Named by their size, they sit beside the thumbnails and go with them (`forget`, the
    /// cap); the scan's job does not make them, the first request does.
    pub fn previews(&self) -> Thumbs {
        self.clone().with_size(PREVIEW_SIZE)
    }

    /// Makes thumbnails whose longest side is `size` pixels.
    pub fn with_size(self, size: u32) -> Thumbs {
        Thumbs { size, ..self }
    }

    /// Keeps at most `max` bytes of thumbnails (`None`: no cap beside the disk reserve).
    pub fn with_cap(self, max: Option<u64>) -> Thumbs {
        let cap = max.map(|m| std::sync::Arc::new(cap::Cap::new(m)));
        Thumbs { cap, ..self }
    }

    /// The longest side of the thumbnails this cache makes (in ETags: a new size is new
    /// bytes).
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Keeps `reserve` bytes free on the disk holding the data dir, as `space` tells them.
    pub fn with_space(self, space: SharedFreeSpace, reserve: u64) -> Thumbs {
        Thumbs {
            space,
            reserve,
            ..self
        }
    }

    /// Whether the cache may write: the database must stay writable, so the cache stops at
    /// the reserve (a disk whose free space cannot be told is written to).
    pub fn room(&self) -> Result<(), DiskFull> {
        let free = self.space.free_bytes(&self.data_dir);
        if free.is_some_and(|f| f < self.reserve) {
            let paused = format!(
                "the thumbnails (it keeps {} bytes free for the database)",
                self.reserve
            );
            return Err(DiskFull {
                path: self.data_dir.clone(),
                free,
                paused: Some(paused),
            });
        }
        Ok(())
    }

    /// Where the thumbnail of these bytes is cached, at this cache's size. The default size
    /// keeps the name it had before the size was a setting, so an upgrade remakes nothing.
    pub fn cache_path(&self, checksum_hex: &str) -> PathBuf {
        let shard = checksum_hex.get(..2).unwrap_or("00");
        let name = if self.size == THUMB_SIZE {
            format!("{checksum_hex}-v{THUMB_VERSION}.jpg")
        } else {
            format!("{checksum_hex}-{}px-v{THUMB_VERSION}.jpg", self.size)
        };
        self.dir.join(shard).join(name)
    }

    /// Deletes every cached thumbnail of these checksums, whatever size or version made
    /// it (all are named `<checksum>-…` in its shard): the sweep deleted their assets.
    /// A thumbnail already gone is fine; a failure only costs disk space, and is logged.
    pub fn forget(&self, checksums: &[[u8; 32]]) {
        for sum in checksums {
            let hex = crate::model::hex(sum);
            let path = self.cache_path(&hex);
            let Some(dir) = path.parent() else {
                continue;
            };
            let prefix = format!("{hex}-");
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                if !entry.file_name().to_string_lossy().starts_with(&prefix) {
                    continue;
                }
                match std::fs::remove_file(entry.path()) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => tracing::warn!(
                        error = %e,
                        path = %entry.path().display(),
                        "could not delete a swept asset's thumbnail"
                    ),
                }
            }
        }
    }

    /// The cached thumbnail, if one was made before.
    pub fn cached(&self, checksum_hex: &str) -> Option<Thumb> {
        let path = self.cache_path(checksum_hex);
        let bytes = std::fs::read(&path).ok()?;
        if self.cap.is_some() {
            cap::touch(&path);
        }
        Some(jpeg(bytes))
    }

    /// The thumbnail of `file` (already resolved inside its library): from the cache, else
    /// made now and cached; a placeholder when it cannot be made here (saying why when its
    /// decode timed out now: `Thumb::timed_out`).
    pub fn get(&self, src: &Source<'_>, file: &Path) -> Result<Thumb, ThumbError> {
        if let Some(t) = self.cached(src.checksum_hex) {
            return Ok(t);
        }
        Ok(match self.make(src, file)? {
            Made::Bytes(bytes) => jpeg(bytes),
            Made::Placeholder => placeholder(src),
            Made::TimedOut(secs) => Thumb {
                timed_out: Some(secs),
                ..placeholder_why(src, Some(&crate::model::timed_out_reason(secs)))
            },
        })
    }

    /// Whether this process can make a real thumbnail of such an asset (else it gets the
    /// placeholder, and its file need not be looked for).
    pub fn makes(&self, src: &Source<'_>) -> bool {
        match src.kind {
            Some(MediaKind::Image) if is_heif(src.mime) => self.heif.is_some(),
            Some(MediaKind::Image) => decodable(src.mime),
            Some(MediaKind::Video) => self.ffmpeg.is_some(),
            _ => false,
        }
    }

    /// Why such an asset gets a placeholder here, or `None` when a picture is (or will be)
    /// made: its format is not made here, its decode timed out (`timed_out`, as the index
    /// remembers), it declares more than `MAX_PIXELS` (a RAW shows its smaller preview), or
    /// no file holds its bytes (`readable` false). A broken file is only found by decoding.
    pub fn unmade(
        &self,
        src: &Source<'_>,
        timed_out: Option<u64>,
        readable: bool,
    ) -> Option<Unmade> {
        if !self.makes(src) {
            let what = match src.kind {
                Some(MediaKind::Video) => "a video needs ffmpeg, not installed here".to_string(),
                Some(MediaKind::Image) if is_heif(src.mime) => {
                    format!(
                        "{} needs heif-dec, not installed here",
                        src.mime.unwrap_or("HEIF")
                    )
                }
                _ => src.mime.unwrap_or("content of unknown type").to_string(),
            };
            return Some(Unmade::Unsupported(what));
        }
        if let Some(secs) = timed_out {
            return Some(Unmade::TimedOut(secs));
        }
        let raw = src.mime.is_some_and(|m| RAW_MIMES.contains(&m));
        if let Some(pixels) = src.pixels.filter(|&p| p > MAX_PIXELS && !raw) {
            return Some(Unmade::TooLarge(pixels));
        }
        (!readable).then_some(Unmade::Unreadable)
    }

    /// Makes and caches the thumbnail of `file` unless one is cached already (which is not
    /// read): the scan's background job, idempotent, so a re-run costs a `stat` per asset.
    /// Below the reserve it makes nothing (`NoRoom`): the job waits for space.
    pub fn ensure(&self, src: &Source<'_>, file: &Path) -> Result<Ensured, ThumbError> {
        if self.cache_path(src.checksum_hex).is_file() {
            return Ok(Ensured::Cached);
        }
        self.room()?;
        Ok(match self.make(src, file)? {
            Made::Bytes(_) => Ensured::Made,
            Made::Placeholder => Ensured::Placeholder,
            Made::TimedOut(secs) => Ensured::TimedOut(secs),
        })
    }

    /// Makes the thumbnail and caches it: the one function both paths use. Not `Bytes`
    /// when it cannot be made here (the caller answers with the placeholder, which is not
    /// cached).
    fn make(&self, src: &Source<'_>, file: &Path) -> Result<Made, ThumbError> {
        if !self.makes(src) {
            return Ok(Made::Placeholder);
        }
        // `makes` said yes: a video with ffmpeg here, or else a decodable picture.
        let made = match (src.kind, &self.ffmpeg) {
            (Some(MediaKind::Video), Some(ffmpeg)) => {
                poster(ffmpeg, file, self.size).map_or(Made::Placeholder, Made::Bytes)
            }
            _ => self.picture(src, file)?,
        };
        if let Made::Bytes(bytes) = &made {
            self.store(src.checksum_hex, bytes);
        }
        Ok(made)
    }

    fn picture(&self, src: &Source<'_>, file: &Path) -> Result<Made, ThumbError> {
        Ok(match self.picture_bytes(src, file)? {
            Ok(bytes) => Made::Bytes(bytes),
            Err(Some(secs)) => Made::TimedOut(secs),
            Err(None) => Made::Placeholder,
        })
    }

    /// The picture's thumbnail bytes, or why not: `Some(seconds)` its decoder's deadline.
    fn picture_bytes(
        &self,
        src: &Source<'_>,
        file: &Path,
    ) -> Result<Result<Vec<u8>, Option<u64>>, ThumbError> {
        if let Some(mime) = src.mime.filter(|m| RAW_MIMES.contains(m)) {
            return Ok(raw_picture(file, mime, src.orientation, self.size)?.ok_or(None));
        }
        if src.pixels.is_some_and(|p| p > MAX_PIXELS) {
            return Ok(Err(None));
        }
        if let (true, Some(heif)) = (is_heif(src.mime), &self.heif) {
            return Ok(match heif.decode_png(file) {
                Ok(png) => shrink(&png, None, self.size).ok_or(None),
                Err(heif_dec::HeifDecError::Timeout { after, .. }) => {
                    tracing::info!(file = %file.display(), ?after, "HEIF decode timed out; placeholder thumbnail");
                    Err(Some(after.as_secs()))
                }
                Err(e) => {
                    tracing::info!(error = %e, file = %file.display(), "HEIF picture not decoded; placeholder thumbnail");
                    Err(None)
                }
            });
        }
        // Read through a buffer, not whole: a scan's TIFF may be a gigabyte on disk.
        let opened = std::fs::File::open(file).map_err(|source| ThumbError::Source {
            path: file.display().to_string(),
            source,
        })?;
        let reader = std::io::BufReader::new(opened);
        Ok(shrink_from(reader, src.orientation, self.size).ok_or(None))
    }

    /// Writes the cache file atomically (a temp file renamed into place), so that a reader
    /// never sees half a thumbnail. The temp name is unique per write: a first request and
    /// the scan's job may make the same thumbnail at once in one process, and each renames
    /// only its own complete file. A failure only costs the cache; below the reserve
    /// nothing is written (a request is still answered with the bytes).
    fn store(&self, checksum_hex: &str, bytes: &[u8]) {
        self.write_cache(self.cache_path(checksum_hex), bytes);
    }

    /// `store` at `path` (a thumbnail's, or a face crop's).
    fn write_cache(&self, path: PathBuf, bytes: &[u8]) {
        static WRITES: AtomicU64 = AtomicU64::new(0);
        if let Err(full) = self.room() {
            tracing::debug!(%full, "thumbnail not cached");
            return;
        }
        let n = WRITES.fetch_add(1, Ordering::Relaxed);
        let tmp = path.with_extension(format!("tmp{}-{n}", std::process::id()));
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&tmp, bytes))
            .and_then(|()| std::fs::rename(&tmp, &path));
        match (written, &self.cap) {
            (Err(e), _) => {
                let _ = std::fs::remove_file(&tmp);
                tracing::warn!(error = %e, path = %path.display(), "could not cache a thumbnail");
            }
            (Ok(()), Some(cap)) => cap.added(&self.dir, bytes.len() as u64),
            (Ok(()), None) => {}
        }
    }
}

/// Why an asset's thumbnail and preview are a placeholder here, told without decoding
/// anything (the asset's `preview` in the API, and the placeholder's own words).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unmade {
    /// Its decoder ran to its deadline (seconds) on this file, as the index remembers.
    TimedOut(u64),
    /// It declares this many pixels, over `MAX_PIXELS`: not decoded.
    TooLarge(u64),
    /// Not a format made here: its type, or the program it needs.
    Unsupported(String),
    /// No file still holds the bytes its scan indexed (gone, or rewritten since).
    Unreadable,
}

impl Unmade {
    /// A stable word for programs.
    pub fn code(&self) -> &'static str {
        match self {
            Unmade::TimedOut(_) => "timed_out",
            Unmade::TooLarge(_) => "too_large",
            Unmade::Unsupported(_) => "unsupported",
            Unmade::Unreadable => "unreadable",
        }
    }

    /// The words a person reads under the placeholder.
    pub fn reason(&self) -> String {
        match self {
            Unmade::TimedOut(secs) => crate::model::timed_out_reason(*secs),
            Unmade::TooLarge(pixels) => format!(
                "too large to decode: {} megapixels, over the cap of {}",
                pixels / 1_000_000,
                MAX_PIXELS / 1_000_000
            ),
            Unmade::Unsupported(what) => format!("unsupported format: {what}"),
            Unmade::Unreadable => {
                "unreadable: no file still holds the bytes it was indexed with".to_string()
            }
        }
    }
}

/// What `ensure` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ensured {
    /// A thumbnail was cached already; nothing was read.
    Cached,
    /// Made now and cached.
    Made,
    /// Cannot be made here (undecodable, unsupported, no ffmpeg): the placeholder is what
    /// a request gets, and nothing is cached.
    Placeholder,
    /// The decoder ran to its deadline (seconds): the placeholder, to be remembered.
    TimedOut(u64),
}

/// What `make` made.
enum Made {
    Bytes(Vec<u8>),
    Placeholder,
    TimedOut(u64),
}

fn jpeg(bytes: Vec<u8>) -> Thumb {
    Thumb {
        bytes,
        content_type: "image/jpeg",
        immutable: true,
        timed_out: None,
    }
}

/// A RAW's embedded preview, else its raw data binned (bounded by `media::raw`, whatever
/// the raw's size), turned upright by the file's orientation like any stored picture.
fn raw_picture(
    file: &Path,
    mime: &str,
    orientation: Option<u16>,
    size: u32,
) -> Result<Option<Vec<u8>>, ThumbError> {
    let source = |source| ThumbError::Source {
        path: file.display().to_string(),
        source,
    };
    let mut reader = std::io::BufReader::new(std::fs::File::open(file).map_err(source)?);
    match raw::picture(&mut reader, mime) {
        Ok(raw::Picture::Jpeg(jpeg)) => Ok(shrink(&jpeg, orientation, size)),
        Ok(raw::Picture::Rgb {
            width,
            height,
            pixels,
        }) => Ok(image::RgbImage::from_raw(width, height, pixels)
            .and_then(|rgb| shrink_image(image::DynamicImage::ImageRgb8(rgb), orientation, size))),
        Err(e) => {
            tracing::info!(error = %e, file = %file.display(), "RAW picture not read; placeholder thumbnail");
            Ok(None)
        }
    }
}

fn is_heif(mime: Option<&str>) -> bool {
    mime.is_some_and(|m| HEIF_MIMES.contains(&m))
}

/// The formats this binary decodes itself (the HEIF ones go through `heif-dec`).
fn decodable(mime: Option<&str>) -> bool {
    matches!(
        mime,
        Some("image/jpeg" | "image/png" | "image/webp" | "image/gif" | "image/tiff")
    ) || mime.is_some_and(raw::has_picture)
}

/// Decodes a picture, turns it upright per its EXIF orientation, and encodes a JPEG
/// thumbnail whose longest side is at most `size`. `None` when it does not decode, or when
/// its header declares more than `MAX_PIXELS` (refused before any pixel is allocated).
fn shrink(bytes: &[u8], orientation: Option<u16>, size: u32) -> Option<Vec<u8>> {
    shrink_from(std::io::Cursor::new(bytes), orientation, size)
}

/// `shrink` of a picture read from `source`.
fn shrink_from<R: std::io::BufRead + std::io::Seek>(
    source: R,
    orientation: Option<u16>,
    size: u32,
) -> Option<Vec<u8>> {
    let mut reader = image::ImageReader::new(source).with_guessed_format().ok()?;
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    reader.limits(limits);
    let decoder = reader.into_decoder().ok()?;
    let (w, h) = image::ImageDecoder::dimensions(&decoder);
    if u64::from(w) * u64::from(h) > MAX_PIXELS {
        tracing::info!(
            width = w,
            height = h,
            "picture too large to decode; placeholder thumbnail"
        );
        return None;
    }
    let img = match image::DynamicImage::from_decoder(decoder) {
        Ok(img) => img,
        Err(e) => {
            tracing::debug!(error = %e, "picture does not decode; placeholder thumbnail");
            return None;
        }
    };
    shrink_image(img, orientation, size)
}

/// `shrink` of pixels already decoded.
fn shrink_image(
    mut img: image::DynamicImage,
    orientation: Option<u16>,
    size: u32,
) -> Option<Vec<u8>> {
    let upright = orientation
        .and_then(|o| u8::try_from(o).ok())
        .and_then(image::metadata::Orientation::from_exif);
    if let Some(o) = upright {
        img.apply_orientation(o);
    }
    if img.width() > size || img.height() > size {
        img = img.thumbnail(size, size);
    }
    encode(&img)
}

fn encode(img: &image::DynamicImage) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 82);
    img.to_rgb8().write_with_encoder(encoder).ok()?;
    Some(out)
}

/// A poster frame: one frame a second in (or the first, for a shorter video), turned
/// upright by ffmpeg itself, shrunk like a picture.
fn poster(ffmpeg: &Path, file: &Path, size: u32) -> Option<Vec<u8>> {
    ["1", "0"]
        .iter()
        .find_map(|at| frame_at(ffmpeg, file, at).filter(|b| !b.is_empty()))
        .and_then(|png| shrink(&png, None, size))
}

fn frame_at(ffmpeg: &Path, file: &Path, at: &str) -> Option<Vec<u8>> {
    let mut child = Command::new(ffmpeg)
        .args(["-nostdin", "-v", "error", "-ss", at, "-i"])
        .arg(file)
        .args(["-frames:v", "1", "-f", "image2pipe", "-vcodec", "png", "-"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let read = stdout.read_to_end(&mut buf).map(|_| buf);
        let _ = tx.send(read);
    });
    let out = match rx.recv_timeout(FFMPEG_TIMEOUT) {
        Ok(Ok(bytes)) => Some(bytes),
        Ok(Err(_)) => None,
        Err(_) => {
            tracing::warn!(file = %file.display(), "ffmpeg took too long; placeholder poster");
            let _ = child.kill();
            None
        }
    };
    let ok = child.wait().is_ok_and(|s| s.success());
    out.filter(|_| ok)
}

/// A neutral tile saying what the asset is, so the grid stays aligned: for what cannot be
/// made here, and for an asset none of whose files still holds its bytes. Never cached.
pub fn placeholder(src: &Source<'_>) -> Thumb {
    placeholder_why(src, None)
}

/// `placeholder`, saying `why` under its label when the format is made here but these bytes
/// were not (a decode that timed out, now or as the index remembers).
pub fn placeholder_why(src: &Source<'_>, why: Option<&str>) -> Thumb {
    let label = match (src.kind, src.mime) {
        (Some(MediaKind::Video), _) => "video",
        (_, Some("image/heic" | "image/heif")) => "HEIC",
        (_, Some("image/avif")) => "AVIF",
        (Some(MediaKind::Image), _) => "picture",
        _ => "file",
    };
    let svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{s}\" height=\"{s}\" \
         viewBox=\"0 0 {s} {s}\"><rect width=\"100%\" height=\"100%\" fill=\"#2b2f36\"/>\
         <text x=\"50%\" y=\"50%\" fill=\"#9aa4b2\" font-family=\"sans-serif\" \
         font-size=\"28\" text-anchor=\"middle\" dominant-baseline=\"middle\">{label}</text>{note}</svg>",
        s = THUMB_SIZE,
        note = why.map_or(String::new(), |w| format!(
            "<text x=\"50%\" y=\"65%\" fill=\"#9aa4b2\" font-family=\"sans-serif\" \
             font-size=\"16\" text-anchor=\"middle\">{w}</text>"
        )),
    );
    Thumb {
        bytes: svg.into_bytes(),
        content_type: "image/svg+xml",
        immutable: false,
        timed_out: None,
    }
}

/// The first executable named `name` on PATH.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    heif_dec::on_path(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 4x2 picture: left half red, right half blue.
    fn wide_png() -> Vec<u8> {
        let img = image::RgbImage::from_fn(40, 20, |x, _| {
            if x < 20 {
                image::Rgb([255, 0, 0])
            } else {
                image::Rgb([0, 0, 255])
            }
        });
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Png)
            .expect("png");
        out.into_inner()
    }

    fn dims(jpeg: &[u8]) -> (u32, u32) {
        let img = image::load_from_memory(jpeg).expect("decodes");
        (img.width(), img.height())
    }

    #[test]
    fn orientation_6_turns_a_wide_picture_upright() {
        assert_eq!(
            dims(&shrink(&wide_png(), None, THUMB_SIZE).expect("thumb")),
            (40, 20)
        );
        let turned = shrink(&wide_png(), Some(6), THUMB_SIZE).expect("thumb");
        assert_eq!(dims(&turned), (20, 40), "rotated 90 degrees");
        // Rotated clockwise: the left (red) half is now on top.
        let img = image::load_from_memory(&turned).expect("decodes").to_rgb8();
        let top = img.get_pixel(10, 5);
        assert!(top[0] > 200 && top[2] < 60, "top is red, got {top:?}");
    }

    #[test]
    fn a_thumbnail_is_cached_by_checksum_and_an_undecodable_file_gets_a_placeholder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let thumbs = Thumbs::with_ffmpeg(dir.path(), None);
        let file = dir.path().join("a.png");
        std::fs::write(&file, wide_png()).expect("write");
        let src = Source {
            checksum_hex: "ab12",
            kind: Some(MediaKind::Image),
            mime: Some("image/png"),
            orientation: None,
            pixels: Some(800),
        };
        let first = thumbs.get(&src, &file).expect("thumb");
        assert!(first.immutable);
        assert!(thumbs.cache_path("ab12").is_file());
        std::fs::remove_file(&file).expect("rm");
        assert_eq!(thumbs.get(&src, &file).expect("from cache"), first);

        let heic = Source {
            checksum_hex: "cd34",
            mime: Some("image/heic"),
            ..src
        };
        let t = thumbs.get(&heic, &file).expect("placeholder");
        assert!(!t.immutable && t.content_type == "image/svg+xml");
        assert!(
            !thumbs.cache_path("cd34").exists(),
            "placeholders are not cached"
        );
    }
    fn png(w: u32, h: u32) -> Vec<u8> {
        let img = image::RgbImage::from_pixel(w, h, image::Rgb([90, 120, 200]));
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Png)
            .expect("png");
        out.into_inner()
    }

    fn picture(sum: &str) -> Source<'_> {
        Source {
            checksum_hex: sum,
            kind: Some(MediaKind::Image),
            mime: Some("image/png"),
            orientation: None,
            pixels: Some(1000),
        }
    }

    #[test]
    fn the_size_setting_sizes_the_thumbnail_and_each_size_is_cached_apart() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("wide.png");
        std::fs::write(&file, png(800, 400)).expect("write");
        let default = Thumbs::with_ffmpeg(dir.path(), None);
        let small = Thumbs::with_ffmpeg(dir.path(), None).with_size(100);
        let made = |t: &Thumbs| dims(&t.get(&picture("ab12"), &file).expect("thumb").bytes);
        assert_eq!(made(&default), (320, 160));
        assert_eq!(made(&small), (100, 50));
        // The default size keeps the name it had before it was a setting.
        assert!(default.cache_path("ab12").ends_with("ab/ab12-v1.jpg"));
        assert_ne!(default.cache_path("ab12"), small.cache_path("ab12"));
        let cached = |t: &Thumbs| dims(&t.cached("ab12").expect("cached").bytes);
        assert_eq!((cached(&default), cached(&small)), ((320, 160), (100, 50)));
    }

    /// Sets a cached thumbnail's last use `age_secs` ago.
    fn aged(path: &Path, age_secs: u64) {
        let when = std::time::SystemTime::now() - Duration::from_secs(age_secs);
        let f = std::fs::File::options()
            .append(true)
            .open(path)
            .expect("open");
        f.set_modified(when).expect("set mtime");
    }

    #[test]
    fn over_its_cap_the_cache_evicts_the_least_recently_used() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("a.png");
        std::fs::write(&file, png(300, 300)).expect("write");
        let probe = Thumbs::with_ffmpeg(dir.path(), None);
        let one = probe
            .get(&picture("0000"), &file)
            .expect("thumb")
            .bytes
            .len() as u64;
        std::fs::remove_file(probe.cache_path("0000")).expect("rm");
        // Room for three and a half thumbnails.
        let thumbs = Thumbs::with_ffmpeg(dir.path(), None).with_cap(Some(one * 7 / 2));
        let sums = ["aa01", "bb02", "cc03"];
        for (age, sum) in sums.iter().enumerate() {
            thumbs.get(&picture(sum), &file).expect("thumb");
            aged(&thumbs.cache_path(sum), 3 * 86_400 - age as u64 * 86_400);
        }
        // The oldest was shown a moment ago: it is the most recently used now.
        aged(&thumbs.cache_path("aa01"), 2 * 3600);
        assert!(thumbs.cached("aa01").is_some());
        thumbs
            .get(&picture("dd04"), &file)
            .expect("a fourth, over the cap");
        let kept: Vec<bool> = ["aa01", "bb02", "cc03", "dd04"]
            .iter()
            .map(|s| thumbs.cache_path(s).is_file())
            .collect();
        assert_eq!(
            kept,
            [true, false, true, true],
            "bb02 was the least recently used"
        );
        let uncapped = Thumbs::with_ffmpeg(dir.path(), None);
        for sum in ["ee05", "ff06"] {
            uncapped.get(&picture(sum), &file).expect("thumb");
        }
        assert!(
            uncapped.cache_path("cc03").is_file(),
            "no cap: nothing evicted"
        );
    }
}
