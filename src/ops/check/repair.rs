//! `check --repair`: what can be fixed without losing anything, each fix said in words.
//! - A file in a trash folder that nothing explains is indexed as a trashed asset, with the
//!   done trash intent that a restore reads to move it back (defect 12: the trash folders of
//!   an index that was set aside). Left, with why, when it is no photo or video, a copy of
//!   an asset the index has live, or its library path is taken. Another copy of a trashed
//!   asset (one trash moved both) joins that asset's trash, so its restore puts both back.
//! - A stranded pending asset is published (`Store::check_publish_stranded`).
//! - An unfinished move that no job carries on gets its move job again; a command without
//!   workers then carries it on itself under the job's lease, as `trash` does.
//! - Each present library gets a full scan asked for: the scan heals the rest. A refused
//!   request (the hourly limit) is said; what was repaired stands.
//!
//! No file is moved, written or deleted here; only a requeued move moves files, under its
//! lease, by the trash module's rules (it never replaces a file).

use super::inspect::Inspection;
use super::shown;
use crate::model::{
    Adopted, Finding, FindingKind, Library, Repair, RepairKind, Repaired, Trigger, path_from_bytes,
};
use crate::ops::scans::{Ask, Scope};
use crate::ops::{Error, Services};
use crate::scan::adopt;
use std::collections::HashMap;
use std::path::Path;

/// Checks, then repairs what the check found. Answers both.
pub fn repair(s: &Services) -> Result<Repaired, Error> {
    let Inspection { check, present } = Inspection::run(s)?;
    let by_id: HashMap<i64, &Library> = present.iter().map(|l| (l.id, l)).collect();
    let mut done = Vec::new();
    let mut requeued = false;
    for finding in &check.findings {
        match finding.kind {
            FindingKind::TrashUnexplained => {
                if let Some(library) = finding.library_id.and_then(|id| by_id.get(&id)) {
                    done.push(adopt(s, library, finding)?);
                }
            }
            FindingKind::Stranded => done.extend(publish(s, finding)?),
            FindingKind::MoveOrphaned => {
                let repaired = requeue(s, finding)?;
                requeued |= repaired.is_some();
                done.extend(repaired);
            }
            _ => {}
        }
    }
    if requeued {
        carry_on(s);
    }
    for library in &present {
        done.push(scan(s, library)?);
    }
    Ok(Repaired {
        found: check.findings,
        done,
    })
}

fn said(kind: RepairKind, finding: &Finding, message: String) -> Repair {
    Repair {
        kind,
        library_id: finding.library_id,
        asset_id: finding.asset_id,
        path: finding.path.clone(),
        message,
    }
}

/// Indexes one unexplained trash-folder file as a trashed asset, or says why not.
fn adopt(s: &Services, library: &Library, finding: &Finding) -> Result<Repair, Error> {
    let Some(trash_path) = finding.path.clone() else {
        return Ok(said(RepairKind::Left, finding, "no path".into()));
    };
    let place = shown(library, &trash_path);
    let left = |why: String| said(RepairKind::Left, finding, format!("left {place}: {why}"));
    let Some(from_path) = adopt::origin(&trash_path) else {
        return Ok(left("it is not where a trash puts a file".into()));
    };
    let path = Path::new(&library.root).join(path_from_bytes(&trash_path));
    let adoption = match adopt::read(&path, library.id, from_path, trash_path) {
        Ok(Some(adoption)) => adoption,
        Ok(None) => return Ok(left("it is not a photo or video".into())),
        Err(e) => return Ok(left(format!("it cannot be read ({e})"))),
    };
    let origin = shown(library, &adoption.from_path);
    Ok(match s.store.check_adopt(adoption)? {
        Adopted::New(id) => Repair {
            asset_id: Some(id),
            ..said(
                RepairKind::Adopted,
                finding,
                format!("{place} is in the trash as photo {id}; restore puts it back at {origin}"),
            )
        },
        Adopted::Joined(id) => Repair {
            asset_id: Some(id),
            ..said(
                RepairKind::Adopted,
                finding,
                format!(
                    "{place} is in the trash with photo {id}, another copy of it; restore puts \
                     it back at {origin}"
                ),
            )
        },
        Adopted::Copy(id) => left(format!("it is a copy of photo {id}, which the index has")),
        Adopted::PlaceTaken => left(format!(
            "{origin}, where it came from, is another file's, so a restore would have \
             nowhere to put it; move it by hand"
        )),
        Adopted::Known => left("the trash journal names it now".into()),
    })
}

fn publish(s: &Services, finding: &Finding) -> Result<Option<Repair>, Error> {
    let Some(id) = finding.asset_id else {
        return Ok(None);
    };
    Ok(s.store.check_publish_stranded(id)?.map(|live| {
        if live {
            said(
                RepairKind::Published,
                finding,
                format!("published asset {id}"),
            )
        } else {
            said(
                RepairKind::TrashedMissing,
                finding,
                format!("asset {id} had no file on disk: it is in the trash as missing"),
            )
        }
    }))
}

fn requeue(s: &Services, finding: &Finding) -> Result<Option<Repair>, Error> {
    let Some(asset) = finding.asset_id else {
        return Ok(None);
    };
    let moves = s.store.check_orphaned_moves()?;
    let Some(m) = moves.iter().find(|m| m.asset_id == asset) else {
        return Ok(None);
    };
    Ok(s.store.check_requeue_move(m.move_id)?.then(|| {
        said(
            RepairKind::MoveRequeued,
            finding,
            format!("the unfinished move of photo {asset} is queued to be carried on"),
        )
    }))
}

/// A requeued move is carried on by whoever claims its job: this process's workers, or
/// here when it has none (a command).
fn carry_on(s: &Services) {
    if !s.without_workers {
        (s.wake)();
        return;
    }
    let config = crate::trash::MoveConfig {
        faces: s.restore_faces.clone(),
        ..crate::trash::MoveConfig::default()
    };
    if let Err(e) = crate::trash::finish_abandoned(&s.store, &config) {
        tracing::warn!(error = %e, "could not carry on the requeued moves");
    }
}

/// Asks for a full scan of a present library, or says why it could not.
fn scan(s: &Services, library: &Library) -> Result<Repair, Error> {
    let ask = Ask {
        scope: Scope::parse("")?,
        force: false,
        trigger: Trigger::Manual,
        key: None,
    };
    // Refused (the hourly limit, a busy index): said, and what was repaired stands.
    let (kind, message) = match crate::ops::scans::request(s, library.id, &ask) {
        Ok((run, _)) => (
            RepairKind::ScanRequested,
            format!(
                "a full scan of {} is asked for (run {}): it brings the index in line with \
                 the folder",
                library.name, run.id
            ),
        ),
        Err(e) => (
            RepairKind::Left,
            format!(
                "a full scan of {} could not be asked for: {e}; run `mediadex scan` later",
                library.name
            ),
        ),
    };
    Ok(Repair {
        kind,
        library_id: Some(library.id),
        asset_id: None,
        path: None,
        message,
    })
}
