//! The files of a library's trash folder that no move explains (DESIGN.md section 6: a
//! completed full scan settles them, and `mediadex check --repair` adopts them), each read
//! once as the trashed asset it would be adopted as: the trash folder of an index that was
//! set aside, a photo put there by hand. Reads files and asks the store what its trash
//! journal names; writes nothing (the adoption itself is the store's, in the caller's
//! transaction). No SQL here.

use crate::model::{
    Adoption, FileStamp, Library, MediaKind, RelPath, TRASH_DIR, path_from_bytes, path_to_bytes,
    trash_origin,
};
use crate::store::{Store, StoreError};
use std::collections::HashSet;
use std::path::Path;

/// The library-relative paths of the regular files in the library's trash folder, in order
/// (symlinks are not followed; an unreadable folder is skipped).
pub fn trash_files(root: &Path) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = walkdir::WalkDir::new(root.join(TRASH_DIR))
        .follow_links(false)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| e.path().strip_prefix(root).ok().map(path_to_bytes))
        .collect();
    out.sort();
    out
}

/// The trash-folder files of `library` that its trash journal does not name, in order. The
/// journal is read only when the folder holds a file.
pub fn unexplained(store: &Store, library: &Library) -> Result<Vec<Vec<u8>>, StoreError> {
    let files = trash_files(Path::new(&library.root));
    if files.is_empty() {
        return Ok(files);
    }
    let known: HashSet<Vec<u8>> = store.check_journal_paths(library.id)?;
    Ok(files.into_iter().filter(|f| !known.contains(f)).collect())
}

/// The library path a trash took a file from (`model::trash_origin`), when it is one a
/// restore may write to.
pub fn origin(trash_path: &[u8]) -> Option<Vec<u8>> {
    let from = trash_origin(trash_path)?;
    RelPath::new(from).ok().map(|p| p.as_bytes().to_vec())
}

/// Reads the file once for its checksum and facts, as a scan does; `None` when it is no
/// photo or video.
pub fn read(
    path: &Path,
    library_id: i64,
    from_path: Vec<u8>,
    trash_path: Vec<u8>,
) -> std::io::Result<Option<Adoption>> {
    let meta = std::fs::symlink_metadata(path)?;
    let stamp = FileStamp::of(&meta);
    let mut read = super::hash::read_once(path, stamp.size, &crate::media::extract_from)?;
    if !read.facts.kind.is_some_and(|k| k != MediaKind::Other) {
        return Ok(None);
    }
    let name = path_from_bytes(&from_path);
    let name = name.file_name().map(|n| n.to_string_lossy());
    crate::media::fill_undated(
        &mut read.facts,
        name.as_deref().unwrap_or(""),
        stamp.mtime_ns,
    );
    Ok(Some(Adoption {
        library_id,
        from_path,
        trash_path,
        stamp,
        checksum: read.checksum,
        facts: read.facts,
    }))
}

/// What a completed full scan adopts: each unexplained trash-folder file that is a photo or
/// video at a path a trash makes. One that cannot be read, or is none, is left for `mediadex
/// check` to name (and is read again by the next full scan: a trash folder holds few).
pub fn adoptions(store: &Store, library: &Library) -> Result<Vec<Adoption>, StoreError> {
    let root = Path::new(&library.root);
    let mut out = Vec::new();
    for trash_path in unexplained(store, library)? {
        let Some(from_path) = origin(&trash_path) else {
            continue;
        };
        let path = root.join(path_from_bytes(&trash_path));
        match read(&path, library.id, from_path, trash_path) {
            Ok(Some(adoption)) => out.push(adoption),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "trash folder file unread")
            }
        }
    }
    Ok(out)
}
