//! Video metadata through nom-exif's track parser (MP4, MOV, MKV/WebM): size, duration,
//! creation time, make/model and GPS; codec, rotation and a Live Photo's ContentIdentifier
//! from `container`. A classic QuickTime file without `ftyp`, which nom-exif refuses, is
//! shown to it behind a synthetic `ftyp qt` box (`WithFtyp`). Owns the interpretation of
//! container dates; must not read photo EXIF (that is `photo`).

use super::container;
use super::values::{clean_text, gps_degrees};
use crate::model::{MediaFacts, TakenAtSource};
use chrono::{DateTime, Datelike, FixedOffset};
use nom_exif::{EntryValue, MediaParser, MediaSource, TrackInfo, TrackInfoTag};
use std::io::{Read, Seek, SeekFrom};

/// Container creation times before this year are the zero/epoch placeholder, not a date.
const FIRST_PLAUSIBLE_YEAR: i32 = 1971;

pub fn read_track<R: Read + Seek>(mut file: R, facts: &mut MediaFacts) -> Result<(), String> {
    let track = container::video_track(&mut file).unwrap_or_default();
    facts.video_codec = track.codec;
    facts.content_identifier =
        container::content_identifier(&mut file).and_then(|id| super::motion::identifier(&id));
    let outcome = read_nom_exif(file, facts);
    if let (Some(w), Some(h)) = (facts.width, facts.height) {
        let (dw, dh) = match track.rotation {
            90 | 270 => (h, w),
            _ => (w, h),
        };
        (facts.display_width, facts.display_height) = (Some(dw), Some(dh));
    }
    outcome
}

fn read_nom_exif<R: Read + Seek>(mut file: R, facts: &mut MediaFacts) -> Result<(), String> {
    file.seek(SeekFrom::Start(0))
        .map_err(|e| format!("video: {e}"))?;
    let mut head = Vec::with_capacity(super::HEAD_LEN);
    (&mut file)
        .take(super::HEAD_LEN as u64)
        .read_to_end(&mut head)
        .map_err(|e| format!("video: {e}"))?;
    let info = if super::sniff::classic_quicktime(&head) {
        parse_track(WithFtyp::new(file).map_err(|e| format!("video: {e}"))?)
    } else {
        file.seek(SeekFrom::Start(0))
            .map_err(|e| format!("video: {e}"))?;
        parse_track(file)
    }?;
    apply(&info, facts);
    Ok(())
}

fn parse_track<R: Read + Seek>(file: R) -> Result<TrackInfo, String> {
    let source = MediaSource::seekable(file).map_err(|e| format!("video: {e}"))?;
    MediaParser::new()
        .parse_track(source)
        .map_err(|e| format!("video: {e}"))
}

/// `ftyp` (20 bytes), major brand `qt  `, minor version 0, compatible brand `qt  `.
const QT_FTYP: &[u8; 20] = b"\0\0\0\x14ftypqt  \0\0\0\0qt  ";

/// A QuickTime file seen with `QT_FTYP` before its first byte: what a QuickTime file since
/// 2008 starts with, and all nom-exif needs to read one that has none (its atoms are the
/// same; nothing in `moov` points at absolute offsets nom-exif follows). std's `Read::chain`
/// cannot seek, which nom-exif needs.
struct WithFtyp<R> {
    inner: R,
    /// Position in the synthetic file; `inner` is kept at `pos - 20` (or 0 within the box).
    pos: u64,
}

impl<R: Seek> WithFtyp<R> {
    fn new(mut inner: R) -> std::io::Result<Self> {
        inner.seek(SeekFrom::Start(0))?;
        Ok(Self { inner, pos: 0 })
    }
}

const FTYP_LEN: u64 = QT_FTYP.len() as u64;

impl<R: Read> Read for WithFtyp<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = if self.pos < FTYP_LEN {
            let rest = &QT_FTYP[self.pos as usize..];
            let n = rest.len().min(buf.len());
            buf[..n].copy_from_slice(&rest[..n]);
            n
        } else {
            self.inner.read(buf)?
        };
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: Seek> Seek for WithFtyp<R> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        let target = match to {
            SeekFrom::Start(at) => Some(at),
            SeekFrom::Current(by) => self.pos.checked_add_signed(by),
            SeekFrom::End(by) => {
                let len = self.inner.seek(SeekFrom::End(0))?;
                (len + FTYP_LEN).checked_add_signed(by)
            }
        };
        let target = target.ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "seek before the start")
        })?;
        self.inner
            .seek(SeekFrom::Start(target.saturating_sub(FTYP_LEN)))?;
        self.pos = target;
        Ok(target)
    }
}

