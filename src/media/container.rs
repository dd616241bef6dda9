//! Video container facts nom-exif does not expose: the first video track's codec (ISO-BMFF
//! `stsd` sample entry, Matroska `CodecID`), its rotation (`tkhd` matrix) and the QuickTime
//! `mdta` metadata a Live Photo's MOV carries its ContentIdentifier in (`moov/meta`:
//! `keys` + `ilst`), and the movie header's creation time (`moov/mvhd`), which dates an
//! image sequence or an animated AVIF. Reads are bounded
//! and seek past payloads (never reads `mdat`), box/element counts and sizes are capped, so a
//! corrupt file ends the walk instead of looping or allocating. Its ISO-BMFF box walker is
//! also the one `cr3` walks a Canon CR3 with. Must not read photo metadata.

use std::io::{Read, Seek, SeekFrom};

/// What the container says about its first video track.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct VideoTrack {
    pub codec: Option<String>,
    /// Clockwise display rotation in degrees: 0, 90, 180 or 270.
    pub rotation: u16,
}

/// Children looked at per container box / master element before giving up.
const MAX_CHILDREN: usize = 4096;
/// Largest payload read into memory (tkhd, hdlr, stsd head, EBML strings).
const MAX_SMALL: u64 = 4096;

/// The first video track of an MP4/MOV or Matroska/WebM file; `None` when none is found.
pub fn video_track<R: Read + Seek>(r: &mut R) -> Option<VideoTrack> {
    let len = r.seek(SeekFrom::End(0)).ok()?;
    r.seek(SeekFrom::Start(0)).ok()?;
    let mut magic = [0u8; 4];
    r.read_exact(&mut magic).ok()?;
    if magic == [0x1A, 0x45, 0xDF, 0xA3] {
        ebml::first_video(r, len)
    } else {
        bmff::first_video(r, len)
    }
}

/// Sample-entry fourcc → codec name (ffprobe's `codec_name` vocabulary).
pub fn codec_from_fourcc(fourcc: &[u8; 4]) -> String {
    match fourcc {
        b"avc1" | b"avc2" | b"avc3" | b"avc4" => "h264".into(),
        b"hvc1" | b"hev1" | b"dvh1" | b"dvhe" => "hevc".into(),
        b"av01" => "av1".into(),
        b"vp09" => "vp9".into(),
        b"vp08" => "vp8".into(),
        b"mp4v" => "mpeg4".into(),
        b"apcn" | b"apch" | b"apcs" | b"apco" | b"ap4h" | b"ap4x" => "prores".into(),
        b"jpeg" | b"mjpa" | b"mjpb" => "mjpeg".into(),
        _ => String::from_utf8_lossy(fourcc)
            .trim_matches(|c: char| c == '\0' || c.is_whitespace())
            .to_string(),
    }
}

/// Matroska `CodecID` → codec name (ffprobe's vocabulary).
pub fn codec_from_matroska(id: &str) -> String {
    match id {
        "V_MPEG4/ISO/AVC" => "h264".into(),
        "V_MPEGH/ISO/HEVC" => "hevc".into(),
        "V_VP9" => "vp9".into(),
        "V_VP8" => "vp8".into(),
        "V_AV1" => "av1".into(),
        "V_PRORES" => "prores".into(),
        "V_MJPEG" => "mjpeg".into(),
        id if id.starts_with("V_MPEG4/ISO/") => "mpeg4".into(),
        other => other.trim_start_matches("V_").to_ascii_lowercase(),
    }
}

/// Clockwise rotation of a `tkhd` matrix `[a b u; c d v; x y w]` (a..d in 16.16 fixed
/// point), snapped to a quarter turn; 0 when the matrix is not a (near-)rotation.
pub fn matrix_rotation(a: i32, b: i32, c: i32, d: i32) -> u16 {
    let (a, b, c, d) = (a as f64, b as f64, c as f64, d as f64);
    if a == 0.0 && b == 0.0 && c == 0.0 && d == 0.0 {
        return 0;
    }
    let degrees = b.atan2(a).to_degrees();
    let snapped = ((degrees / 90.0).round() as i64).rem_euclid(4) as u16 * 90;
    // A mirror (det < 0) or skew is not a plain rotation; keep only the quarter turns we trust.
    let det = a * d - b * c;
    if det <= 0.0 { 0 } else { snapped }
}

