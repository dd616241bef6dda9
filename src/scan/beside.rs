//! The files beside a photo (issue 15 items 4 and 5): which names are a photo's XMP sidecar
//! or Google Takeout JSON, finding them when the scan reads the photo, and which photos a
//! changed or deleted one makes the scan read again (`partners`). A photo's folder is listed
//! once per batch that reads a picture or video in it (`Listings`), and only names that are
//! there are opened: no probe per candidate name, no listing for an unchanged file. The
//! naming rules and the parsers are `media::sidecar` and `media::takeout`, the merge
//! `media::beside`; this module only finds and reads. A sidecar that does not parse is that
//! file's problem, never the photo's. Reads only; must not write anything.

use crate::media::beside::Beside;
use crate::media::{sidecar, takeout};
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The names in a folder, listed once per batch.
type Names = Arc<HashSet<String>>;

/// The listings of the folders one batch reads pictures in, made when first asked for.
#[derive(Default)]
pub struct Listings {
    dirs: Mutex<HashMap<PathBuf, Names>>,
}

impl Listings {
    /// The names in folder `dir` (absolute) that can be beside a photo (`is_beside`: every
    /// name `read` looks for is one): a folder of photos alone keeps none, and its photos
    /// build no candidate names. One that cannot be listed has none: its photos are read
    /// without what lies beside them, as they were before it was readable.
    fn names(&self, dir: &Path) -> Names {
        let mut dirs = self.dirs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(names) = dirs.get(dir) {
            return Arc::clone(names);
        }
        let names: HashSet<String> = std::fs::read_dir(dir)
            .map(|entries| {
                (entries.flatten())
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter(|name| is_beside(name))
                    .collect()
            })
            .unwrap_or_default();
        let names = Arc::new(names);
        dirs.insert(dir.to_path_buf(), Arc::clone(&names));
        names
    }
}

/// Whether the file named `name` is one whose change can change a photo beside it.
pub fn is_beside(name: &str) -> bool {
    sidecar::is_sidecar(name) || name.ends_with(".json")
}

/// What lies beside the picture or video at `rel` (library-relative) under `root`: its best
/// sidecar that parses (`photo.ext.xmp` before `photo.xmp`) and its Takeout JSON, with the
/// problems of those that could not be read or parsed, each at its own path.
pub fn read(root: &Path, rel: &Path, listings: &Listings) -> (Beside, Vec<(PathBuf, String)>) {
    let mut problems = Vec::new();
    let (Some(name), Some(dir)) = (rel.file_name().and_then(|n| n.to_str()), rel.parent()) else {
        return (Beside::default(), problems);
    };
    let names = listings.names(&root.join(dir));
    if names.is_empty() {
        return (Beside::default(), problems);
    }
    let there = |c: &String| names.contains(c.as_str());
    let mut beside = Beside::default();
    for candidate in sidecar::candidates(name).iter().filter(|c| there(c)) {
        let at = dir.join(candidate);
        let parsed = load(&root.join(&at), sidecar::MAX_SIDECAR)
            .map(|b| b.map(|b| sidecar::parse(&b).map_err(|e| e.to_string())));
        match parsed {
            Ok(Some(Ok(facts))) => {
                beside.sidecar = Some(facts);
                break;
            }
            Ok(Some(Err(e))) | Err(e) => problems.push((at, e)),
            Ok(None) => {}
        }
    }
    let json = takeout::json_candidates(name)
        .into_iter()
        .find(|c| there(c) && takeout::photo_for_json(c, &[name]) == Some(name));
    if let Some(json) = json {
        let at = dir.join(&json);
        match load(&root.join(&at), takeout::MAX_JSON) {
            Ok(Some(bytes)) => match takeout::parse(&bytes) {
                Ok(facts) => beside.takeout = Some(facts),
                Err(e) => problems.push((at, e.to_string())),
            },
            Ok(None) => {}
            Err(e) => problems.push((at, e)),
        }
    }
    (beside, problems)
}

/// The file's bytes, up to one more than `max` (so that the parser sees it is too large);
/// `None` when it is gone since the listing.
fn load(path: &Path, max: usize) -> Result<Option<Vec<u8>>, String> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read: {e}")),
    };
    let mut bytes = Vec::new();
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    file.take(limit)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    Ok(Some(bytes))
}

