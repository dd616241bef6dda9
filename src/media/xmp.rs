//! XMP fallback for photos: the XMP packet of a JPEG (APP1 `http://ns.adobe.com/xap/1.0/`)
//! or PNG (found by `png_text`: a text chunk `XML:com.adobe.xmp`, compressed or not, or an
//! ImageMagick raw profile), scanned as text for capture date, make and model, and the packet
//! in which a JPEG declares a motion photo's video (read by `motion`); a HEIF's XMP item
//! (`heif_items` finds it) for the same, plus its rating, tags, title, description and place,
//! read as a sidecar's are (`sidecar::parse`).
//! Bounded reads, no XML parser; must not override what EXIF already said. Its text
//! reader (`value`, `items`, `capture_date`) is also the one `sidecar` reads `.xmp` files with.

use super::values::{clean_text, exif_date, utc_offset_minutes};
use crate::model::{MediaFacts, Notes, TakenAtSource};
use std::io::{Read, Seek, SeekFrom};

const JPEG_XMP: &[u8] = b"http://ns.adobe.com/xap/1.0/\0";
/// Largest packet read.
const MAX_PACKET: u64 = 4 * 1024 * 1024;
/// Segments / chunks looked at before giving up.
const MAX_PARTS: usize = 4096;

/// Fills capture date, make and model from XMP where EXIF left them empty.
/// A JPEG's packet is read even when EXIF said everything: it is where a motion photo
/// declares its video (`motion`).
pub fn fill_from_xmp<R: Read + Seek>(reader: &mut R, mime: &str, facts: &mut MediaFacts) {
    let complete = facts.taken_local.is_some() && facts.make.is_some() && facts.model.is_some();
    if complete && mime != "image/jpeg" {
        return;
    }
    let packet = match mime {
        "image/jpeg" => jpeg_packet(reader),
        "image/png" => super::png_text::xmp_packet(reader),
        _ => None,
    };
    let Some(packet) = packet else { return };
    let xml = String::from_utf8_lossy(&packet);
    apply(&xml, facts);
    if mime == "image/jpeg"
        && let Ok(len) = reader.seek(SeekFrom::End(0))
    {
        facts.embedded_video = super::motion::embedded_video(&xml, reader, len);
    }
}

/// A HEIF's XMP item, read whatever its EXIF said, since it is also where a HEIF carries
/// what a sidecar would (rating, tags, title, description): its date, make, model and place
/// fill only what EXIF left empty (the date as source `xmp`, issue 15's chain), the notes are
/// its own (a sidecar beside the file still wins, `beside`). An unreadable item is no packet.
pub fn fill_from_heif<R: Read + Seek>(reader: &mut R, facts: &mut MediaFacts) {
    let Ok(Some(packet)) = super::heif_items::xmp(reader) else {
        return;
    };
    apply(&String::from_utf8_lossy(&packet), facts);
    let Ok(read) = super::sidecar::parse(&packet) else {
        return;
    };
    facts.notes = Notes {
        rating: read.rating,
        tags: read.tags,
        title: read.title,
        description: read.description,
    };
    if (facts.lat.is_none() || facts.lon.is_none())
        && let (Some(lat), Some(lon)) = super::values::place(read.lat, read.lon)
    {
        (facts.lat, facts.lon) = (Some(lat), Some(lon));
    }
}

pub fn apply(xml: &str, facts: &mut MediaFacts) {
    if facts.make.is_none() {
        facts.make = value(xml, "tiff:Make").as_deref().and_then(clean_text);
    }
    if facts.model.is_none() {
        facts.model = value(xml, "tiff:Model").as_deref().and_then(clean_text);
    }
    if facts.taken_local.is_none()
        && let Some((local, offset)) = capture_date(xml)
    {
        facts.taken_local = Some(local);
        facts.taken_offset_minutes = offset;
        facts.taken_at_source = Some(TakenAtSource::Xmp);
    }
}

/// The first capture date of `exif:DateTimeOriginal`, `xmp:CreateDate` and
/// `photoshop:DateCreated` that parses: (local wall time, offset minutes).
pub fn capture_date(xml: &str) -> Option<(String, Option<i32>)> {
    [
        "exif:DateTimeOriginal",
        "xmp:CreateDate",
        "photoshop:DateCreated",
    ]
    .iter()
    .find_map(|k| value(xml, k).as_deref().and_then(iso_date))
}

/// One `rdf:li` of a bag, sequence or language alternative, with its `xml:lang` if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub lang: Option<String>,
    pub text: String,
}

