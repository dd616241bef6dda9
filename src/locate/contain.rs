//! Which file on disk may be read for an asset: a library-relative path taken from the
//! database, joined to its library root, resolved (symlinks followed) and accepted only if
//! it is still a regular file inside the resolved root. Nothing here takes a path from a
//! request: originals and thumbnails are addressed by asset id only.

use crate::model::{FileStamp, RelPath};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum ContainError {
    #[error("the library folder {0} is not reachable")]
    RootUnavailable(String),
    #[error("the file is not there any more")]
    Missing,
    #[error("the file resolves outside its library; refused")]
    Escapes,
}

/// The real path of `rel_path` inside `root`, or why it may not be read.
pub fn resolve(root: &str, rel_path: &[u8]) -> Result<PathBuf, ContainError> {
    Resolver::default().resolve(root, rel_path).map(|r| r.path)
}

/// A file that resolved: its real path and its stamp as it is now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub path: PathBuf,
    pub now: FileStamp,
}

/// Resolves the files of one batch: each root and each folder is made real once, and each
/// file costs one `lstat`. `canonicalize` reads every component's link (`readlink`), and
/// per file that was 36% of the content-hash walk's samples at 100,000 small files (issue
/// 29). A folder's answer is kept for the resolver's life, so keep one for a batch only: a
/// folder replaced meanwhile is seen by the next batch, as a path changed after its check
/// always was.
#[derive(Default)]
pub struct Resolver {
    roots: Mutex<HashMap<String, Result<PathBuf, ContainError>>>,
    folders: Mutex<HashMap<PathBuf, Result<PathBuf, ContainError>>>,
}

impl Resolver {
    /// The real path of `rel_path` inside `root` and its stamp now, or why it may not be
    /// read: the same answer as canonicalizing the joined path, then checking that it
    /// is inside the real root and a regular file.
    pub fn resolve(&self, root: &str, rel_path: &[u8]) -> Result<Resolved, ContainError> {
        // Only plain names: no `..`, no `.`, no absolute path, no drive prefix.
        let rel = RelPath::new(rel_path).map_err(|_| ContainError::Escapes)?;
        let root = remembered(&self.roots, root.to_string(), |r| {
            Path::new(r)
                .canonicalize()
                .map_err(|_| ContainError::RootUnavailable(r.to_string()))
        })?;
        let joined = rel.under(&root);
        let (Some(parent), Some(name)) = (joined.parent(), joined.file_name()) else {
            return Err(ContainError::Missing);
        };
        let folder = remembered(&self.folders, parent.to_path_buf(), |p| {
            let real = p.canonicalize().map_err(|_| ContainError::Missing)?;
            real.starts_with(&root)
                .then_some(real)
                .ok_or(ContainError::Escapes)
        })?;
        let path = folder.join(name);
        let meta = std::fs::symlink_metadata(&path).map_err(|_| ContainError::Missing)?;
        if meta.is_file() {
            // A regular file in a real folder inside the root: `path` is its real path.
            return Ok(Resolved {
                now: FileStamp::of(&meta),
                path,
            });
        }
        if !meta.file_type().is_symlink() {
            return Err(ContainError::Missing);
        }
        let real = path.canonicalize().map_err(|_| ContainError::Missing)?;
        if !real.starts_with(&root) {
            return Err(ContainError::Escapes);
        }
        match std::fs::metadata(&real) {
            Ok(meta) if meta.is_file() => Ok(Resolved {
                now: FileStamp::of(&meta),
                path: real,
            }),
            _ => Err(ContainError::Missing),
        }
    }
}

/// `key`'s answer in `memo`, worked out by `work` the first time.
fn remembered<K: std::hash::Hash + Eq + Clone>(
    memo: &Mutex<HashMap<K, Result<PathBuf, ContainError>>>,
    key: K,
    work: impl FnOnce(&K) -> Result<PathBuf, ContainError>,
) -> Result<PathBuf, ContainError> {
    let known = memo
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&key)
        .cloned();
    if let Some(answer) = known {
        return answer;
    }
    let answer = work(&key);
    memo.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, answer.clone());
    answer
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_inside_the_root_resolve() {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().canonicalize().expect("canonical");
        let root = base.join("lib");
        std::fs::create_dir_all(root.join("sub")).expect("mkdir");
        std::fs::write(root.join("sub/a.jpg"), b"a").expect("write");
        std::fs::write(dir.path().join("secret.txt"), b"s").expect("write");
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("out.jpg"))
            .expect("symlink");
        std::os::unix::fs::symlink(dir.path(), root.join("up")).expect("dir symlink");
        std::os::unix::fs::symlink(root.join("sub/a.jpg"), root.join("in.jpg")).expect("link");
        std::os::unix::fs::symlink(root.join("sub"), root.join("alias")).expect("folder link");
        let r = root.to_str().expect("utf8");
        // Each path alone, then all through one resolver twice: its remembered roots and
        // folders must give the answers a fresh look gives.
        answers_as_canonicalize(&base, r, &|rel| resolve(r, rel));
        let shared = Resolver::default();
        for _ in 0..2 {
            answers_as_canonicalize(&base, r, &|rel| {
                shared.resolve(r, rel).map(|found| found.path)
            });
        }
    }

    fn answers_as_canonicalize(
        dir: &Path,
        r: &str,
        resolve: &dyn Fn(&[u8]) -> Result<PathBuf, ContainError>,
    ) {
        let root = Path::new(r);
        assert_eq!(resolve(b"sub/a.jpg"), Ok(root.join("sub/a.jpg")));
        assert_eq!(
            resolve(b"in.jpg"),
            Ok(root.join("sub/a.jpg")),
            "a symlink that stays inside is fine"
        );
        assert_eq!(resolve(b"alias/a.jpg"), Ok(root.join("sub/a.jpg")));
        assert_eq!(resolve(b"../secret.txt"), Err(ContainError::Escapes));
        assert_eq!(resolve(b"sub/../../secret.txt"), Err(ContainError::Escapes));
        let abs = dir.join("secret.txt");
        assert_eq!(
            resolve(abs.as_os_str().as_encoded_bytes()),
            Err(ContainError::Escapes)
        );
        assert_eq!(resolve(b"out.jpg"), Err(ContainError::Escapes));
        assert_eq!(resolve(b"up/secret.txt"), Err(ContainError::Escapes));
        assert_eq!(resolve(b"sub"), Err(ContainError::Missing));
        assert_eq!(resolve(b"nope.jpg"), Err(ContainError::Missing));
    }
}
