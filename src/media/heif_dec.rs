//! The run-time HEIF decoder: libheif's `heif-dec` program (`heif-convert` before libheif
//! 1.16, Debian package `libheif-examples`), run as a separate process to turn a HEIC, HEIF or
//! AVIF file into a PNG with its clean aperture, rotation and mirror applied. A separate
//! program, not a linked library: libheif and its codecs (libde265, dav1d) stay LGPL programs
//! of their own, and Debian 12's libheif 1.15 is older than `libheif-rs` 2.x needs. Owns
//! finding the program, its bounds (the picture's declared size, checked before it runs; a
//! deadline after which it is killed, scaled by that size; a cap on what it may write) and its
//! private output directory; must not decide what the pixels are for.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The names the program has had, newest first.
pub const PROGRAMS: &[&str] = &["heif-dec", "heif-convert"];
/// The floor of the deadline: a decode that has not finished by then is killed (a hostile
/// file must not hold a worker), whatever its size.
pub const TIMEOUT: Duration = Duration::from_secs(30);
/// The deadline's slope: one more second per declared megapixel on top of the floor, so a
/// 33-megapixel HIF that a slow NAS decodes in 33 s gets 63 s and the 120-megapixel cap
/// 150 s (`deadline_for`).
pub const PER_MEGAPIXEL: Duration = Duration::from_secs(1);
/// Most bytes of PNG the program may write: a 120-megapixel RGBA picture, uncompressed.
pub const MAX_OUTPUT: u64 = 480 * 1024 * 1024;
/// Pictures declaring more pixels than this are refused before the program runs: the cap
/// `MAX_OUTPUT` is sized for (libheif would allocate the whole canvas before failing).
pub const MAX_PIXELS: u64 = 120_000_000;
/// How often a running decode is looked at (its exit, its output's size, the deadline).
const POLL: Duration = Duration::from_millis(20);

#[derive(Debug, thiserror::Error)]
pub enum HeifDecError {
    #[error("cannot run {program}: {source}")]
    Run {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{program} did not finish within {after:?}; stopped")]
    Timeout { program: String, after: Duration },
    /// Ended by a signal (the OOM killer, a shutdown, an operator), not by exiting: it
    /// said nothing about the file.
    #[error("{program} was stopped by {status} before it finished")]
    Killed { program: String, status: String },
    #[error("{program} wrote more than {max} bytes; stopped")]
    TooLarge { program: String, max: u64 },
    /// Refused before the program ran: the file declares more pixels than allowed.
    #[error("the picture declares {width}x{height} pixels, over the cap of {max}; not decoded")]
    Declared { width: u32, height: u32, max: u64 },
    #[error("{program} could not decode the file ({status})")]
    Failed { program: String, status: String },
}

impl HeifDecError {
    /// True when running it again on the same file gives the same answer: the program
    /// said the file cannot be decoded (it exited with a failure) or its picture is too
    /// large. A program that could not be run, or was stopped before it finished (the
    /// deadline on a busy machine, a signal), said nothing about the file: a later try may
    /// decode it.
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            HeifDecError::Failed { .. }
                | HeifDecError::TooLarge { .. }
                | HeifDecError::Declared { .. }
        )
    }
}

/// The size a HEIF, HEIC or AVIF file declares for its primary picture (as displayed), read
/// from its header without decoding anything; `None` when the header does not say.
pub fn declared_size(file: &Path) -> Option<(u32, u32)> {
    let f = std::fs::File::open(file).ok()?;
    super::heif::geometry(&mut std::io::BufReader::new(f)).map(|g| g.display)
}

/// The deadline of a decode of `pixels` declared pixels: `floor` plus `per_megapixel` for
/// each million (an undeclared size gets the floor).
pub fn deadline_for(floor: Duration, per_megapixel: Duration, pixels: Option<u64>) -> Duration {
    let extra = per_megapixel.as_secs_f64() * pixels.unwrap_or(0) as f64 / 1e6;
    floor + Duration::from_secs_f64(extra)
}

