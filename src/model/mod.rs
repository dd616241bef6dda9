//! Plain data types shared by every module: ids, leases, states, rows as the rest of the
//! program sees them. Owns no behaviour beyond parsing and naming; must not depend on any
//! other module of the crate. Split by domain, one file each; all re-exported here, so every
//! type is named `crate::model::X`.
//!
//! Must not import: store, media, queue, clock, rusqlite, axum

use serde::{Deserialize, Serialize};
use std::fmt;

/// Milliseconds since the Unix epoch, as told by the injected clock.
pub type Millis = i64;

macro_rules! string_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($(#[$vm])* $variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
            pub fn parse(text: &str) -> Option<Self> {
                match text { $($text => Some($name::$variant),)+ _ => None }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

mod assets;
mod check;
mod jobs;
mod lease;
mod media;
mod motion;
mod people;
mod relpath;
mod scan;
mod thumbs;
mod trash;
mod walks;

pub use assets::*;
pub use check::*;
pub use jobs::*;
pub use lease::*;
pub use media::*;
pub use motion::*;
pub use people::*;
pub use relpath::*;
pub use scan::*;
pub use thumbs::*;
pub use trash::*;
pub use walks::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widen_scope_is_the_common_ancestor() {
        assert_eq!(widen_scope("", "a/b"), "");
        assert_eq!(widen_scope("a/b", "a/b"), "a/b");
        assert_eq!(widen_scope("a/b/c", "a/b"), "a/b");
        assert_eq!(widen_scope("a/b", "a/c"), "a");
        assert_eq!(widen_scope("ab", "a"), "");
        assert_eq!(widen_scope("x", "y"), "");
    }

    #[test]
    fn path_bytes_are_given_only_where_the_text_is_lossy() {
        let path = |bytes: &[u8], text: &str| AssetPath {
            file_id: 1,
            library_id: 1,
            rel_path: bytes.to_vec(),
            rel_path_text: text.into(),
            state: FileState::Present,
        };
        assert_eq!(path(b"a/b\n.png", "a/b\n.png").bytes_if_lossy(), None);
        assert_eq!(
            path(b"\xff", "\u{fffd}").bytes_if_lossy(),
            Some("/w==".into())
        );
        assert_eq!(path(b"a\\b", "a/b").bytes_if_lossy(), Some("YVxi".into()));
    }
}