/// Apple's `com.apple.quicktime.content.identifier`, from a MOV's `moov/meta` (or
/// `moov/udta/meta`) `keys`/`ilst`: the UUID a Live Photo's MOV shares with its still.
pub fn content_identifier<R: Read + Seek>(r: &mut R) -> Option<String> {
    let len = r.seek(SeekFrom::End(0)).ok()?;
    bmff::mdta_text(r, len, b"com.apple.quicktime.content.identifier")
}

/// Seconds from 1904-01-01 (QuickTime's epoch) to 1970-01-01, both UTC.
const SECS_1904_TO_1970: i64 = 2_082_844_800;

/// The `moov/mvhd` creation time of an ISO-BMFF file, in seconds since the Unix epoch (UTC,
/// as QuickTime and ISO write it); `None` without a movie header.
pub fn movie_created<R: Read + Seek>(r: &mut R) -> Option<i64> {
    let len = r.seek(SeekFrom::End(0)).ok()?;
    bmff::mvhd_created(r, len).map(|since_1904| since_1904 - SECS_1904_TO_1970)
}

fn read_small<R: Read>(r: &mut R, len: u64) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    r.take(len.min(MAX_SMALL)).read_to_end(&mut buf).ok()?;
    Some(buf)
}

pub(super) mod bmff {
    use super::*;

    pub(in crate::media) struct Box4 {
        pub kind: [u8; 4],
        pub body: u64,
        pub end: u64,
        /// The box claims more than its parent (or the file) holds.
        pub cut: bool,
    }

    /// The boxes directly inside `[start, end)`.
    pub(in crate::media) fn children<R: Read + Seek>(r: &mut R, start: u64, end: u64) -> Vec<Box4> {
        let mut out = Vec::new();
        let mut pos = start;
        while pos.saturating_add(8) <= end && out.len() < MAX_CHILDREN {
            if r.seek(SeekFrom::Start(pos)).is_err() {
                break;
            }
            let mut head = [0u8; 8];
            if r.read_exact(&mut head).is_err() {
                break;
            }
            let size32 = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
            let kind = [head[4], head[5], head[6], head[7]];
            let (size, header) = match size32 {
                0 => (end - pos, 8),
                1 => {
                    let mut big = [0u8; 8];
                    if r.read_exact(&mut big).is_err() {
                        break;
                    }
                    (u64::from_be_bytes(big), 16)
                }
                n => (u64::from(n), 8),
            };
            if size < header {
                break;
            }
            // A box claiming more than its parent is cut short (truncated file): keep what
            // is there, but nothing after it can be trusted.
            let box_end = pos.saturating_add(size).min(end);
            out.push(Box4 {
                kind,
                body: pos + header,
                end: box_end,
                cut: pos.saturating_add(size) > end,
            });
            pos = box_end;
        }
        out
    }

