//! XMP sidecar files (issue 15 item 4): the facts of a `photo.ext.xmp` / `photo.xmp` file
//! that darktable, digiKam, Lightroom or Capture One wrote beside a photo (rating, tags,
//! title, description, capture date, GPS), and the naming rule that finds a photo's
//! sidecar. Reads only the bytes it is given, through `xmp`'s property reader (no second XML
//! reader); must not open files (the scan finds and reads them), merge into a photo's facts
//! or decide precedence (`media::beside` does), and must never panic on what it reads.

use super::values::{clean_text, gps_degrees};
use super::xmp::{self, capture_date};

/// Largest sidecar read: a real one is a few KiB; anything this big is not a sidecar.
pub const MAX_SIDECAR: usize = 4 * 1024 * 1024;
/// Items of one bag read (a tag list longer than this is cut).
const MAX_ITEMS: usize = 1024;

/// What one sidecar says. Every field is optional: a sidecar may carry only a rating.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SidecarFacts {
    /// `xmp:Rating`: -1 (rejected) to 5.
    pub rating: Option<i8>,
    /// `dc:subject` then `lr:hierarchicalSubject`, each once, in the order written.
    pub tags: Vec<String>,
    pub title: Option<String>,
    pub description: Option<String>,
    /// Capture time as written, `YYYY-MM-DDTHH:MM:SS[.fff]` local wall time.
    pub taken_local: Option<String>,
    pub taken_offset_minutes: Option<i32>,
    pub lat: Option<f64>,
    pub lon: Option<f64>,
}

/// Why a file is not a readable sidecar: the file's own problem, never its photo's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SidecarError {
    #[error("sidecar is {0} bytes, over the {MAX_SIDECAR} read")]
    TooLarge(usize),
    #[error("sidecar is not UTF-8 text")]
    NotText,
    #[error("sidecar has no XMP packet (no rdf:RDF)")]
    NotXmp,
    #[error("sidecar is cut short (no closing </rdf:RDF>)")]
    Truncated,
}

/// The facts of the sidecar whose whole content is `bytes`. A field whose value does not
/// parse (a rating of 9, a latitude of `north`) is left out; only a file that is not an
/// XMP packet at all is an error.
pub fn parse(bytes: &[u8]) -> Result<SidecarFacts, SidecarError> {
    if bytes.len() > MAX_SIDECAR {
        return Err(SidecarError::TooLarge(bytes.len()));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| SidecarError::NotText)?;
    let xml = text.strip_prefix('\u{feff}').unwrap_or(text);
    let open = xml.find("<rdf:RDF").ok_or(SidecarError::NotXmp)?;
    if !xml[open..].contains("</rdf:RDF>") {
        return Err(SidecarError::Truncated);
    }
    let (taken_local, taken_offset_minutes) = capture_date(xml).unzip();
    let mut tags = Vec::new();
    for key in ["dc:subject", "lr:hierarchicalSubject"] {
        for tag in xmp::items(xml, key, MAX_ITEMS) {
            if !tags.contains(&tag.text) {
                tags.push(tag.text);
            }
        }
    }
    Ok(SidecarFacts {
        rating: xmp::value(xml, "xmp:Rating").and_then(|v| rating(&v)),
        tags,
        title: language_default(xml, "dc:title"),
        description: language_default(xml, "dc:description"),
        taken_local,
        taken_offset_minutes: taken_offset_minutes.flatten(),
        lat: xmp::value(xml, "exif:GPSLatitude").and_then(|v| coordinate(&v, ['N', 'S'], 90.0)),
        lon: xmp::value(xml, "exif:GPSLongitude").and_then(|v| coordinate(&v, ['E', 'W'], 180.0)),
    })
}

fn rating(text: &str) -> Option<i8> {
    text.trim().parse().ok().filter(|r| (-1..=5).contains(r))
}

/// A language alternative's `x-default` item, else its first; a plain value (an attribute
/// or an element with bare text) when the property is not written as an `rdf:Alt`.
fn language_default(xml: &str, key: &str) -> Option<String> {
    let items = xmp::items(xml, key, MAX_ITEMS);
    let chosen = items
        .iter()
        .find(|i| i.lang.as_deref() == Some("x-default"))
        .or(items.first())
        .map(|i| i.text.clone());
    chosen
        .or_else(|| xmp::value(xml, key))
        .as_deref()
        .and_then(clean_text)
}

