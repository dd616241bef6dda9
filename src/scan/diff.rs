//! The diff: decides from a file's stamp alone whether it must be read again, and says why.
//! An unchanged file is never opened. Pure: no I/O, no database.

use super::walk::Stamp;
use std::fmt;

/// Why a file is (re)read in a run. Stored per file and counted per run, so that "why did it
/// re-hash everything?" has an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// Not known before.
    New,
    /// Its size changed.
    Size,
    /// Same size, new modification time.
    Mtime,
    /// Same size and time, but another file (device or inode) now has this path.
    Inode,
    /// The user asked for a full re-read (`scan --force`).
    Forced,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::New => "new",
            Reason::Size => "size",
            Reason::Mtime => "mtime",
            Reason::Inode => "inode",
            Reason::Forced => "forced",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `None` means unchanged: the file is not opened.
pub fn reason(now: &Stamp, known: Option<&Stamp>, forced: bool) -> Option<Reason> {
    let Some(known) = known else {
        return Some(Reason::New);
    };
    if forced {
        Some(Reason::Forced)
    } else if now.size != known.size {
        Some(Reason::Size)
    } else if now.mtime_ns != known.mtime_ns {
        Some(Reason::Mtime)
    } else if now.inode != known.inode || now.dev != known.dev {
        Some(Reason::Inode)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Stamp = Stamp {
        size: 10,
        mtime_ns: 1_000,
        dev: 1,
        inode: 7,
    };

    #[test]
    fn each_change_is_named_and_an_identical_stamp_is_unchanged() {
        assert_eq!(reason(&S, None, false), Some(Reason::New));
        assert_eq!(reason(&S, Some(&S), false), None);
        assert_eq!(reason(&S, Some(&S), true), Some(Reason::Forced));
        let grown = Stamp { size: 11, ..S };
        assert_eq!(reason(&grown, Some(&S), false), Some(Reason::Size));
        let touched = Stamp {
            mtime_ns: 2_000,
            ..S
        };
        assert_eq!(reason(&touched, Some(&S), false), Some(Reason::Mtime));
        let replaced = Stamp { inode: 8, ..S };
        assert_eq!(reason(&replaced, Some(&S), false), Some(Reason::Inode));
        let moved_disk = Stamp { dev: 2, ..S };
        assert_eq!(reason(&moved_disk, Some(&S), false), Some(Reason::Inode));
    }
}
