//! The walker: one thread that lists a library (or a sub-path of it) with walkdir and sends
//! what it finds down a bounded channel, so memory is bounded by the channel, not by the
//! library. It reports each directory as it enters it (so the diff knows which directories
//! it listed), stats files (size, mtime, device, inode; walkdir's own stat, never a second
//! one) but never opens a file. Junk
//! (hidden entries, NAS thumbnail and recycle folders, OS droppings) is skipped; symlinks
//! are followed only while they stay inside the root; loops, dangling links and unreadable
//! entries are reported as problems, never fatal. Must not touch the database.

use crossbeam_channel::Sender;
use std::path::{Path, PathBuf};
use walkdir::{DirEntry, WalkDir};

pub use crate::model::FileStamp as Stamp;

#[derive(Debug, PartialEq, Eq)]
pub enum Walked {
    /// A directory the walk is entering (sent before anything inside it). Its listing is
    /// complete unless a `Problem` at this same path or a `ListingFailed` follows.
    Dir {
        /// Library-relative path (`""` is the root).
        rel: PathBuf,
    },
    /// A regular file (or a symlink to one inside the root).
    File {
        /// Library-relative path.
        rel: PathBuf,
        stamp: Stamp,
    },
    /// Something that could not be listed or followed; recorded, never fatal.
    Problem { rel: PathBuf, error: String },
    /// Reading a directory's entries failed part-way, without saying which directory: none
    /// of the directories being listed can be trusted to be complete.
    ListingFailed { error: String },
}

/// Folder and file names that are never media: NAS and desktop by-products.
const JUNK_NAMES: &[&str] = &[
    "@eaDir",
    "#recycle",
    "#snapshot",
    "Thumbs.db",
    "desktop.ini",
    "lost+found",
    "$RECYCLE.BIN",
    "System Volume Information",
];

/// True for entries the walk must not descend into or report.
pub fn is_junk(name: &str) -> bool {
    // Hidden entries cover .thumbnails, .DS_Store, .Trash-1000, AppleDouble `._x` files and
    // our own .mediadex-trash and .mediadex-library.
    name.starts_with('.') || JUNK_NAMES.iter().any(|j| j.eq_ignore_ascii_case(name))
}

/// Walks `root/scope` and sends every file and problem to `out`. Returns when done or when
/// the receiver is gone (the run was cancelled). `root` must be canonical.
pub fn walk(root: &Path, scope: &Path, out: &Sender<Walked>) {
    let start = root.join(scope);
    let walker = WalkDir::new(&start)
        .follow_links(true)
        .into_iter()
        .filter_entry(|e| admit(root, e, out));
    for entry in walker {
        let item = match entry {
            Ok(entry) => match file(root, &entry) {
                Some(item) => item,
                None => continue,
            },
            Err(e) => match e.path() {
                Some(path) => problem(root, path, &e.to_string()),
                None => Walked::ListingFailed {
                    error: e.to_string(),
                },
            },
        };
        if out.send(item).is_err() {
            return;
        }
    }
}

/// Whether the walk may report or descend into `entry`. A symlink leading out of the root
/// is reported here, since pruning it hides it from the main loop.
fn admit(root: &Path, entry: &DirEntry, out: &Sender<Walked>) -> bool {
    if entry.depth() == 0 {
        return true;
    }
    if is_junk(&entry.file_name().to_string_lossy()) {
        return false;
    }
    if !entry.path_is_symlink() {
        return true;
    }
    let refusal = match std::fs::canonicalize(entry.path()) {
        Ok(target) if target.starts_with(root) => return true,
        Ok(_) => "symlink leads outside the library".to_string(),
        Err(e) => format!("broken symlink: {e}"),
    };
    let _ = out.send(problem(root, entry.path(), &refusal));
    false
}

fn file(root: &Path, entry: &DirEntry) -> Option<Walked> {
    if entry.file_type().is_dir() {
        return Some(Walked::Dir {
            rel: relative(root, entry.path()),
        });
    }
    if !entry.file_type().is_file() {
        return None;
    }
    // walkdir's entry already holds what it stat'ed (followed links: the target's stat).
    match entry.metadata() {
        Ok(meta) => Some(Walked::File {
            rel: relative(root, entry.path()),
            stamp: stamp(&meta),
        }),
        Err(e) => Some(problem(root, entry.path(), &e.to_string())),
    }
}

fn relative(root: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(root).unwrap_or(path).to_path_buf()
}

fn problem(root: &Path, path: &Path, error: &str) -> Walked {
    Walked::Problem {
        rel: relative(root, path),
        error: error.to_string(),
    }
}

#[cfg(unix)]
pub fn stamp(meta: &std::fs::Metadata) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    Stamp {
        size: meta.size(),
        mtime_ns: meta.mtime().saturating_mul(1_000_000_000) + meta.mtime_nsec(),
        dev: meta.dev(),
        inode: meta.ino(),
    }
}

