//! The walker: one thread that lists a library (or a sub-path of it) with `std::fs::read_dir`
//! and sends what it finds down a bounded channel, so memory is bounded by the channel and
//! the open directories on the current path, not by the library. It reports each directory
//! as it enters it (so the diff knows which directories it listed), stats files (size,
//! mtime, device, inode) but never opens a file. The stat is `DirEntry::metadata`, which on
//! Linux is `statx`/`fstatat` relative to the open directory's fd (no path resolution from
//! the root per file); a directory is recognised from `readdir`'s `d_type` with no stat at
//! all. Only symlinks cost more (canonicalize + a followed stat). Junk (hidden entries, NAS
//! thumbnail and recycle folders, OS droppings) is skipped; symlinks are followed only
//! while they stay inside the root and lead where the walk does not go by itself; loops, dangling links and unreadable entries are
//! reported as problems, never fatal. A scope inside a skipped folder (our own
//! `.mediadex-trash/` among them) walks nothing. Must not touch the database.

use crossbeam_channel::Sender;
use std::ffi::OsStr;
use std::fs::{self, DirEntry, FileType, Metadata, ReadDir};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

pub use crate::model::FileStamp as Stamp;

#[derive(Debug, PartialEq, Eq)]
pub enum Walked {
    /// A directory the walk is entering (sent before anything inside it). Its listing is
    /// complete unless a `Problem` at this same path follows.
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
    /// Something that could not be listed or followed; recorded, never fatal. At the path
    /// of a directory being listed, it means that listing is incomplete.
    Problem { rel: PathBuf, error: String },
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

fn is_junk_os(name: &OsStr) -> bool {
    match name.to_str() {
        Some(name) => is_junk(name),
        None => is_junk(&name.to_string_lossy()),
    }
}

/// A directory being listed: its open listing, its library-relative path, and its real
/// (symlink-free) path, which tells a link back to one of its ancestors (a loop).
struct Open {
    entries: ReadDir,
    rel: PathBuf,
    real: PathBuf,
}

/// The receiver is gone: the run was cancelled, stop walking.
struct Stopped;

/// Where the walker is, as a `WalkHook` sees it (library-relative directory paths).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkPoint<'a> {
    /// About to list this directory.
    Entering(&'a Path),
    /// Listed this directory to its end, sub-directories included.
    Left(&'a Path),
}

/// A test seam: called on the walker's own thread at each `WalkPoint`, so a test can change
/// the library at a known point of the walk, or make the walker panic there.
#[derive(Clone)]
pub struct WalkHook(pub Arc<dyn Fn(WalkPoint<'_>) + Send + Sync>);

impl std::fmt::Debug for WalkHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WalkHook")
    }
}

/// Entries per message: the walk hands its findings over in chunks, so the channel (and a
/// wake-up of the thread reading it) is paid once per chunk, not once per file.
pub const CHUNK: usize = 256;

/// The walker's end of the channel: buffers entries into chunks, in walk order.
struct Out<'a> {
    tx: &'a Sender<Vec<Walked>>,
    buf: Vec<Walked>,
    hook: Option<&'a WalkHook>,
}

impl Out<'_> {
    fn at(&self, point: WalkPoint<'_>) {
        if let Some(hook) = self.hook {
            (hook.0)(point);
        }
    }

    fn send(&mut self, item: Walked) -> Result<(), Stopped> {
        self.buf.push(item);
        if self.buf.len() >= CHUNK {
            return self.flush();
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Stopped> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK));
        self.tx.send(chunk).map_err(|_| Stopped)
    }
}

/// Walks `root/scope` and sends every file and problem to `out`, in chunks of up to `CHUNK`
/// entries in walk order. Returns when done or when the receiver is gone (the run was
/// cancelled). `root` must be canonical. `hook` is a test seam (`WalkHook`).
pub fn walk(root: &Path, scope: &Path, out: &Sender<Vec<Walked>>, hook: Option<&WalkHook>) {
    let mut out = Out {
        tx: out,
        buf: Vec::with_capacity(CHUNK),
        hook,
    };
    if walk_from(root, scope, &mut out).is_ok() {
        let _ = out.flush();
    }
}

