//! A PNG's text chunks by keyword (`tEXt`, `zTXt`, `iTXt`, compressed or not), and the
//! metadata real files keep in them: the XMP packet (`XML:com.adobe.xmp`) and ImageMagick's
//! raw profiles (`Raw profile type exif`, `… APP1`, `… xmp`: the profile's bytes as hex
//! text). Bounded: chunks looked at, bytes read and bytes inflated (flate2) are capped, so a
//! zlib bomb or a chunk claiming gigabytes ends the search. Must not interpret the EXIF or
//! XMP it hands out (that is `photo` and `xmp`).

use flate2::read::ZlibDecoder;
use std::io::{Read, Seek, SeekFrom};

const SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
/// Chunks looked at before giving up.
const MAX_CHUNKS: usize = 4096;
/// Largest text chunk read, and largest text inflated from one: an EXIF with a maker note
/// and a preview is a few hundred KiB, twice that as hex.
const MAX_TEXT: u64 = 16 * 1024 * 1024;
/// A keyword is 1 to 79 bytes and a NUL.
const KEYWORD_MAX: usize = 80;

const XMP_KEYWORD: &[u8] = b"XML:com.adobe.xmp";
const RAW_PROFILE: &[u8] = b"Raw profile type ";
/// What an APP1 segment's body starts with when it holds EXIF, and when XMP.
const EXIF_HEADER: &[u8] = b"Exif\0\0";
const XMP_HEADER: &[u8] = b"http://ns.adobe.com/xap/1.0/\0";

/// The XMP packet: the `XML:com.adobe.xmp` text, else ImageMagick's raw `xmp` profile, else
/// a raw `APP1` profile that holds XMP.
pub fn xmp_packet<R: Read + Seek>(r: &mut R) -> Option<Vec<u8>> {
    if let Some(packet) = text(r, |k| k == XMP_KEYWORD) {
        return Some(packet);
    }
    if let Some(xmp) = raw_profile(r, b"xmp") {
        return Some(xmp);
    }
    raw_profile(r, b"app1").and_then(|app1| app1.strip_prefix(XMP_HEADER).map(<[u8]>::to_vec))
}

/// A TIFF-structured EXIF block from ImageMagick's raw `exif` or `APP1` profile, without
/// the `Exif\0\0` header an APP1 body starts with.
pub fn exif_profile<R: Read + Seek>(r: &mut R) -> Option<Vec<u8>> {
    ["exif", "app1"].iter().find_map(|name| {
        let profile = raw_profile(r, name.as_bytes())?;
        let tiff = profile.strip_prefix(EXIF_HEADER).unwrap_or(&profile);
        (tiff.starts_with(b"II*\0") || tiff.starts_with(b"MM\0*")).then(|| tiff.to_vec())
    })
}

/// The bytes of the raw profile named `name` (any ASCII case, as writers differ).
fn raw_profile<R: Read + Seek>(r: &mut R, name: &[u8]) -> Option<Vec<u8>> {
    let wanted = |k: &[u8]| {
        k.len() == RAW_PROFILE.len() + name.len()
            && k[..RAW_PROFILE.len()].eq_ignore_ascii_case(RAW_PROFILE)
            && k[RAW_PROFILE.len()..].eq_ignore_ascii_case(name)
    };
    unhex_profile(&text(r, wanted)?)
}

/// ImageMagick's raw profile text: `\n<name>\n<length>\n` then the bytes as hex, in lines.
/// Fewer hex digits than the length declares is no profile.
pub fn unhex_profile(text: &[u8]) -> Option<Vec<u8>> {
    let mut words = text
        .split(u8::is_ascii_whitespace)
        .filter(|w| !w.is_empty());
    let _name = words.next()?;
    let len: usize = std::str::from_utf8(words.next()?).ok()?.parse().ok()?;
    if len as u64 > MAX_TEXT / 2 {
        return None;
    }
    let mut out = Vec::with_capacity(len);
    let mut digits = words.flatten().map(|c| (*c as char).to_digit(16));
    while out.len() < len {
        let (high, low) = (digits.next()??, digits.next()??);
        out.push((high << 4 | low) as u8);
    }
    Some(out)
}

