//! The files beside a photo (issue 15 items 4 and 5): which names are a photo's XMP sidecar
//! or Google Takeout JSON, finding them when the scan reads the photo, which photos a
//! changed or deleted one makes the scan read again (`partners`, among the names the walk
//! saw; `photos_by_beside_name`, among the names the store knows, for the mark its new
//! stamp's commit carries), and whether another name of its folder shares a photo's stem
//! (`Listings::namesake`: a stack's or a Live Photo's partner by name, which the writer
//! looks up only then). A photo's folder is listed once per batch that reads a picture or
//! video in it (`Listings`), and only names that are there are opened: no probe per
//! candidate name, no listing for an unchanged file. The naming rules and the parsers are
//! `media::sidecar` and `media::takeout`, the merge `media::beside`; this module only finds
//! and reads. A sidecar that does not parse is that file's problem, never the photo's. A
//! read says which files its facts come from (`Found::from`).
//! Reads only; must not write anything.

use crate::media::beside::Beside;
use crate::media::{sidecar, takeout};
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What one listing of a folder keeps: the names that can be beside a photo (`is_beside`),
/// and the stems more than one name has (`IMG_1` of `IMG_1.CR2` and `IMG_1.JPG`). `None`
/// when the folder could not be listed.
type Folder = Arc<Option<Listed>>;

#[derive(Default)]
struct Listed {
    names: HashSet<String>,
    shared_stems: HashSet<String>,
}

/// The listings of the folders one batch reads pictures in, made when first asked for.
#[derive(Default)]
pub struct Listings {
    dirs: Mutex<HashMap<PathBuf, Folder>>,
}

impl Listings {
    /// Folder `dir` (absolute), listed once. A folder of photos alone keeps no name, and its
    /// photos build no candidate names. One that cannot be listed is `None`: its photos are
    /// read without what lies beside them, as they were before it was readable.
    fn folder(&self, dir: &Path) -> Folder {
        let mut dirs = self.dirs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(folder) = dirs.get(dir) {
            return Arc::clone(folder);
        }
        let folder = Arc::new(std::fs::read_dir(dir).ok().map(|entries| {
            let mut listed = Listed::default();
            let mut stems = HashSet::new();
            for entry in entries.flatten() {
                let os = entry.file_name();
                let lossy = os.to_string_lossy();
                if let Some(stem) = stem(&lossy).filter(|s| !stems.insert(s.to_string())) {
                    listed.shared_stems.insert(stem.to_string());
                }
                match os.into_string() {
                    Ok(name) if is_beside(&name) => _ = listed.names.insert(name),
                    _ => {}
                }
            }
            listed
        }));
        dirs.insert(dir.to_path_buf(), Arc::clone(&folder));
        folder
    }

    /// Whether another name in the folder of `rel` (under `root`) may have its stem, the
    /// names a RAW+JPEG stack and a Live Photo pair by (`store::stems::stem_range`). `false`
    /// only when the folder was listed and none has: the writer then skips the namesake
    /// lookups of both, one range query per dated photo (6% of a first index's CPU). A
    /// partner written after this batch's listing pairs from its own side when it is stored.
    pub fn namesake(&self, root: &Path, rel: &Path) -> bool {
        let (Some(name), Some(dir)) = (rel.file_name(), rel.parent()) else {
            return true;
        };
        let Some(stem) = stem(&name.to_string_lossy()).map(str::to_string) else {
            return false;
        };
        match self.folder(&root.join(dir)).as_ref() {
            Some(listed) => listed.shared_stems.contains(&stem),
            None => true,
        }
    }
}

/// The stem a name shares with its namesakes: all before its last dot (none for `.hidden`
/// or a name without a dot, which `stem_range` gives no namesakes either).
fn stem(name: &str) -> Option<&str> {
    name.rsplit_once('.')
        .map(|(stem, _)| stem)
        .filter(|s| !s.is_empty())
}

/// Whether the file named `name` is one whose change can change a photo beside it.
pub fn is_beside(name: &str) -> bool {
    sidecar::is_sidecar(name) || name.ends_with(".json")
}

/// What `read` found beside a photo.
#[derive(Debug, Default)]
pub struct Found {
    pub beside: Beside,
    /// The library-relative paths of the sidecar and JSON that `beside` comes from: the
    /// photo's facts change when one of them goes, so the store must know each of them
    /// (issue 25 finding 15).
    pub from: Vec<PathBuf>,
    /// Those that could not be read or parsed, each at its own path with its error.
    pub problems: Vec<(PathBuf, String)>,
}

