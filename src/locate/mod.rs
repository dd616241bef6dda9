//! "Which file of this asset can I read?", answered once for everyone who reads one: the
//! API's originals and thumbnails, the walks and the thumbnail job. Three rules, in order:
//! - the trash-folder rule: a present file is read where it is; a missing one first where
//!   the trash journal says its latest trash put it (`WalkFile::trashed_to`: a rename keeps
//!   its stamp; the folder is never guessed from the asset's id, which an adopted or old
//!   trash folder does not carry), then where it was (a user who moved it back by hand);
//! - the containment check (`contain.rs`): the path, symlinks followed, must still be a
//!   regular file inside its library root; nothing outside a library is ever read;
//! - the stamp check: the file must still have the stamp its scan recorded; by the scan's
//!   own rule (an unchanged stamp is an unchanged file) it then holds the asset's bytes, the
//!   ones its checksum, thumbnail cache key and `ETag` name.
//!
//! Pure over the files the store lists (`Store::asset_files`, `WalkAsset::files`) and the
//! file system: owns no SQL and knows nothing of HTTP, the queue or the walks.
//!
//! Must not import: store, queue, scan, walks, thumbs, http, ops, app, rusqlite

mod contain;

pub use contain::{ContainError, Resolved, Resolver, resolve};

use crate::model::{FileStamp, WalkAsset};
use std::path::PathBuf;

/// Why no file of an asset may be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LocateError {
    #[error("the asset's file resolves outside its library; refused")]
    Outside,
    #[error("no file of the asset is there any more")]
    Gone,
    #[error("every file of the asset was rewritten since its scan; the next scan indexes it")]
    Changed,
}

/// A file that may hold the asset, inside its library, with the stamp its scan recorded
/// and the one it has now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub path: PathBuf,
    pub stamp: FileStamp,
    pub now: FileStamp,
}

impl Candidate {
    /// Whether the file still has the stamp the scan recorded.
    pub fn unchanged(&self) -> bool {
        self.now == self.stamp
    }
}

/// The asset's first file that still holds its bytes.
pub fn locate(asset: &WalkAsset) -> Result<PathBuf, LocateError> {
    locate_candidate(asset).map(|c| c.path)
}

/// `locate`, with the stamp the scan recorded for the file (what a timed-out decode of it
/// is remembered for).
pub fn locate_candidate(asset: &WalkAsset) -> Result<Candidate, LocateError> {
    let mut found = search(asset, &Resolver::default());
    if let Some(at) = found.inside.iter().position(Candidate::unchanged) {
        return Ok(found.inside.swap_remove(at));
    }
    Err(if found.outside {
        LocateError::Outside
    } else if found.inside.is_empty() {
        LocateError::Gone
    } else {
        LocateError::Changed
    })
}

/// The asset's files inside its library, in the order to try, before the stamp check: for a
/// walk that may accept a file whose stamp changed once it has read the bytes whole.
pub fn candidates(asset: &WalkAsset) -> Vec<Candidate> {
    candidates_in(asset, &Resolver::default())
}

/// `candidates`, resolved by a batch's `resolver`.
pub fn candidates_in(asset: &WalkAsset, resolver: &Resolver) -> Vec<Candidate> {
    search(asset, resolver).inside
}

struct Search {
    inside: Vec<Candidate>,
    /// Some path resolved outside its library.
    outside: bool,
}

