//! Decoding for face detection: file bytes → stored-frame RGB pixels plus the EXIF
//! orientation. Owns the format allow-list (JPEG, PNG, WebP, GIF, TIFF) and the size bounds
//! (checked from the header, a HEIF's before `heif-dec` runs, before any pixel is decoded);
//! must not run the model nor rotate pixels. A HEIF file's frame is the PNG `heif-dec`
//! makes of it (`media::heif_dec`, bounded in time and size), decoded here like any PNG: its
//! crop, turn and mirror are applied by libheif, and it has no EXIF orientation.
//! A camera RAW's frame is its embedded preview or its binned raw data (`media::raw`), with
//! the RAW's own orientation and the raw's size as the frame its faces are answered in.

use super::FaceError;
use crate::media::heif_dec::{self, HeifDec, HeifDecError};
use crate::media::raw;
use crate::media::{HEAD_LEN, HEIF_MIMES, sniff};
use image::metadata::Orientation;
use image::{DynamicImage, ImageDecoder, ImageError, ImageFormat, ImageReader, Limits, RgbImage};
use std::fs::File;
use std::io::{BufRead, BufReader, Cursor, Read, Seek, SeekFrom};
use std::path::Path;

/// Longest side accepted, in stored pixels. Larger pictures are refused before decoding.
pub const MAX_SIDE: u32 = 30_000;

/// Most memory one decode may take. A 6000x4000 RGBA photo needs 96 MiB; 256 MiB admits about
/// 64 megapixels of RGBA, and two rayon workers decoding at once stay well under a gigabyte.
pub const MAX_ALLOC_BYTES: u64 = 256 * 1024 * 1024;

/// Pixels as stored in the file (not yet rotated) and the EXIF orientation to display them.
pub struct Decoded {
    pub rgb: RgbImage,
    pub orientation: Orientation,
    /// The stored size these pixels stand for when it is not theirs: a RAW's raw image,
    /// shown through its smaller preview or binned raw data. Faces are answered in it.
    pub frame: Option<(u32, u32)>,
}

pub fn open(path: &Path) -> Result<Decoded, FaceError> {
    open_with(path, heif_dec::system())
}

/// `open`, with `heif` as the HEIF decoder (none: HEIF files are `NoDecoder`).
pub fn open_with(path: &Path, heif: Option<&HeifDec>) -> Result<Decoded, FaceError> {
    let file = File::open(path).map_err(|source| FaceError::Io {
        what: path.display().to_string(),
        source,
    })?;
    let mut reader = BufReader::new(file);
    match mime_of(&mut reader)? {
        Some(mime) if HEIF_MIMES.contains(&mime.as_str()) => {
            let heif = heif.ok_or(FaceError::NoDecoder(mime))?;
            // Refused on its header's word: libheif allocates the whole canvas first.
            if let Some((w, h)) = heif_dec::declared_size(path) {
                check_size(w, h)?;
            }
            let png = heif.decode_png(path).map_err(heif_error)?;
            read(Cursor::new(png))
        }
        Some(mime) if raw::RAW_MIMES.contains(&mime.as_str()) => open_raw(reader, &mime),
        _ => read(reader),
    }
}

/// A RAW's preview (or its raw data binned), with the raw's orientation and size from its
/// IFD0 where it has a TIFF structure (a CR3's CMT1 is one); a RAF's JPEG carries its own
/// orientation, and its frame is the RAF's size as the index records it (`raw::raf_frame`).
fn open_raw<R: BufRead + Seek>(mut reader: R, mime: &str) -> Result<Decoded, FaceError> {
    // A RAF's preview carries its own orientation; only its frame comes from the RAF.
    let raf_frame = (mime == raw::RAF)
        .then(|| raw::raf_frame(&mut reader))
        .flatten();
    let geometry = raw::geometry(&mut reader).ok();
    let picture = raw::picture(&mut reader, mime).map_err(|e| match e {
        raw::RawError::Io(source) => FaceError::Io {
            what: "raw data".into(),
            source,
        },
        other => FaceError::Unsupported(other.to_string()),
    })?;
    let mut decoded = match picture {
        raw::Picture::Jpeg(jpeg) => read(Cursor::new(jpeg))?,
        raw::Picture::Rgb {
            width,
            height,
            pixels,
        } => Decoded {
            rgb: RgbImage::from_raw(width, height, pixels)
                .ok_or_else(|| FaceError::Decode("binned raw data of the wrong length".into()))?,
            orientation: Orientation::NoTransforms,
            frame: None,
        },
    };
    if raf_frame.is_some() {
        decoded.frame = raf_frame;
    } else if let Some((size, orientation)) = geometry {
        decoded.frame = Some(size);
        let turn = orientation.and_then(|o| u8::try_from(o).ok());
        decoded.orientation = turn
            .and_then(Orientation::from_exif)
            .unwrap_or(Orientation::NoTransforms);
    }
    Ok(decoded)
}

