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
    /// A restore put no file back (none was in the trash folder as it left it): nothing
    /// flipped, the move must be rolled back and the asset stays in the trash.
    NothingBack,
}

/// The trash folder in each library root.
pub const TRASH_DIR: &str = ".mediadex-trash";

/// Where a trashed file goes in its library: `.mediadex-trash/<asset id>/<rel_path>`.
pub fn trash_path(asset_id: i64, rel_path: &[u8]) -> Vec<u8> {
    let mut p = format!("{TRASH_DIR}/{asset_id}/").into_bytes();
    p.extend_from_slice(rel_path);
    p
}

/// The library path a trash took a file from, read back from the file's trash path: what
/// follows `.mediadex-trash/<folder>/` (the inverse of `trash_path`; `mediadex check
/// --repair` adopts a trash folder the index knows nothing of by it). `None` for a path no
/// trash makes.
pub fn trash_origin(trash_path: &[u8]) -> Option<&[u8]> {
    let rest = trash_path
        .strip_prefix(TRASH_DIR.as_bytes())?
        .strip_prefix(b"/")?;
    let slash = rest.iter().position(|&b| b == b'/')?;
    Some(&rest[slash + 1..]).filter(|origin| !origin.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trash_path_gives_back_the_library_path_it_came_from() {
        for rel in [&b"a.png"[..], b"2024/05/IMG_1.JPG", b"caf\xe9/x.png"] {
            assert_eq!(trash_origin(&trash_path(7, rel)), Some(rel));
        }
        for stray in [
            &b".mediadex-trash/x.png"[..],
            b".mediadex-trash/7/",
            b"a/b.png",
        ] {
            assert_eq!(trash_origin(stray), None, "{stray:?}");
        }
    }
}