/// The `rdf:li` items (at most `max`) of the first element `key` that has any:
/// `<key><rdf:Bag><rdf:li>a</rdf:li>…</rdf:Bag></key>`. Linear in `xml`: each element is
/// searched for its close once, and a missing close ends the search (no later one closes).
pub fn items(xml: &str, key: &str, max: usize) -> Vec<Item> {
    let (open, close) = (format!("<{key}"), format!("</{key}>"));
    let mut from = 0;
    while let Some(found) = xml.get(from..).and_then(|rest| rest.find(&open)) {
        let start = from + found + open.len();
        from = start;
        if !matches!(
            xml[start..].chars().next(),
            Some('>' | ' ' | '\t' | '\r' | '\n')
        ) {
            continue; // a longer name that starts with `key`
        }
        let Some(end) = xml[start..].find(&close) else {
            break;
        };
        from = start + end + close.len();
        let found = list_items(&xml[start..start + end], max);
        if !found.is_empty() {
            return found;
        }
    }
    Vec::new()
}

/// The `rdf:li` items with text in an element's body, in order.
fn list_items(body: &str, max: usize) -> Vec<Item> {
    const OPEN: &str = "<rdf:li";
    const CLOSE: &str = "</rdf:li>";
    let mut out = Vec::new();
    let mut rest = body;
    while out.len() < max
        && let Some(at) = rest.find(OPEN)
    {
        rest = &rest[at + OPEN.len()..];
        let Some(tag_end) = rest.find('>') else {
            break;
        };
        let attrs = &rest[..tag_end];
        rest = &rest[tag_end + 1..];
        if attrs.ends_with('/') || !attrs.chars().next().is_none_or(char::is_whitespace) {
            continue; // empty item, or another name
        }
        let Some(text_end) = rest.find(CLOSE) else {
            break;
        };
        let text = &rest[..text_end];
        rest = &rest[text_end + CLOSE.len()..];
        // Structured items (`rdf:parseType="Resource"`) hold tags, not text.
        if let Some(text) = clean_text(text).filter(|t| !t.contains('<')) {
            let lang = lang_of(attrs);
            out.push(Item {
                lang,
                text: unescape(&text),
            });
        }
    }
    out
}

/// The `xml:lang` attribute among an opening tag's attributes.
fn lang_of(attrs: &str) -> Option<String> {
    let at = attrs.find("xml:lang")?;
    attribute_value(&attrs[at + "xml:lang".len()..])
}

/// ISO 8601 `YYYY-MM-DDTHH:MM:SS[.fff][Z|±HH:MM]` → (local wall time, offset minutes).
pub fn iso_date(text: &str) -> Option<(String, Option<i32>)> {
    let t = text.trim();
    let mut local = exif_date(t)?;
    let mut rest = t.get(19..)?;
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n > 0 {
            local = format!("{local}.{}", &frac[..n]);
        }
        rest = &frac[n..];
    }
    let rest = rest.trim();
    let offset = if rest.is_empty() {
        None
    } else {
        Some(utc_offset_minutes(rest)?)
    };
    Some((local, offset))
}

/// The value of property `key` as an attribute (`key="v"`) or an element (`<key>v</key>`,
/// also inside `rdf:Alt`/`rdf:Seq` items).
pub fn value(xml: &str, key: &str) -> Option<String> {
    let mut from = 0;
    // Where the last opening tag of `key` that had no text closed: a later one that starts
    // before it closes at that same `>` and has no text either. Without this a packet of
    // `<key ` repeated (no `>` after them) rescanned the rest of it at each one, quadratic
    // in the packet (found by the fuzzer, tests/fixtures/fuzz/).
    let mut textless_until = 0;
    while let Some(found) = xml.get(from..)?.find(key) {
        let at = from + found;
        from = at + key.len();
        let before = xml[..at].chars().next_back();
        let after = &xml[from..];
        let next = after.chars().next();
        if before == Some('<') && matches!(next, Some('>' | ' ' | '\t' | '\r' | '\n')) {
            if from < textless_until {
                continue;
            }
            match element_text(after) {
                Ok(v) => return Some(v),
                Err(close) => textless_until = from + close,
            }
        } else if before.is_some_and(char::is_whitespace)
            && let Some(v) = attribute_value(after)
        {
            return Some(v);
        }
    }
    None
}

/// `="value"` (or single-quoted) right after an attribute's name.
fn attribute_value(after_name: &str) -> Option<String> {
    let rest = after_name.trim_start().strip_prefix('=')?.trim_start();
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let body = &rest[1..];
    let end = body.find(quote)?;
    Some(unescape(&body[..end]))
}