fn heif_error(e: HeifDecError) -> FaceError {
    match e {
        HeifDecError::Run { program, source } => FaceError::Io {
            what: program,
            source,
        },
        HeifDecError::TooLarge { .. } | HeifDecError::Declared { .. } => {
            FaceError::TooLarge(e.to_string())
        }
        HeifDecError::Timeout { after, .. } => FaceError::TimedOut(after),
        HeifDecError::Killed { .. } => FaceError::Stopped(e.to_string()),
        HeifDecError::Failed { .. } => FaceError::Decode(e.to_string()),
    }
}

pub fn read<R: BufRead + Seek>(mut reader: R) -> Result<Decoded, FaceError> {
    let format = format_of(&mut reader)?;
    let mut image_reader = ImageReader::with_format(reader, format);
    // The header is read unbounded so that a refusal names the declared size; the limits
    // then bound every allocation of the decode itself.
    image_reader.no_limits();
    let mut decoder = image_reader.into_decoder().map_err(decode_error)?;
    let (width, height) = decoder.dimensions();
    check_size(width, height)?;
    decoder.set_limits(limits()).map_err(decode_error)?;
    // A broken EXIF block is not a broken picture: detect on the stored pixels as they are.
    let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
    let image = DynamicImage::from_decoder(decoder).map_err(decode_error)?;
    Ok(Decoded {
        rgb: image.into_rgb8(),
        orientation,
        frame: None,
    })
}

/// The content's type (never the file name's), the reader left at the start.
fn mime_of<R: Read + Seek>(reader: &mut R) -> Result<Option<String>, FaceError> {
    let io = |source| FaceError::Io {
        what: "image data".into(),
        source,
    };
    let mut head = Vec::with_capacity(HEAD_LEN);
    reader
        .take(HEAD_LEN as u64)
        .read_to_end(&mut head)
        .map_err(io)?;
    reader.seek(SeekFrom::Start(0)).map_err(io)?;
    if head.is_empty() {
        return Err(FaceError::Decode("empty file".into()));
    }
    Ok(sniff(&head).1)
}

/// The decoder for the content, or `Unsupported` naming what it is.
fn format_of<R: Read + Seek>(reader: &mut R) -> Result<ImageFormat, FaceError> {
    match mime_of(reader)?.as_deref() {
        Some("image/jpeg") => Ok(ImageFormat::Jpeg),
        Some("image/png" | "image/apng") => Ok(ImageFormat::Png),
        Some("image/webp") => Ok(ImageFormat::WebP),
        Some("image/gif") => Ok(ImageFormat::Gif),
        Some("image/tiff") => Ok(ImageFormat::Tiff),
        Some(other) => Err(FaceError::Unsupported(other.to_string())),
        None => Err(FaceError::Unsupported("content of unknown type".into())),
    }
}

fn check_size(width: u32, height: u32) -> Result<(), FaceError> {
    let rgba_bytes = u64::from(width) * u64::from(height) * 4;
    if width == 0 || height == 0 {
        return Err(FaceError::Decode(format!("{width}x{height} image")));
    }
    if width > MAX_SIDE || height > MAX_SIDE || rgba_bytes > MAX_ALLOC_BYTES {
        return Err(FaceError::TooLarge(format!("{width}x{height} pixels")));
    }
    Ok(())
}

fn limits() -> Limits {
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_ALLOC_BYTES);
    limits
}

