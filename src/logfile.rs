//! The rolling log file (`logs/mediadex.log` in the data dir unless the `log_file` setting names
//! another, rotated at 10 MiB, five kept), for the desktop app and the service, whose stderr nobody
//! reads. Logging starts before the data dir is known, so the file is a process-wide slot that
//! `open` fills; until then (and for one-shot CLI commands, which never open it) file output is
//! discarded. Owns the file and its rotation; does not decide what is logged.
//!
//! Must not import: store, http, ops

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub const MAX_BYTES: u64 = 10 * 1024 * 1024;
pub const KEEP: usize = 5;

/// A log file that rotates itself by size: `name` → `name.1` → … → `name.KEEP`.
pub struct RollingFile {
    path: PathBuf,
    file: File,
    written: u64,
    max_bytes: u64,
    keep: usize,
}

impl RollingFile {
    pub fn open(path: &Path, max_bytes: u64, keep: usize) -> io::Result<RollingFile> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let written = file.metadata()?.len();
        Ok(RollingFile {
            path: path.to_path_buf(),
            file,
            written,
            max_bytes,
            keep,
        })
    }

    fn rotate(&mut self) -> io::Result<()> {
        let numbered = |n: usize| PathBuf::from(format!("{}.{n}", self.path.display()));
        for n in (1..self.keep).rev() {
            if numbered(n).exists() {
                std::fs::rename(numbered(n), numbered(n + 1))?;
            }
        }
        if self.keep > 0 {
            std::fs::rename(&self.path, numbered(1))?;
        } else {
            std::fs::remove_file(&self.path)?;
        }
        self.file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        self.written = 0;
        Ok(())
    }
}

impl Write for RollingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.written > 0 && self.written + buf.len() as u64 > self.max_bytes {
            self.rotate()?;
        }
        let n = self.file.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

static SLOT: Mutex<Option<RollingFile>> = Mutex::new(None);

/// Starts copying log lines to `path` (its folder made if needed).
pub fn open(path: &Path) -> io::Result<()> {
    let file = RollingFile::open(path, MAX_BYTES, KEEP)?;
    *SLOT.lock().unwrap_or_else(|p| p.into_inner()) = Some(file);
    Ok(())
}

/// The `MakeWriter` for the file layer: writes into the slot, or nowhere while it is empty.
#[derive(Clone, Copy, Default)]
pub struct Sink;

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut slot = SLOT.lock().unwrap_or_else(|p| p.into_inner());
        match slot.as_mut() {
            // A full disk must not take the process down with it: the line is dropped.
            Some(file) => Ok(file.write(buf).unwrap_or(buf.len())),
            None => Ok(buf.len()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        let mut slot = SLOT.lock().unwrap_or_else(|p| p.into_inner());
        slot.as_mut().map_or(Ok(()), |f| f.flush())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Sink {
    type Writer = Sink;

    fn make_writer(&'a self) -> Sink {
        Sink
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_by_size_and_keeps_a_bounded_number() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("logs/x.log");
        let mut file = RollingFile::open(&path, 100, 2).expect("open");
        for i in 0..10 {
            // 60 bytes, one write per line as the fmt layer does: one line per file.
            file.write_all(format!("{i:0>59}\n").as_bytes())
                .expect("write");
        }
        let read = |p: &Path| std::fs::read_to_string(p).expect("read");
        assert_eq!(read(&path).trim(), format!("{:0>59}", 9));
        assert_eq!(
            read(&dir.path().join("logs/x.log.1")).trim(),
            format!("{:0>59}", 8)
        );
        assert_eq!(
            read(&dir.path().join("logs/x.log.2")).trim(),
            format!("{:0>59}", 7)
        );
        assert!(!dir.path().join("logs/x.log.3").exists(), "only two kept");
    }

    #[test]
    fn reopening_appends_and_counts_what_is_there() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x.log");
        std::fs::write(&path, "x".repeat(90)).expect("seed");
        let mut file = RollingFile::open(&path, 100, 1).expect("open");
        file.write_all(&[b'y'; 20]).expect("write");
        assert_eq!(std::fs::read(&path).expect("read"), vec![b'y'; 20]);
        assert_eq!(
            std::fs::read(dir.path().join("x.log.1"))
                .expect("read")
                .len(),
            90
        );
    }
}
