//! Clips a browser cannot play (an iPhone's HEVC video or Live Photo clip, in Chromium or
//! Firefox) converted by `ffmpeg` to H.264 and AAC in an MP4 that plays before it has all
//! arrived (`+faststart`), no side longer than `LONGEST_SIDE`. Made on request and cached
//! beside the thumbnails as `<checksum>-h264.mp4` in its shard, so the sweep's `forget` and
//! the cache's cap take a clip as they take a thumbnail; nothing else runs ffmpeg for it.
//! One conversion at a time per process (a small NAS has two cores); one that outlives
//! `CONVERT_TIMEOUT`, fails, or would leave less than the reserve free is stopped and leaves
//! nothing behind. Reads only the file it is handed (a motion photo's clip: that byte
//! window of it); touches no database.

use super::{Thumbs, cap};
use crate::disk::DiskFull;
use crate::model::EmbeddedVideo;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// A conversion still running after this is stopped: a clip an hour long on a NAS.
pub const CONVERT_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// The longest side of a converted clip, in pixels (a browser's window, not a 4K screen).
pub const LONGEST_SIDE: u32 = 1920;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[derive(Debug, thiserror::Error)]
pub enum ClipError {
    #[error("ffmpeg is not installed where mediadex runs, so clips cannot be converted")]
    NoFfmpeg,
    #[error(transparent)]
    DiskFull(#[from] DiskFull),
    #[error("ffmpeg could not convert the clip: {0}")]
    Failed(String),
    #[error("converting the clip took longer than {} minutes and was stopped", CONVERT_TIMEOUT.as_secs() / 60)]
    TimedOut,
    #[error("could not convert the clip through {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ClipError + '_ {
    move |source| ClipError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl Thumbs {
    /// Whether clips can be converted here (`ffmpeg` is on PATH).
    pub fn converts_clips(&self) -> bool {
        self.ffmpeg.is_some()
    }

    /// Where the converted clip of these bytes is cached (`key`: the checksum's hex, with a
    /// suffix for a clip inside another file).
    pub fn clip_path(&self, key: &str) -> PathBuf {
        let shard = key.get(..2).unwrap_or("00");
        self.dir.join(shard).join(format!("{key}-h264.mp4"))
    }

    /// The converted clip of `file` (of its `window` when the clip is inside it), made now
    /// when it is not cached yet. Blocks for as long as ffmpeg takes.
    pub fn playable_clip(
        &self,
        file: &Path,
        window: Option<EmbeddedVideo>,
        key: &str,
    ) -> Result<PathBuf, ClipError> {
        let ffmpeg = self.ffmpeg.as_deref().ok_or(ClipError::NoFfmpeg)?;
        let out = self.clip_path(key);
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
        if out.is_file() {
            cap::touch(&out);
            return Ok(out);
        }
        self.room()?;
        let dir = out.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let part = out.with_extension("part");
        let cut = out.with_extension("src");
        let made = self.convert_into(ffmpeg, file, window, &cut, &part);
        let _ = std::fs::remove_file(&cut);
        let len = match made {
            Ok(len) => len,
            Err(e) => {
                let _ = std::fs::remove_file(&part);
                return Err(e);
            }
        };
        std::fs::rename(&part, &out).map_err(io(&out))?;
        if let Some(cap) = &self.cap {
            cap.added(&self.dir, len);
        }
        Ok(out)
    }

    /// Runs the conversion into `part` (through `cut`, a copy of the window, for a clip
    /// inside another file); its length when it is whole.
    fn convert_into(
        &self,
        ffmpeg: &Path,
        file: &Path,
        window: Option<EmbeddedVideo>,
        cut: &Path,
        part: &Path,
    ) -> Result<u64, ClipError> {
        let input = match window {
            Some(w) => {
                copy_window(file, w, cut)?;
                cut
            }
            None => file,
        };
        let limit = self.write_limit();
        convert(ffmpeg, input, part, limit)?;
        let len = std::fs::metadata(part).map_err(io(part))?.len();
        // ffmpeg stops at `-fs` and calls it a success: a clip that reached it is cut short.
        if limit.is_some_and(|l| len >= l) {
            return Err(self.room().err().map_or_else(
                || ClipError::Failed("the converted clip would not fit on the disk".into()),
                ClipError::DiskFull,
            ));
        }
        Ok(len)
    }

    /// The most a conversion may write: what is free above the reserve (`None`: untold).
    fn write_limit(&self) -> Option<u64> {
        let free = self.space.free_bytes(&self.data_dir)?;
        Some(free.saturating_sub(self.reserve).max(1))
    }
}

/// Copies a clip's byte window out of the file holding it: ffmpeg needs a seekable input,
/// and an MP4 may keep its index at the end.
fn copy_window(file: &Path, w: EmbeddedVideo, cut: &Path) -> Result<(), ClipError> {
    let mut src = std::fs::File::open(file).map_err(io(file))?;
    src.seek(SeekFrom::Start(w.offset)).map_err(io(file))?;
    let mut dst = std::fs::File::create(cut).map_err(io(cut))?;
    let copied = std::io::copy(&mut src.take(w.length), &mut dst).map_err(io(cut))?;
    if copied != w.length {
        return Err(ClipError::Failed(
            "the file is shorter than the clip its scan indexed".into(),
        ));
    }
    Ok(())
}

/// ffmpeg's arguments after the input: H.264 (yuv420p, which every browser decodes) no
/// side over `LONGEST_SIDE` and even, AAC audio when there is any, the index first.
fn encode_args(limit: Option<u64>) -> Vec<String> {
    let side = LONGEST_SIDE;
    let scale =
        format!("scale=w='if(gte(iw,ih),min({side},iw),-2)':h='if(gte(iw,ih),-2,min({side},ih))'");
    let mut args: Vec<String> = [
        "-map",
        "0:v:0",
        "-map",
        "0:a:0?",
        "-c:v",
        "libx264",
        "-preset",
        "veryfast",
        "-crf",
        "23",
        "-pix_fmt",
        "yuv420p",
        "-vf",
        &scale,
        "-c:a",
        "aac",
        "-b:a",
        "128k",
        "-movflags",
        "+faststart",
        "-f",
        "mp4",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if let Some(l) = limit {
        args.extend(["-fs".to_string(), l.to_string()]);
    }
    args
}

fn convert(ffmpeg: &Path, input: &Path, part: &Path, limit: Option<u64>) -> Result<(), ClipError> {
    let mut child = Command::new(ffmpeg)
        .args(["-nostdin", "-v", "error", "-y", "-i"])
        .arg(input)
        .args(encode_args(limit))
        .arg(part)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(io(ffmpeg))?;
    let mut stderr = child.stderr.take();
    let (tx, rx) = crossbeam_channel::bounded(1);
    // ffmpeg closes its stderr when it exits: reading it to the end is the wait.
    std::thread::spawn(move || {
        let mut said = String::new();
        if let Some(e) = stderr.as_mut() {
            let _ = e.read_to_string(&mut said);
        }
        let _ = tx.send(said);
    });
    let said = match rx.recv_timeout(CONVERT_TIMEOUT) {
        Ok(said) => said,
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(ClipError::TimedOut);
        }
    };
    let status = child.wait().map_err(io(ffmpeg))?;
    if status.success() {
        return Ok(());
    }
    let last = said.lines().rev().find(|l| !l.trim().is_empty());
    Err(ClipError::Failed(
        last.unwrap_or("it exited with an error").trim().to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::encode_args;

    #[test]
    fn the_arguments_scale_the_longest_side_and_stop_at_the_limit() {
        let args = encode_args(Some(1000));
        let vf = args.iter().position(|a| a == "-vf").map(|i| &args[i + 1]);
        assert_eq!(
            vf.map(String::as_str),
            Some("scale=w='if(gte(iw,ih),min(1920,iw),-2)':h='if(gte(iw,ih),-2,min(1920,ih))'")
        );
        assert_eq!(args[args.len() - 2..], ["-fs", "1000"]);
        assert!(!encode_args(None).contains(&"-fs".to_string()));
    }
}
