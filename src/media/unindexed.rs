//! Why a file that claims a photo or video is not indexed, in the user's words: owns the
//! formats mediadex names but does not read (CRW, MRW, X3F, BigTIFF: "unsupported format
//! (CRW)") and the words for content that is not what its name or first bytes claim
//! ("unreadable content (name says .heic, the file is empty)"). Reads no file and decides
//! nothing about the file row or the run's problems (that is the scan's); a file whose name
//! and bytes claim nothing gets no words.

use std::path::Path;

/// The formats told by their magic that mediadex does not read, by exiftool's names.
fn unsupported_magic(head: &[u8]) -> Option<&'static str> {
    const MAGIC: [(&[u8], &str); 5] = [
        (b"II\x1a\0\0\0HEAPCCDR", "CRW"),
        (b"\0MRM", "MRW"),
        (b"FOVb", "X3F"),
        (b"II+\0", "BigTIFF"),
        (b"MM\0+", "BigTIFF"),
    ];
    MAGIC
        .into_iter()
        .find_map(|(magic, name)| head.starts_with(magic).then_some(name))
}

/// The RAW formats told by their extension that mediadex does not read.
fn unsupported_ext(ext: &str) -> Option<&'static str> {
    Some(match ext {
        "crw" => "CRW",
        "mrw" => "MRW",
        "x3f" => "X3F",
        _ => return None,
    })
}

/// The words for a file that sniffing found no photo or video in (`mime`: what it found
/// instead, if anything), from its first bytes `head` and its name; `None` when neither
/// claims a photo or video. `claims` tells a media extension (`mod`'s table).
pub fn reason(
    path: &Path,
    head: &[u8],
    mime: Option<&str>,
    claims: impl Fn(&str) -> bool,
) -> Option<String> {
    if let Some(name) = unsupported_magic(head) {
        return Some(format!("unsupported format ({name})"));
    }
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    if let Some(name) = ext.as_deref().and_then(unsupported_ext) {
        return Some(format!("unsupported format ({name})"));
    }
    // infer's JPEG wants FF D8 FF: a start without the marker is a JPEG's, broken.
    let jpeg_start = head.starts_with(&[0xFF, 0xD8]);
    let bytes = if head.is_empty() {
        "the file is empty".to_string()
    } else if jpeg_start {
        "bytes start FF D8 with no JPEG marker after".to_string()
    } else if let Some(mime) = mime {
        format!("bytes are {mime}")
    } else {
        let start = &head[..head.len().min(8)];
        format!("bytes start \"{}\"", start.escape_ascii())
    };
    match ext.filter(|e| claims(e)) {
        Some(ext) => Some(format!("unreadable content (name says .{ext}, {bytes})")),
        None if jpeg_start => Some(format!("unreadable content ({bytes})")),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::reason;
    use std::path::Path;

    fn words(name: &str, head: &[u8], mime: Option<&str>) -> Option<String> {
        reason(Path::new(name), head, mime, |e| {
            ["jpg", "heic"].contains(&e)
        })
    }

    #[test]
    fn unsupported_formats_are_named_by_their_magic_or_their_extension() {
        let crw = b"II\x1a\0\0\0HEAPCCDR\x01\0";
        assert_eq!(
            words("a.crw", crw, None).unwrap(),
            "unsupported format (CRW)"
        );
        assert_eq!(
            words("a.bin", crw, None).unwrap(),
            "unsupported format (CRW)"
        );
        assert_eq!(
            words("a", b"\0MRM\0\0", None).unwrap(),
            "unsupported format (MRW)"
        );
        assert_eq!(
            words("a", b"FOVb", None).unwrap(),
            "unsupported format (X3F)"
        );
        let big = words("a.jpg", b"MM\0+\0\x08", None).unwrap();
        assert_eq!(big, "unsupported format (BigTIFF)", "the bytes win");
        assert_eq!(
            words("b.X3F", b"", None).unwrap(),
            "unsupported format (X3F)"
        );
    }

    #[test]
    fn content_that_is_not_what_its_name_or_start_claims_is_unreadable() {
        let heic = |head: &[u8], mime| words("IMG_1.HEIC", head, mime).unwrap();
        assert_eq!(
            heic(b"", None),
            "unreadable content (name says .heic, the file is empty)"
        );
        assert_eq!(
            heic(b"%PDF-1.7 x", Some("application/pdf")),
            "unreadable content (name says .heic, bytes are application/pdf)"
        );
        assert_eq!(
            heic(b"\0\x01garbage", None),
            "unreadable content (name says .heic, bytes start \"\\x00\\x01garbag\")"
        );
        assert_eq!(
            words("scan", b"\xFF\xD8\0\0", None).unwrap(),
            "unreadable content (bytes start FF D8 with no JPEG marker after)"
        );
    }

    #[test]
    fn a_file_that_claims_nothing_gets_no_words() {
        assert_eq!(words("notes.txt", b"hello", None), None);
        assert_eq!(words("empty.txt", b"", None), None);
        assert_eq!(words("noext", b"%PDF", Some("application/pdf")), None);
    }
}