    fn find<'a>(boxes: &'a [Box4], kind: &[u8; 4]) -> Option<&'a Box4> {
        boxes.iter().find(|b| &b.kind == kind)
    }

    fn payload<R: Read + Seek>(r: &mut R, b: &Box4) -> Option<Vec<u8>> {
        r.seek(SeekFrom::Start(b.body)).ok()?;
        read_small(r, b.end.saturating_sub(b.body))
    }

    pub fn first_video<R: Read + Seek>(r: &mut R, len: u64) -> Option<VideoTrack> {
        let top = children(r, 0, len);
        let moov = find(&top, b"moov")?;
        for trak in children(r, moov.body, moov.end)
            .iter()
            .filter(|b| &b.kind == b"trak")
        {
            if let Some(track) = video_trak(r, trak) {
                return Some(track);
            }
        }
        None
    }

    fn video_trak<R: Read + Seek>(r: &mut R, trak: &Box4) -> Option<VideoTrack> {
        let parts = children(r, trak.body, trak.end);
        let mdia = find(&parts, b"mdia")?;
        let mdia_parts = children(r, mdia.body, mdia.end);
        let hdlr = payload(r, find(&mdia_parts, b"hdlr")?)?;
        if hdlr.get(8..12)? != b"vide" {
            return None;
        }
        let codec = find(&mdia_parts, b"minf").and_then(|minf| sample_codec(r, minf));
        let rotation = find(&parts, b"tkhd")
            .and_then(|b| payload(r, b))
            .and_then(|p| tkhd_rotation(&p))
            .unwrap_or(0);
        Some(VideoTrack { codec, rotation })
    }

    fn sample_codec<R: Read + Seek>(r: &mut R, minf: &Box4) -> Option<String> {
        let minf_parts = children(r, minf.body, minf.end);
        let stbl = find(&minf_parts, b"stbl")?;
        let stbl_parts = children(r, stbl.body, stbl.end);
        let stsd = payload(r, find(&stbl_parts, b"stsd")?)?;
        // version/flags (4), entry_count (4), first entry: size (4), fourcc (4)
        let fourcc: [u8; 4] = stsd.get(12..16)?.try_into().ok()?;
        Some(codec_from_fourcc(&fourcc)).filter(|c| !c.is_empty())
    }

    /// The creation time in `moov/mvhd`, seconds since 1904: 32 bits in version 0, 64 in 1.
    pub fn mvhd_created<R: Read + Seek>(r: &mut R, len: u64) -> Option<i64> {
        let top = children(r, 0, len);
        let moov = find(&top, b"moov")?;
        let in_moov = children(r, moov.body, moov.end);
        let mvhd = payload(r, find(&in_moov, b"mvhd")?)?;
        match mvhd.first()? {
            0 => Some(i64::from(u32::from_be_bytes(
                mvhd.get(4..8)?.try_into().ok()?,
            ))),
            1 => i64::try_from(u64::from_be_bytes(mvhd.get(4..12)?.try_into().ok()?)).ok(),
            _ => None,
        }
    }

    /// The UTF-8 value of QuickTime metadata key `key` (namespace `mdta`).
    pub fn mdta_text<R: Read + Seek>(r: &mut R, len: u64, key: &[u8]) -> Option<String> {
        let top = children(r, 0, len);
        let moov = find(&top, b"moov")?;
        let in_moov = children(r, moov.body, moov.end);
        let udta_meta = find(&in_moov, b"udta").and_then(|udta| {
            let inner = children(r, udta.body, udta.end);
            inner.into_iter().find(|b| &b.kind == b"meta")
        });
        let metas = in_moov.iter().filter(|b| &b.kind == b"meta");
        for meta in metas.chain(udta_meta.as_ref()) {
            if let Some(text) = meta_text(r, meta, key) {
                return Some(text);
            }
        }
        None
    }

    /// QuickTime's `meta` is a plain box, ISO's a full box (4 bytes of version and flags
    /// first): whichever has a box header where its first child would be.
    fn meta_text<R: Read + Seek>(r: &mut R, meta: &Box4, key: &[u8]) -> Option<String> {
        r.seek(SeekFrom::Start(meta.body)).ok()?;
        let mut head = [0u8; 8];
        r.read_exact(&mut head).ok()?;
        let start = if &head[4..8] == b"hdlr" || &head[4..8] == b"keys" {
            meta.body
        } else {
            meta.body + 4
        };
        let parts = children(r, start, meta.end);
        let index = key_index(&payload(r, find(&parts, b"keys")?)?, key)?;
        let ilst = find(&parts, b"ilst")?;
        let item = children(r, ilst.body, ilst.end)
            .into_iter()
            .find(|b| b.kind == index.to_be_bytes())?;
        let data = children(r, item.body, item.end)
            .into_iter()
            .find(|b| &b.kind == b"data")?;
        data_text(&payload(r, &data)?)
    }

    /// The 1-based index of `key` in a `keys` payload (version/flags, count, then entries
    /// of size, namespace and name).
    pub fn key_index(keys: &[u8], key: &[u8]) -> Option<u32> {
        let count = u32::from_be_bytes(keys.get(4..8)?.try_into().ok()?);
        let mut at = 8usize;
        for index in 1..=count.min(MAX_CHILDREN as u32) {
            let size = u32::from_be_bytes(keys.get(at..at + 4)?.try_into().ok()?) as usize;
            let end = at
                .checked_add(size)
                .filter(|e| size >= 8 && *e <= keys.len())?;
            if keys.get(at + 4..at + 8)? == b"mdta" && keys.get(at + 8..end)? == key {
                return Some(index);
            }
            at = end;
        }
        None
    }

    /// A `data` payload (type indicator, locale, value) holding UTF-8 text (type 1).
    pub fn data_text(data: &[u8]) -> Option<String> {
        if data.get(0..4)? != [0, 0, 0, 1] {
            return None;
        }
        let text = std::str::from_utf8(data.get(8..)?).ok()?;
        super::super::values::clean_text(text)
    }

    /// The rotation in a `tkhd` payload (after the box header).
    pub fn tkhd_rotation(p: &[u8]) -> Option<u16> {
        let matrix_at = match p.first()? {
            1 => 52,
            _ => 40,
        };
        let word = |i: usize| -> Option<i32> {
            let at = matrix_at + i * 4;
            Some(i32::from_be_bytes(p.get(at..at + 4)?.try_into().ok()?))
        };
        Some(matrix_rotation(word(0)?, word(1)?, word(3)?, word(4)?))
    }
}

