//! Pure value rules shared by the photo and video readers: capture-date strings, UTC offsets,
//! GPS degrees, orientation and display size, camera text. Owns no I/O and must not touch a
//! parser crate, so every rule here is unit-tested on plain values.

/// Parses an EXIF-style date `YYYY:MM:DD HH:MM:SS` (also `-` or `T` separated, trailing
/// zone or fraction ignored) into `YYYY-MM-DDTHH:MM:SS`. Zero or blank dates are no date.
pub fn exif_date(text: &str) -> Option<String> {
    let t = clean_text(text)?;
    let b = t.as_bytes();
    if b.len() < 19 {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<u32> {
        let s = t.get(range)?;
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let seps_ok = matches!(b[4], b':' | b'-')
        && matches!(b[7], b':' | b'-')
        && matches!(b[10], b' ' | b'T')
        && b[13] == b':'
        && b[16] == b':';
    let valid = y > 0 && (1..=12).contains(&mo) && (1..=31).contains(&d);
    (seps_ok && valid && h < 24 && mi < 60 && s < 61)
        .then(|| format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}"))
}

/// Appends EXIF SubSecTime digits (`"999"` → `.999`) to a parsed date; other text is ignored.
pub fn with_subsec(date: String, subsec: Option<&str>) -> String {
    let digits = subsec
        .and_then(clean_text)
        .filter(|s| s.bytes().all(|c| c.is_ascii_digit()));
    match digits {
        Some(d) => format!("{date}.{d}"),
        None => date,
    }
}

/// Parses an EXIF OffsetTime value (`+02:00`, `-0830`, `Z`) into minutes east of UTC.
pub fn utc_offset_minutes(text: &str) -> Option<i32> {
    let t = clean_text(text)?;
    if t == "Z" {
        return Some(0);
    }
    let (sign, rest) = match t.as_bytes().first()? {
        b'+' => (1, &t[1..]),
        b'-' => (-1, &t[1..]),
        _ => return None,
    };
    let digits: String = rest.chars().filter(|c| *c != ':').collect();
    if digits.len() != 4 || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let (h, m): (i32, i32) = (digits[..2].parse().ok()?, digits[2..].parse().ok()?);
    (h <= 14 && m < 60).then_some(sign * (h * 60 + m))
}

/// Degrees + minutes + seconds and a hemisphere reference (`N`/`S`/`E`/`W`) to signed
/// decimal degrees; `limit` is 90 for latitude and 180 for longitude. Out of range → `None`.
pub fn gps_degrees(dms: [f64; 3], reference: Option<&str>, limit: f64) -> Option<f64> {
    if dms.iter().any(|v| !v.is_finite() || *v < 0.0) {
        return None;
    }
    let magnitude = dms[0] + dms[1] / 60.0 + dms[2] / 3600.0;
    let sign = match reference.and_then(clean_text).as_deref() {
        Some("S" | "s" | "W" | "w") => -1.0,
        _ => 1.0,
    };
    (magnitude <= limit).then_some(sign * magnitude)
}

/// A place from a latitude and a longitude: both or neither, and 0,0 (where a camera
/// without a fix writes zeros) is none.
pub fn place(lat: Option<f64>, lon: Option<f64>) -> (Option<f64>, Option<f64>) {
    match (lat, lon) {
        (Some(lat), Some(lon)) if (lat, lon) != (0.0, 0.0) => (Some(lat), Some(lon)),
        _ => (None, None),
    }
}

/// EXIF orientation, kept only when it is one of the eight defined values.
pub fn orientation(value: u32) -> Option<u16> {
    (1..=8).contains(&value).then_some(value as u16)
}

/// Displayed size for a stored size: orientations 5..=8 transpose the picture.
pub fn display_size(width: u32, height: u32, orientation: Option<u16>) -> (u32, u32) {
    match orientation {
        Some(5..=8) => (height, width),
        _ => (width, height),
    }
}

/// Camera text as written: NULs and surrounding whitespace stripped, empty → `None`.
pub fn clean_text(text: &str) -> Option<String> {
    let t = text.trim_matches(|c: char| c == '\0' || c.is_whitespace());
    let t = t.split('\0').next().unwrap_or_default().trim();
    (!t.is_empty()).then(|| t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_parse_and_zero_or_blank_is_none() {
        let d = exif_date("2020:02:29 23:59:59");
        assert_eq!(d.as_deref(), Some("2020-02-29T23:59:59"));
        assert_eq!(
            exif_date("2019-08-18T14:29:31+02:00").as_deref(),
            Some("2019-08-18T14:29:31")
        );
        assert_eq!(exif_date("0000:00:00 00:00:00"), None);
        assert_eq!(exif_date("    :  :     :  :  "), None);
        assert_eq!(exif_date(""), None);
        assert_eq!(exif_date("2020:13:01 00:00:00"), None);
        assert_eq!(
            exif_date("2020:01:01 00:00:00\0"),
            Some("2020-01-01T00:00:00".into())
        );
    }

    #[test]
    fn subseconds_are_appended_only_when_digits() {
        assert_eq!(
            with_subsec("2020-02-29T23:59:59".into(), Some("999")),
            "2020-02-29T23:59:59.999"
        );
        assert_eq!(
            with_subsec("2020-02-29T23:59:59".into(), Some(" ")),
            "2020-02-29T23:59:59"
        );
        assert_eq!(
            with_subsec("2020-02-29T23:59:59".into(), None),
            "2020-02-29T23:59:59"
        );
    }

    #[test]
    fn offsets_parse() {
        assert_eq!(utc_offset_minutes("+02:00"), Some(120));
        assert_eq!(utc_offset_minutes("-08:00"), Some(-480));
        assert_eq!(utc_offset_minutes("+0530"), Some(330));
        assert_eq!(utc_offset_minutes("Z"), Some(0));
        assert_eq!(utc_offset_minutes("   :  "), None);
        assert_eq!(utc_offset_minutes("+25:00"), None);
    }

    #[test]
    fn gps_is_signed_and_range_checked() {
        let lat = gps_degrees([48.0, 51.0, 29.64], Some("N"), 90.0).unwrap();
        assert!((lat - 48.8582333).abs() < 1e-6);
        let lon = gps_degrees([73.0, 58.0, 0.0], Some("W"), 180.0).unwrap();
        assert!((lon + 73.9666667).abs() < 1e-6);
        assert_eq!(gps_degrees([0.0, 0.0, 0.0], Some("N"), 90.0), Some(0.0));
        assert_eq!(place(Some(0.0), Some(0.0)), (None, None));
        assert_eq!(place(Some(0.0), Some(2.5)), (Some(0.0), Some(2.5)));
        assert_eq!(place(Some(1.0), None), (None, None));
        assert_eq!(gps_degrees([91.0, 0.0, 0.0], Some("N"), 90.0), None);
        assert_eq!(gps_degrees([f64::NAN, 0.0, 0.0], Some("S"), 90.0), None);
    }

    #[test]
    fn orientation_swaps_display_size_for_5_to_8() {
        assert_eq!(orientation(0), None);
        assert_eq!(orientation(9), None);
        assert_eq!(display_size(4000, 3000, Some(6)), (3000, 4000));
        assert_eq!(display_size(4000, 3000, Some(3)), (4000, 3000));
        assert_eq!(display_size(4000, 3000, None), (4000, 3000));
    }

    #[test]
    fn camera_text_is_trimmed() {
        assert_eq!(clean_text("Canon\0\0\0").as_deref(), Some("Canon"));
        assert_eq!(clean_text("  NIKON D750  ").as_deref(), Some("NIKON D750"));
        assert_eq!(clean_text("\0 \0"), None);
    }
}
