//! The check itself: what the index says, compared with what is on disk, library by library,
//! then the index's own loose ends (unsettled moves no job carries on, stranded pending
//! assets). Reads only; every finding carries its words.

use super::shown;
use crate::model::{
    Check, CheckedFile, FileStamp, Finding, FindingKind, Library, OrphanedMove, StrandedAsset,
    TrashAction, path_from_bytes,
};
use crate::ops::Services;
use crate::scan::identity::{self, Verdict};
use crate::store::StoreError;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

/// How many of an asset's missing files its finding names.
const NAMED_FILES: usize = 3;

/// A check's findings and what a repair needs from it: the libraries it could look at.
pub(super) struct Inspection {
    pub check: Check,
    pub present: Vec<Library>,
}

/// What the file rows say of each asset's files: whether any is on disk, and those that
/// are not (as words), or that a library it lives in is away.
#[derive(Default)]
struct AssetFiles {
    on_disk: bool,
    away: bool,
    missing: Vec<String>,
}

/// What the file pass learned for the asset checks: each asset's files, and the trashed
/// assets' files that are in the library again (asset, library path).
#[derive(Default)]
struct Seen {
    assets: HashMap<i64, AssetFiles>,
    back: HashSet<(i64, Vec<u8>)>,
}

impl Inspection {
    pub fn run(s: &Services) -> Result<Inspection, StoreError> {
        let libraries = s.store.libraries()?;
        let mut check = Check {
            libraries: libraries.len(),
            findings: Vec::new(),
        };
        let (mut present, mut seen) = (Vec::new(), Seen::default());
        for library in libraries {
            match identity::check(&s.store, &library)? {
                Verdict::Same => {
                    files(s, &library, &mut seen, &mut check.findings)?;
                    trash_folder(s, &library, &mut check.findings)?;
                    present.push(library);
                }
                Verdict::Changed(why) | Verdict::Unavailable(why) => {
                    away(s, &library, &mut seen)?;
                    check.findings.push(library_away(&library, &why));
                }
            }
        }
        let by_id: HashMap<i64, &Library> = present.iter().map(|l| (l.id, l)).collect();
        live_without_file(s, &seen, &by_id, &mut check.findings)?;
        trash_gone(s, &seen, &by_id, &mut check.findings)?;
        check
            .findings
            .extend(s.store.check_orphaned_moves()?.iter().map(orphaned));
        check
            .findings
            .extend(s.store.check_stranded()?.iter().map(stranded));
        Ok(Inspection { check, present })
    }
}

fn library_away(library: &Library, why: &str) -> Finding {
    Finding {
        kind: FindingKind::LibraryAway,
        library_id: Some(library.id),
        asset_id: None,
        path: None,
        message: format!(
            "library {} ({}) is away: {why}; it was not checked",
            library.name, library.root
        ),
    }
}

/// The stamp of what is at `path` now, `None` when nothing is (a symlink is not followed,
/// as the scan does not).
fn on_disk(path: &Path) -> Option<FileStamp> {
    std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| FileStamp::of(&m))
}

/// Each file row of a present library against its path: a present row with nothing there
/// or other bytes there, a trashed asset's file in the library again; and what each
/// asset's files are on disk.
fn files(
    s: &Services,
    library: &Library,
    seen: &mut Seen,
    findings: &mut Vec<Finding>,
) -> Result<(), StoreError> {
    let root = Path::new(&library.root);
    s.store.check_files(library.id, &mut |row: CheckedFile| {
        let now = on_disk(&root.join(path_from_bytes(&row.rel_path)));
        if let Some(asset) = row.asset_id {
            let files = seen.assets.entry(asset).or_default();
            files.on_disk |= now.is_some();
            if now.is_none() && files.missing.len() < NAMED_FILES {
                files.missing.push(shown(library, &row.rel_path));
            }
            if row.trashed && now.is_some() {
                seen.back.insert((asset, row.rel_path.clone()));
                findings.push(back(library, asset, &row.rel_path));
            }
        }
        if let Some(finding) = row_against_disk(library, &row, now) {
            findings.push(finding);
        }
    })
}

/// A present file row whose file is gone, or whose file has another stamp.
fn row_against_disk(
    library: &Library,
    row: &CheckedFile,
    now: Option<FileStamp>,
) -> Option<Finding> {
    if !row.present {
        return None;
    }
    let (kind, what) = match now {
        None => (
            FindingKind::FileGone,
            "is indexed as present but is not on disk",
        ),
        Some(stamp) if stamp != row.stamp => (
            FindingKind::FileChanged,
            "changed on disk since the last scan (its size, time or inode differ)",
        ),
        Some(_) => return None,
    };
    Some(Finding {
        kind,
        library_id: Some(library.id),
        asset_id: row.asset_id,
        message: format!("{} {what}", shown(library, &row.rel_path)),
        path: Some(row.rel_path.clone()),
    })
}

fn back(library: &Library, asset: i64, rel_path: &[u8]) -> Finding {
    Finding {
        kind: FindingKind::TrashBack,
        library_id: Some(library.id),
        asset_id: Some(asset),
        path: Some(rel_path.to_vec()),
        message: format!(
            "photo {asset} is in the trash but there is a file at its place in the library \
             again: {} (the next scan reads it)",
            shown(library, rel_path)
        ),
    }
}