fn apply(info: &TrackInfo, facts: &mut MediaFacts) {
    let num = |tag| info.get(tag).and_then(EntryValue::try_as_integer);
    facts.width = num(TrackInfoTag::Width).and_then(positive_u32);
    facts.height = num(TrackInfoTag::Height).and_then(positive_u32);
    facts.duration_ms = num(TrackInfoTag::DurationMs).filter(|d| *d > 0);
    let text = |tag| {
        info.get(tag)
            .and_then(EntryValue::as_str)
            .and_then(clean_text)
    };
    facts.make = text(TrackInfoTag::Make);
    facts.model = text(TrackInfoTag::Model);
    if let Some(EntryValue::DateTime(when)) = info.get(TrackInfoTag::CreateDate) {
        apply_date(when, facts);
    }
    if let Some(gps) = info.gps_info() {
        let dms = |l: &nom_exif::LatLng| {
            let f = |r: nom_exif::URational| r.to_f64().unwrap_or(f64::NAN);
            [f(l.degrees), f(l.minutes), f(l.seconds)]
        };
        let lat_ref = gps.latitude_ref.as_char().to_string();
        let lon_ref = gps.longitude_ref.as_char().to_string();
        facts.lat = gps_degrees(dms(&gps.latitude), Some(&lat_ref), 90.0);
        facts.lon = gps_degrees(dms(&gps.longitude), Some(&lon_ref), 180.0);
        (facts.lat, facts.lon) = super::values::place(facts.lat, facts.lon);
    }
}

/// Dates a still-image file that also holds a movie (an image sequence, an animated AVIF)
/// by its movie header's creation time, as a video is dated.
pub fn date_by_movie_header<R: Read + Seek>(file: &mut R, facts: &mut MediaFacts) {
    let when = container::movie_created(file).and_then(|secs| DateTime::from_timestamp(secs, 0));
    if let Some(when) = when {
        apply_date(&when.fixed_offset(), facts);
    }
}

/// A container time with its offset: Apple's `creationdate` carries the local offset, the
/// mvhd/Matroska times are UTC (offset 0). Either way the wall time is the offset's.
pub fn apply_date(when: &DateTime<FixedOffset>, facts: &mut MediaFacts) {
    if when.year() < FIRST_PLAUSIBLE_YEAR {
        return;
    }
    let local = when.naive_local();
    let mut text = local.format("%Y-%m-%dT%H:%M:%S").to_string();
    let millis = local.and_utc().timestamp_subsec_millis();
    if millis > 0 {
        text.push_str(&format!(".{millis:03}"));
    }
    facts.taken_local = Some(text);
    facts.taken_offset_minutes = Some(when.offset().local_minus_utc() / 60);
    facts.taken_at_source = Some(TakenAtSource::Quicktime);
}

fn positive_u32(v: i64) -> Option<u32> {
    u32::try_from(v).ok().filter(|v| *v > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The synthetic box and the file behind it read as one file, from any seek.
    #[test]
    fn with_ftyp_reads_and_seeks_as_one_file() {
        use std::io::Cursor;
        let file: Vec<u8> = (0..100u8).collect();
        let whole = [&QT_FTYP[..], &file].concat();
        let mut r = WithFtyp::new(Cursor::new(&file)).unwrap();
        let mut all = Vec::new();
        r.read_to_end(&mut all).unwrap();
        assert_eq!(all, whole);
        for (to, at) in [
            (SeekFrom::Start(3), 3),
            (SeekFrom::Start(25), 25),
            (SeekFrom::End(-90), 30),
            (SeekFrom::End(-115), 5),
            (SeekFrom::Current(-1), 4),
        ] {
            assert_eq!(r.seek(to).unwrap(), at);
            let mut rest = Vec::new();
            (&mut r).take(30).read_to_end(&mut rest).unwrap();
            assert_eq!(
                rest,
                whole[at as usize..(at as usize + 30).min(120)],
                "{to:?}"
            );
            r.seek(SeekFrom::Start(at)).unwrap();
        }
        assert!(r.seek(SeekFrom::Current(-10)).is_err());
        assert_eq!(r.seek(SeekFrom::End(0)).unwrap(), 120);
        assert_eq!(r.read(&mut [0; 8]).unwrap(), 0);
    }

    #[test]
    fn container_dates_keep_their_offset_and_drop_the_epoch() {
        let mut f = MediaFacts::default();
        let apple = DateTime::parse_from_rfc3339("2022-06-01T10:11:12+02:00").unwrap();
        apply_date(&apple, &mut f);
        assert_eq!(f.taken_local.as_deref(), Some("2022-06-01T10:11:12"));
        assert_eq!(f.taken_offset_minutes, Some(120));

        let mut f = MediaFacts::default();
        let epoch = DateTime::parse_from_rfc3339("1904-01-01T00:00:00Z").unwrap();
        apply_date(&epoch, &mut f);
        assert_eq!((f.taken_local, f.taken_offset_minutes), (None, None));
    }
}
