//! The `stacks` table (migration 0015): RAW+JPEG stacks. A camera RAW file and a JPEG or HEIC
//! file with the same name stem in one folder, whose capture times fall in the same second
//! (sub-seconds ignored: a RAW often carries none; offsets must agree when both say one), are
//! paired when the second of them is stored, in the scan's fenced batch (`pair`), whatever
//! the walk's order. The list of live assets leaves out an asset whose present file is a RAW
//! of a stack with a present, live and published primary (`stack_hidden!`); each asset of a
//! stack names its members (`of_asset`). Owns no asset or file row.

use super::StoreError;
use super::db::{Db, Pair};
use crate::media::HEIF_MIMES;
use crate::media::raw::RAW_MIMES;
use crate::model::{MediaFacts, StackMember, TakenAtSource};

/// The condition, on a row of `assets`, that it is the RAW behind a stack's shown primary:
/// one of its present files is a stack's RAW whose primary file is present and shows a live,
/// published asset. Trashing the primary, or its file going missing, shows the RAW again.
macro_rules! stack_hidden {
    () => {
        "EXISTS (SELECT 1 FROM files rf JOIN stacks s ON s.raw_file_id = rf.id \
           JOIN files pf ON pf.id = s.primary_file_id AND pf.state = 'present' \
           JOIN assets pa ON pa.id = pf.asset_id AND pa.trashed_at IS NULL \
                         AND pa.pending_run IS NULL \
          WHERE rf.asset_id = assets.id AND rf.state = 'present')"
    };
}

/// A re-read file's old pairings go: its content, date or type may have changed.
pub(super) const UNPAIR: &str = "DELETE FROM stacks WHERE raw_file_id = ?1 OR primary_file_id = ?1";
/// Present files of the library whose path starts with `?2` (`dir/stem.`; `?3` is the
/// prefix with its last byte raised), other than `?4`, with their asset's type and date: the
/// UNIQUE (library_id, rel_path) index read as a range.
pub(super) const PARTNERS: &str = "
    SELECT f.id, f.rel_path, a.mime, a.taken_local, a.taken_offset_minutes
      FROM files f JOIN assets a ON a.id = f.asset_id
     WHERE f.library_id = ?1 AND f.rel_path >= ?2 AND f.rel_path < ?3
       AND f.state = 'present' AND f.id <> ?4
       AND coalesce(a.taken_at_source, 'exif') <> 'mtime'
       AND coalesce(a.taken_at_source, 'exif') <> 'filename'";
/// A RAW keeps the primary it has (a HEIC and a JPEG of one name: the first stays).
pub(super) const INSERT: &str = "
    INSERT INTO stacks (raw_file_id, primary_file_id) VALUES (?1, ?2)
    ON CONFLICT (raw_file_id) DO NOTHING";
/// The stack of asset ?1: the primary file its present files are or stand behind, then that
/// primary's RAW files; each present, with a live and published asset. The members lead the
/// join (CROSS JOIN): left to the planner, it read all of `files` for each asset (534 ms per
/// asset at 1M files, so 100 s for a list page; 0.24 ms led by the members). A pair:
/// PostgreSQL has no `CROSS JOIN ... ON` (its planner is not led by the join's spelling).
macro_rules! of_asset {
    ($join:literal) => {
        concat!(
            "
    WITH heads (id) AS (
        SELECT s.primary_file_id FROM stacks s JOIN files f ON f.id = s.raw_file_id
         WHERE f.asset_id = ?1 AND f.state = 'present'
        UNION
        SELECT s.primary_file_id FROM stacks s JOIN files f ON f.id = s.primary_file_id
         WHERE f.asset_id = ?1 AND f.state = 'present'),
    members (file_id, is_primary) AS (
        SELECT id, 1 FROM heads
        UNION
        SELECT s.raw_file_id, 0 FROM stacks s JOIN heads h ON s.primary_file_id = h.id)
    SELECT f.asset_id, f.id, f.rel_path_text, a.mime, m.is_primary
      FROM members m ",
            $join,
            " files f ON f.id = m.file_id AND f.state = 'present'
      JOIN assets a ON a.id = f.asset_id AND a.trashed_at IS NULL AND a.pending_run IS NULL
     ORDER BY m.is_primary DESC, f.rel_path"
        )
    };
}
pub(super) const OF_ASSET: Pair = Pair {
    sqlite: of_asset!("CROSS JOIN"),
    postgres: of_asset!("JOIN"),
};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Raw,
    Primary,
}

fn role(mime: Option<&str>) -> Option<Role> {
    let mime = mime?;
    if RAW_MIMES.contains(&mime) {
        Some(Role::Raw)
    } else if mime == "image/jpeg" || HEIF_MIMES.contains(&mime) {
        Some(Role::Primary)
    } else {
        None
    }
}

