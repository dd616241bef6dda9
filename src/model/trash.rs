//! The trash journal: intents, moves and their outcomes, the trash folder's layout. Plain data
//! (see the parent module); must not depend on any other module of the crate.

use super::*;

/// A trash journal entry: move `from_path` to `to_path` (library-relative) in the library,
/// then commit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TrashIntent {
    pub id: i64,
    pub asset_id: i64,
    pub library_id: i64,
    pub action: TrashAction,
    pub from_path: Vec<u8>,
    pub to_path: Vec<u8>,
    pub state: IntentState,
    pub created_at: Millis,
    /// Shared by the intents of one begin call (one trash or one restore); a later move
    /// has a higher id.
    pub move_id: i64,
    /// The file's stamp as the index knew it when the move began: the move touches only
    /// this file. `None` on intents written before moves recorded it.
    pub stamp: Option<FileStamp>,
}

/// How the asset flipped when the last intent of a trash or restore was settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MoveOutcome {
    Trashed,
    Restored,
    /// The asset was live already (another path restored it): nothing to do.
    AlreadyLive,
    /// The sweep deleted the asset first: the moved file is found afresh by the next scan.
    Gone,
    /// Other files of a live asset (byte-identical copies) went to the trash; the asset
    /// stays live, shown by the file kept.
    CopiesTrashed,
}

/// The job kind of a move: one asset's trash or restore, held by a lease like any work.
pub const MOVE_JOB_KIND: &str = "move";

/// One asset's trash or restore (DESIGN.md sections 4 and 6): its intents, one per file,
/// held by the lease on job `job_id`. `rollback` is set once the move is being undone, with
/// the reason it could not be finished.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Move {
    pub job_id: i64,
    pub asset_id: i64,
    pub action: TrashAction,
    pub move_id: i64,
    pub intents: Vec<TrashIntent>,
    pub rollback: Option<String>,
}

/// What starting a move answers: settled at once (nothing to move), or held under a lease.
#[derive(Debug)]
pub enum Begun {
    Settled(MoveOutcome),
    Held(Lease, Move),
}

/// How one intent of a held move is settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settle {
    /// The file moved (pending -> done); its row follows the action.
    Done,
    /// The file is where it started (pending or done -> aborted); a done row reverts.
    Back,
    /// The file is found at neither place (pending or done -> aborted); its row is missing.
    Vanished,
}

/// The end of a held move's forward half.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finish {
    /// The asset flipped and the move's job is done.
    Flipped(MoveOutcome),
    /// Files of the asset are present that the move did not move (linked by a scan while
    /// it ran): nothing flipped, the move must be rolled back.
    Linked(Vec<String>),
    /// A restore put no file of its own asset back (none was in the trash folder as it left
    /// it; a follower's file put back does not count): nothing flipped, the move must be
    /// rolled back and the asset stays in the trash, its followers with it.
    NothingBack,
    /// A trash of copies found the kept file no longer present: the asset would be left
    /// without a file, so the move must be rolled back.
    KeptGone,
}

/// The trash folder in each library root.
pub const TRASH_DIR: &str = ".mediadex-trash";

/// Where a file goes when move `move_id` trashes it: `.mediadex-trash/<asset id>-<move
/// id>/<rel_path>`. A folder per move, so that a later trash of the same asset (after a
/// restore, or while a file of an earlier move was left there) never meets an earlier move's
/// file, and a move carried on later never takes another move's file for its own.
///
/// Why the move id sits in the first folder's name and not in a folder of its own
/// (`<asset>/<move>/<rel_path>`): the old layout was `.mediadex-trash/<asset id>/<rel_path>`,
/// and a library path may start with a folder named by digits (`2024/05/a.jpg`), so
/// `7/2024/05/a.jpg` could be either layout. With the move in the first name, the first folder
/// is the move's in both layouts (`7` old, `7-12` new: an old folder never holds a `-`), and
/// the library path is always all that follows it (`trash_origin`).
///
/// Only a new move's destination is made here: every reader takes a trashed file's place
/// from the journal (the intent's `to_path`), never from this function.
pub fn trash_path(asset_id: i64, move_id: i64, rel_path: &[u8]) -> Vec<u8> {
    let mut p = format!("{TRASH_DIR}/{asset_id}-{move_id}/").into_bytes();
    p.extend_from_slice(rel_path);
    p
}