mod ebml {
    use super::*;

    const SEGMENT: u64 = 0x1853_8067;
    const TRACKS: u64 = 0x1654_AE6B;
    const TRACK_ENTRY: u64 = 0xAE;
    const TRACK_TYPE: u64 = 0x83;
    const CODEC_ID: u64 = 0x86;
    const CLUSTER: u64 = 0x1F43_B675;

    /// A variable-length integer: (value without the marker unless `keep_marker`, length,
    /// all value bits set = unknown size).
    fn vint<R: Read>(r: &mut R, keep_marker: bool, max_len: u32) -> Option<(u64, u64, bool)> {
        let mut first = [0u8; 1];
        r.read_exact(&mut first).ok()?;
        let len = first[0].leading_zeros() + 1;
        if len > max_len {
            return None;
        }
        let mut value = if keep_marker {
            u64::from(first[0])
        } else {
            u64::from(first[0]) & (0xFF >> len)
        };
        let mut all_ones = value == (0xFF >> len);
        for _ in 1..len {
            r.read_exact(&mut first).ok()?;
            value = (value << 8) | u64::from(first[0]);
            all_ones &= first[0] == 0xFF;
        }
        Some((value, u64::from(len), all_ones && !keep_marker))
    }

    struct Element {
        id: u64,
        body: u64,
        end: u64,
    }

    /// The elements directly inside `[start, end)`; an unknown-size element runs to `end`
    /// and ends the list.
    fn children<R: Read + Seek>(r: &mut R, start: u64, end: u64) -> Vec<Element> {
        let mut out = Vec::new();
        let mut pos = start;
        while pos < end && out.len() < MAX_CHILDREN {
            if r.seek(SeekFrom::Start(pos)).is_err() {
                break;
            }
            let Some((id, id_len, _)) = vint(r, true, 4) else {
                break;
            };
            let Some((size, size_len, unknown)) = vint(r, false, 8) else {
                break;
            };
            let body = pos + id_len + size_len;
            let elem_end = if unknown {
                end
            } else {
                body.saturating_add(size).min(end)
            };
            out.push(Element {
                id,
                body,
                end: elem_end,
            });
            if unknown || elem_end <= pos {
                break;
            }
            pos = elem_end;
        }
        out
    }

