//! The last links of the capture-date chain (issue 15 item 6): exif, xmp, sidecar, takeout
//! and quicktime are read by the extractors and the scan; a picture or video none of them
//! dated gets the date in its name, else its modification time. Pure: a name and an mtime in,
//! must not stat or open anything itself.

use super::filename_date::date_in_name;
use crate::model::{MediaFacts, MediaKind, TakenAtSource};
use chrono::DateTime;

/// An mtime before this year is a clock that was never set, not a capture date.
const FIRST_PLAUSIBLE_YEAR: i32 = 1971;

/// Dates an undated picture or video of file name `name` modified at `mtime_ns` (ns since the
/// epoch): the name's date as local wall time (no offset), else the mtime in UTC (offset 0,
/// which it truly is). A file that already has a date, or is no media, is left alone.
pub fn fill_undated(facts: &mut MediaFacts, name: &str, mtime_ns: i64) {
    let media = matches!(facts.kind, Some(MediaKind::Image | MediaKind::Video));
    if !media || facts.taken_local.is_some() {
        return;
    }
    if let Some(local) = date_in_name(name) {
        facts.taken_local = Some(local);
        facts.taken_offset_minutes = None;
        facts.taken_at_source = Some(TakenAtSource::Filename);
    } else if let Some(utc) = mtime_utc(mtime_ns) {
        facts.taken_local = Some(utc);
        facts.taken_offset_minutes = Some(0);
        facts.taken_at_source = Some(TakenAtSource::Mtime);
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.fff]` in UTC, or `None` for an implausible time.
fn mtime_utc(mtime_ns: i64) -> Option<String> {
    let when = DateTime::from_timestamp_nanos(mtime_ns);
    if chrono::Datelike::year(&when) < FIRST_PLAUSIBLE_YEAR {
        return None;
    }
    let mut text = when.format("%Y-%m-%dT%H:%M:%S").to_string();
    let millis = when.timestamp_subsec_millis();
    if millis > 0 {
        text.push_str(&format!(".{millis:03}"));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image() -> MediaFacts {
        MediaFacts {
            kind: Some(MediaKind::Image),
            ..MediaFacts::default()
        }
    }

    #[test]
    fn the_name_comes_before_the_mtime_and_a_date_already_read_stays() {
        let mut f = image();
        fill_undated(&mut f, "IMG_20190305_131457.jpg", 1_622_548_800_000_000_000);
        assert_eq!(f.taken_at().as_deref(), Some("2019-03-05T13:14:57"));
        assert_eq!(f.taken_at_source, Some(TakenAtSource::Filename));

        let mut f = image();
        fill_undated(&mut f, "plain.jpg", 1_622_548_800_250_000_000);
        assert_eq!(
            f.taken_at().as_deref(),
            Some("2021-06-01T12:00:00.250+00:00")
        );
        assert_eq!(f.taken_at_source, Some(TakenAtSource::Mtime));

        let mut f = image();
        f.taken_local = Some("2001-01-01T00:00:00".into());
        f.taken_at_source = Some(TakenAtSource::Exif);
        fill_undated(&mut f, "IMG_20190305_131457.jpg", 1_622_548_800_000_000_000);
        assert_eq!(f.taken_local.as_deref(), Some("2001-01-01T00:00:00"));
        assert_eq!(f.taken_at_source, Some(TakenAtSource::Exif));
    }

    #[test]
    fn no_media_and_an_unset_clock_get_no_date() {
        let mut f = MediaFacts {
            kind: Some(MediaKind::Other),
            ..MediaFacts::default()
        };
        fill_undated(&mut f, "IMG_20190305_131457.txt", 1_622_548_800_000_000_000);
        assert_eq!((f.taken_local, f.taken_at_source), (None, None));

        let mut f = image();
        fill_undated(&mut f, "plain.jpg", 0);
        assert_eq!((f.taken_local, f.taken_at_source), (None, None));
    }
}
