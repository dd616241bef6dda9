//! Motion clips of stills (issue 15 item 3), pure readers: Apple's ContentIdentifier in a
//! still's MakerNote (the MOV's is read by `container`), and the MP4 a Google/Android motion
//! photo declares in its XMP (`GCamera:MicroVideoOffset`, or the `Container:Directory` item
//! of semantic `MotionPhoto`), checked to start with an `ftyp` box where the XMP says. Owns
//! those rules and the shape of an identifier; must not read anything else of a file, and
//! never panics on what it reads (fuzzed: examples/fuzz `motion`).

use super::xmp;
use crate::model::EmbeddedVideo;
use std::io::{Read, Seek, SeekFrom};

/// An identifier longer than this is not Apple's (a UUID is 36 characters).
const MAX_IDENTIFIER: usize = 128;
/// MakerNote entries looked at before giving up.
const MAX_ENTRIES: usize = 512;
/// `Container:Item`s looked at before giving up.
const MAX_ITEMS: usize = 16;
/// Apple's MakerNote: this header, a 2-byte version, the byte order (`MM`), then an IFD
/// whose offsets count from the MakerNote's first byte.
const APPLE_HEADER: &[u8] = b"Apple iOS\0";
/// ContentIdentifier (exiftool's name; `MediaGroupUUID` in older versions).
const CONTENT_IDENTIFIER_TAG: u16 = 0x0011;

/// An identifier as stored: trimmed printable ASCII, at most `MAX_IDENTIFIER` long.
pub fn identifier(text: &str) -> Option<String> {
    let t = text.trim_matches(|c: char| c == '\0' || c.is_whitespace());
    let fits = !t.is_empty() && t.len() <= MAX_IDENTIFIER;
    (fits && t.bytes().all(|b| b.is_ascii_graphic())).then(|| t.to_string())
}