/// One decoder program and its bounds.
#[derive(Clone, Debug)]
pub struct HeifDec {
    program: PathBuf,
    /// The deadline's floor; `per_megapixel` more for each declared megapixel.
    timeout: Duration,
    per_megapixel: Duration,
    max_output: u64,
    max_pixels: u64,
}

/// The decoder on PATH, looked for once per process; its absence is logged once.
pub fn system() -> Option<&'static HeifDec> {
    static FOUND: OnceLock<Option<HeifDec>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let found = HeifDec::find();
            match &found {
                Some(d) => tracing::debug!(program = %d.program.display(), "HEIF decoder"),
                None => tracing::warn!(
                    "no heif-dec or heif-convert on PATH (package libheif-examples): HEIC, \
                     HEIF and AVIF pictures get no thumbnails and no face detection"
                ),
            }
            found
        })
        .as_ref()
}

impl HeifDec {
    /// The first of `PROGRAMS` on PATH.
    pub fn find() -> Option<HeifDec> {
        PROGRAMS.iter().find_map(|p| on_path(p)).map(HeifDec::at)
    }

    pub fn at(program: PathBuf) -> HeifDec {
        HeifDec {
            program,
            timeout: TIMEOUT,
            per_megapixel: PER_MEGAPIXEL,
            max_output: MAX_OUTPUT,
            max_pixels: MAX_PIXELS,
        }
    }

    /// `timeout` is the deadline's floor.
    pub fn with_limits(self, timeout: Duration, max_output: u64) -> HeifDec {
        HeifDec {
            timeout,
            max_output,
            ..self
        }
    }

    /// The deadline's slope: `per_megapixel` more for each declared megapixel.
    pub fn with_slope(self, per_megapixel: Duration) -> HeifDec {
        HeifDec {
            per_megapixel,
            ..self
        }
    }

