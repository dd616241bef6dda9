//! Video metadata through nom-exif's track parser (MP4, MOV, MKV/WebM): size, duration,
//! creation time, make/model and GPS; codec, rotation and a Live Photo's ContentIdentifier
//! from `container`. Owns the interpretation of container dates; must not
//! read photo EXIF (that is `photo`).

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
    let source = MediaSource::seekable(file).map_err(|e| format!("video: {e}"))?;
    let info = MediaParser::new()
        .parse_track(source)
        .map_err(|e| format!("video: {e}"))?;
    apply(&info, facts);
    Ok(())
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
        if facts.lat.is_none() || facts.lon.is_none() {
            (facts.lat, facts.lon) = (None, None);
        }
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