    pub fn first_video<R: Read + Seek>(r: &mut R, len: u64) -> Option<VideoTrack> {
        let top = children(r, 0, len);
        let segment = top.iter().find(|e| e.id == SEGMENT)?;
        let mut pos = segment.body;
        // Walk the segment's children one by one, stopping at the first Cluster (media data
        // precedes nothing we need in practice) or at Tracks.
        for _ in 0..MAX_CHILDREN {
            let next = children_one(r, pos, segment.end)?;
            if next.id == TRACKS {
                return tracks(r, &next);
            }
            if next.id == CLUSTER || next.end <= pos {
                return None;
            }
            pos = next.end;
        }
        None
    }

    fn children_one<R: Read + Seek>(r: &mut R, pos: u64, end: u64) -> Option<Element> {
        if pos >= end {
            return None;
        }
        r.seek(SeekFrom::Start(pos)).ok()?;
        let (id, id_len, _) = vint(r, true, 4)?;
        let (size, size_len, unknown) = vint(r, false, 8)?;
        let body = pos + id_len + size_len;
        let elem_end = if unknown {
            end
        } else {
            body.saturating_add(size).min(end)
        };
        Some(Element {
            id,
            body,
            end: elem_end,
        })
    }

    fn tracks<R: Read + Seek>(r: &mut R, tracks: &Element) -> Option<VideoTrack> {
        for entry in children(r, tracks.body, tracks.end)
            .iter()
            .filter(|e| e.id == TRACK_ENTRY)
        {
            let fields = children(r, entry.body, entry.end);
            let mut is_video = false;
            let mut codec = None;
            for f in &fields {
                r.seek(SeekFrom::Start(f.body)).ok()?;
                let bytes = read_small(r, f.end.saturating_sub(f.body))?;
                match f.id {
                    TRACK_TYPE => {
                        is_video = bytes.len() <= 8
                            && bytes.iter().fold(0u64, |v, b| (v << 8) | u64::from(*b)) == 1
                    }
                    CODEC_ID => {
                        let text = String::from_utf8_lossy(&bytes);
                        let text = text.trim_matches(|c: char| c == '\0' || c.is_whitespace());
                        codec = (!text.is_empty()).then(|| codec_from_matroska(text));
                    }
                    _ => {}
                }
            }
            if is_video {
                return Some(VideoTrack { codec, rotation: 0 });
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    const ONE: i32 = 0x0001_0000;

    fn bx(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
        let mut v = ((body.len() + 8) as u32).to_be_bytes().to_vec();
        v.extend_from_slice(kind);
        v.extend_from_slice(body);
        v
    }

    fn bx64(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
        let mut v = 1u32.to_be_bytes().to_vec();
        v.extend_from_slice(kind);
        v.extend_from_slice(&((body.len() + 16) as u64).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    fn cat(parts: &[Vec<u8>]) -> Vec<u8> {
        parts.concat()
    }

    fn tkhd(version: u8, m: [i32; 4]) -> Vec<u8> {
        let mut p = vec![version, 0, 0, 7];
        p.resize(if version == 1 { 52 } else { 40 }, 0);
        let matrix = [m[0], m[1], 0, m[2], m[3], 0, 0, 0, 0x4000_0000];
        for w in matrix {
            p.extend_from_slice(&w.to_be_bytes());
        }
        p.extend_from_slice(&[0, 0x80, 0, 0, 0, 0x40, 0, 0]);
        bx(b"tkhd", &p)
    }

    fn hdlr(kind: &[u8; 4]) -> Vec<u8> {
        let mut p = vec![0; 8];
        p.extend_from_slice(kind);
        p.extend_from_slice(&[0; 13]);
        bx(b"hdlr", &p)
    }

    fn stsd(fourcc: &[u8; 4]) -> Vec<u8> {
        let mut p = vec![0, 0, 0, 0, 0, 0, 0, 1];
        p.extend_from_slice(&86u32.to_be_bytes());
        p.extend_from_slice(fourcc);
        p.resize(8 + 86, 0);
        bx(b"stsd", &p)
    }

    fn trak(handler: &[u8; 4], fourcc: &[u8; 4], version: u8, m: [i32; 4]) -> Vec<u8> {
        let stbl = bx(b"stbl", &cat(&[stsd(fourcc), bx(b"stts", &[0; 8])]));
        let minf = bx(b"minf", &cat(&[bx(b"vmhd", &[0; 12]), hdlr(b"alis"), stbl]));
        let mdia = bx(b"mdia", &cat(&[bx(b"mdhd", &[0; 24]), hdlr(handler), minf]));
        bx(b"trak", &cat(&[tkhd(version, m), mdia]))
    }

    fn mp4(moov_body: &[u8], mdat_first: bool) -> Vec<u8> {
        let ftyp = bx(b"ftyp", b"isom\0\0\0\0isomavc1");
        let mdat = bx64(b"mdat", &[0xAB; 1000]);
        let moov = bx(b"moov", moov_body);
        if mdat_first {
            cat(&[ftyp, mdat, moov])
        } else {
            cat(&[ftyp, moov, mdat])
        }
    }

    fn read(bytes: &[u8]) -> Option<VideoTrack> {
        video_track(&mut Cursor::new(bytes))
    }

    const IDENT: [i32; 4] = [ONE, 0, 0, ONE];

    #[test]
    fn fourcc_names() {
        for (cc, name) in [
            (b"avc1", "h264"),
            (b"avc3", "h264"),
            (b"hvc1", "hevc"),
            (b"hev1", "hevc"),
            (b"av01", "av1"),
            (b"vp09", "vp9"),
            (b"mp4v", "mpeg4"),
            (b"apcn", "prores"),
            (b"apch", "prores"),
            (b"xyz ", "xyz"),
        ] {
            assert_eq!(codec_from_fourcc(cc), name);
        }
        assert_eq!(codec_from_matroska("V_MPEG4/ISO/AVC"), "h264");
        assert_eq!(codec_from_matroska("V_MPEGH/ISO/HEVC"), "hevc");
        assert_eq!(codec_from_matroska("V_VP8"), "vp8");
        assert_eq!(codec_from_matroska("V_AV1"), "av1");
    }

    #[test]
    fn matrix_degrees() {
        assert_eq!(matrix_rotation(ONE, 0, 0, ONE), 0);
        assert_eq!(matrix_rotation(0, ONE, -ONE, 0), 90);
        assert_eq!(matrix_rotation(-ONE, 0, 0, -ONE), 180);
        assert_eq!(matrix_rotation(0, -ONE, ONE, 0), 270);
        assert_eq!(matrix_rotation(0, 0, 0, 0), 0);
        // mirrored: not a rotation
        assert_eq!(matrix_rotation(-ONE, 0, 0, ONE), 0);
        // slightly off quarter turn still snaps
        assert_eq!(matrix_rotation(10, ONE, -ONE, 10), 90);
    }

    #[test]
    fn mp4_video_track_after_audio_and_mdat() {
        let moov = cat(&[
            bx(b"mvhd", &[0; 100]),
            trak(b"soun", b"mp4a", 0, IDENT),
            trak(b"vide", b"hvc1", 0, [0, ONE, -ONE, 0]),
            trak(b"vide", b"avc1", 0, IDENT),
        ]);
        for mdat_first in [false, true] {
            let t = read(&mp4(&moov, mdat_first)).unwrap();
            assert_eq!(t.codec.as_deref(), Some("hevc"));
            assert_eq!(t.rotation, 90);
        }
        let v1 = cat(&[trak(b"vide", b"av01", 1, [0, -ONE, ONE, 0])]);
        let t = read(&mp4(&v1, true)).unwrap();
        assert_eq!((t.codec.as_deref(), t.rotation), (Some("av1"), 270));
    }

    #[test]
    fn size_zero_box_runs_to_the_end() {
        let mut bytes = bx(b"ftyp", b"qt  \0\0\0\0qt  ");
        let moov = trak(b"vide", b"apcn", 0, [-ONE, 0, 0, -ONE]);
        bytes.extend_from_slice(&0u32.to_be_bytes());
        bytes.extend_from_slice(b"moov");
        bytes.extend_from_slice(&moov);
        let t = read(&bytes).unwrap();
        assert_eq!((t.codec.as_deref(), t.rotation), (Some("prores"), 180));
    }

    #[test]
    fn corrupt_and_truncated_mp4_do_not_panic() {
        let good = mp4(&trak(b"vide", b"avc1", 0, IDENT), false);
        for cut in 0..good.len() {
            let _ = read(&good[..cut]);
        }
        // A box smaller than its header, a huge 64-bit size, a self-looping size.
        let mut bad = bx(b"ftyp", b"isom");
        bad.extend_from_slice(&[0, 0, 0, 4]);
        bad.extend_from_slice(b"moov");
        assert_eq!(read(&bad), None);
        let mut huge = bx(b"ftyp", b"isom");
        huge.extend_from_slice(&1u32.to_be_bytes());
        huge.extend_from_slice(b"moov");
        huge.extend_from_slice(&u64::MAX.to_be_bytes());
        assert_eq!(read(&huge), None);
        let mut noise = good.clone();
        for (i, b) in noise.iter_mut().enumerate().skip(24) {
            *b ^= (i * 37) as u8;
        }
        let _ = read(&noise);
        assert_eq!(read(b""), None);
    }

    /// A `moov/meta` with `hdlr mdta`, `keys` and `ilst`; ISO's full box when `full`.
    fn mdta_meta(full: bool, keys: &[&[u8]], values: &[(u32, &str)]) -> Vec<u8> {
        let mut k = vec![0, 0, 0, 0];
        k.extend_from_slice(&(keys.len() as u32).to_be_bytes());
        for key in keys {
            k.extend_from_slice(&((key.len() + 8) as u32).to_be_bytes());
            k.extend_from_slice(b"mdta");
            k.extend_from_slice(key);
        }
        let items: Vec<Vec<u8>> = values
            .iter()
            .map(|(index, text)| {
                let data = cat(&[vec![0, 0, 0, 1, 0, 0, 0, 0], text.as_bytes().to_vec()]);
                bx(&index.to_be_bytes(), &bx(b"data", &data))
            })
            .collect();
        let mut body = if full { vec![0; 4] } else { Vec::new() };
        body.extend(cat(&[
            hdlr(b"mdta"),
            bx(b"keys", &k),
            bx(b"ilst", &cat(&items)),
        ]));
        bx(b"meta", &body)
    }

    const ID_KEY: &[u8] = b"com.apple.quicktime.content.identifier";
    const UUID: &str = "1F7B6A52-3C1D-4E8B-9C0A-5D2E7F4B8A61";

    #[test]
    fn a_live_photo_movs_content_identifier_is_read_from_its_keys() {
        let keys: [&[u8]; 2] = [b"com.apple.quicktime.make", ID_KEY];
        for full in [false, true] {
            let meta = mdta_meta(full, &keys, &[(1, "Apple"), (2, UUID)]);
            let moov = cat(&[trak(b"vide", b"hvc1", 0, IDENT), meta]);
            let id = content_identifier(&mut Cursor::new(mp4(&moov, true)));
            assert_eq!(id.as_deref(), Some(UUID), "full box: {full}");
        }
        let in_udta = bx(b"udta", &mdta_meta(false, &[ID_KEY], &[(1, UUID)]));
        let file = mp4(&cat(&[trak(b"vide", b"avc1", 0, IDENT), in_udta]), false);
        assert_eq!(
            content_identifier(&mut Cursor::new(&file)).as_deref(),
            Some(UUID)
        );
        let other_key = mdta_meta(false, &[b"com.apple.quicktime.model"], &[(1, UUID)]);
        let file = mp4(&other_key, false);
        assert_eq!(content_identifier(&mut Cursor::new(&file)), None);
    }

    #[test]
    fn a_cut_or_corrupt_keys_box_gives_nothing_and_never_panics() {
        let good = mp4(&mdta_meta(false, &[ID_KEY], &[(1, UUID)]), false);
        for cut in 0..good.len() {
            let _ = content_identifier(&mut Cursor::new(&good[..cut]));
        }
        assert_eq!(
            bmff::key_index(&[0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF], ID_KEY),
            None
        );
        assert_eq!(
            bmff::key_index(&[0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0], ID_KEY),
            None
        );
        assert_eq!(
            bmff::data_text(&[0, 0, 0, 2, 0, 0, 0, 0, b'x']),
            None,
            "not UTF-8 text"
        );
    }

    fn el(id: u64, body: &[u8]) -> Vec<u8> {
        let id_bytes = id.to_be_bytes();
        let skip = id_bytes.iter().take_while(|b| **b == 0).count();
        let mut v = id_bytes[skip..].to_vec();
        v.push(0x01); // 8-byte size: marker byte + 7 bytes
        v.extend_from_slice(&(body.len() as u64).to_be_bytes()[1..]);
        v.extend_from_slice(body);
        v
    }

    fn track_entry(kind: u8, codec: &str) -> Vec<u8> {
        el(
            0xAE,
            &cat(&[
                el(0xD7, &[1]),
                el(0x83, &[kind]),
                el(0x86, codec.as_bytes()),
            ]),
        )
    }

    fn mkv(segment_body: &[u8], unknown_segment: bool) -> Vec<u8> {
        let mut v = el(0x1A45_DFA3, &el(0x4282, b"webm"));
        if unknown_segment {
            v.extend_from_slice(&[0x18, 0x53, 0x80, 0x67, 0x01, 0xFF, 0xFF, 0xFF, 0xFF]);
            v.extend_from_slice(&[0xFF, 0xFF, 0xFF]);
            v.extend_from_slice(segment_body);
        } else {
            v.extend_from_slice(&el(0x1853_8067, segment_body));
        }
        v
    }

    #[test]
    fn matroska_first_video_codec() {
        let body = cat(&[
            el(0x1549_A966, &el(0x2AD7B1, &[0x0F, 0x42, 0x40])),
            el(
                0x1654_AE6B,
                &cat(&[track_entry(2, "A_OPUS"), track_entry(1, "V_VP9")]),
            ),
            el(0x1F43_B675, &[0; 64]),
        ]);
        for unknown in [false, true] {
            let t = read(&mkv(&body, unknown)).unwrap();
            assert_eq!(t.codec.as_deref(), Some("vp9"));
            assert_eq!(t.rotation, 0);
        }
        let avc = el(0x1654_AE6B, &track_entry(1, "V_MPEG4/ISO/AVC"));
        assert_eq!(
            read(&mkv(&avc, false)).unwrap().codec.as_deref(),
            Some("h264")
        );
        let audio_only = el(0x1654_AE6B, &track_entry(2, "A_VORBIS"));
        assert_eq!(read(&mkv(&audio_only, false)), None);
    }

    #[test]
    fn corrupt_and_truncated_matroska_do_not_panic() {
        let body = el(0x1654_AE6B, &track_entry(1, "V_AV1"));
        let good = mkv(&body, false);
        assert_eq!(read(&good).unwrap().codec.as_deref(), Some("av1"));
        for cut in 0..good.len() {
            let _ = read(&good[..cut]);
        }
        let mut zeros = vec![0x1A, 0x45, 0xDF, 0xA3];
        zeros.extend_from_slice(&[0; 64]);
        assert_eq!(read(&zeros), None);
        let mut noise = good.clone();
        for (i, b) in noise.iter_mut().enumerate().skip(4) {
            *b = b.wrapping_mul(31).wrapping_add(i as u8);
        }
        let _ = read(&noise);
    }
}