/// Text content after an opening tag's name, skipping nested opening tags; without any,
/// where the tag closes (its `>`, or the end: what follows the name decides the answer).
fn element_text(after_name: &str) -> Result<String, usize> {
    let close = after_name.find('>').ok_or(after_name.len())?;
    if after_name[..close].ends_with('/') {
        return Err(close);
    }
    let mut rest = &after_name[close + 1..];
    for _ in 0..8 {
        let trimmed = rest.trim_start();
        if trimmed.starts_with('<') && !trimmed.starts_with("</") {
            rest = &trimmed[trimmed.find('>').ok_or(close)? + 1..];
            continue;
        }
        let end = rest.find('<').ok_or(close)?;
        let text = rest[..end].trim();
        return if text.is_empty() {
            Err(close)
        } else {
            Ok(unescape(text))
        };
    }
    Err(close)
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

fn read_exact_at<R: Read + Seek>(r: &mut R, pos: u64, len: u64) -> Option<Vec<u8>> {
    if len > MAX_PACKET {
        return None;
    }
    r.seek(SeekFrom::Start(pos)).ok()?;
    let mut buf = Vec::new();
    r.take(len).read_to_end(&mut buf).ok()?;
    (buf.len() as u64 == len).then_some(buf)
}

/// The XMP APP1 segment's packet, walking markers up to the start of scan.
fn jpeg_packet<R: Read + Seek>(r: &mut R) -> Option<Vec<u8>> {
    if read_exact_at(r, 0, 2)? != [0xFF, 0xD8] {
        return None;
    }
    let mut pos = 2u64;
    for _ in 0..MAX_PARTS {
        let head = read_exact_at(r, pos, 4)?;
        if head[0] != 0xFF {
            return None;
        }
        let marker = head[1];
        if marker == 0xFF {
            pos += 1; // fill byte
            continue;
        }
        if marker == 0xD8 || (0xD0..=0xD7).contains(&marker) || marker == 0x01 {
            pos += 2;
            continue;
        }
        if marker == 0xDA || marker == 0xD9 {
            return None;
        }
        let len = u64::from(u16::from_be_bytes([head[2], head[3]]));
        if len < 2 {
            return None;
        }
        if marker == 0xE1 && len - 2 > JPEG_XMP.len() as u64 {
            let body = read_exact_at(r, pos + 4, len - 2)?;
            if let Some(packet) = body.strip_prefix(JPEG_XMP) {
                return Some(packet.to_vec());
            }
        }
        pos += 2 + len;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    const ATTRS: &str = r#"<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF><rdf:Description rdf:about=""
  tiff:Make="Canon" tiff:Model='EOS &amp; R5'
  exif:DateTimeOriginal="2021-05-04T10:11:12.34+02:00"/></rdf:RDF></x:xmpmeta>"#;

    const ELEMENTS: &str = r#"<rdf:Description rdf:about="">
 <tiff:Make>NIKON CORPORATION</tiff:Make>
 <tiff:Model>
   <rdf:Alt><rdf:li xml:lang="x-default">NIKON D750</rdf:li></rdf:Alt>
 </tiff:Model>
 <xmp:CreateDate>2019-12-31T23:59:58Z</xmp:CreateDate>
 <photoshop:DateCreated>2000-01-01T00:00:00</photoshop:DateCreated>
</rdf:Description>"#;

    #[test]
    fn attributes_and_elements() {
        let mut f = MediaFacts::default();
        apply(ATTRS, &mut f);
        assert_eq!(f.make.as_deref(), Some("Canon"));
        assert_eq!(f.model.as_deref(), Some("EOS & R5"));
        assert_eq!(f.taken_local.as_deref(), Some("2021-05-04T10:11:12.34"));
        assert_eq!(f.taken_offset_minutes, Some(120));
        assert_eq!(f.taken_at_source, Some(TakenAtSource::Xmp));

        let mut f = MediaFacts::default();
        apply(ELEMENTS, &mut f);
        assert_eq!(f.make.as_deref(), Some("NIKON CORPORATION"));
        assert_eq!(f.model.as_deref(), Some("NIKON D750"));
        assert_eq!(f.taken_local.as_deref(), Some("2019-12-31T23:59:58"));
        assert_eq!(f.taken_offset_minutes, Some(0));
    }

    #[test]
    fn exif_values_win() {
        let mut f = MediaFacts {
            make: Some("Apple".into()),
            taken_local: Some("2020-01-01T00:00:00".into()),
            taken_at_source: Some(TakenAtSource::Exif),
            ..MediaFacts::default()
        };
        apply(ATTRS, &mut f);
        assert_eq!(f.taken_at_source, Some(TakenAtSource::Exif));
        assert_eq!(f.make.as_deref(), Some("Apple"));
        assert_eq!(f.model.as_deref(), Some("EOS & R5"));
        assert_eq!(f.taken_local.as_deref(), Some("2020-01-01T00:00:00"));
        assert_eq!(f.taken_offset_minutes, None);
    }

    #[test]
    fn dates() {
        assert_eq!(
            iso_date("2021-05-04T10:11:12-08:30"),
            Some(("2021-05-04T10:11:12".into(), Some(-510)))
        );
        assert_eq!(
            iso_date("2021-05-04T10:11:12"),
            Some(("2021-05-04T10:11:12".into(), None))
        );
        assert_eq!(iso_date("2021-05-04"), None);
        assert_eq!(iso_date("2021-05-04T10:11:12junk"), None);
        assert_eq!(value("<a:b/>", "tiff:Make"), None);
        assert_eq!(value("<tiff:Make/>", "tiff:Make"), None);
        assert_eq!(value("x tiff:Make=", "tiff:Make"), None);
        assert_eq!(value("<tiff:Make>unterminated", "tiff:Make"), None);
        // A textless tag of the key does not hide a later one with text.
        let later = "<tiff:Make/> <tiff:Make >\n</tiff:Make><tiff:Make>Canon</tiff:Make>";
        assert_eq!(value(later, "tiff:Make").as_deref(), Some("Canon"));
        assert_eq!(value("<tiff:Make <tiff:Make <tiff:Make", "tiff:Make"), None);
    }

    #[test]
    fn list_items_of_a_property() {
        let item = |lang: Option<&str>, text: &str| Item {
            lang: lang.map(String::from),
            text: text.into(),
        };
        let xml = r#"<dc:subjectX>no</dc:subjectX><dc:subject/><dc:subject> </dc:subject>
<dc:subject><rdf:Bag><rdf:li/><rdf:li>a &amp; b</rdf:li><rdf:liX>no</rdf:liX>
<rdf:li xml:lang='fr'> c </rdf:li><rdf:li rdf:parseType="Resource"><x:y>z</x:y></rdf:li>
</rdf:Bag></dc:subject>"#;
        let all = [item(None, "a & b"), item(Some("fr"), "c")];
        assert_eq!(items(xml, "dc:subject", 10), all);
        assert_eq!(items(xml, "dc:subject", 1), all[..1]);
        assert_eq!(items(xml, "dc:title", 10), []);
        assert_eq!(items("<dc:subject><rdf:li>a", "dc:subject", 10), []);
        assert_eq!(
            items("<dc:subject><rdf:li>a</dc:subject>", "dc:subject", 10),
            []
        );
        // Opens without a close end the search at once (linear, not a rescan per open).
        let opens = "<dc:subject <rdf:li ".repeat(200_000);
        let started = std::time::Instant::now();
        assert_eq!(items(&opens, "dc:subject", 10), []);
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }

    fn jpeg_with_xmp(xml: &str) -> Vec<u8> {
        let mut v = vec![0xFF, 0xD8, 0xFF, 0xE0, 0, 4, 0, 0];
        let body = [JPEG_XMP, xml.as_bytes()].concat();
        v.extend_from_slice(&[0xFF, 0xE1]);
        v.extend_from_slice(&((body.len() + 2) as u16).to_be_bytes());
        v.extend_from_slice(&body);
        v.extend_from_slice(&[0xFF, 0xDA, 0, 2, 1, 2, 3, 0xFF, 0xD9]);
        v
    }

    fn png_with_xmp(xml: &str) -> Vec<u8> {
        let mut v = b"\x89PNG\r\n\x1a\n".to_vec();
        let chunk = |kind: &[u8], data: &[u8]| {
            let mut c = (data.len() as u32).to_be_bytes().to_vec();
            c.extend_from_slice(kind);
            c.extend_from_slice(data);
            c.extend_from_slice(&[0; 4]);
            c
        };
        v.extend(chunk(b"IHDR", &[0; 13]));
        let data = [&b"XML:com.adobe.xmp\0"[..], b"\0\0\0\0", xml.as_bytes()].concat();
        v.extend(chunk(b"iTXt", &data));
        v.extend(chunk(b"IEND", &[]));
        v
    }

    #[test]
    fn packets_from_jpeg_and_png() {
        for (bytes, mime) in [
            (jpeg_with_xmp(ATTRS), "image/jpeg"),
            (png_with_xmp(ATTRS), "image/png"),
        ] {
            let mut f = MediaFacts::default();
            fill_from_xmp(&mut Cursor::new(&bytes), mime, &mut f);
            assert_eq!(f.model.as_deref(), Some("EOS & R5"), "{mime}");
            for cut in 0..bytes.len() {
                let mut f = MediaFacts::default();
                fill_from_xmp(&mut Cursor::new(&bytes[..cut]), mime, &mut f);
            }
            let mut noise = bytes.clone();
            for (i, b) in noise.iter_mut().enumerate().skip(8) {
                *b = b.wrapping_mul(13).wrapping_add(i as u8);
            }
            fill_from_xmp(&mut Cursor::new(&noise), mime, &mut MediaFacts::default());
        }
    }
}