    /// The deadline of a decode of `file`, from the size its header declares.
    pub fn deadline(&self, file: &Path) -> Duration {
        let pixels = declared_size(file).map(|(w, h)| u64::from(w) * u64::from(h));
        deadline_for(self.timeout, self.per_megapixel, pixels)
    }

    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The primary picture of `file` as PNG bytes, decoded into a private directory that is
    /// removed afterwards. `--` ends the options and a relative path is given as `./…`, so
    /// that no file name is ever read as an option. A file declaring more than the pixel cap
    /// is refused before the program runs (`Declared`).
    pub fn decode_png(&self, file: &Path) -> Result<Vec<u8>, HeifDecError> {
        let declared = declared_size(file);
        if let Some((width, height)) = declared
            && u64::from(width) * u64::from(height) > self.max_pixels
        {
            let max = self.max_pixels;
            return Err(HeifDecError::Declared { width, height, max });
        }
        let pixels = declared.map(|(w, h)| u64::from(w) * u64::from(h));
        let deadline = deadline_for(self.timeout, self.per_megapixel, pixels);
        let out = OutDir::new().map_err(|e| self.run_error(e))?;
        let input = if file.is_relative() {
            Path::new(".").join(file)
        } else {
            file.to_path_buf()
        };
        let child = Command::new(&self.program)
            .args(["--quiet", "--"])
            .arg(&input)
            .arg(out.path.join("out.png"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| self.run_error(e))?;
        self.watch(child, &out, deadline)?;
        let png = out
            .written()
            .ok_or_else(|| self.failed("no picture written"))?;
        std::fs::read(png).map_err(|e| self.run_error(e))
    }

    /// Waits for the program, killing it at the deadline or once its output is too large.
    fn watch(&self, mut child: Child, out: &OutDir, after: Duration) -> Result<(), HeifDecError> {
        let deadline = Instant::now() + after;
        loop {
            match child.try_wait() {
                Ok(Some(status)) if status.success() => break,
                Ok(Some(status)) if killed(&status) => {
                    let (program, status) = (self.name(), status.to_string());
                    return Err(HeifDecError::Killed { program, status });
                }
                Ok(Some(status)) => return Err(self.failed(&status.to_string())),
                Ok(None) => {}
                Err(e) => return Err(self.stop(child, self.run_error(e))),
            }
            if out.bytes() > self.max_output {
                let max = self.max_output;
                let program = self.name();
                return Err(self.stop(child, HeifDecError::TooLarge { program, max }));
            }
            if Instant::now() >= deadline {
                let program = self.name();
                return Err(self.stop(child, HeifDecError::Timeout { program, after }));
            }
            std::thread::sleep(POLL);
        }
        if out.bytes() > self.max_output {
            let (program, max) = (self.name(), self.max_output);
            return Err(HeifDecError::TooLarge { program, max });
        }
        Ok(())
    }

    fn stop(&self, mut child: Child, why: HeifDecError) -> HeifDecError {
        let _ = child.kill();
        let _ = child.wait();
        why
    }

    fn name(&self) -> String {
        self.program.display().to_string()
    }

    fn run_error(&self, source: std::io::Error) -> HeifDecError {
        HeifDecError::Run {
            program: self.name(),
            source,
        }
    }

    fn failed(&self, status: &str) -> HeifDecError {
        HeifDecError::Failed {
            program: self.name(),
            status: status.to_string(),
        }
    }
}

/// Whether the program ended by a signal rather than by exiting (`abort` on a failed
/// assertion is a signal too, but libheif's programs report a bad file by exiting 1).
#[cfg(unix)]
fn killed(status: &std::process::ExitStatus) -> bool {
    std::os::unix::process::ExitStatusExt::signal(status).is_some()
}

#[cfg(not(unix))]
fn killed(_: &std::process::ExitStatus) -> bool {
    false
}

/// A directory of this process's own under the system temp dir, removed on drop.
struct OutDir {
    path: PathBuf,
}

impl OutDir {
    fn new() -> std::io::Result<OutDir> {
        static DIRS: AtomicU64 = AtomicU64::new(0);
        let n = DIRS.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("mediadex-heif-{}-{n}", std::process::id()));
        #[cfg(unix)]
        let builder = {
            let mut b = std::fs::DirBuilder::new();
            std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
            b
        };
        #[cfg(not(unix))]
        let builder = std::fs::DirBuilder::new();
        builder.create(&path)?;
        Ok(OutDir { path })
    }

    /// Bytes written so far, over every file (the program numbers its outputs when a file
    /// holds several pictures, and may add auxiliary ones).
    fn bytes(&self) -> u64 {
        let Ok(entries) = std::fs::read_dir(&self.path) else {
            return 0;
        };
        entries
            .flatten()
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .sum()
    }

    /// The picture written: `out.png`, or `out-1.png` when the file held several.
    fn written(&self) -> Option<PathBuf> {
        ["out.png", "out-1.png"]
            .iter()
            .map(|name| self.path.join(name))
            .find(|p| p.is_file())
    }
}

