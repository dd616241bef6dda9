//! From a changed path to the scan scope that covers it: the nearest existing directory
//! above the change, library-relative with `/` separators, or `None` when the change is
//! outside the root or inside something the scan skips (hidden entries, NAS metadata, our own
//! trash). Pure path logic; never touches the store or the watcher.

use crate::scan::walk::is_junk;
use std::path::{Component, Path};

/// The scope a scan must cover to see a change at `path` (absolute, under `root`).
pub fn scope_for(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let mut parts: Vec<&str> = Vec::new();
    for component in rel.components() {
        let Component::Normal(name) = component else {
            return None;
        };
        match name.to_str() {
            Some(name) if is_junk(name) => return None,
            Some(name) => parts.push(name),
            // A name that is not UTF-8 cannot be a scope (scopes are text); scanning its
            // parent covers it. Deeper components are ignored for the same reason.
            None => break,
        }
    }
    // The changed entry itself may be gone or a file: its parent directory is the scope.
    // When `path` is the root, there is nothing to pop and the whole library is the scope.
    parts.pop();
    while !parts.is_empty() && !root.join(parts.join("/")).is_dir() {
        parts.pop();
    }
    Some(parts.join("/"))
}

/// Widens `acc` to also cover `scope`.
pub fn merge(acc: Option<String>, scope: String) -> Option<String> {
    Some(match acc {
        None => scope,
        Some(a) => crate::model::widen_scope(&a, &scope),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_of_the_change_that_still_exists() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("2024/summer")).expect("mkdir");
        let at = |p: &str| scope_for(root, &root.join(p));
        assert_eq!(at("2024/summer/a.jpg").as_deref(), Some("2024/summer"));
        assert_eq!(at("top.jpg").as_deref(), Some(""));
        assert_eq!(at("2024/gone/deeper/b.jpg").as_deref(), Some("2024"));
        assert_eq!(at("2024/summer").as_deref(), Some("2024"));
        assert_eq!(at("").as_deref(), Some(""));
    }

    #[test]
    fn junk_and_outside_are_ignored() {
        let root = Path::new("/lib");
        assert_eq!(scope_for(root, Path::new("/elsewhere/a.jpg")), None);
        assert_eq!(
            scope_for(root, Path::new("/lib/.mediadex-trash/1/a.jpg")),
            None
        );
        assert_eq!(scope_for(root, Path::new("/lib/a/@eaDir/a.jpg")), None);
        assert_eq!(scope_for(root, Path::new("/lib/a/._a.jpg")), None);
        assert_eq!(scope_for(root, Path::new("/lib/.mediadex-library")), None);
    }

    #[test]
    fn merged_scopes_widen() {
        let s = merge(merge(None, "a/b".into()), "a/c".into());
        assert_eq!(s.as_deref(), Some("a"));
        assert_eq!(merge(s, "z".into()).as_deref(), Some(""));
    }
}