/// A path in a trash folder read back: the asset and move its folder names (no move in a
/// folder of the old layout `<asset id>/`) and the library path the trash took it from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrashPlace<'a> {
    pub asset_id: i64,
    pub move_id: Option<i64>,
    pub origin: &'a [u8],
}

/// Reads a trash path back (the inverse of `trash_path`, and of the old layout's
/// `.mediadex-trash/<asset id>/<rel_path>`). `None` for a path no trash makes: outside the
/// trash folder, in a folder not named `<id>` or `<id>-<id>`, or naming no file in it.
pub fn trash_place(trash_path: &[u8]) -> Option<TrashPlace<'_>> {
    let rest = trash_path
        .strip_prefix(TRASH_DIR.as_bytes())?
        .strip_prefix(b"/")?;
    let slash = rest.iter().position(|&b| b == b'/')?;
    let origin = Some(&rest[slash + 1..]).filter(|origin| !origin.is_empty())?;
    let folder = std::str::from_utf8(&rest[..slash]).ok()?;
    let id = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| s.parse::<i64>().ok())
            .flatten()
    };
    let (asset_id, move_id) = match folder.split_once('-') {
        Some((asset, m)) => (id(asset)?, Some(id(m)?)),
        None => (id(folder)?, None),
    };
    Some(TrashPlace {
        asset_id,
        move_id,
        origin,
    })
}

/// The library path a trash took a file from, read back from the file's trash path: what
/// follows `.mediadex-trash/<folder>/` in either layout (`mediadex check --repair` adopts a
/// trash folder the index knows nothing of by it). `None` for a path no trash makes.
pub fn trash_origin(trash_path: &[u8]) -> Option<&[u8]> {
    trash_place(trash_path).map(|p| p.origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trash_path_gives_back_the_library_path_it_came_from() {
        for rel in [
            &b"a.png"[..],
            b"2024/05/IMG_1.JPG",
            b"caf\xe9/x.png",
            b"12/3-4/a.png",
        ] {
            let moved = trash_path(7, 12, rel);
            assert_eq!(trash_origin(&moved), Some(rel));
            let place = trash_place(&moved).expect("a trash path");
            assert_eq!((place.asset_id, place.move_id), (7, Some(12)));
        }
        for stray in [
            &b".mediadex-trash/x.png"[..],
            b".mediadex-trash/7/",
            b".mediadex-trash/7-12/",
            b".mediadex-trash/holidays/x.png",
            b".mediadex-trash/7-/x.png",
            b".mediadex-trash/-12/x.png",
            b".mediadex-trash/7-12-3/x.png",
            b".mediadex-trash/+7/x.png",
            b"a/b.png",
        ] {
            assert_eq!(trash_origin(stray), None, "{stray:?}");
        }
    }

    /// Folders the old layout made (`<asset id>/<rel_path>`) still read back, a library path
    /// that starts with a folder of digits included: the first folder is always the move's.
    #[test]
    fn a_trash_path_of_the_old_layout_still_reads_back_unambiguously() {
        let old = b".mediadex-trash/7/2024/05/IMG_1.JPG";
        let place = trash_place(old).expect("an old trash path");
        assert_eq!((place.asset_id, place.move_id), (7, None));
        assert_eq!(place.origin, b"2024/05/IMG_1.JPG");
        let new = trash_path(7, 2024, b"05/IMG_1.JPG");
        assert_ne!(new, old.to_vec(), "no new path spells an old one");
        assert_eq!(trash_origin(&new), Some(&b"05/IMG_1.JPG"[..]));
    }

    #[test]
    fn each_move_of_an_asset_has_its_own_trash_path() {
        assert_ne!(trash_path(7, 1, b"a.png"), trash_path(7, 2, b"a.png"));
        assert_ne!(trash_path(1, 23, b"a.png"), trash_path(12, 3, b"a.png"));
    }
}
