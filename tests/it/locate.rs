//! Which file of an asset may be read (issue 14 item 3): the walks and the thumbnail job
//! read an asset's file by the rules the API reads it by — inside its library root, still
//! holding the stamp its scan recorded, and for a missing file first in the trash folder.

use image::{Rgb, RgbImage};
use mediadex::model::{FileStamp, WalkAsset, WalkFile, WalkResults};
use mediadex::walks::WalkKind;
use mediadex::walks::content_hash::ContentHashWalk;
use std::path::Path;

fn png(path: &Path, shade: u8) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    RgbImage::from_pixel(8, 8, Rgb([shade, 90, 30]))
        .save(path)
        .expect("png");
}

fn stamp_of(path: &Path) -> FileStamp {
    FileStamp::of(&std::fs::metadata(path).expect("stat"))
}

fn one_file(root: &Path, rel: &str, stamp: FileStamp) -> WalkAsset {
    WalkAsset {
        id: 1,
        checksum: [0; 32],
        trashed: false,
        files: vec![WalkFile {
            root: root.to_string_lossy().into_owned(),
            rel_path: rel.as_bytes().to_vec(),
            present: true,
            stamp,
            trashed_to: None,
        }],
        timed_out: None,
        same_pixels: None,
        known: None,
    }
}

/// The file was moved out of the library and a symlink put in its place: a rename keeps the
/// stamp, so only the containment check tells that the bytes now live outside the library.
#[cfg(unix)]
#[test]
fn a_walk_never_reads_through_a_symlink_leading_out_of_the_library() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("lib");
    png(&root.join("a.png"), 1);
    let stamp = stamp_of(&root.join("a.png"));
    std::fs::rename(root.join("a.png"), dir.path().join("outside.png")).expect("move out");
    std::os::unix::fs::symlink(dir.path().join("outside.png"), root.join("a.png"))
        .expect("symlink");
    let asset = one_file(&root, "a.png", stamp);
    let WalkResults::ContentHashes(found) = ContentHashWalk::new(None).process(&[asset]) else {
        panic!("a content-hash walk answers content hashes");
    };
    assert!(
        found.is_empty(),
        "hashed a file outside the library: {found:?}"
    );
}

/// The thumbnail job reads by the same rule: no thumbnail is made (and cached under the
/// asset's checksum) from a file outside the library, however its stamp matches.
#[cfg(unix)]
#[test]
fn the_thumbnail_job_never_reads_through_a_symlink_leading_out_of_the_library() {
    use mediadex::model::{MediaKind, ThumbAsset};
    use mediadex::thumbs::Thumbs;
    use mediadex::thumbs::job::{MakeThumb, Outcome};
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("lib");
    png(&root.join("a.png"), 1);
    let stamp = stamp_of(&root.join("a.png"));
    let asset = ThumbAsset {
        asset: one_file(&root, "a.png", stamp),
        kind: MediaKind::Image,
        mime: Some("image/png".into()),
        orientation: None,
        width: Some(8),
        height: Some(8),
    };
    let thumbs = Thumbs::new(&dir.path().join("data"));
    std::fs::rename(root.join("a.png"), dir.path().join("outside.png")).expect("move out");
    std::os::unix::fs::symlink(dir.path().join("outside.png"), root.join("a.png"))
        .expect("symlink");
    assert_eq!(thumbs.make(&asset), Outcome::NoFile);
    // The same file back inside the library gives its thumbnail.
    std::fs::remove_file(root.join("a.png")).expect("rm link");
    std::fs::rename(dir.path().join("outside.png"), root.join("a.png")).expect("move in");
    assert_eq!(thumbs.make(&asset), Outcome::Made);
}