/// XMP's GPSCoordinate, `DDD,MM,SSk` or `DDD,MM.mmk` (k the hemisphere, one of `refs`),
/// to signed decimal degrees within `limit`.
fn coordinate(text: &str, refs: [char; 2], limit: f64) -> Option<f64> {
    let t = text.trim();
    let hemisphere = t.chars().next_back().filter(|c| refs.contains(c))?;
    let numbers = &t[..t.len() - hemisphere.len_utf8()];
    let mut parts = [0.0f64; 3];
    let mut count = 0;
    for part in numbers.split(',') {
        *parts.get_mut(count)? = part.trim().parse().ok()?;
        count += 1;
    }
    if count < 2 {
        return None;
    }
    gps_degrees(parts, Some(&hemisphere.to_string()), limit)
}

/// The sidecar names a photo named `photo` may have, best first: darktable's and digiKam's
/// `photo.ext.xmp` wins over Lightroom's `photo.xmp`; each in lower and upper case.
pub fn candidates(photo: &str) -> Vec<String> {
    let mut names = vec![format!("{photo}.xmp"), format!("{photo}.XMP")];
    if let Some((stem, _)) = photo.rsplit_once('.').filter(|(s, _)| !s.is_empty()) {
        names.push(format!("{stem}.xmp"));
        names.push(format!("{stem}.XMP"));
    }
    names
}

/// Whether the file named `name` is a sidecar by its name (`.xmp` in any case).
pub fn is_sidecar(name: &str) -> bool {
    name.rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && ext.eq_ignore_ascii_case("xmp"))
}