/// The photos among `seen` (the names in one folder) that the sidecar or Takeout JSON named
/// `name` belongs to: `photo.ext` for `photo.ext.xmp`, every `photo.*` for Lightroom's
/// `photo.xmp` (a RAW and its JPEG take the same one), the one photo a JSON's name
/// describes. `stems` maps each name's stem to the names with it.
pub fn partners<'a>(
    name: &str,
    seen: &HashSet<&'a str>,
    stems: &HashMap<&'a str, Vec<&'a str>>,
) -> Vec<&'a str> {
    if sidecar::is_sidecar(name) {
        let Some((photo, _)) = name.rsplit_once('.') else {
            return Vec::new();
        };
        let mut found: Vec<&str> = seen.get(photo).copied().into_iter().collect();
        found.extend(stems.get(photo).into_iter().flatten().copied());
        found.retain(|p| !is_beside(p));
        found.sort_unstable();
        found.dedup();
        return found;
    }
    // The exact name first: a JSON is matched against the whole folder only when its name
    // is not simply `photo.json` (cut, counted or `.supplemental-metadata`).
    let exact = name
        .strip_suffix(".json")
        .and_then(|p| seen.get(p).copied());
    if let Some(photo) = exact.filter(|p| !is_beside(p)) {
        return vec![photo];
    }
    let all: Vec<&str> = seen.iter().copied().filter(|p| !is_beside(p)).collect();
    takeout::photo_for_json(name, &all).into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder<'a>(names: &[&'a str]) -> (HashSet<&'a str>, HashMap<&'a str, Vec<&'a str>>) {
        let seen: HashSet<&str> = names.iter().copied().collect();
        let mut stems: HashMap<&str, Vec<&str>> = HashMap::new();
        for n in names {
            if let Some((stem, _)) = n.rsplit_once('.') {
                stems.entry(stem).or_default().push(n);
            }
        }
        (seen, stems)
    }

    #[test]
    fn a_folder_is_listed_for_the_names_that_can_be_beside_a_photo_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        for name in [
            "a.jpg",
            "a.jpg.xmp",
            "b.JPG",
            "b.XMP",
            "c.jpg.json",
            "d.txt",
        ] {
            std::fs::write(dir.path().join(name), b"x").expect("write");
        }
        let names = Listings::default().names(dir.path());
        let mut names: Vec<&str> = names.iter().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["a.jpg.xmp", "b.XMP", "c.jpg.json"]);
        // Every name `read` looks for is such a name: the rest of a folder is never asked.
        for photo in ["a.jpg", "IMG_0001(1).HEIC", "x", ".jpg"] {
            let sidecars = sidecar::candidates(photo);
            let jsons = takeout::json_candidates(photo);
            for c in sidecars.iter().chain(&jsons) {
                assert!(is_beside(c), "{photo}: {c}");
            }
        }
    }

    #[test]
    fn a_sidecar_s_photos() {
        let names = [
            "a.jpg",
            "a.CR2",
            "a.xmp",
            "a.jpg.xmp",
            "b.jpg",
            "b.jpg.json",
            "c(1).jpg",
            "c.jpg(1).json",
            "d.jpg",
        ];
        let (seen, stems) = folder(&names);
        assert_eq!(partners("a.jpg.xmp", &seen, &stems), ["a.jpg"]);
        assert_eq!(partners("a.xmp", &seen, &stems), ["a.CR2", "a.jpg"]);
        assert_eq!(partners("b.jpg.json", &seen, &stems), ["b.jpg"]);
        assert_eq!(partners("c.jpg(1).json", &seen, &stems), ["c(1).jpg"]);
        assert!(partners("z.xmp", &seen, &stems).is_empty());
        assert!(partners("package.json", &seen, &stems).is_empty());
    }

    #[test]
    fn the_best_sidecar_that_parses_is_read_and_a_corrupt_one_is_its_own_problem() {
        let dir = tempfile::tempdir().expect("tempdir");
        let xmp = |rating: u8| {
            format!("<x:xmpmeta><rdf:RDF><rdf:Description xmp:Rating=\"{rating}\"/></rdf:RDF>")
        };
        std::fs::write(dir.path().join("p.jpg.xmp"), xmp(5)).expect("write");
        std::fs::write(dir.path().join("p.xmp"), xmp(1)).expect("write");
        std::fs::write(dir.path().join("q.jpg.xmp"), "<rdf:RDF> cut").expect("write");
        std::fs::write(dir.path().join("q.xmp"), xmp(2)).expect("write");
        std::fs::write(dir.path().join("q.jpg.json"), "{\"title\": 3}").expect("write");
        let listings = Listings::default();
        let (p, problems) = read(dir.path(), Path::new("p.jpg"), &listings);
        assert_eq!(
            p.sidecar.and_then(|s| s.rating),
            Some(5),
            "photo.ext.xmp wins"
        );
        assert!(problems.is_empty(), "{problems:?}");
        let (q, problems) = read(dir.path(), Path::new("q.jpg"), &listings);
        assert_eq!(q.sidecar.and_then(|s| s.rating), Some(2));
        assert_eq!(q.takeout, None);
        let at: Vec<&Path> = problems.iter().map(|(p, _)| p.as_path()).collect();
        assert_eq!(at, [Path::new("q.jpg.xmp"), Path::new("q.jpg.json")]);
        assert!(problems[0].1.contains("cut short"), "{problems:?}");
    }
}