/// Whether a file read with `facts` can be in a stack: a RAW, JPEG or HEIF with a capture
/// date of its own (a date from the file name or the mtime says nothing about the capture).
fn candidate(f: &MediaFacts) -> bool {
    let captured = !matches!(
        f.taken_at_source,
        Some(TakenAtSource::Mtime | TakenAtSource::Filename)
    );
    role(f.mime.as_deref()).is_some() && f.taken_local.is_some() && captured
}

/// The same capture second, and the same offset when both say one.
fn same_time(a: (&str, Option<i32>), b: (&str, Option<i32>)) -> bool {
    let second = |t: &str| t.get(..19).map(str::to_owned);
    let offsets_agree = match (a.1, b.1) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    };
    second(a.0).is_some() && second(a.0) == second(b.0) && offsets_agree
}

type Partner = (i64, Vec<u8>, Option<String>, Option<String>, Option<i32>);

/// Pairs file `file_id` (just written at `rel_path`, read with `facts`) with the partners
/// of its stem already stored: a RAW with the first JPEG/HEIC of the same second, a JPEG or
/// HEIC with every such RAW that has no primary yet. `existed`: the row was there before
/// this read, so its old pairings are dropped first (a new row has none: no query).
/// `rel_path` is `None` when the file's folder holds no other name of its stem: no partner.
pub(super) fn pair(
    db: &Db<'_>,
    library_id: i64,
    file_id: i64,
    rel_path: Option<&[u8]>,
    facts: Option<&MediaFacts>,
    existed: bool,
) -> Result<(), StoreError> {
    if existed {
        db.execute(UNPAIR, args!(file_id))?;
    }
    let (Some(f), Some(rel_path)) = (facts.filter(|f| candidate(f)), rel_path) else {
        return Ok(());
    };
    let (Some(me), Some(taken)) = (role(f.mime.as_deref()), f.taken_local.as_deref()) else {
        return Ok(());
    };
    let Some((lo, hi)) = super::stems::stem_range(rel_path) else {
        return Ok(());
    };
    let partners: Vec<Partner> = db.all(
        PARTNERS,
        args!(library_id, lo.as_slice(), hi.as_slice(), file_id),
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
    )?;
    let mut fitting = partners.into_iter().filter(|(_, path, mime, t, off)| {
        let rest = &path[lo.len()..];
        let other = role(mime.as_deref());
        !rest.contains(&b'/')
            && !rest.contains(&b'.')
            && other.is_some_and(|o| o != me)
            && t.as_deref()
                .is_some_and(|t| same_time((taken, f.taken_offset_minutes), (t, *off)))
    });
    if me == Role::Raw {
        if let Some((primary, ..)) = fitting.next() {
            db.execute(INSERT, args!(file_id, primary))?;
        }
    } else {
        for (raw, ..) in fitting {
            db.execute(INSERT, args!(raw, file_id))?;
        }
    }
    Ok(())
}