fn search(asset: &WalkAsset, resolver: &Resolver) -> Search {
    let mut found = Search {
        inside: Vec::new(),
        outside: false,
    };
    for f in &asset.files {
        let moved = f.trashed_to.as_deref().filter(|_| !f.present);
        for rel in moved.into_iter().chain([&f.rel_path[..]]) {
            match resolver.resolve(&f.root, rel) {
                Ok(Resolved { path, now }) => found.inside.push(Candidate {
                    path,
                    stamp: f.stamp,
                    now,
                }),
                Err(ContainError::Escapes) => found.outside = true,
                Err(e) => tracing::trace!(asset = asset.id, error = %e, "not readable"),
            }
        }
    }
    found
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use crate::model::WalkFile;
    use std::path::Path;

    fn file(root: &Path, rel: &str, present: bool, stamp: FileStamp) -> WalkFile {
        WalkFile {
            root: root.to_string_lossy().into_owned(),
            rel_path: rel.as_bytes().to_vec(),
            present,
            stamp,
            trashed_to: None,
        }
    }

    /// A file the journal says a trash moved to `to`.
    fn trashed(root: &Path, rel: &str, to: &str, present: bool, stamp: FileStamp) -> WalkFile {
        WalkFile {
            trashed_to: Some(to.as_bytes().to_vec()),
            ..file(root, rel, present, stamp)
        }
    }

    fn stamp(path: &Path) -> FileStamp {
        FileStamp::of(&std::fs::metadata(path).expect("stat"))
    }

    fn asset(files: Vec<WalkFile>) -> WalkAsset {
        WalkAsset {
            id: 7,
            checksum: [0; 32],
            trashed: true,
            files,
            timed_out: None,
            same_pixels: None,
            known: None,
        }
    }

    #[test]
    fn a_missing_file_is_looked_for_where_its_trash_put_it_first_then_where_it_was() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        // Not named by the asset's id (7): an adopted folder, or one of another layout.
        let to = ".mediadex-trash/3-9/a.jpg";
        std::fs::create_dir_all(root.join(".mediadex-trash/3-9")).expect("mkdir");
        std::fs::write(root.join(to), b"a").expect("write");
        let moved = stamp(&root.join(to));
        let a = asset(vec![trashed(&root, "a.jpg", to, false, moved)]);
        assert_eq!(locate(&a), Ok(root.join(to)));
        // Moved back by hand: found where it was.
        std::fs::rename(root.join(to), root.join("a.jpg")).expect("mv");
        assert_eq!(locate(&a), Ok(root.join("a.jpg")));
        // A present file is never looked for in the trash.
        std::fs::rename(root.join("a.jpg"), root.join(to)).expect("mv");
        let live = asset(vec![trashed(&root, "a.jpg", to, true, moved)]);
        assert_eq!(locate(&live), Err(LocateError::Gone));
    }

    /// The trash folder is the journal's, never guessed from the asset's id.
    #[test]
    fn a_missing_file_no_trash_moved_is_not_looked_for_in_a_trash_folder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(root.join(".mediadex-trash/7")).expect("mkdir");
        std::fs::write(root.join(".mediadex-trash/7/a.jpg"), b"a").expect("write");
        let moved = stamp(&root.join(".mediadex-trash/7/a.jpg"));
        let a = asset(vec![file(&root, "a.jpg", false, moved)]);
        assert_eq!(locate(&a), Err(LocateError::Gone));
    }

    #[test]
    fn only_a_file_with_its_scan_stamp_holds_the_asset() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::write(root.join("a.jpg"), b"a").expect("write");
        std::fs::write(root.join("b.jpg"), b"b").expect("write");
        let (sa, sb) = (stamp(&root.join("a.jpg")), stamp(&root.join("b.jpg")));
        std::fs::write(root.join("a.jpg"), b"rewritten").expect("rewrite");
        let both = asset(vec![
            file(&root, "a.jpg", true, sa),
            file(&root, "b.jpg", true, sb),
        ]);
        assert_eq!(locate(&both), Ok(root.join("b.jpg")), "the unchanged one");
        assert_eq!(candidates(&both).len(), 2, "both are inside the library");
        let one = asset(vec![file(&root, "a.jpg", true, sa)]);
        assert_eq!(locate(&one), Err(LocateError::Changed));
        // Another file's stamp is not this file's.
        let swapped = asset(vec![file(&root, "b.jpg", true, sa)]);
        assert_eq!(locate(&swapped), Err(LocateError::Changed));
    }

    #[test]
    fn a_path_leading_out_of_the_library_is_refused_whatever_its_stamp() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("lib");
        std::fs::create_dir_all(&root).expect("mkdir");
        std::fs::write(dir.path().join("secret"), b"s").expect("write");
        let s = stamp(&dir.path().join("secret"));
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("a.jpg")).expect("ln");
        for rel in ["a.jpg", "../secret"] {
            let a = asset(vec![file(&root, rel, true, s)]);
            assert_eq!(locate(&a), Err(LocateError::Outside), "{rel}");
            assert!(candidates(&a).is_empty(), "{rel}");
        }
    }
}
