//! Google Takeout JSON (issue 15 item 5): the capture time, place, title and description
//! Takeout writes beside each exported photo, and the naming rule that ties a JSON file to
//! its photo (`photo.jpg.json`, `.supplemental-metadata`, the names Takeout cuts short and
//! the `(1)` counter it moves), both ways (`photo_for_json`, `json_candidates`). Reads only
//! the bytes it is given; must not open files, merge into a photo's facts or decide
//! precedence (`media::beside` does), and must never panic.

use serde::Deserialize;

/// Largest JSON read: a real one is under 2 KiB.
pub const MAX_JSON: usize = 1024 * 1024;
/// Takeout cuts a JSON file's name before `.json` to this many characters (46 in the older
/// exports, 47 in the newer ones): a name this long may be the start of its photo's name.
const CUT_AT: usize = 46;
const SUPPLEMENTAL: &str = ".supplemental-metadata";

/// What one Takeout JSON says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TakeoutFacts {
    /// `photoTakenTime.timestamp`: seconds since the epoch, UTC.
    pub taken_utc: Option<i64>,
    /// `geoData`; Takeout's 0.0/0.0 ("no place") is none.
    pub lat: Option<f64>,
    pub lon: Option<f64>,
    pub title: Option<String>,
    pub description: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum TakeoutError {
    #[error("Takeout JSON is {0} bytes, over the {MAX_JSON} read")]
    TooLarge(usize),
    #[error("Takeout JSON is not an object")]
    NotObject,
    #[error("Takeout JSON does not parse: {0}")]
    Malformed(#[from] serde_json::Error),
    #[error("Takeout JSON timestamp {0:?} is not a time")]
    BadTimestamp(String),
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Raw {
    title: Option<String>,
    description: Option<String>,
    photo_taken_time: Option<Time>,
    geo_data: Option<Geo>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Time {
    timestamp: Option<Stamp>,
}

/// Takeout writes the seconds as a string; a number is taken too.
#[derive(Deserialize)]
#[serde(untagged)]
enum Stamp {
    Text(String),
    Number(i64),
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Geo {
    latitude: Option<f64>,
    longitude: Option<f64>,
}

/// The facts of the Takeout JSON whose whole content is `bytes`. Unknown fields are
/// ignored; a file that is not a JSON object of these fields, or whose timestamp is not a
/// time, is an error.
pub fn parse(bytes: &[u8]) -> Result<TakeoutFacts, TakeoutError> {
    if bytes.len() > MAX_JSON {
        return Err(TakeoutError::TooLarge(bytes.len()));
    }
    // serde reads a struct from an array too: a Takeout file is an object.
    if bytes.trim_ascii_start().first() != Some(&b'{') {
        return Err(TakeoutError::NotObject);
    }
    let raw: Raw = serde_json::from_slice(bytes)?;
    let taken_utc = match raw.photo_taken_time.and_then(|t| t.timestamp) {
        Some(stamp) => Some(seconds(stamp)?),
        None => None,
    };
    let (lat, lon) = raw.geo_data.map_or((None, None), place);
    let text = |t: Option<String>| t.map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
    Ok(TakeoutFacts {
        taken_utc,
        lat,
        lon,
        title: text(raw.title),
        description: text(raw.description),
    })
}

/// A timestamp as seconds, within what a capture time can be (chrono's range).
fn seconds(stamp: Stamp) -> Result<i64, TakeoutError> {
    let (value, shown) = match stamp {
        Stamp::Number(n) => (Some(n), n.to_string()),
        Stamp::Text(t) => (t.trim().parse().ok(), t),
    };
    value
        .filter(|s| chrono::DateTime::from_timestamp(*s, 0).is_some())
        .ok_or(TakeoutError::BadTimestamp(shown))
}

fn place(geo: Geo) -> (Option<f64>, Option<f64>) {
    match (geo.latitude, geo.longitude) {
        (Some(lat), Some(lon))
            if (lat, lon) != (0.0, 0.0) && lat.abs() <= 90.0 && lon.abs() <= 180.0 =>
        {
            (Some(lat), Some(lon))
        }
        _ => (None, None),
    }
}

/// The photo among `siblings` (the names in the JSON's folder) that the Takeout JSON named
/// `json` describes: the exact name if there is one, else the one photo whose name the cut
/// name starts (none when several do).
pub fn photo_for_json<'a>(json: &str, siblings: &[&'a str]) -> Option<&'a str> {
    let target = Target::of(json)?;
    let photos = || siblings.iter().filter(|s| !s.ends_with(".json")).copied();
    if let Some(exact) = photos().find(|p| target.exact(p)) {
        return Some(exact);
    }
    let mut cut = photos().filter(|p| target.starts(p));
    let first = cut.next()?;
    cut.next().is_none().then_some(first)
}

/// The names a Takeout JSON describing the photo named `photo` may have, best first: the
/// inverse of `photo_for_json`, so that a scan reading a photo can look for its JSON among
/// the names of its folder without matching every JSON there against every photo. Each
/// still has to pass `photo_for_json` (a cut name may be another photo's).
pub fn json_candidates(photo: &str) -> Vec<String> {
    let (stem, ext) = photo.rsplit_once('.').unwrap_or((photo, ""));
    let (bare, counter) = split_counter(stem);
    let counter = counter.unwrap_or("");
    let name = if ext.is_empty() {
        bare.to_string()
    } else {
        format!("{bare}.{ext}")
    };
    let mut bases = vec![name.clone(), format!("{name}{SUPPLEMENTAL}")];
    for base in bases.clone() {
        for at in [CUT_AT, CUT_AT + 1] {
            if base.chars().count() > at {
                bases.push(base.chars().take(at).collect());
            }
        }
    }
    // `photo.jp.json`: the extension cut short.
    let cut_ext = ext.char_indices().skip(1).map(|(i, _)| &ext[..i]);
    bases.extend(cut_ext.map(|e| format!("{bare}.{e}")));
    let mut names: Vec<String> = Vec::new();
    for base in bases {
        let json = format!("{base}{counter}.json");
        if !names.contains(&json) {
            names.push(json);
        }
    }
    names
}

/// What a JSON file's name says of its photo's name.
struct Target {
    /// The photo's name without the counter, maybe cut short.
    name: String,
    /// Takeout's `(n)`, moved from the photo's stem to after its extension.
    counter: Option<String>,
    /// Whether `name` may be only the start of the photo's name.
    cut: bool,
}

impl Target {
    fn of(json: &str) -> Option<Target> {
        let base = json.strip_suffix(".json").filter(|b| !b.is_empty())?;
        let cut = base.chars().count() >= CUT_AT;
        let (base, counter) = split_counter(base);
        let name = without_supplemental(base, cut);
        Some(Target {
            name: name.to_string(),
            counter: counter.map(String::from),
            cut,
        })
    }

    /// `photo` with its counter taken out, when the JSON's name has one and `photo` has it.
    fn uncounted(&self, photo: &str) -> Option<String> {
        let Some(counter) = &self.counter else {
            return Some(photo.to_string());
        };
        let (stem, ext) = photo.rsplit_once('.').unwrap_or((photo, ""));
        let stem = stem.strip_suffix(counter.as_str())?;
        Some(if ext.is_empty() {
            stem.to_string()
        } else {
            format!("{stem}.{ext}")
        })
    }

    fn exact(&self, photo: &str) -> bool {
        self.uncounted(photo).is_some_and(|p| p == self.name)
    }

    /// The name cut short: at Takeout's length, or inside the extension (`photo.jp`).
    fn starts(&self, photo: &str) -> bool {
        let Some(photo) = self.uncounted(photo) else {
            return false;
        };
        let Some(rest) = photo.strip_prefix(self.name.as_str()) else {
            return false;
        };
        let in_extension = self.name.contains('.') && !rest.contains('.');
        !rest.is_empty() && (self.cut || in_extension)
    }
}

/// `photo.jpg.supplemental-metadata` → `photo.jpg`, also when the suffix was cut
/// (`photo.jpg.supplemental-met`, only in a name Takeout cut).
fn without_supplemental(base: &str, cut: bool) -> &str {
    if let Some(name) = base.strip_suffix(SUPPLEMENTAL) {
        return name;
    }
    match base.rfind('.') {
        Some(dot)
            if cut
                && base.len() - dot >= 2
                && SUPPLEMENTAL.starts_with(&base[dot..])
                && base[..dot].contains('.') =>
        {
            &base[..dot]
        }
        _ => base,
    }
}

/// `name(3)` → (`name`, `(3)`).
fn split_counter(base: &str) -> (&str, Option<&str>) {
    let Some(open) = base.strip_suffix(')').and_then(|b| b.rfind('(')) else {
        return (base, None);
    };
    let digits = &base[open + 1..base.len() - 1];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return (base, None);
    }
    (&base[..open], Some(&base[open..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The newer export's shape (the corpus's image_7731.jpg.supplemental-metadata.json).
    const NEWER: &str = r#"{
  "title": "image_7731.jpg",
  "description": "",
  "imageViews": "24",
  "creationTime": {"timestamp": "1686476402", "formatted": "Jun 11, 2023, 9:40:02\u202fAM UTC"},
  "photoTakenTime": {"timestamp": "1686456916", "formatted": "Jun 11, 2023, 4:15:16\u202fAM UTC"},
  "geoData": {"latitude": -33.856784, "longitude": 151.215297, "altitude": 4.0,
              "latitudeSpan": 0.0, "longitudeSpan": 0.0},
  "geoDataExif": {"latitude": 0.0, "longitude": 0.0, "altitude": 0.0},
  "people": [{"name": "Alice"}],
  "googlePhotosOrigin": {"mobileUpload": {"deviceType": "ANDROID_PHONE"}}
}"#;

    #[test]
    fn a_takeout_json_s_facts() {
        let f = parse(NEWER.as_bytes()).unwrap();
        assert_eq!(f.taken_utc, Some(1_686_456_916));
        assert_eq!((f.lat, f.lon), (Some(-33.856784), Some(151.215297)));
        assert_eq!(f.title.as_deref(), Some("image_7731.jpg"));
        assert_eq!(f.description, None);

        let older = r#"{"title":"IMG_4821.JPG","description":" Lake at dawn ",
            "photoTakenTime":{"timestamp":1555000000},"geoData":{"latitude":0.0,"longitude":0.0}}"#;
        let f = parse(older.as_bytes()).unwrap();
        assert_eq!(f.taken_utc, Some(1_555_000_000));
        assert_eq!((f.lat, f.lon), (None, None));
        assert_eq!(f.description.as_deref(), Some("Lake at dawn"));
        assert_eq!(parse(b"{}").unwrap(), TakeoutFacts::default());
        let off_globe = r#"{"geoData":{"latitude":91.0,"longitude":2.0}}"#;
        assert_eq!(parse(off_globe.as_bytes()).unwrap().lat, None);
    }

    #[test]
    fn a_malformed_json_is_an_error() {
        for bad in [
            "",
            "[]",
            "{\"title\": 3}",
            "{\"photoTakenTime\": {\"timestamp\": \"yesterday\"}}",
            "{\"photoTakenTime\": {\"timestamp\": \"99999999999999999\"}}",
            "{\"geoData\": {\"latitude\": \"north\"}}",
            "\u{1}",
        ] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad:?}");
        }
        assert!(matches!(
            parse(br#"{"photoTakenTime":{"timestamp":"soon"}}"#),
            Err(TakeoutError::BadTimestamp(t)) if t == "soon"
        ));
        for end in 0..NEWER.len() {
            if let Some(cut) = NEWER.get(..end) {
                let _ = parse(cut.as_bytes());
            }
        }
        assert!(parse(&vec![b' '; MAX_JSON + 1]).is_err());
    }

    /// Names as Takeout writes them (from exports reported in immich-go and
    /// google-photos-takeout-helper issues), and the photo each belongs to.
    #[test]
    fn which_photo_a_json_describes() {
        let long = "Screenshot_20190614-123456_Instagram_edited_big.jpg"; // 51 characters
        let folder = [
            "IMG_4821.JPG",
            "image_7731.jpg",
            "photo.jpg",
            "photo(1).jpg",
            "original_2f1a9c6e-77b0-4a39-9bd1-8e1c1f6a2b3c_.jpg",
            long,
            "PXL_20230812_101530123.MP.jpg",
            "PXL_20230812_101530123.MP.jpg.json",
            "IMG_20210101_120000_HDR_some_long_suffix_here.jpg",
            "photo.heic",
            "photo.mp4",
        ];
        for (json, photo) in [
            ("IMG_4821.JPG.json", Some("IMG_4821.JPG")),
            (
                "image_7731.jpg.supplemental-metadata.json",
                Some("image_7731.jpg"),
            ),
            ("photo.jpg.json", Some("photo.jpg")),
            ("photo.jpg(1).json", Some("photo(1).jpg")),
            (
                "photo.jpg.supplemental-metadata(1).json",
                Some("photo(1).jpg"),
            ),
            ("photo.jp.json", Some("photo.jpg")),
            ("photo.he.json", Some("photo.heic")),
            // The whole name cut to 46 characters before `.json`.
            (
                "original_2f1a9c6e-77b0-4a39-9bd1-8e1c1f6a2b3c_.json",
                Some(folder[4]),
            ),
            (
                "Screenshot_20190614-123456_Instagram_edited_bi.json",
                Some(long),
            ),
            // A long name whose `.supplemental-metadata` was cut.
            (
                "PXL_20230812_101530123.MP.jpg.supplemental-met.json",
                Some(folder[6]),
            ),
            (
                "IMG_20210101_120000_HDR_some_long_suffix_here.j.json",
                Some(folder[8]),
            ),
            // Not cut, not there, or ambiguous: no photo.
            ("photo.json", None),
            ("photo.j.json", Some("photo.jpg")),
            ("photo(2).jpg.json", None),
            ("photo.jpg(2).json", None),
            ("IMG_482.json", None),
            ("other.jpg.json", None),
            (".json", None),
            ("IMG_4821.JPG", None),
        ] {
            assert_eq!(photo_for_json(json, &folder), photo, "{json}");
        }
    }

    #[test]
    fn an_exact_name_wins_and_only_a_number_in_brackets_is_a_counter() {
        // The exact name wins over a photo it is the start of.
        let both = ["photo.jp", "photo.jpg"];
        assert_eq!(photo_for_json("photo.jp.json", &both), Some("photo.jp"));
        assert_eq!(split_counter("a(12)"), ("a", Some("(12)")));
        assert_eq!(split_counter("a()"), ("a()", None));
        assert_eq!(split_counter("a(x)"), ("a(x)", None));
    }

    #[test]
    fn a_photo_s_json_is_among_its_candidates() {
        let long = "Screenshot_20190614-123456_Instagram_edited_big.jpg";
        for (json, photo) in [
            ("IMG_4821.JPG.json", "IMG_4821.JPG"),
            (
                "image_7731.jpg.supplemental-metadata.json",
                "image_7731.jpg",
            ),
            ("photo.jpg(1).json", "photo(1).jpg"),
            ("photo.jpg.supplemental-metadata(1).json", "photo(1).jpg"),
            ("photo.jp.json", "photo.jpg"),
            ("photo.he.json", "photo.heic"),
            ("Screenshot_20190614-123456_Instagram_edited_bi.json", long),
            (
                "PXL_20230812_101530123.MP.jpg.supplemental-met.json",
                "PXL_20230812_101530123.MP.jpg",
            ),
            (
                "IMG_20210101_120000_HDR_some_long_suffix_here.j.json",
                "IMG_20210101_120000_HDR_some_long_suffix_here.jpg",
            ),
        ] {
            let names = json_candidates(photo);
            assert!(
                names.iter().any(|n| n == json),
                "{photo}: {json} not in {names:?}"
            );
            assert_eq!(photo_for_json(json, &[photo]), Some(photo), "{json}");
        }
        assert_eq!(
            json_candidates("a.jpg")[..2],
            ["a.jpg.json", "a.jpg.supplemental-metadata.json"]
        );
        assert!(!json_candidates("a.jpg").contains(&"a.json".to_string()));
    }
}
