//! `mediadex check [--repair]` (issue 25; DESIGN.md section 6, the library invariant), like
//! `git fsck`: the index checked against the disk — every file row, every live asset, every
//! trashed asset's trash-folder files, every unsettled move, every file in each library's
//! trash folder and every pending asset — each disagreement said in words (`inspect`). A
//! library whose folder is away or not the one indexed (`scan::identity`) is said once and
//! skipped, never reported file by file as missing.
//!
//! `repair` fixes what can be fixed without losing anything, and says what it did
//! (`repair`). It moves, deletes and overwrites no user file itself, so DESIGN.md section 4
//! is kept by writer operations that each re-check what they repair in their own
//! transaction; an unfinished move is handed back to the lease protocol (a move job, carried
//! on by whoever claims it), and everything a scan heals is left to a full scan, asked for
//! through admission like any other.

mod inspect;
mod repair;

pub use repair::repair;

use super::{Error, Services};
use crate::model::{Check, Library};

/// Checks every library against the index, and the index's own loose ends.
pub fn check(s: &Services) -> Result<Check, Error> {
    Ok(inspect::Inspection::run(s)?.check)
}

/// A library-relative path as the words name it: the library's name, then the path, on one
/// line (a control character is escaped, bytes that are not UTF-8 show U+FFFD).
fn shown(library: &Library, path: &[u8]) -> String {
    let text: String = String::from_utf8_lossy(path)
        .chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect();
    format!("{}/{text}", library.name)
}