#[cfg(not(unix))]
pub fn stamp(meta: &std::fs::Metadata) -> Stamp {
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    Stamp {
        size: meta.len(),
        mtime_ns,
        dev: 0,
        inode: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::fs;

    fn collect(root: &Path, scope: &str) -> BTreeMap<String, Result<u64, String>> {
        let (tx, rx) = crossbeam_channel::bounded(4);
        let root = root.to_path_buf();
        let scope = PathBuf::from(scope);
        let walker = std::thread::spawn(move || walk(&root, &scope, &tx));
        let mut seen = BTreeMap::new();
        for item in rx {
            match item {
                Walked::File { rel, stamp } => {
                    seen.insert(rel.to_string_lossy().into_owned(), Ok(stamp.size))
                }
                Walked::Problem { rel, error } => {
                    seen.insert(rel.to_string_lossy().into_owned(), Err(error))
                }
                Walked::Dir { .. } | Walked::ListingFailed { .. } => None,
            };
        }
        walker.join().expect("walker");
        seen
    }

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        for (path, body) in [
            ("2024/a.jpg", "aaaa"),
            ("2024/trip/b.jpg", "bb"),
            ("2024/.hidden.jpg", "x"),
            ("2024/._a.jpg", "x"),
            ("@eaDir/a.jpg/SYNOPHOTO_THUMB.jpg", "x"),
            (".thumbnails/t.png", "x"),
            ("#recycle/old.jpg", "x"),
            (".Trash-1000/files/z.jpg", "x"),
            ("Thumbs.db", "x"),
            ("2024/.DS_Store", "x"),
        ] {
            let p = root.join(path);
            fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            fs::write(p, body).expect("write");
        }
        dir
    }

    #[test]
    fn junk_and_hidden_entries_are_skipped() {
        let dir = tree();
        let root = fs::canonicalize(dir.path()).expect("canon");
        let seen = collect(&root, "");
        let names: Vec<&str> = seen.keys().map(String::as_str).collect();
        assert_eq!(names, vec!["2024/a.jpg", "2024/trip/b.jpg"]);
        assert_eq!(seen["2024/a.jpg"], Ok(4));
    }

    #[test]
    fn a_scope_walks_only_its_sub_path_with_library_relative_names() {
        let dir = tree();
        let root = fs::canonicalize(dir.path()).expect("canon");
        let seen = collect(&root, "2024/trip");
        assert_eq!(seen.keys().collect::<Vec<_>>(), vec!["2024/trip/b.jpg"]);
    }

    #[cfg(unix)]
    #[test]
    fn symlink_loops_dangling_links_and_escapes_are_problems_not_failures() {
        use std::os::unix::fs::symlink;
        let dir = tree();
        let outside = tempfile::tempdir().expect("outside");
        fs::write(outside.path().join("secret.jpg"), "s").expect("write");
        let root = fs::canonicalize(dir.path()).expect("canon");
        symlink(&root, root.join("2024/loop")).expect("loop");
        symlink(root.join("nowhere"), root.join("2024/dangling.jpg")).expect("dangling");
        symlink(outside.path(), root.join("2024/escape")).expect("escape");
        symlink(root.join("2024/a.jpg"), root.join("alias.jpg")).expect("alias");
        let seen = collect(&root, "");
        assert_eq!(
            seen["alias.jpg"],
            Ok(4),
            "a link inside the root is followed"
        );
        assert!(seen["2024/loop"].is_err(), "{seen:?}");
        assert!(seen["2024/dangling.jpg"].is_err());
        assert!(
            seen["2024/escape"]
                .as_ref()
                .unwrap_err()
                .contains("outside")
        );
        assert!(!seen.keys().any(|k| k.contains("secret")));
        assert_eq!(seen["2024/trip/b.jpg"], Ok(2), "the walk went on");
    }

    #[cfg(unix)]
    #[test]
    fn names_that_are_not_utf8_are_kept_losslessly() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let root = fs::canonicalize(dir.path()).expect("canon");
        let name = std::ffi::OsStr::from_bytes(b"caf\xe9.jpg");
        fs::write(root.join(name), "x").expect("write");
        let (tx, rx) = crossbeam_channel::unbounded();
        walk(&root, Path::new(""), &tx);
        drop(tx);
        let items: Vec<_> = rx.into_iter().collect();
        assert!(
            matches!(&items[..], [Walked::Dir { .. }, Walked::File { rel, .. }] if rel.as_os_str() == name)
        );
    }

    #[test]
    fn each_directory_is_announced_before_its_contents() {
        let dir = tree();
        let root = fs::canonicalize(dir.path()).expect("canon");
        let (tx, rx) = crossbeam_channel::unbounded();
        walk(&root, Path::new(""), &tx);
        drop(tx);
        let order: Vec<String> = rx
            .into_iter()
            .map(|item| match item {
                Walked::Dir { rel } => format!("dir {}", rel.display()),
                Walked::File { rel, .. } => format!("file {}", rel.display()),
                other => format!("{other:?}"),
            })
            .collect();
        let at = |s: &str| order.iter().position(|o| o == s).expect(s);
        assert_eq!(order[0], "dir ");
        assert!(at("dir 2024") < at("file 2024/a.jpg"));
        assert!(at("dir 2024/trip") < at("file 2024/trip/b.jpg"));
        assert!(!order.iter().any(|o| o.contains("eaDir")), "{order:?}");
    }

    #[test]
    fn a_dropped_receiver_stops_the_walk() {
        let dir = tree();
        let (tx, rx) = crossbeam_channel::bounded(0);
        drop(rx);
        walk(dir.path(), Path::new(""), &tx); // returns instead of blocking
    }
}