impl Drop for OutDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The first executable named `name` on PATH.
pub fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let exe = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    std::env::split_paths(&path)
        .map(|dir| dir.join(&exe))
        .find(|p| p.is_file())
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A stand-in for heif-dec: a shell script whose arguments are `$1`..`$4` (`--quiet`,
    /// `--`, the input, the output).
    fn fake(dir: &Path, body: &str) -> HeifDec {
        let path = dir.join("heif-dec");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        HeifDec::at(path).with_limits(Duration::from_millis(300), 1024 * 1024)
    }

    #[test]
    fn names_go_after_the_end_of_options_and_a_relative_one_starts_with_dot() {
        let dir = tempfile::tempdir().expect("tempdir");
        let args = dir.path().join("args");
        let dec = fake(
            dir.path(),
            &format!(
                "printf '%s\\n' \"$@\" > '{}'; printf png > \"$4\"",
                args.display()
            ),
        );
        let png = dec.decode_png(Path::new("-rf.heic")).expect("decoded");
        assert_eq!(png, b"png");
        let seen = std::fs::read_to_string(&args).expect("args");
        let seen: Vec<&str> = seen.lines().collect();
        assert_eq!(seen[..3], ["--quiet", "--", "./-rf.heic"], "{seen:?}");
        assert!(seen[3].ends_with("/out.png"), "{seen:?}");
        let out_dir = Path::new(seen[3]).parent().expect("parent");
        assert!(!out_dir.exists(), "the private output directory is removed");
    }

    #[test]
    fn a_decoder_that_hangs_is_killed_at_the_deadline() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pid = dir.path().join("pid");
        let dec = fake(
            dir.path(),
            &format!("echo $$ > '{}'; exec sleep 600", pid.display()),
        );
        let got = dec.decode_png(Path::new("/x.heic"));
        assert!(matches!(got, Err(HeifDecError::Timeout { .. })), "{got:?}");
        let pid = std::fs::read_to_string(&pid).expect("pid");
        let alive = Path::new("/proc").join(pid.trim()).exists();
        assert!(!alive, "the decoder process is gone");
    }

    #[test]
    fn a_decoder_that_writes_too_much_is_stopped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dec = fake(
            dir.path(),
            "head -c 3000000 /dev/zero > \"$4\"; exec sleep 600",
        );
        let got = dec.decode_png(Path::new("/x.heic"));
        assert!(matches!(got, Err(HeifDecError::TooLarge { .. })), "{got:?}");
        let dec = fake(dir.path(), "head -c 3000000 /dev/zero > \"$4\"");
        let got = dec.decode_png(Path::new("/x.heic"));
        assert!(
            matches!(got, Err(HeifDecError::TooLarge { .. })),
            "quick: {got:?}"
        );
    }

    #[test]
    fn a_failing_or_silent_decoder_is_a_permanent_failure() {
        let dir = tempfile::tempdir().expect("tempdir");
        for body in ["exit 1", "exit 0"] {
            let got = fake(dir.path(), body).decode_png(Path::new("/x.heic"));
            assert!(
                matches!(&got, Err(HeifDecError::Failed { .. })),
                "{body}: {got:?}"
            );
            assert!(got.err().is_some_and(|e| e.is_permanent()));
        }
        let missing = HeifDec::at(dir.path().join("nothing-here"));
        let got = missing.decode_png(Path::new("/x.heic"));
        assert!(
            got.err().is_some_and(|e| !e.is_permanent()),
            "not installed"
        );
    }

    /// Stopped before it finished, the program said nothing about the file: run again (a
    /// quieter machine, no OOM killer), it may decode it.
    #[test]
    fn a_decoder_killed_by_a_signal_or_at_the_deadline_is_not_permanent() {
        let dir = tempfile::tempdir().expect("tempdir");
        for body in ["kill -KILL $$", "kill -TERM $$", "exec sleep 600"] {
            let got = fake(dir.path(), body).decode_png(Path::new("/x.heic"));
            let e = got.expect_err("an error");
            assert!(!e.is_permanent(), "{body}: {e}");
        }
    }

    /// A fixture whose every `ispe` declares `width` x `height` (the coded data stays small).
    pub(crate) fn declaring(name: &str, width: u32, height: u32) -> Vec<u8> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut bytes = std::fs::read(root.join(name)).expect("fixture");
        let mut at = 0;
        while let Some(i) = bytes[at..].windows(4).position(|w| w == b"ispe") {
            let p = at + i + 8; // past the box type, its version and flags
            bytes[p..p + 4].copy_from_slice(&width.to_be_bytes());
            bytes[p + 4..p + 8].copy_from_slice(&height.to_be_bytes());
            at = p + 8;
        }
        bytes
    }

    /// Issue 26 finding 13: a 1,340-byte AVIF declaring 17000x17000 made libheif allocate
    /// 1.7 GB before failing. The header says it all: the program never runs.
    #[test]
    fn a_file_declaring_too_many_pixels_is_refused_before_the_program_runs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ran = dir.path().join("ran");
        let dec = fake(
            dir.path(),
            &format!("touch '{}'; printf png > \"$4\"", ran.display()),
        );
        let bomb = dir.path().join("bomb.avif");
        std::fs::write(&bomb, declaring("astronaut_384.avif", 17_000, 17_000)).expect("write");
        assert_eq!(declared_size(&bomb), Some((17_000, 17_000)));
        match dec.decode_png(&bomb) {
            Err(e @ HeifDecError::Declared { .. }) => {
                assert!(
                    e.is_permanent() && e.to_string().contains("17000x17000"),
                    "{e}"
                )
            }
            other => panic!("not refused: {other:?}"),
        }
        assert!(!ran.exists(), "heif-dec was run on a bomb");
        let small = dir.path().join("small.avif");
        std::fs::write(&small, declaring("astronaut_384.avif", 384, 384)).expect("write");
        assert_eq!(dec.decode_png(&small).expect("decoded"), b"png");
        assert!(ran.exists(), "a picture under the cap is decoded");
    }

    /// The deadline is the floor plus the slope per declared megapixel: a big HIF that a
    /// slow machine needs 33 s for is not killed at 30 s (issue 26 finding 13).
    #[test]
    fn the_deadline_scales_with_the_declared_pixels() {
        let floor = Duration::from_secs(30);
        assert_eq!(deadline_for(floor, PER_MEGAPIXEL, None), floor);
        assert_eq!(deadline_for(floor, PER_MEGAPIXEL, Some(0)), floor);
        let hif = deadline_for(floor, PER_MEGAPIXEL, Some(7008 * 4672));
        assert!(
            hif > Duration::from_secs(62) && hif < Duration::from_secs(63),
            "{hif:?}"
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("a.avif");
        std::fs::write(&file, declaring("astronaut_384.avif", 1000, 1000)).expect("write");
        let floor = Duration::from_millis(50);
        let dec = fake(dir.path(), "exec sleep 600")
            .with_limits(floor, 1024 * 1024)
            .with_slope(Duration::from_millis(100));
        let want = floor + Duration::from_millis(100);
        assert_eq!(dec.deadline(&file), want);
        match dec.decode_png(&file) {
            Err(HeifDecError::Timeout { after, .. }) => assert_eq!(after, want),
            other => panic!("not stopped at the scaled deadline: {other:?}"),
        }
    }

    /// The real program, on the fixtures: a PNG of the display size.
    #[test]
    #[ignore = "needs heif-dec"]
    fn heif_dec_decodes_the_fixtures_at_their_display_size() {
        let dec = HeifDec::find().expect("heif-dec or heif-convert on PATH");
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        for (name, size) in [
            ("astronaut_half.heic", (405, 540)),
            ("astronaut_384.avif", (384, 384)),
        ] {
            let png = dec.decode_png(&root.join(name)).expect(name);
            let img = image::load_from_memory(&png).expect("a PNG");
            assert_eq!((img.width(), img.height()), size, "{name}");
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let turned = dir.path().join("turned.heic");
        std::fs::write(&turned, crate::media::tests::turned_astronaut()).expect("write");
        let img = image::load_from_memory(&dec.decode_png(&turned).expect("turned")).expect("png");
        let facts = crate::media::extract(&turned);
        assert_eq!((img.width(), img.height()), (540, 405), "libheif turns it");
        assert_eq!(
            (facts.width, facts.height),
            (Some(540), Some(405)),
            "and so do we"
        );
    }
}