/// The (inflated) text of the first text chunk whose keyword `wanted` accepts.
pub fn text<R: Read + Seek>(r: &mut R, wanted: impl Fn(&[u8]) -> bool) -> Option<Vec<u8>> {
    if read_at(r, 0, SIGNATURE.len() as u64)? != SIGNATURE {
        return None;
    }
    let mut pos = SIGNATURE.len() as u64;
    for _ in 0..MAX_CHUNKS {
        let head = read_at(r, pos, 8)?;
        let len = u64::from(u32::from_be_bytes([head[0], head[1], head[2], head[3]]));
        let kind = &head[4..8];
        if kind == b"IEND" {
            return None;
        }
        if matches!(kind, b"tEXt" | b"zTXt" | b"iTXt") && len <= MAX_TEXT {
            let start = read_at(r, pos + 8, len.min(KEYWORD_MAX as u64))?;
            let keyword = start.split(|b| *b == 0).next()?;
            if keyword.len() < start.len() && wanted(keyword) {
                let body = read_at(r, pos + 8, len)?;
                if let Some(text) = chunk_text(kind, &body[keyword.len() + 1..]) {
                    return Some(text);
                }
            }
        }
        pos = pos.checked_add(12 + len)?;
    }
    None
}

/// A text chunk's text after its keyword and NUL: `tEXt` as is; `zTXt` a method byte and
/// zlib data; `iTXt` a compression flag and method, a language tag and a translated keyword
/// (each ending in NUL), then the text, zlib-compressed when the flag is 1.
fn chunk_text(kind: &[u8], rest: &[u8]) -> Option<Vec<u8>> {
    match kind {
        b"tEXt" => Some(rest.to_vec()),
        b"zTXt" => (*rest.first()? == 0).then(|| inflate(&rest[1..]))?,
        _ => {
            let (flag, method) = (*rest.first()?, *rest.get(1)?);
            let mut parts = rest.get(2..)?.splitn(3, |b| *b == 0);
            let (_lang, _translated, text) = (parts.next()?, parts.next()?, parts.next()?);
            match (flag, method) {
                (0, _) => Some(text.to_vec()),
                (1, 0) => inflate(text),
                _ => None,
            }
        }
    }
}

/// zlib data inflated, `None` when broken or over `MAX_TEXT` (a bomb).
fn inflate(data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    ZlibDecoder::new(data)
        .take(MAX_TEXT + 1)
        .read_to_end(&mut out)
        .ok()?;
    (out.len() as u64 <= MAX_TEXT).then_some(out)
}