/// The stack asset `asset_id` is in, its primary first; empty unless a primary and at least
/// one other member remain.
pub(super) fn of_asset(db: &Db<'_>, asset_id: i64) -> Result<Vec<StackMember>, StoreError> {
    let members: Vec<StackMember> = db.all(db.pick(&OF_ASSET), args!(asset_id), |r| {
        Ok(StackMember {
            asset_id: r.get(0)?,
            file_id: r.get(1)?,
            rel_path_text: r.get(2)?,
            mime: r.get(3)?,
            primary: r.get(4)?,
        })
    })?;
    let whole = members.len() >= 2 && members.first().is_some_and(|m| m.primary);
    Ok(if whole { members } else { Vec::new() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stem_range_covers_the_names_of_one_stem_in_one_folder() {
        let (lo, hi) = crate::store::stems::stem_range(b"2021/DSC_0001.DNG").unwrap();
        assert_eq!(
            (lo.as_slice(), hi.as_slice()),
            (&b"2021/DSC_0001."[..], &b"2021/DSC_0001/"[..])
        );
        assert_eq!(crate::store::stems::stem_range(b"a.jpg").unwrap().0, b"a.");
        assert_eq!(crate::store::stems::stem_range(b"dir/.hidden"), None);
        assert_eq!(crate::store::stems::stem_range(b"dir.x/noext"), None);
    }

    #[test]
    fn the_same_second_ignores_sub_seconds_and_needs_agreeing_offsets() {
        let t = |s, o| (s, o);
        assert!(same_time(
            t("2021-09-18T19:02:33.47", Some(-240)),
            t("2021-09-18T19:02:33", Some(-240))
        ));
        assert!(same_time(
            t("2021-09-18T19:02:33", None),
            t("2021-09-18T19:02:33.9", Some(60))
        ));
        assert!(!same_time(
            t("2021-09-18T19:02:33", Some(-240)),
            t("2021-09-18T19:02:34", Some(-240))
        ));
        assert!(!same_time(
            t("2021-09-18T19:02:33", Some(-240)),
            t("2021-09-18T19:02:33", Some(60))
        ));
        assert!(!same_time(t("2021", None), t("2021", None)));
    }
}

#[cfg(test)]
mod both {
    use super::*;
    use crate::model::MediaFacts;
    use crate::store::asset_fixtures::{asset, file, library};
    use crate::store::db::tests::on_both_schemas;

    const RAW: &str = "image/x-canon-cr2";

    fn facts(mime: &str, taken: &str) -> MediaFacts {
        MediaFacts {
            mime: Some(mime.into()),
            taken_local: Some(taken.into()),
            taken_at_source: Some(TakenAtSource::Exif),
            ..MediaFacts::default()
        }
    }

    fn stacked(db: &Db<'_>) -> Result<Vec<(i64, i64)>, StoreError> {
        let sql = "SELECT raw_file_id, primary_file_id FROM stacks ORDER BY raw_file_id";
        db.all(sql, args!(), |r| Ok((r.get(0)?, r.get(1)?)))
    }

    fn a_raw_and_a_jpeg_of_one_second_are_paired_and_listed(db: &Db<'_>) -> Result<(), StoreError> {
        library(db, 1)?;
        let when = "2021-09-18T19:02:33";
        asset(db, 1, "image/jpeg", Some(when))?;
        asset(db, 2, RAW, Some(when))?;
        asset(db, 3, RAW, Some("2021-09-18T19:02:34"))?;
        file(db, 1, 1, "d/IMG_1.JPG", 1)?;
        file(db, 2, 1, "d/IMG_1.CR2", 2)?;
        file(db, 3, 1, "d/IMG_1.raw.CR2", 3)?;
        let raw = facts(RAW, "2021-09-18T19:02:33.5");
        pair(db, 1, 2, Some(b"d/IMG_1.CR2"), Some(&raw), false)?;
        assert_eq!(stacked(db)?, vec![(2, 1)]);
        let late = facts(RAW, "2021-09-18T19:02:34");
        pair(db, 1, 3, Some(b"d/IMG_1.raw.CR2"), Some(&late), false)?;
        assert_eq!(
            stacked(db)?,
            vec![(2, 1)],
            "another stem and second: no pair"
        );
        let members = of_asset(db, 2)?;
        let got: Vec<(i64, &str, bool)> = members
            .iter()
            .map(|m| (m.file_id, m.rel_path_text.as_str(), m.primary))
            .collect();
        assert_eq!(
            got,
            vec![(1, "d/IMG_1.JPG", true), (2, "d/IMG_1.CR2", false)]
        );
        assert_eq!(of_asset(db, 1)?.len(), 2);
        assert_eq!(of_asset(db, 3)?, vec![]);
        Ok(())
    }

    fn a_jpeg_takes_the_raws_and_a_reread_file_drops_its_pairs(
        db: &Db<'_>,
    ) -> Result<(), StoreError> {
        library(db, 1)?;
        let when = "2021-09-18T19:02:33";
        asset(db, 1, RAW, Some(when))?;
        asset(db, 2, "image/jpeg", Some(when))?;
        asset(db, 3, "image/heic", Some(when))?;
        file(db, 1, 1, "a.CR2", 1)?;
        file(db, 2, 1, "a.jpg", 2)?;
        file(db, 3, 1, "a.heic", 3)?;
        pair(
            db,
            1,
            2,
            Some(b"a.jpg"),
            Some(&facts("image/jpeg", when)),
            false,
        )?;
        assert_eq!(stacked(db)?, vec![(1, 2)]);
        pair(
            db,
            1,
            3,
            Some(b"a.heic"),
            Some(&facts("image/heic", when)),
            false,
        )?;
        assert_eq!(stacked(db)?, vec![(1, 2)], "a RAW keeps the primary it has");
        pair(db, 1, 2, Some(b"a.jpg"), None, true)?;
        assert_eq!(stacked(db)?, vec![], "a re-read file's pairs go");
        db.execute(
            "UPDATE assets SET trashed_at = 1, trash_reason = 'user' WHERE id = 2",
            args!(),
        )?;
        pair(
            db,
            1,
            3,
            Some(b"a.heic"),
            Some(&facts("image/heic", when)),
            true,
        )?;
        assert_eq!(stacked(db)?, vec![(1, 3)]);
        assert_eq!(of_asset(db, 1)?.len(), 2);
        Ok(())
    }

    on_both_schemas!(
        a_raw_and_a_jpeg_of_one_second_are_paired_and_listed,
        a_jpeg_takes_the_raws_and_a_reread_file_drops_its_pairs,
    );
}
