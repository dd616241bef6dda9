//! A capture date in a file's name, as phones and apps write it (`IMG_20190305_131457`,
//! `PXL_20210704_093012345`, `Screenshot_2022-01-15-10-20-30`, `signal-2023-02-01-123456`,
//! WhatsApp's date-only `IMG-20190305-WA0001`, `2019-03-05 13.14.57`). A pure parser: a name
//! in, a local wall time out; must not look at the file, the clock or anything else.

use chrono::{NaiveDate, NaiveTime, Timelike};

/// Years outside this are a clock that was never set (1970) or digits that are no date; 1971
/// is the video reader's first plausible year too.
const YEARS: std::ops::RangeInclusive<i32> = 1971..=2099;

/// The wall time named in `name`, `YYYY-MM-DDTHH:MM:SS[.fff]`, or `None`. A name carrying
/// only a day (WhatsApp's `IMG-20190305-WA0001`) gives that day's midnight. An offset in the
/// name is not read: the date is a local wall time.
pub fn date_in_name(name: &str) -> Option<String> {
    let b = name.as_bytes();
    (0..b.len())
        .filter(|&i| b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_digit()))
        .find_map(|i| date_at(b, i))
}

/// The length of the run of digits starting at `i`.
fn run(b: &[u8], i: usize) -> usize {
    b.get(i..)
        .map_or(0, |t| t.iter().take_while(|c| c.is_ascii_digit()).count())
}

/// The number in `b[i..i + len]` (digits only, checked by the caller).
fn num(b: &[u8], i: usize, len: usize) -> u32 {
    b[i..i + len]
        .iter()
        .fold(0, |n, c| n * 10 + u32::from(c - b'0'))
}

/// A date starting at the digit run at `i`, with its time when one follows.
fn date_at(b: &[u8], i: usize) -> Option<String> {
    let (day, end) = day_at(b, i)?;
    // Only the 14-digit run goes on in digits after its day: `YYYYMMDDHHMMSS`.
    let time = match run(b, end) {
        6 => Some(clock(b, end, 6)?),
        _ => time_after(b, end)?,
    };
    let time = time.unwrap_or(NaiveTime::MIN);
    let mut text = day.and_time(time).format("%Y-%m-%dT%H:%M:%S").to_string();
    let millis = time.nanosecond() / 1_000_000;
    if millis > 0 {
        text.push_str(&format!(".{millis:03}"));
    }
    Some(text)
}

/// `YYYYMMDD` (a run of exactly 8 digits, or 14 with the time) or `YYYY-MM-DD` with one
/// separator of `-`, `_` or `.` throughout. Returns the day and where it ends.
fn day_at(b: &[u8], i: usize) -> Option<(NaiveDate, usize)> {
    let (y, m, d, end) = match run(b, i) {
        8 | 14 => (num(b, i, 4), num(b, i + 4, 2), num(b, i + 6, 2), i + 8),
        4 => {
            let sep = *b.get(i + 4).filter(|c| b"-_.".contains(c))?;
            let two = |at: usize| (run(b, at) == 2).then(|| num(b, at, 2));
            let m = two(i + 5)?;
            (b.get(i + 7) == Some(&sep)).then_some(())?;
            (num(b, i, 4), m, two(i + 8)?, i + 10)
        }
        _ => return None,
    };
    let year = i32::try_from(y).ok().filter(|y| YEARS.contains(y))?;
    Some((NaiveDate::from_ymd_opt(year, m, d)?, end))
}

/// A time after the day at `j`: a separator (`_`, `-`, ` `, `T`), then `HHMMSS`, `HHMMSSmmm`
/// or `HH?MM?SS` with one separator of `-`, `.`, `:` or `_`. `Some(None)`: nothing shaped
/// like a time follows (the day alone counts); `None`: a time is there but impossible (hour
/// 25), which refuses the whole date.
fn time_after(b: &[u8], j: usize) -> Option<Option<NaiveTime>> {
    if !b.get(j).is_some_and(|c| b"_- T".contains(c)) {
        return Some(None);
    }
    let k = j + 1;
    match run(b, k) {
        len @ (6 | 9) => clock(b, k, len).map(Some),
        2 => separated_clock(b, k),
        _ => Some(None),
    }
}

