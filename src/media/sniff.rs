//! Media type by content: the first few KiB of a file → kind and MIME type (infer, and
//! `raw` for the camera RAW formats, which infer names `image/tiff` or not at all, and a
//! classic QuickTime file's first atoms, which infer knows only in part). Owns the mapping
//! from magic bytes to `MediaKind`; must not look at file names or open files.

use crate::model::MediaKind;

/// How many leading bytes `sniff` wants to see.
pub const HEAD_LEN: usize = 8192;

/// Kind and MIME type of a file from its first bytes. Empty input is neither.
pub fn sniff(head: &[u8]) -> (Option<MediaKind>, Option<String>) {
    if head.is_empty() {
        return (None, None);
    }
    if let Some(raw) = super::raw::raw_mime(head) {
        return (Some(MediaKind::Image), Some(raw.to_string()));
    }
    if classic_quicktime(head) {
        return (Some(MediaKind::Video), Some("video/quicktime".to_string()));
    }
    let Some(found) = infer::get(head) else {
        return (Some(MediaKind::Other), None);
    };
    let mime = refine_mime(head, found.mime_type());
    let kind = match found.matcher_type() {
        infer::MatcherType::Image => MediaKind::Image,
        infer::MatcherType::Video => MediaKind::Video,
        _ => MediaKind::Other,
    };
    (Some(kind), Some(mime.to_string()))
}

/// The top-level atoms a QuickTime file without `ftyp` starts with (pre-2008 cameras wrote
/// no `ftyp`): padding, a preview, then the movie or its data.
const CLASSIC_ATOMS: [&[u8; 4]; 8] = [
    b"moov", b"mdat", b"wide", b"free", b"skip", b"junk", b"pnot", b"PICT",
];

/// Whether `head` is a QuickTime file with no `ftyp`: its atoms, from the first byte, are
/// classic top-level atoms up to a `moov` or `mdat`, all within `head` (a run of padding or
/// preview atoms alone is not enough to call the bytes a movie).
pub(super) fn classic_quicktime(head: &[u8]) -> bool {
    let mut pos = 0usize;
    while let Some(atom) = head.get(pos..pos + 8) {
        let kind = &atom[4..8];
        if !CLASSIC_ATOMS.iter().any(|k| &k[..] == kind) {
            return false;
        }
        if kind == b"moov" || kind == b"mdat" {
            return true;
        }
        let size = u32::from_be_bytes([atom[0], atom[1], atom[2], atom[3]]) as usize;
        if size < 8 {
            return false; // 0 (to the end) or 1 (64-bit) padding: no movie follows in view
        }
        pos += size;
    }
    false
}

/// infer names every HEIF flavour `image/heif`; the `heic` family of brands is `image/heic`.
fn refine_mime<'a>(head: &[u8], mime: &'a str) -> &'a str {
    let brand = head.get(8..12).filter(|_| head.get(4..8) == Some(b"ftyp"));
    match (mime, brand) {
        ("image/heif", Some(b"heic" | b"heix" | b"heim" | b"heis" | b"hevc" | b"hevx")) => {
            "image/heic"
        }
        _ => mime,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ftyp(brand: &[u8; 4]) -> Vec<u8> {
        let mut v = vec![0, 0, 0, 0x18];
        v.extend_from_slice(b"ftyp");
        v.extend_from_slice(brand);
        v.extend_from_slice(&[0, 0, 0, 0]);
        v.extend_from_slice(brand);
        v.extend_from_slice(b"mif1");
        v
    }

    #[test]
    fn iso_media_brands() {
        let heic = sniff(&ftyp(b"heic"));
        assert_eq!(heic, (Some(MediaKind::Image), Some("image/heic".into())));
        assert_eq!(sniff(&ftyp(b"avif")).1.as_deref(), Some("image/avif"));
        assert_eq!(sniff(&ftyp(b"qt  ")).0, Some(MediaKind::Video));
        assert_eq!(sniff(&ftyp(b"qt  ")).1.as_deref(), Some("video/quicktime"));
        assert_eq!(sniff(&ftyp(b"isom")).1.as_deref(), Some("video/mp4"));
    }

    /// Issue 26 finding 7: QuickTime files without `ftyp`, however their first atoms run.
    #[test]
    fn classic_quicktime_without_ftyp_is_a_movie() {
        let qt = (Some(MediaKind::Video), Some("video/quicktime".to_string()));
        let atom = |kind: &[u8; 4], size: u32| [&size.to_be_bytes()[..], kind].concat();
        for head in [
            [atom(b"moov", 700), vec![0; 40]].concat(),
            [atom(b"free", 16), vec![0; 8], atom(b"moov", 700)].concat(),
            [atom(b"skip", 8), atom(b"wide", 8), atom(b"mdat", 9000)].concat(),
            [
                atom(b"pnot", 20),
                vec![0; 12],
                atom(b"PICT", 10),
                vec![0; 2],
                atom(b"moov", 9),
            ]
            .concat(),
        ] {
            assert_eq!(sniff(&head), qt, "{head:?}");
        }
        for not in [
            [atom(b"free", 16), vec![0; 8]].concat(),
            [atom(b"free", 4), atom(b"moov", 700)].concat(),
            [atom(b"free", 8), atom(b"abcd", 8), atom(b"moov", 700)].concat(),
            b"free text moov".to_vec(),
        ] {
            assert_ne!(sniff(&not).1.as_deref(), Some("video/quicktime"), "{not:?}");
        }
    }

    #[test]
    fn text_is_other_and_empty_is_nothing() {
        assert_eq!(
            sniff(b"<!doctype html><html>"),
            (Some(MediaKind::Other), Some("text/html".into()))
        );
        assert_eq!(sniff(b"just some words"), (Some(MediaKind::Other), None));
        assert_eq!(sniff(b""), (None, None));
    }

    #[test]
    fn classic_image_magic() {
        assert_eq!(
            sniff(b"\xFF\xD8\xFF\xE0\0\x10JFIF\0").1.as_deref(),
            Some("image/jpeg")
        );
        assert_eq!(
            sniff(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").1.as_deref(),
            Some("image/png")
        );
        assert_eq!(sniff(b"GIF89a\x01\0\x01\0").0, Some(MediaKind::Image));
        assert_eq!(
            sniff(b"RIFF\0\0\0\0WEBPVP8 ").1.as_deref(),
            Some("image/webp")
        );
        assert_eq!(
            sniff(b"II*\0\x08\0\0\0\x10\0\0\0").1.as_deref(),
            Some("image/tiff")
        );
        let mut mkv = b"\x1A\x45\xDF\xA3\x93\x42\x82\x88matroska".to_vec();
        mkv.resize(300, 0);
        assert_eq!(sniff(&mkv).1.as_deref(), Some("video/x-matroska"));
    }
}
