//! A library-relative path as the store keeps it: the bytes of a file's path below its
//! library root, `/`-separated, exactly as the scan read them from the OS. Plain data (see
//! the parent module); must not depend on any other module of the crate.

use std::path::{Component, Path, PathBuf};

/// Why some bytes are not a path inside a library.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RelPathError {
    #[error("an empty path names no file")]
    Empty,
    #[error("an absolute path is not inside a library")]
    Absolute,
    #[error("a path with `..`, `.` or an empty name may lead out of its library")]
    NotPlain,
}

/// A path below a library root: never empty, never absolute, only plain names (no `..`,
/// no `.`, no empty name, no drive prefix), so that joining it to its root stays below the
/// root until a symlink says otherwise (the containment check follows those).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RelPath(Vec<u8>);

impl RelPath {
    pub fn new(bytes: impl Into<Vec<u8>>) -> Result<RelPath, RelPathError> {
        let bytes = bytes.into();
        if bytes.is_empty() {
            return Err(RelPathError::Empty);
        }
        if bytes[0] == b'/' {
            return Err(RelPathError::Absolute);
        }
        let plain_names = bytes
            .split(|b| *b == b'/')
            .all(|name| !matches!(name, b"" | b"." | b".."));
        // What this OS makes of the bytes counts too: a drive prefix or a root on Windows.
        let plain_here = path_from_bytes(&bytes)
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
        if !plain_names || !plain_here {
            return Err(RelPathError::NotPlain);
        }
        Ok(RelPath(bytes))
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The path as the OS names it: the exact bytes on Unix.
    pub fn to_path_buf(&self) -> PathBuf {
        path_from_bytes(&self.0)
    }

    /// The file's path below `root`.
    pub fn under(&self, root: &Path) -> PathBuf {
        root.join(self.to_path_buf())
    }
}

/// Path bytes as the OS names them, the inverse of `path_to_bytes`. Unix names are bytes, so
/// this is lossless there; other systems name files in Unicode, and their scans stored UTF-8.
#[cfg(unix)]
pub fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

#[cfg(not(unix))]
pub fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
}

/// A library-relative path's bytes as the scan stores them, `/`-separated (lossless on Unix).
#[cfg(unix)]
pub fn path_to_bytes(p: &std::path::Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    p.as_os_str().as_bytes().to_vec()
}

#[cfg(not(unix))]
pub fn path_to_bytes(p: &std::path::Path) -> Vec<u8> {
    p.to_string_lossy().replace('\\', "/").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_names_below_the_root_are_a_rel_path() {
        for ok in [
            &b"a.jpg"[..],
            b"2024/05/a.jpg",
            b"caf\xe9.jpg",
            b"a\\b.jpg",
            b"..a/b..",
            b".hidden",
        ] {
            let rel = RelPath::new(ok).unwrap_or_else(|e| panic!("{ok:?}: {e}"));
            assert_eq!(rel.as_bytes(), ok);
        }
        assert_eq!(RelPath::new(Vec::new()), Err(RelPathError::Empty));
        assert_eq!(
            RelPath::new(&b"/etc/passwd"[..]),
            Err(RelPathError::Absolute)
        );
        for bad in [
            &b"../secret"[..],
            b"a/../../secret",
            b"a/./b",
            b".",
            b"a//b",
            b"a/",
            b"..",
        ] {
            assert_eq!(RelPath::new(bad), Err(RelPathError::NotPlain), "{bad:?}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn the_os_path_is_the_exact_bytes() {
        use std::os::unix::ffi::OsStrExt;
        let rel = RelPath::new(&b"2024/caf\xe9\n.jpg"[..]).expect("plain");
        assert_eq!(
            rel.to_path_buf().as_os_str().as_bytes(),
            b"2024/caf\xe9\n.jpg"
        );
        assert_eq!(
            rel.under(Path::new("/lib")).as_os_str().as_bytes(),
            b"/lib/2024/caf\xe9\n.jpg"
        );
    }
}