/// The assets with a file in a library that is away: nothing is said of them.
fn away(s: &Services, library: &Library, seen: &mut Seen) -> Result<(), StoreError> {
    s.store.check_files(library.id, &mut |row: CheckedFile| {
        if let Some(asset) = row.asset_id {
            seen.assets.entry(asset).or_default().away = true;
        }
    })
}

/// Live, published assets none of whose files is on disk (unless one is in a library
/// that is away), saying where their files are when they sit in a trash folder.
fn live_without_file(
    s: &Services,
    seen: &Seen,
    present: &HashMap<i64, &Library>,
    findings: &mut Vec<Finding>,
) -> Result<(), StoreError> {
    for id in s.store.check_live_assets()? {
        let mut message = match seen.assets.get(&id) {
            Some(f) if f.on_disk || f.away => continue,
            Some(f) => format!(
                "photo {id} is shown as live but none of its files is on disk: {} is missing",
                f.missing.join(", ")
            ),
            None => format!("photo {id} is shown as live but no file shows it"),
        };
        let in_trash = in_trash_folder(s, id, present)?;
        if !in_trash.is_empty() {
            message.push_str(&format!(
                "; it is in the trash folder: {}",
                in_trash.join(", ")
            ));
        }
        findings.push(Finding {
            kind: FindingKind::LiveWithoutFile,
            library_id: None,
            asset_id: Some(id),
            path: None,
            message,
        });
    }
    Ok(())
}

/// The files of the asset's latest trash that are in their trash folder now, as words.
fn in_trash_folder(
    s: &Services,
    asset: i64,
    present: &HashMap<i64, &Library>,
) -> Result<Vec<String>, StoreError> {
    let mut out = Vec::new();
    for file in s.store.check_trashed_files_of(asset)? {
        let Some(library) = present.get(&file.library_id) else {
            continue;
        };
        let root = Path::new(&library.root);
        if on_disk(&root.join(path_from_bytes(&file.to_path))).is_some() {
            out.push(shown(library, &file.to_path));
        }
    }
    Ok(out)
}

/// Trashed assets whose latest trash's files are gone from their trash folder (and not
/// back in the library either). Only in present libraries.
fn trash_gone(
    s: &Services,
    seen: &Seen,
    present: &HashMap<i64, &Library>,
    findings: &mut Vec<Finding>,
) -> Result<(), StoreError> {
    let mut gone: BTreeMap<i64, (i64, Vec<u8>, Vec<String>)> = BTreeMap::new();
    for file in s.store.check_trashed_files()? {
        let Some(library) = present.get(&file.library_id) else {
            continue;
        };
        let root = Path::new(&library.root);
        let there = on_disk(&root.join(path_from_bytes(&file.to_path))).is_some();
        if there || seen.back.contains(&(file.asset_id, file.from_path.clone())) {
            continue;
        }
        let entry = (gone.entry(file.asset_id))
            .or_insert_with(|| (library.id, file.to_path.clone(), vec![]));
        entry.2.push(shown(library, &file.to_path));
    }
    findings.extend(
        gone.into_iter()
            .map(|(asset, (library, path, named))| Finding {
                kind: FindingKind::TrashGone,
                library_id: Some(library),
                asset_id: Some(asset),
                path: Some(path),
                message: format!(
                    "photo {asset} is in the trash but its file is gone from the trash folder: {} \
             (the trash folder was emptied by hand?)",
                    named.join(", ")
                ),
            }),
    );
    Ok(())
}

/// Every file in a library's trash folder that the trash journal never named.
fn trash_folder(
    s: &Services,
    library: &Library,
    findings: &mut Vec<Finding>,
) -> Result<(), StoreError> {
    for rel in crate::scan::adopt::unexplained(&s.store, library)? {
        findings.push(Finding {
            kind: FindingKind::TrashUnexplained,
            library_id: Some(library.id),
            asset_id: None,
            message: format!(
                "{} is in the trash folder but the index knows nothing of it",
                shown(library, &rel)
            ),
            path: Some(rel),
        });
    }
    Ok(())
}

fn orphaned(m: &OrphanedMove) -> Finding {
    let what = match m.action {
        TrashAction::Trash => "trash",
        TrashAction::Restore => "restore",
    };
    Finding {
        kind: FindingKind::MoveOrphaned,
        library_id: None,
        asset_id: Some(m.asset_id),
        path: None,
        message: format!(
            "the {what} of photo {} was left unfinished (move {}) and no one is carrying it on",
            m.asset_id, m.move_id
        ),
    }
}

fn stranded(a: &StrandedAsset) -> Finding {
    let message = match &a.run_state {
        None => format!(
            "asset {} is waiting to be published by a scan that no longer exists",
            a.asset_id
        ),
        Some(state) => format!(
            "asset {} is waiting to be published by scan {}, which ended ({state}), and no \
             scan of its library is coming",
            a.asset_id, a.run_id
        ),
    };
    Finding {
        kind: FindingKind::Stranded,
        library_id: None,
        asset_id: Some(a.asset_id),
        path: None,
        message,
    }
}