/// The ContentIdentifier (tag 0x0011, ASCII) of an Apple MakerNote's bytes.
pub fn apple_content_identifier(note: &[u8]) -> Option<String> {
    if !note.starts_with(APPLE_HEADER) {
        return None;
    }
    let big = match note.get(12..14)? {
        b"MM" => true,
        b"II" => false,
        _ => return None,
    };
    let u16_at = |at: usize| -> Option<u16> {
        let b: [u8; 2] = note.get(at..at.checked_add(2)?)?.try_into().ok()?;
        Some(if big {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        })
    };
    let u32_at = |at: usize| -> Option<u32> {
        let b: [u8; 4] = note.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(if big {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    };
    let count = usize::from(u16_at(14)?).min(MAX_ENTRIES);
    for i in 0..count {
        let entry = 16 + i * 12;
        if u16_at(entry)? != CONTENT_IDENTIFIER_TAG {
            continue;
        }
        let (kind, n) = (u16_at(entry + 2)?, u32_at(entry + 4)? as usize);
        if kind != 2 || n > MAX_IDENTIFIER + 1 {
            return None;
        }
        let at = if n <= 4 {
            entry + 8
        } else {
            u32_at(entry + 8)? as usize
        };
        let bytes = note.get(at..at.checked_add(n)?)?;
        return identifier(std::str::from_utf8(bytes).ok()?);
    }
    None
}

/// How many bytes at the end of the file the XMP says are the motion photo's video.
pub fn declared_length(xml: &str) -> Option<u64> {
    let micro = xmp::value(xml, "GCamera:MicroVideo").is_some_and(|v| v.trim() == "1");
    if micro && let Some(offset) = xmp::value(xml, "GCamera:MicroVideoOffset") {
        return offset.trim().parse().ok().filter(|n| *n > 0);
    }
    let mut rest = xml.get(xml.find("<Container:Directory")?..)?;
    for _ in 0..MAX_ITEMS {
        let at = rest.get(1..).and_then(|r| r.find("<Container:Item"))?;
        rest = &rest[at + 1..];
        let end = rest.get(1..).and_then(|r| r.find("<Container:Item"));
        let item = &rest[..end.map_or(rest.len(), |e| e + 1)];
        if xmp::value(item, "Item:Semantic").is_some_and(|s| s.trim() == "MotionPhoto") {
            let length = xmp::value(item, "Item:Length")?;
            return length.trim().parse().ok().filter(|n| *n > 0);
        }
    }
    None
}

/// The video the XMP of a JPEG of `len` bytes declares, when the bytes where it says the
/// video starts really start an MP4 (`....ftyp`).
pub fn embedded_video<R: Read + Seek>(xml: &str, r: &mut R, len: u64) -> Option<EmbeddedVideo> {
    let length = declared_length(xml).filter(|n| *n < len)?;
    let offset = len - length;
    r.seek(SeekFrom::Start(offset)).ok()?;
    let mut head = [0u8; 8];
    r.read_exact(&mut head).ok()?;
    (&head[4..8] == b"ftyp").then_some(EmbeddedVideo { offset, length })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// An Apple MakerNote of `entries` (tag, type, count, value or offset), with `tail`
    /// after the IFD (where long values are).
    pub fn note(big: bool, entries: &[(u16, u16, u32, u32)], tail: &[u8]) -> Vec<u8> {
        let w16 = |v: u16| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let w32 = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut n = APPLE_HEADER.to_vec();
        n.extend_from_slice(&[0, 1]);
        n.extend_from_slice(if big { b"MM" } else { b"II" });
        n.extend_from_slice(&w16(entries.len() as u16));
        for (tag, kind, count, value) in entries {
            n.extend_from_slice(&w16(*tag));
            n.extend_from_slice(&w16(*kind));
            n.extend_from_slice(&w32(*count));
            n.extend_from_slice(&w32(*value));
        }
        n.extend_from_slice(&[0; 4]);
        n.extend_from_slice(tail);
        n
    }

    const UUID: &str = "1F7B6A52-3C1D-4E8B-9C0A-5D2E7F4B8A61";

    fn with_uuid(big: bool) -> Vec<u8> {
        let tail_at = 14 + 2 + 2 * 12 + 4;
        let entries = [(0x0001, 9, 1, 14), (0x0011, 2, 37, tail_at as u32)];
        note(big, &entries, format!("{UUID}\0").as_bytes())
    }

    #[test]
    fn the_content_identifier_of_an_apple_maker_note_is_read_in_either_byte_order() {
        for big in [true, false] {
            assert_eq!(
                apple_content_identifier(&with_uuid(big)).as_deref(),
                Some(UUID)
            );
        }
        let short = note(true, &[(0x0011, 2, 4, u32::from_be_bytes(*b"ab1\0"))], b"");
        assert_eq!(apple_content_identifier(&short).as_deref(), Some("ab1"));
        let none = note(true, &[(0x0001, 9, 1, 14)], b"");
        assert_eq!(apple_content_identifier(&none), None);
        let mut other = with_uuid(true);
        other[..5].copy_from_slice(b"Nikon");
        assert_eq!(apple_content_identifier(&other), None);
    }

    #[test]
    fn a_cut_or_corrupt_maker_note_gives_nothing_and_never_panics() {
        let good = with_uuid(true);
        for cut in 0..good.len() {
            let _ = apple_content_identifier(&good[..cut]);
        }
        assert_eq!(apple_content_identifier(&good[..good.len() - 10]), None);
        let far = note(true, &[(0x0011, 2, 37, u32::MAX)], b"");
        assert_eq!(apple_content_identifier(&far), None);
        let huge = note(true, &[(0x0011, 2, u32::MAX, 40)], b"");
        assert_eq!(apple_content_identifier(&huge), None);
    }

    const MICRO: &str = r#"<rdf:Description xmlns:GCamera="http://ns.google.com/photos/1.0/camera/"
  GCamera:MicroVideo="1" GCamera:MicroVideoVersion="1" GCamera:MicroVideoOffset="12"/>"#;
    const DIRECTORY: &str = r#"<Container:Directory><rdf:Seq>
 <rdf:li rdf:parseType="Resource"><Container:Item Item:Mime="image/jpeg" Item:Semantic="Primary"
   Item:Length="0" Item:Padding="0"/></rdf:li>
 <rdf:li rdf:parseType="Resource"><Container:Item Item:Mime="video/mp4"
   Item:Semantic="MotionPhoto" Item:Length="12"/></rdf:li></rdf:Seq></Container:Directory>"#;

    #[test]
    fn both_declarations_give_the_videos_length_from_the_end() {
        assert_eq!(declared_length(MICRO), Some(12));
        assert_eq!(declared_length(DIRECTORY), Some(12));
        assert_eq!(
            declared_length(&MICRO.replace("MicroVideo=\"1\"", "MicroVideo=\"0\"")),
            None
        );
        let primary_only = DIRECTORY.replace("MotionPhoto", "GainMap");
        assert_eq!(declared_length(&primary_only), None);
        assert_eq!(declared_length("<x/>"), None);
    }

    #[test]
    fn the_declared_video_counts_only_where_an_mp4_starts() {
        let mut file = vec![0xFF, 0xD8, 0xFF, 0xD9];
        file.extend_from_slice(b"\0\0\0\x0cftypisom");
        let len = file.len() as u64;
        let found = embedded_video(MICRO, &mut Cursor::new(&file), len);
        assert_eq!(
            found,
            Some(EmbeddedVideo {
                offset: 4,
                length: 12
            })
        );
        let wrong = MICRO.replace("=\"12\"", "=\"11\"");
        assert_eq!(embedded_video(&wrong, &mut Cursor::new(&file), len), None);
        let past = MICRO.replace("=\"12\"", "=\"99\"");
        assert_eq!(embedded_video(&past, &mut Cursor::new(&file), len), None);
    }
}