/// `HHMMSS` or `HHMMSSmmm` at `k`; `None` when impossible.
fn clock(b: &[u8], k: usize, len: usize) -> Option<NaiveTime> {
    let millis = if len == 9 { num(b, k + 6, 3) } else { 0 };
    NaiveTime::from_hms_milli_opt(num(b, k, 2), num(b, k + 2, 2), num(b, k + 4, 2), millis)
}

/// `HH?MM?SS` at `k` with one separator throughout, as `time_after` answers.
fn separated_clock(b: &[u8], k: usize) -> Option<Option<NaiveTime>> {
    let shaped = b
        .get(k + 2)
        .filter(|c| b"-.:_".contains(c))
        .is_some_and(|&sep| run(b, k + 3) == 2 && b.get(k + 5) == Some(&sep) && run(b, k + 6) == 2);
    if !shaped {
        return Some(None);
    }
    NaiveTime::from_hms_opt(num(b, k, 2), num(b, k + 3, 2), num(b, k + 6, 2)).map(Some)
}

#[cfg(test)]
mod tests {
    use super::date_in_name;

    #[test]
    fn the_names_phones_and_apps_write_give_their_wall_time() {
        let accepted = [
            ("IMG_20190305_131457.jpg", "2019-03-05T13:14:57"),
            ("VID_20190305_131457.mp4", "2019-03-05T13:14:57"),
            ("MVIMG_20190305_131457.jpg", "2019-03-05T13:14:57"),
            ("IMG_20190305_131457_1.jpg", "2019-03-05T13:14:57"),
            ("PXL_20210704_093012345.jpg", "2021-07-04T09:30:12.345"),
            ("PXL_20210704_093012345.MP.jpg", "2021-07-04T09:30:12.345"),
            ("Screenshot_2022-01-15-10-20-30.png", "2022-01-15T10:20:30"),
            ("Screenshot_20220115-102030.png", "2022-01-15T10:20:30"),
            ("signal-2023-02-01-123456.jpg", "2023-02-01T12:34:56"),
            ("IMG-20190305-WA0001.jpg", "2019-03-05T00:00:00"),
            ("VID-20190305-WA0002.mp4", "2019-03-05T00:00:00"),
            ("2019-03-05 13.14.57.jpg", "2019-03-05T13:14:57"),
            ("20190305_131457.jpg", "2019-03-05T13:14:57"),
            ("20190305131457.jpg", "2019-03-05T13:14:57"),
            ("holiday 2019-03-05.jpg", "2019-03-05T00:00:00"),
            ("2024-02-29 23.59.59.png", "2024-02-29T23:59:59"),
        ];
        for (name, want) in accepted {
            assert_eq!(date_in_name(name).as_deref(), Some(want), "{name}");
        }
    }

    #[test]
    fn implausible_dates_and_names_without_one_are_refused() {
        let refused = [
            "IMG_19700101_000000.jpg", // the epoch: a clock that was never set
            "IMG_30000101_120000.jpg", // year 3000
            "IMG_20191305_131457.jpg", // month 13
            "IMG_20190230_131457.jpg", // 30 February
            "IMG_20190305_251457.jpg", // hour 25
            "IMG_20190305_136057.jpg", // minute 60
            "IMG_20190305_131460.jpg", // second 60
            "IMG_0001.jpg",
            "DSC01234.JPG",
            "IMG_201903051.jpg",      // nine digits: not a date
            "12020190305_131457.jpg", // the date inside a longer number
            "2019-03-0513.14.57.jpg",
            "photo.jpg",
            "",
            "IMG_2019-03_05_131457.jpg", // mixed separators
        ];
        for name in refused {
            assert_eq!(date_in_name(name), None, "{name}");
        }
    }

    #[test]
    fn an_offset_in_the_name_is_not_read_the_wall_time_stays() {
        assert_eq!(
            date_in_name("2019-03-05T13:14:57+02:00.jpg").as_deref(),
            Some("2019-03-05T13:14:57")
        );
    }
}