fn walk_from(root: &Path, scope: &Path, out: &mut Out<'_>) -> Result<(), Stopped> {
    let start = root.join(scope);
    let rel = relative(root, &start);
    if skipped(scope) {
        // A walk never enters what it skips, whichever way it is asked to: the files in our
        // trash folder must not become files of the library (their claim would restore
        // the trashed asset).
        return out.send(problem(
            rel,
            "the scan skips this folder (hidden or NAS metadata)",
        ));
    }
    // The start is followed if it is a link, as any link inside the root is.
    let meta = match fs::metadata(&start) {
        Ok(meta) => meta,
        Err(e) => return out.send(problem(rel, &e.to_string())),
    };
    if !meta.is_dir() {
        if meta.is_file() {
            let stamp = Stamp::of(&meta);
            return out.send(Walked::File { rel, stamp });
        }
        return Ok(());
    }
    let real = fs::canonicalize(&start).unwrap_or_else(|_| start.clone());
    let mut stack = Vec::new();
    descend(&mut stack, &start, rel, real, out)?;
    while let Some(top) = stack.last_mut() {
        let step = match top.entries.next() {
            None => {
                if let Some(done) = stack.pop() {
                    out.at(WalkPoint::Left(&done.rel));
                }
                continue;
            }
            Some(Ok(entry)) => decide(root, top, &entry),
            Some(Err(e)) => {
                // The listing broke off part-way: this directory decides nothing.
                let rel = std::mem::take(&mut top.rel);
                stack.pop();
                Step::Send(problem(rel, &e.to_string()))
            }
        };
        match step {
            Step::Skip => {}
            Step::Send(item) => out.send(item)?,
            Step::Descend { path, rel, real } => descend(&mut stack, &path, rel, real, out)?,
        }
    }
    Ok(())
}

/// What to do with one directory entry.
enum Step {
    Skip,
    Send(Walked),
    Descend {
        path: PathBuf,
        rel: PathBuf,
        real: PathBuf,
    },
}

/// Announces directory `rel` and opens it; a directory that cannot be opened is announced,
/// then reported (the diff then decides nothing inside it).
fn descend(
    stack: &mut Vec<Open>,
    path: &Path,
    rel: PathBuf,
    real: PathBuf,
    out: &mut Out<'_>,
) -> Result<(), Stopped> {
    out.send(Walked::Dir { rel: rel.clone() })?;
    out.at(WalkPoint::Entering(&rel));
    match fs::read_dir(path) {
        Ok(entries) => {
            stack.push(Open { entries, rel, real });
            Ok(())
        }
        Err(e) => out.send(problem(rel, &e.to_string())),
    }
}

/// Decides about one entry of the directory `dir` without any stat for a sub-directory
/// (`d_type`) and one stat relative to the directory's fd for a file.
fn decide(root: &Path, dir: &Open, entry: &DirEntry) -> Step {
    let name = entry.file_name();
    if is_junk_os(&name) {
        return Step::Skip;
    }
    let rel = child(&dir.rel, &name);
    let kind = match entry.file_type() {
        Ok(kind) => kind,
        Err(e) => return Step::Send(problem(rel, &e.to_string())),
    };
    if kind.is_symlink() {
        return follow(root, dir, entry, rel);
    }
    if kind.is_dir() {
        let real = dir.real.join(&name);
        return Step::Descend {
            path: entry.path(),
            rel,
            real,
        };
    }
    if !kind.is_file() {
        return Step::Skip;
    }
    file_step(rel, entry.metadata())
}

fn file_step(rel: PathBuf, meta: std::io::Result<Metadata>) -> Step {
    match meta {
        Ok(meta) => Step::Send(Walked::File {
            stamp: Stamp::of(&meta),
            rel,
        }),
        // Vanished between the listing and the stat, or unreadable: recorded.
        Err(e) => Step::Send(problem(rel, &e.to_string())),
    }
}

