//! Polling for roots where kernel events do not arrive: a walk-and-stat of the tree that
//! keeps one fingerprint per directory (its entries' names, sizes, mtimes and inodes), so a
//! poll asks admission for a scan only of the directories that changed, and an unchanged
//! tree costs a walk and no database write. Owns the fingerprints; never touches the store.

use super::scope::merge;
use crate::scan::walk::is_junk;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use walkdir::WalkDir;

/// Directory (library-relative, `/`-separated) → fingerprint of its direct entries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fingerprints(BTreeMap<String, u64>);

impl Fingerprints {
    /// Walks `root` (symlinks not followed, junk skipped like the scan does).
    pub fn take(root: &Path) -> Fingerprints {
        let mut dirs: BTreeMap<String, std::collections::hash_map::DefaultHasher> = BTreeMap::new();
        dirs.entry(String::new()).or_default();
        let walker = WalkDir::new(root)
            .min_depth(1)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| e.file_name().to_str().is_none_or(|n| !is_junk(n)));
        for entry in walker.flatten() {
            let Some(parent) = entry.path().parent().and_then(|p| rel(root, p)) else {
                continue;
            };
            if entry.file_type().is_dir()
                && let Some(me) = rel(root, entry.path())
            {
                dirs.entry(me).or_default();
            }
            let hasher = dirs.entry(parent).or_default();
            entry.file_name().hash(hasher);
            // A subdirectory's own fingerprint covers its contents; its mtime here would
            // widen every change to the parent.
            if !entry.file_type().is_dir() {
                stamp(&entry).hash(hasher);
            }
        }
        Fingerprints(dirs.into_iter().map(|(k, h)| (k, h.finish())).collect())
    }

    /// The scope covering every directory that differs between `self` (before) and `now`,
    /// or `None` when nothing changed. A vanished directory shows as a change in its parent.
    pub fn changed_scope(&self, now: &Fingerprints) -> Option<String> {
        let mut scope = None;
        for (dir, fp) in &now.0 {
            if self.0.get(dir) != Some(fp) {
                scope = merge(scope, dir.clone());
            }
        }
        for dir in self.0.keys().filter(|d| !now.0.contains_key(*d)) {
            let parent = dir.rsplit_once('/').map_or("", |(p, _)| p);
            scope = merge(scope, parent.to_string());
        }
        scope
    }

    /// How many directories were fingerprinted (for logs).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Library-relative, `/`-separated path of a directory, if it is representable as a scope.
fn rel(root: &Path, path: &Path) -> Option<String> {
    let rel: PathBuf = path.strip_prefix(root).ok()?.to_path_buf();
    let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
    Some(parts?.join("/"))
}

/// What a change to an entry alters: size, mtime (ns) and inode. An unreadable entry hashes
/// as zeros, so it becoming readable again is a change.
fn stamp(entry: &walkdir::DirEntry) -> (u64, i128, u64) {
    let Ok(meta) = entry.metadata() else {
        return (0, 0, 0);
    };
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i128);
    (meta.len(), mtime, inode(&meta))
}

#[cfg(unix)]
fn inode(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}

#[cfg(not(unix))]
fn inode(_meta: &std::fs::Metadata) -> u64 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        for d in ["a/b", "c", "@eaDir"] {
            fs::create_dir_all(dir.path().join(d)).expect("mkdir");
        }
        for f in ["a/b/1.jpg", "a/2.jpg", "c/3.jpg", "top.jpg", "@eaDir/x"] {
            fs::write(dir.path().join(f), f).expect("write");
        }
        dir
    }

    #[test]
    fn unchanged_tree_has_no_scope() {
        let dir = tree();
        let before = Fingerprints::take(dir.path());
        assert_eq!(before.len(), 4, "root, a, a/b, c; @eaDir skipped");
        assert_eq!(before.changed_scope(&Fingerprints::take(dir.path())), None);
    }

    #[test]
    fn each_kind_of_change_names_its_directory() {
        let dir = tree();
        let root = dir.path();
        type Change<'a> = Box<dyn Fn() + 'a>;
        let cases: Vec<(Change, &str)> = vec![
            (
                Box::new(|| fs::write(root.join("a/b/new.jpg"), "n").expect("w")),
                "a/b",
            ),
            (
                Box::new(|| fs::write(root.join("c/3.jpg"), "longer").expect("w")),
                "c",
            ),
            (
                Box::new(|| fs::rename(root.join("c/3.jpg"), root.join("c/4.jpg")).expect("mv")),
                "c",
            ),
            (
                Box::new(|| fs::remove_dir_all(root.join("a/b")).expect("rm")),
                "a",
            ),
            (
                Box::new(|| fs::write(root.join("@eaDir/y"), "junk").expect("w")),
                "",
            ),
        ];
        for (change, want) in cases {
            let before = Fingerprints::take(root);
            change();
            let got = before.changed_scope(&Fingerprints::take(root));
            if want.is_empty() {
                assert_eq!(got, None, "junk changes are not changes");
            } else {
                assert_eq!(got.as_deref(), Some(want));
            }
        }
    }
}
