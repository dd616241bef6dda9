//! Which file on disk may be read for an asset: a library-relative path taken from the
//! database, joined to its library root, resolved (symlinks followed) and accepted only if
//! it is still a regular file inside the resolved root. Nothing here takes a path from a
//! request: originals and thumbnails are addressed by asset id only.

use crate::model::RelPath;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
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
    // Only plain names: no `..`, no `.`, no absolute path, no drive prefix.
    let rel = RelPath::new(rel_path).map_err(|_| ContainError::Escapes)?;
    let root = Path::new(root)
        .canonicalize()
        .map_err(|_| ContainError::RootUnavailable(root.to_string()))?;
    let real = rel
        .under(&root)
        .canonicalize()
        .map_err(|_| ContainError::Missing)?;
    if !real.starts_with(&root) {
        return Err(ContainError::Escapes);
    }
    if !real.is_file() {
        return Err(ContainError::Missing);
    }
    Ok(real)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_inside_the_root_resolve() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("lib");
        std::fs::create_dir_all(root.join("sub")).expect("mkdir");
        std::fs::write(root.join("sub/a.jpg"), b"a").expect("write");
        std::fs::write(dir.path().join("secret.txt"), b"s").expect("write");
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("out.jpg"))
            .expect("symlink");
        std::os::unix::fs::symlink(dir.path(), root.join("up")).expect("dir symlink");
        std::os::unix::fs::symlink(root.join("sub/a.jpg"), root.join("in.jpg")).expect("link");
        let r = root.to_str().expect("utf8");
        assert!(resolve(r, b"sub/a.jpg").is_ok());
        assert!(
            resolve(r, b"in.jpg").is_ok(),
            "a symlink that stays inside is fine"
        );
        assert_eq!(resolve(r, b"../secret.txt"), Err(ContainError::Escapes));
        assert_eq!(
            resolve(r, b"sub/../../secret.txt"),
            Err(ContainError::Escapes)
        );
        let abs = dir.path().join("secret.txt");
        assert_eq!(
            resolve(r, abs.to_str().expect("utf8").as_bytes()),
            Err(ContainError::Escapes)
        );
        assert_eq!(resolve(r, b"out.jpg"), Err(ContainError::Escapes));
        assert_eq!(resolve(r, b"up/secret.txt"), Err(ContainError::Escapes));
        assert_eq!(resolve(r, b"sub"), Err(ContainError::Missing));
        assert_eq!(resolve(r, b"nope.jpg"), Err(ContainError::Missing));
    }
}