/// A symlink is followed only while its target stays inside the root, and a directory it
/// leads to is entered only if it is not one of the directories being listed (a loop). A
/// link to a file or a folder the walk reaches by its own path is skipped: a symlink and its
/// target are one file, not two copies, and a folder's files are indexed once, at their own
/// paths (a link into a folder the walk skips, a hidden one, is followed: nothing else
/// reaches it).
fn follow(root: &Path, dir: &Open, entry: &DirEntry, rel: PathBuf) -> Step {
    let path = entry.path();
    let target = match fs::canonicalize(&path) {
        Ok(target) if target.starts_with(root) => target,
        Ok(_) => return Step::Send(problem(rel, "symlink leads outside the library")),
        Err(e) => return Step::Send(problem(rel, &format!("broken symlink: {e}"))),
    };
    let meta = fs::metadata(&path);
    let kind = meta.as_ref().map(Metadata::file_type).ok();
    if kind.as_ref().is_some_and(FileType::is_dir) {
        if dir.real.starts_with(&target) {
            let error = format!(
                "filesystem loop: the link leads back to {}",
                target.display()
            );
            return Step::Send(problem(rel, &error));
        }
        if !skipped(&relative(root, &target)) {
            return Step::Skip;
        }
        return Step::Descend {
            path,
            rel,
            real: target,
        };
    }
    if kind.as_ref().is_some_and(FileType::is_file) && !skipped(&relative(root, &target)) {
        return Step::Skip;
    }
    if kind.as_ref().is_some_and(FileType::is_file) || meta.is_err() {
        return file_step(rel, meta);
    }
    Step::Skip
}

/// `dir/name` in one allocation.
fn child(dir: &Path, name: &OsStr) -> PathBuf {
    let mut path = PathBuf::with_capacity(dir.as_os_str().len() + name.len() + 1);
    path.push(dir);
    path.push(name);
    path
}

/// True when a component of `scope` is a name the walk skips.
fn skipped(scope: &Path) -> bool {
    scope
        .components()
        .any(|c| matches!(c, Component::Normal(name) if is_junk_os(name)))
}

fn relative(root: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(root).unwrap_or(path).to_path_buf()
}

