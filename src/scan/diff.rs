//! The diff: decides from a file's stamp alone whether it must be read again, and says why.
//! An unchanged file is never opened. Pure: no I/O, no database.

pub use crate::model::FileReason as Reason;
use crate::model::FileStamp as Stamp;

/// `None` means unchanged: the file is not opened. (A file whose last read failed is
/// retried by the caller with `Reason::Error`.)
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