/// What lies beside the picture or video at `rel` (library-relative) under `root`: its best
/// sidecar that parses (`photo.ext.xmp` before `photo.xmp`) and its Takeout JSON, with the
/// problems of those that could not be read or parsed, each at its own path.
pub fn read(root: &Path, rel: &Path, listings: &Listings) -> Found {
    let mut found = Found::default();
    let (Some(name), Some(dir)) = (rel.file_name().and_then(|n| n.to_str()), rel.parent()) else {
        return found;
    };
    let folder = listings.folder(&root.join(dir));
    let Some(names) = folder.as_ref().as_ref().map(|l| &l.names) else {
        return found;
    };
    if names.is_empty() {
        return found;
    }
    let there = |c: &String| names.contains(c.as_str());
    let (beside, problems) = (&mut found.beside, &mut found.problems);
    for candidate in sidecar::candidates(name).iter().filter(|c| there(c)) {
        let at = dir.join(candidate);
        let parsed = load(&root.join(&at), sidecar::MAX_SIDECAR)
            .map(|b| b.map(|b| sidecar::parse(&b).map_err(|e| e.to_string())));
        match parsed {
            Ok(Some(Ok(facts))) => {
                beside.sidecar = Some(facts);
                found.from.push(at);
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
                Ok(facts) => {
                    beside.takeout = Some(facts);
                    found.from.push(at);
                }
                Err(e) => problems.push((at, e.to_string())),
            },
            Ok(None) => {}
            Err(e) => problems.push((at, e)),
        }
    }
    found
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

/// The photos among `names` (what the store knows of one folder) that each name beside a
/// photo would serve, keyed by that name: the sidecars and Takeout JSONs `read` looks for
/// beside each photo. Built once per folder whose walk met a changed one, so that each is
/// then looked up, not matched against the whole folder.
pub fn photos_by_beside_name<'a>(
    names: impl Iterator<Item = &'a str>,
) -> HashMap<String, Vec<String>> {
    let mut by_name: HashMap<String, Vec<String>> = HashMap::new();
    for photo in names {
        add_photo(&mut by_name, photo);
    }
    by_name
}

/// Adds `name` to a `photos_by_beside_name` map, under each name beside it (nothing for a
/// name that is itself beside a photo).
pub fn add_photo(by_name: &mut HashMap<String, Vec<String>>, name: &str) {
    if is_beside(name) {
        return;
    }
    let jsons = takeout::json_candidates(name).into_iter();
    let jsons = jsons.filter(|c| takeout::photo_for_json(c, &[name]) == Some(name));
    for beside in sidecar::candidates(name).into_iter().chain(jsons) {
        by_name.entry(beside).or_default().push(name.to_string());
    }
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

    /// A folder holding a small file of each of `names`.
    fn folder_of(names: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        for name in names {
            std::fs::write(dir.path().join(name), b"x").expect("write");
        }
        dir
    }

    #[test]
    fn a_photo_has_a_namesake_when_another_name_of_its_folder_has_its_stem_or_when_unknown() {
        let dir = folder_of(&[
            "IMG_1.JPG",
            "IMG_1.CR2",
            "IMG_2.HEIC",
            "IMG_2.jpg.xmp",
            "x",
            ".jpg",
        ]);
        let listings = Listings::default();
        let namesake = |rel: &str| listings.namesake(dir.path(), Path::new(rel));
        assert!(namesake("IMG_1.JPG") && namesake("IMG_1.CR2"));
        // `IMG_2.jpg.xmp` has the stem `IMG_2.jpg`: a sidecar, no namesake of the HEIC.
        assert!(!namesake("IMG_2.HEIC"));
        assert!(!namesake("x") && !namesake(".jpg"));
        // A folder that cannot be listed may hold anything: the writer looks.
        assert!(namesake("gone/IMG_3.JPG"));
    }

    #[test]
    fn a_folder_is_listed_for_the_names_that_can_be_beside_a_photo_only() {
        let dir = folder_of(&[
            "a.jpg",
            "a.jpg.xmp",
            "b.JPG",
            "b.XMP",
            "c.jpg.json",
            "d.txt",
        ]);
        let folder = Listings::default().folder(dir.path());
        let listed = folder.as_ref().as_ref().expect("listed");
        let mut names: Vec<&str> = listed.names.iter().map(String::as_str).collect();
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
    fn a_folder_s_photos_are_found_by_the_name_of_what_lies_beside_them() {
        let names = ["a.jpg", "a.CR2", "a.jpg.xmp", "b.jpg", "c(1).jpg", "notes"];
        let by_name = photos_by_beside_name(names.iter().copied());
        let photos = |beside: &str| {
            let mut found = by_name.get(beside).cloned().unwrap_or_default();
            found.sort_unstable();
            found
        };
        assert_eq!(photos("a.jpg.xmp"), ["a.jpg"]);
        assert_eq!(photos("a.xmp"), ["a.CR2", "a.jpg"]);
        assert_eq!(photos("b.jpg.json"), ["b.jpg"]);
        assert_eq!(photos("b.jpg.supplemental-metadata.json"), ["b.jpg"]);
        assert_eq!(photos("c.jpg(1).json"), ["c(1).jpg"]);
        assert!(photos("z.xmp").is_empty() && photos("a.jpg.xmp.xmp").is_empty());
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
        let Found {
            beside: p,
            from,
            problems,
        } = read(dir.path(), Path::new("p.jpg"), &listings);
        assert_eq!(
            p.sidecar.and_then(|s| s.rating),
            Some(5),
            "photo.ext.xmp wins"
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(from, [Path::new("p.jpg.xmp")], "what the facts come from");
        let Found {
            beside: q,
            from,
            problems,
        } = read(dir.path(), Path::new("q.jpg"), &listings);
        assert_eq!(q.sidecar.and_then(|s| s.rating), Some(2));
        assert_eq!(q.takeout, None);
        assert_eq!(from, [Path::new("q.xmp")], "not the corrupt ones");
        let at: Vec<&Path> = problems.iter().map(|(p, _)| p.as_path()).collect();
        assert_eq!(at, [Path::new("q.jpg.xmp"), Path::new("q.jpg.json")]);
        assert!(problems[0].1.contains("cut short"), "{problems:?}");
    }
}