/// The sidecar among `siblings` (the names in the photo's folder) that belongs to `photo`,
/// by `candidates`' order.
pub fn sidecar_of<'a>(photo: &str, siblings: &[&'a str]) -> Option<&'a str> {
    candidates(photo)
        .iter()
        .find_map(|c| siblings.iter().find(|s| **s == c.as_str()).copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lightroom Classic's layout: properties as elements, one rdf:Description.
    const LIGHTROOM: &str = r#"<x:xmpmeta xmlns:x="adobe:ns:meta/" x:xmptk="Adobe XMP Core 7.0-c000">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about=""
    xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/"
    xmlns:lr="http://ns.adobe.com/lightroom/1.0/" xmlns:exif="http://ns.adobe.com/exif/1.0/">
   <xmp:Rating>4</xmp:Rating>
   <xmp:CreateDate>2019-06-21T18:45:12.30+02:00</xmp:CreateDate>
   <exif:GPSLatitude>48,51.3935N</exif:GPSLatitude>
   <exif:GPSLongitude>2,17,40.2W</exif:GPSLongitude>
   <dc:title><rdf:Alt><rdf:li xml:lang="de">Turm</rdf:li><rdf:li xml:lang="x-default">Tower &amp; sky</rdf:li></rdf:Alt></dc:title>
   <dc:description><rdf:Alt><rdf:li xml:lang="x-default">Evening walk</rdf:li></rdf:Alt></dc:description>
   <dc:subject><rdf:Bag><rdf:li>Paris</rdf:li><rdf:li>tower</rdf:li><rdf:li>Paris</rdf:li></rdf:Bag></dc:subject>
   <lr:hierarchicalSubject><rdf:Bag><rdf:li>Places|France|Paris</rdf:li><rdf:li>tower</rdf:li></rdf:Bag></lr:hierarchicalSubject>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>"#;

    /// darktable's layout: simple properties as attributes, bags as elements.
    const DARKTABLE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/" x:xmptk="XMP Core 4.4.0-Exiv2">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about=""
    xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmlns:exif="http://ns.adobe.com/exif/1.0/"
    xmlns:darktable="http://darktable.sf.net/"
   xmp:Rating="-1"
   exif:DateTimeOriginal="2021-01-02T03:04:05"
   exif:GPSLatitude="33,51.40704S"
   exif:GPSLongitude="151,12.91782E"
   darktable:xmp_version="5">
   <dc:subject><rdf:Bag><rdf:li>darktable|format|jpg</rdf:li></rdf:Bag></dc:subject>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>"#;

    #[test]
    fn lightroom_elements() {
        let f = parse(LIGHTROOM.as_bytes()).unwrap();
        assert_eq!(f.rating, Some(4));
        assert_eq!(f.tags, ["Paris", "tower", "Places|France|Paris"]);
        assert_eq!(f.title.as_deref(), Some("Tower & sky"));
        assert_eq!(f.description.as_deref(), Some("Evening walk"));
        assert_eq!(f.taken_local.as_deref(), Some("2019-06-21T18:45:12.30"));
        assert_eq!(f.taken_offset_minutes, Some(120));
        let lat = f.lat.unwrap();
        let lon = f.lon.unwrap();
        assert!((lat - (48.0 + 51.3935 / 60.0)).abs() < 1e-9, "{lat}");
        assert!(
            (lon + (2.0 + 17.0 / 60.0 + 40.2 / 3600.0)).abs() < 1e-9,
            "{lon}"
        );
    }

    #[test]
    fn darktable_attributes() {
        let f = parse(DARKTABLE.as_bytes()).unwrap();
        assert_eq!(f.rating, Some(-1));
        assert_eq!(f.tags, ["darktable|format|jpg"]);
        assert_eq!(f.title, None);
        assert_eq!(f.taken_local.as_deref(), Some("2021-01-02T03:04:05"));
        assert_eq!(f.taken_offset_minutes, None);
        assert!((f.lat.unwrap() + (33.0 + 51.40704 / 60.0)).abs() < 1e-9);
        assert!((f.lon.unwrap() - (151.0 + 12.91782 / 60.0)).abs() < 1e-9);
    }

    #[test]
    fn bad_values_are_left_out() {
        let xml = |body: &str| format!("<x:xmpmeta><rdf:RDF><rdf:Description {body}/></rdf:RDF>");
        for body in [
            r#"xmp:Rating="6" exif:GPSLatitude="91,0N" exif:GPSLongitude="10,0N""#,
            r#"xmp:Rating="x" exif:GPSLatitude="48,51" exif:GPSLongitude="E""#,
            r#"xmp:Rating="" exif:GPSLatitude="1,2,3,4N" exif:GPSLongitude="-1,0E""#,
            r#"exif:DateTimeOriginal="2021-13-01T00:00:00" exif:GPSLatitude="é""#,
        ] {
            let f = parse(xml(body).as_bytes()).unwrap();
            assert_eq!(f, SidecarFacts::default(), "{body}");
        }
        let f = parse(xml(r#"xmp:Rating=" 0 ""#).as_bytes()).unwrap();
        assert_eq!(f.rating, Some(0));
    }

    #[test]
    fn corrupt_sidecars_are_errors() {
        assert_eq!(parse(b"").unwrap_err(), SidecarError::NotXmp);
        assert_eq!(
            parse(b"\xff\xd8\xff\xe0").unwrap_err(),
            SidecarError::NotText
        );
        assert_eq!(parse(b"{\"json\": 1}").unwrap_err(), SidecarError::NotXmp);
        let cut = &LIGHTROOM[..LIGHTROOM.find("</rdf:RDF>").unwrap()];
        assert_eq!(parse(cut.as_bytes()).unwrap_err(), SidecarError::Truncated);
        let huge = vec![b' '; MAX_SIDECAR + 1];
        assert_eq!(
            parse(&huge).unwrap_err(),
            SidecarError::TooLarge(MAX_SIDECAR + 1)
        );
        // Every cut of a real sidecar is a value, never a panic.
        for end in 0..LIGHTROOM.len() {
            if let Some(cut) = LIGHTROOM.get(..end) {
                let _ = parse(cut.as_bytes());
            }
        }
        let with_bom = format!("\u{feff}{DARKTABLE}");
        assert_eq!(parse(with_bom.as_bytes()).unwrap().rating, Some(-1));
    }

    #[test]
    fn naming() {
        assert_eq!(
            candidates("IMG_8101.JPG"),
            [
                "IMG_8101.JPG.xmp",
                "IMG_8101.JPG.XMP",
                "IMG_8101.xmp",
                "IMG_8101.XMP"
            ]
        );
        assert_eq!(candidates("README"), ["README.xmp", "README.XMP"]);
        assert_eq!(candidates(".hidden"), [".hidden.xmp", ".hidden.XMP"]);
        let both = ["DSC_1.NEF", "DSC_1.xmp", "DSC_1.NEF.xmp"];
        assert_eq!(sidecar_of("DSC_1.NEF", &both), Some("DSC_1.NEF.xmp"));
        assert_eq!(
            sidecar_of("DSC_1.NEF", &["DSC_1.NEF", "DSC_1.XMP"]),
            Some("DSC_1.XMP")
        );
        assert_eq!(sidecar_of("DSC_1.NEF", &["DSC_1.NEF", "DSC_10.xmp"]), None);
        assert_eq!(
            sidecar_of("a.b.jpg", &["a.b.xmp", "a.xmp"]),
            Some("a.b.xmp")
        );
        for (name, is) in [
            ("x.xmp", true),
            ("x.JPG.XMP", true),
            (".xmp", false),
            ("x.jpg", false),
        ] {
            assert_eq!(is_sidecar(name), is, "{name}");
        }
    }
}