fn decode_error(e: ImageError) -> FaceError {
    match e {
        ImageError::IoError(source) if source.kind() == std::io::ErrorKind::UnexpectedEof => {
            FaceError::Decode("truncated image data".into())
        }
        ImageError::IoError(source) => FaceError::Io {
            what: "image data".into(),
            source,
        },
        ImageError::Unsupported(u) => FaceError::Unsupported(u.to_string()),
        ImageError::Limits(l) => FaceError::TooLarge(l.to_string()),
        other => FaceError::Decode(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn read_bytes(bytes: &[u8]) -> Result<Decoded, FaceError> {
        read(Cursor::new(bytes))
    }

    fn png_header(width: u32, height: u32) -> Vec<u8> {
        let mut v = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        v.extend_from_slice(&width.to_be_bytes());
        v.extend_from_slice(&height.to_be_bytes());
        v.extend_from_slice(&[8, 2, 0, 0, 0]); // 8-bit RGB
        let crc = crc32(&v[12..]);
        v.extend_from_slice(&crc.to_be_bytes());
        // a few bytes of IDAT so that the decoder gets past the header
        let idat = b"IDAT\x78\x9c\x03\0\0\0\0\x01";
        v.extend_from_slice(&8u32.to_be_bytes());
        v.extend_from_slice(idat);
        v.extend_from_slice(&crc32(idat).to_be_bytes());
        v
    }

    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    #[test]
    fn absurd_dimensions_are_refused_before_decoding() {
        for (w, h) in [(100_000, 10), (20_000, 20_000)] {
            match read_bytes(&png_header(w, h)) {
                Err(FaceError::TooLarge(_)) => {}
                other => panic!("{w}x{h}: {:?}", other.map(|d| d.rgb.dimensions())),
            }
        }
    }

    #[test]
    fn heic_video_and_text_are_unsupported() {
        let mut heic = vec![0, 0, 0, 0x18];
        heic.extend_from_slice(b"ftypheic\0\0\0\0heicmif1");
        let mut mp4 = vec![0, 0, 0, 0x18];
        mp4.extend_from_slice(b"ftypisom\0\0\0\0isomiso2");
        for (name, bytes) in [
            ("heic", heic),
            ("mp4", mp4),
            ("text", b"hello, world".to_vec()),
        ] {
            let got = read_bytes(&bytes);
            assert!(
                matches!(got, Err(FaceError::Unsupported(_))),
                "{name}: {:?}",
                got.err()
            );
        }
    }

    fn fixture(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name)
    }

    /// A stand-in for heif-dec running `body` (`$4` is where the PNG goes).
    #[cfg(unix)]
    fn fake_heif_dec(dir: &Path, body: &str) -> HeifDec {
        use std::os::unix::fs::PermissionsExt;
        let script = dir.join("heif-dec");
        std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).expect("script");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        HeifDec::at(script)
    }

    #[cfg(unix)]
    #[test]
    fn a_heif_is_decoded_through_heif_dec_and_without_it_says_what_is_missing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let heic = fixture("astronaut_half.heic");
        let png = fixture("astronaut.png");
        let dec = fake_heif_dec(dir.path(), &format!("cp '{}' \"$4\"", png.display()));
        let got = open_with(&heic, Some(&dec)).expect("decoded through the program");
        assert_eq!(got.rgb.dimensions(), (512, 512));
        assert_eq!(got.orientation, Orientation::NoTransforms);

        match open_with(&heic, None) {
            Err(e @ FaceError::NoDecoder(_)) => {
                assert!(
                    !e.is_permanent() && e.to_string().contains("heif-dec"),
                    "{e}"
                );
            }
            other => panic!("no decoder: {:?}", other.map(|d| d.rgb.dimensions())),
        }
        let failing = fake_heif_dec(dir.path(), "exit 1");
        match open_with(&fixture("astronaut_384.avif"), Some(&failing)) {
            Err(e @ FaceError::Decode(_)) => assert!(e.is_permanent(), "{e}"),
            other => panic!("a failed decode: {:?}", other.map(|d| d.rgb.dimensions())),
        }
        let jpeg = open_with(&fixture("rocket.jpg"), None).expect("a JPEG needs no program");
        assert_eq!(jpeg.rgb.dimensions(), (640, 427));
    }

    /// A heif-dec stopped before it finished (killed at the deadline, or by a signal: the
    /// OOM killer, a shutdown) said nothing about the file: the picture must not be stamped
    /// "no faces" or "no hash" for good, while one that exits with a failure is.
    #[cfg(unix)]
    #[test]
    fn a_heif_dec_timeout_or_kill_is_transient_and_its_failure_permanent() {
        let dir = tempfile::tempdir().expect("tempdir");
        let heic = fixture("astronaut_half.heic");
        let deadline = std::time::Duration::from_millis(200);
        for (what, body) in [("timeout", "exec sleep 600"), ("SIGKILL", "kill -KILL $$")] {
            // One script path: each is written just before it runs.
            let dec = fake_heif_dec(dir.path(), body)
                .with_limits(deadline, 1024 * 1024)
                .with_slope(std::time::Duration::ZERO);
            match (what, open_with(&heic, Some(&dec))) {
                // Ran to its deadline: said apart from a kill, so that the walks remember it.
                ("timeout", Err(e @ FaceError::TimedOut(after))) => {
                    assert_eq!(after, deadline);
                    assert!(!e.is_permanent(), "{what}: {e}");
                }
                ("SIGKILL", Err(e @ FaceError::Stopped(_))) => {
                    assert!(!e.is_permanent(), "{what}: {e}");
                }
                (_, Err(e)) => panic!("{what}: {e:?}"),
                (_, Ok(_)) => panic!("{what}: decoded"),
            }
        }
        let failing = fake_heif_dec(dir.path(), "exit 1");
        let failed = open_with(&heic, Some(&failing)).err().expect("an error");
        assert!(failed.is_permanent(), "{failed}");
    }

    #[test]
    fn empty_and_cut_input_are_decode_errors() {
        assert!(matches!(read_bytes(b""), Err(FaceError::Decode(_))));
        let cut = &png_header(10, 10)[..29];
        assert!(matches!(read_bytes(cut), Err(FaceError::Decode(_))));
    }

    #[test]
    fn a_small_png_round_trips() {
        let img = RgbImage::from_pixel(7, 5, image::Rgb([1, 2, 3]));
        let mut bytes = Vec::new();
        img.write_to(&mut Cursor::new(&mut bytes), ImageFormat::Png)
            .expect("encode");
        let got = read_bytes(&bytes).expect("decode");
        assert_eq!(got.rgb.dimensions(), (7, 5));
        assert_eq!(got.orientation, Orientation::NoTransforms);
    }
}
