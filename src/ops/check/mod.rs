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
    let mut out = format!("{}/", library.name);
    for c in String::from_utf8_lossy(path).chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_in_the_words_stays_on_one_line_and_names_its_library() {
        let library = Library {
            id: 1,
            name: "photos".into(),
            root: "/p".into(),
            created_at: 0,
        };
        assert_eq!(shown(&library, b"a/b.png"), "photos/a/b.png");
        assert_eq!(
            shown(&library, b"line\nbreak.png"),
            "photos/line\\nbreak.png"
        );
        assert_eq!(shown(&library, b"caf\xe9.png"), "photos/caf\u{fffd}.png");
    }
}