fn problem(rel: PathBuf, error: &str) -> Walked {
    Walked::Problem {
        rel,
        error: error.to_string(),
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
        let walker = std::thread::spawn(move || walk(&root, &scope, &tx, None));
        let mut seen = BTreeMap::new();
        for item in rx.into_iter().flatten() {
            match item {
                Walked::File { rel, stamp } => {
                    seen.insert(rel.to_string_lossy().into_owned(), Ok(stamp.size))
                }
                Walked::Problem { rel, error } => {
                    seen.insert(rel.to_string_lossy().into_owned(), Err(error))
                }
                Walked::Dir { .. } => None,
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
        fs::create_dir(root.join(".hidden")).expect("hidden");
        fs::write(root.join(".hidden/c.jpg"), "ccc").expect("write");
        symlink(root.join(".hidden/c.jpg"), root.join("shown.jpg")).expect("into hidden");
        let seen = collect(&root, "");
        assert!(
            !seen.contains_key("alias.jpg"),
            "a link to what the walk reaches is the same file, not a copy: {seen:?}"
        );
        assert_eq!(
            seen["shown.jpg"],
            Ok(3),
            "a link into a folder the walk skips is followed"
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
        walk(&root, Path::new(""), &tx, None);
        drop(tx);
        let items: Vec<_> = rx.into_iter().flatten().collect();
        assert!(
            matches!(&items[..], [Walked::Dir { .. }, Walked::File { rel, .. }] if rel.as_os_str() == name)
        );
    }

    #[test]
    fn each_directory_is_announced_before_its_contents() {
        let dir = tree();
        let root = fs::canonicalize(dir.path()).expect("canon");
        let (tx, rx) = crossbeam_channel::unbounded();
        walk(&root, Path::new(""), &tx, None);
        drop(tx);
        let order: Vec<String> = rx
            .into_iter()
            .flatten()
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

    /// Every item of a walk of `root/scope`, in order.
    fn items(root: &Path, scope: &str) -> Vec<Walked> {
        let (tx, rx) = crossbeam_channel::unbounded();
        walk(root, Path::new(scope), &tx, None);
        drop(tx);
        rx.into_iter().flatten().collect()
    }

    #[test]
    fn a_file_stamp_is_the_same_as_a_stat_by_path() {
        // Stamps stored by earlier walks (a stat by full path) must compare equal to this
        // walker's (relative to the directory's fd), or every file would look replaced.
        let dir = tree();
        let root = fs::canonicalize(dir.path()).expect("canon");
        let walked = items(&root, "");
        let files: Vec<_> = walked
            .iter()
            .filter_map(|w| match w {
                Walked::File { rel, stamp } => Some((rel, stamp)),
                _ => None,
            })
            .collect();
        assert_eq!(files.len(), 2);
        for (rel, walked) in files {
            let by_path = Stamp::of(&fs::metadata(root.join(rel)).expect("stat"));
            assert_eq!(*walked, by_path, "{}", rel.display());
            assert_ne!(walked.inode, 0);
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_linked_folder_the_walk_reaches_is_not_walked_again_and_one_it_skips_is() {
        use std::os::unix::fs::symlink;
        let dir = tree();
        let root = fs::canonicalize(dir.path()).expect("canon");
        symlink(root.join("2024/trip"), root.join("album")).expect("link");
        fs::create_dir(root.join(".hidden")).expect("hidden");
        fs::write(root.join(".hidden/c.jpg"), "ccc").expect("write");
        symlink(root.join(".hidden"), root.join("shown")).expect("into hidden");
        let seen = collect(&root, "");
        assert_eq!(seen["2024/trip/b.jpg"], Ok(2));
        assert!(
            !seen.contains_key("album/b.jpg"),
            "one folder, not a copy: {seen:?}"
        );
        assert_eq!(seen["shown/c.jpg"], Ok(3), "nothing else reaches it");
        assert_eq!(seen.len(), 3, "{seen:?}");
    }

    #[test]
    fn a_scope_naming_a_file_or_nothing_gives_that_file_or_a_problem() {
        let dir = tree();
        let root = fs::canonicalize(dir.path()).expect("canon");
        assert!(matches!(
            &items(&root, "2024/a.jpg")[..],
            [Walked::File { rel, stamp }] if rel == Path::new("2024/a.jpg") && stamp.size == 4
        ));
        assert!(matches!(
            &items(&root, "2023")[..],
            [Walked::Problem { rel, .. }] if rel == Path::new("2023")
        ));
    }

    #[test]
    fn a_scope_inside_a_skipped_folder_walks_nothing() {
        let dir = tree();
        let root = fs::canonicalize(dir.path()).expect("canon");
        fs::create_dir_all(root.join(".mediadex-trash/7/2024")).expect("mkdir");
        fs::write(root.join(".mediadex-trash/7/2024/a.jpg"), "aaaa").expect("write");
        for scope in [".mediadex-trash", ".mediadex-trash/7/2024", "@eaDir/a.jpg"] {
            assert!(
                matches!(&items(&root, scope)[..], [Walked::Problem { rel, .. }] if rel == Path::new(scope)),
                "{scope}: {:?}",
                items(&root, scope)
            );
        }
    }

    #[test]
    fn a_large_folder_arrives_complete_and_in_chunks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = fs::canonicalize(dir.path()).expect("canon");
        let n = CHUNK * 2 + 7;
        for i in 0..n {
            fs::write(root.join(format!("{i}.jpg")), "x").expect("write");
        }
        let (tx, rx) = crossbeam_channel::unbounded();
        walk(&root, Path::new(""), &tx, None);
        drop(tx);
        let chunks: Vec<Vec<Walked>> = rx.into_iter().collect();
        assert_eq!(
            chunks.len(),
            3,
            "one Dir and {n} files in chunks of {CHUNK}"
        );
        let files = chunks.iter().flatten();
        assert_eq!(
            files.filter(|w| matches!(w, Walked::File { .. })).count(),
            n
        );
    }

    #[test]
    fn a_dropped_receiver_stops_the_walk() {
        let dir = tree();
        let (tx, rx) = crossbeam_channel::bounded(0);
        drop(rx);
        walk(dir.path(), Path::new(""), &tx, None); // returns instead of blocking
    }
}