/// Exactly `len` bytes at `pos`, or `None`.
fn read_at<R: Read + Seek>(r: &mut R, pos: u64, len: u64) -> Option<Vec<u8>> {
    r.seek(SeekFrom::Start(pos)).ok()?;
    let mut buf = Vec::new();
    r.take(len).read_to_end(&mut buf).ok()?;
    (buf.len() as u64 == len).then_some(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::{Compression, write::ZlibEncoder};
    use std::io::{Cursor, Write};

    fn deflate(data: &[u8]) -> Vec<u8> {
        let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
        z.write_all(data).unwrap();
        z.finish().unwrap()
    }

    fn png(chunks: &[(&[u8; 4], Vec<u8>)]) -> Vec<u8> {
        let mut v = SIGNATURE.to_vec();
        for (kind, data) in [(b"IHDR", vec![0; 13])].iter().chain(chunks) {
            v.extend_from_slice(&(data.len() as u32).to_be_bytes());
            v.extend_from_slice(&kind[..]);
            v.extend_from_slice(data);
            v.extend_from_slice(&[0; 4]);
        }
        v.extend_from_slice(&[0, 0, 0, 0]);
        v.extend_from_slice(b"IEND\0\0\0\0");
        v
    }

    const XMP: &[u8] = b"<x:xmpmeta><rdf:Description tiff:Make='Kodak'/></x:xmpmeta>";

    /// The packet is found in every chunk kind and compression a writer may have used.
    #[test]
    fn the_xmp_packet_is_found_compressed_or_not() {
        let key = |rest: &[u8]| [XMP_KEYWORD, b"\0", rest].concat();
        for chunk in [
            (b"tEXt", key(XMP)),
            (b"zTXt", key(&[&[0][..], &deflate(XMP)].concat())),
            (b"iTXt", key(&[b"\0\0en\0\0", XMP].concat())),
            (b"iTXt", key(&[&b"\x01\0\0\0"[..], &deflate(XMP)].concat())),
        ] {
            let file = png(&[(b"tEXt", b"Comment\0hi".to_vec()), chunk.clone()]);
            let found = xmp_packet(&mut Cursor::new(&file));
            assert_eq!(found.as_deref(), Some(XMP), "{:?}", chunk.0);
        }
        let unknown_method = key(&[&b"\x01\x07\0\0"[..], &deflate(XMP)].concat());
        let file = png(&[(b"iTXt", unknown_method)]);
        assert_eq!(xmp_packet(&mut Cursor::new(&file)), None);
    }

    fn raw(name: &str, bytes: &[u8]) -> Vec<u8> {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let lines: Vec<&str> = hex
            .as_bytes()
            .chunks(72)
            .map(|l| std::str::from_utf8(l).unwrap())
            .collect();
        format!("\n{name}\n{:8}\n{}\n", bytes.len(), lines.join("\n")).into_bytes()
    }

    #[test]
    fn raw_profiles_are_unhexed_and_their_exif_header_dropped() {
        let tiff = [&b"MM\0*\0\0\0\x08"[..], &[7u8; 60]].concat();
        let app1 = [EXIF_HEADER, &tiff].concat();
        assert_eq!(unhex_profile(&raw("exif", &app1)), Some(app1.clone()));
        for (key, body) in [
            ("Raw profile type exif", &app1),
            ("raw profile type APP1", &tiff),
        ] {
            let text = [key.as_bytes(), b"\0\0", &deflate(&raw("x", body))].concat();
            let file = png(&[(b"zTXt", text)]);
            assert_eq!(
                exif_profile(&mut Cursor::new(&file)),
                Some(tiff.clone()),
                "{key}"
            );
        }
        let xmp_app1 = [XMP_HEADER, XMP].concat();
        let text = [&b"Raw profile type APP1\0"[..], &raw("APP1", &xmp_app1)].concat();
        let file = png(&[(b"tEXt", text)]);
        assert_eq!(xmp_packet(&mut Cursor::new(&file)).as_deref(), Some(XMP));
        assert_eq!(
            exif_profile(&mut Cursor::new(&file)),
            None,
            "XMP is no EXIF"
        );
        // Short of the declared length, a non-hex digit, or a length past the cap: nothing.
        assert_eq!(unhex_profile(b"\nexif\n       4\n0a0b0c\n"), None);
        assert_eq!(unhex_profile(b"\nexif\n       2\n0a0g\n"), None);
        assert_eq!(unhex_profile(b"\nexif\n99999999999\n0a\n"), None);
    }

    /// A zlib bomb inflates to the cap, not to what it holds.
    #[test]
    fn a_text_bomb_is_refused_at_the_cap() {
        let bomb = deflate(&vec![b' '; (MAX_TEXT + 10) as usize]);
        let text = [XMP_KEYWORD, b"\0\0", &bomb].concat();
        assert_eq!(xmp_packet(&mut Cursor::new(png(&[(b"zTXt", text)]))), None);
    }
}
