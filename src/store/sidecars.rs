//! What a photo takes from its XMP sidecar or Takeout JSON, on its asset (migration 0013):
//! the notes (rating, title and description on the row, tags in `asset_tags`) written with
//! a new asset, and the refresh of an asset that a read of one of its files kept, joined or
//! restored (a photo read again because its sidecar changed has the same checksum: its
//! claim is `Kept`, and the facts the sidecar gave, the date and place it filled included,
//! are rewritten in the batch's fenced transaction). An asset shown by several present
//! files has the facts of the one of the lowest library and path (finding 13 of issue 25):
//! each of those copies keeps what it lends (`files.beside`, migration 0022), and the
//! choice is made again when a copy is read, joins, goes missing, shows another asset or
//! goes with its library. A file alone in showing its asset costs no statement more.
//! Runs inside the writer's transactions only; must not decide what a sidecar says
//! (`media::beside` does) or touch files.

use super::StoreError;
use super::db::{Db, Pair};
use crate::model::{Asset, MediaFacts, Notes, TakenAtSource};

const SET_NOTES: &str = "UPDATE assets SET rating = ?2, title = ?3, description = ?4 WHERE id = ?1";
/// Everything of a kept asset that lies beside its file or depends on what does: a date and
/// a place a sidecar gave or no longer gives, and the name's or the mtime's date behind it.
const REFRESH: &str = "
    UPDATE assets SET taken_local = ?2, taken_offset_minutes = ?3, taken_at_source = ?4,
                      lat = ?5, lon = ?6, rating = ?7, title = ?8, description = ?9
     WHERE id = ?1";
const DROP_TAGS: &str = "DELETE FROM asset_tags WHERE asset_id = ?1";
/// A tag met twice (without ASCII case) is stored once, as first written.
const ADD_TAG: &str =
    "INSERT INTO asset_tags (asset_id, tag) VALUES (?1, ?2) ON CONFLICT DO NOTHING";
const TAGS: &str = "SELECT tag FROM asset_tags WHERE asset_id = ?1 ORDER BY rowid";
/// Whether a present file other than ?2 shows asset ?1 (through the `files_asset` index).
const OTHER_COPY: &str = "
    SELECT EXISTS (SELECT 1 FROM files WHERE asset_id = ?1 AND state = 'present' AND id <> ?2)";
/// What file ?1 lends its asset, from its read (?10: the tags as a JSON array).
/// JSON is built by each engine's own functions (SQLite's `json_object`, PostgreSQL's
/// `json_build_object`); each reads back only what it wrote. PostgreSQL is told each
/// parameter's type, which nothing around it says.
const LEND: Pair = Pair {
    sqlite: "
    UPDATE files SET beside = json_object('taken_local', ?2, 'offset', ?3, 'source', ?4,
                                          'lat', ?5, 'lon', ?6, 'rating', ?7, 'title', ?8,
                                          'description', ?9, 'tags', json(?10))
     WHERE id = ?1",
    postgres: "
    UPDATE files SET beside = json_build_object(
            'taken_local', CAST(?2 AS TEXT), 'offset', CAST(?3 AS BIGINT),
            'source', CAST(?4 AS TEXT), 'lat', CAST(?5 AS DOUBLE PRECISION),
            'lon', CAST(?6 AS DOUBLE PRECISION), 'rating', CAST(?7 AS BIGINT),
            'title', CAST(?8 AS TEXT), 'description', CAST(?9 AS TEXT),
            'tags', CAST(CAST(?10 AS TEXT) AS JSON))::TEXT
     WHERE id = ?1",
};
/// The other present copies of asset ?1 that lend nothing yet: the one file that showed it
/// alone until now, whose facts the asset carries.
/// A Pair for the JSON functions (`json_agg` of no row is NULL, hence the coalesce).
const LEND_ASSETS: Pair = Pair {
    sqlite: "
    UPDATE files SET beside =
        (SELECT json_object('taken_local', a.taken_local, 'offset', a.taken_offset_minutes,
                            'source', a.taken_at_source, 'lat', a.lat, 'lon', a.lon,
                            'rating', a.rating, 'title', a.title, 'description', a.description,
                            'tags', (SELECT json_group_array(t.tag ORDER BY t.rowid)
                                       FROM asset_tags t WHERE t.asset_id = a.id))
           FROM assets a WHERE a.id = files.asset_id)
     WHERE asset_id = ?1 AND state = 'present' AND id <> ?2 AND beside IS NULL",
    postgres: "
    UPDATE files SET beside =
        (SELECT json_build_object(
                    'taken_local', a.taken_local, 'offset', a.taken_offset_minutes,
                    'source', a.taken_at_source, 'lat', a.lat, 'lon', a.lon,
                    'rating', a.rating, 'title', a.title, 'description', a.description,
                    'tags', (SELECT coalesce(json_agg(t.tag ORDER BY t.rowid), '[]'::json)
                               FROM asset_tags t WHERE t.asset_id = a.id))::TEXT
           FROM assets a WHERE a.id = files.asset_id)
     WHERE asset_id = ?1 AND state = 'present' AND id <> ?2 AND beside IS NULL",
};
/// What the present file of asset ?1 of the lowest library and path lends it.
const FIRST_LENT: &str = "
    SELECT beside FROM files WHERE asset_id = ?1 AND state = 'present'
     ORDER BY library_id, rel_path LIMIT 1";
/// `->>` answers text on PostgreSQL, cast to each column's type there.
const APPLY: Pair = Pair {
    sqlite: "
    UPDATE assets SET taken_local = ?2 ->> 'taken_local',
                      taken_offset_minutes = ?2 ->> 'offset', taken_at_source = ?2 ->> 'source',
                      lat = ?2 ->> 'lat', lon = ?2 ->> 'lon', rating = ?2 ->> 'rating',
                      title = ?2 ->> 'title', description = ?2 ->> 'description'
     WHERE id = ?1",
    postgres: "
    UPDATE assets SET taken_local = j.v ->> 'taken_local',
                      taken_offset_minutes = CAST(j.v ->> 'offset' AS BIGINT),
                      taken_at_source = j.v ->> 'source',
                      lat = CAST(j.v ->> 'lat' AS DOUBLE PRECISION),
                      lon = CAST(j.v ->> 'lon' AS DOUBLE PRECISION),
                      rating = CAST(j.v ->> 'rating' AS BIGINT),
                      title = j.v ->> 'title', description = j.v ->> 'description'
      FROM (SELECT CAST(CAST(?2 AS TEXT) AS JSONB) AS v) j
     WHERE id = ?1",
};
/// `json_each` is SQLite's; PostgreSQL walks the array with its ordinality.
const APPLY_TAGS: Pair = Pair {
    sqlite: "
    INSERT INTO asset_tags (asset_id, tag)
    SELECT ?1, value FROM json_each(?2, '$.tags') ORDER BY key ON CONFLICT DO NOTHING",
    postgres: "
    INSERT INTO asset_tags (asset_id, tag)
    SELECT CAST(?1 AS BIGINT), t.tag
      FROM jsonb_array_elements_text(CAST(CAST(?2 AS TEXT) AS JSONB) -> 'tags')
           WITH ORDINALITY AS t(tag, n)
     ORDER BY t.n ON CONFLICT DO NOTHING",
};

fn is_empty(notes: &Notes) -> bool {
    notes == &Notes::default()
}

fn add_tags(db: &Db<'_>, id: i64, tags: &[String]) -> Result<(), StoreError> {
    for tag in tags {
        db.execute(ADD_TAG, args!(id, tag.as_str()))?;
    }
    Ok(())
}

/// The notes of a new asset. A photo with nothing beside it (most of a first index) costs
/// no statement.
pub(super) fn note_new(db: &Db<'_>, id: i64, notes: &Notes) -> Result<(), StoreError> {
    if is_empty(notes) {
        return Ok(());
    }
    let (title, description) = (notes.title.as_deref(), notes.description.as_deref());
    db.execute(SET_NOTES, args!(id, notes.rating, title, description))?;
    add_tags(db, id, &notes.tags)
}

/// Rewrites what the read `facts` of the asset's own file say beside its bytes: the date
/// with its source, the place, and the notes with the tags.
fn refresh(db: &Db<'_>, id: i64, facts: &MediaFacts) -> Result<(), StoreError> {
    let n = &facts.notes;
    db.execute(
        REFRESH,
        args!(
            id,
            facts.taken_local.as_deref(),
            facts.taken_offset_minutes,
            facts.taken_at_source.map(TakenAtSource::as_str),
            facts.lat,
            facts.lon,
            n.rating,
            n.title.as_deref(),
            n.description.as_deref()
        ),
    )?;
    db.execute(DROP_TAGS, args!(id))?;
    add_tags(db, id, &n.tags)
}

/// The asset `id` of file `file_id`, read with `facts` and kept, joined (`joined`: a
/// duplicate) or restored by it: alone in showing it, the file gives it its facts; one of
/// several copies, it lends them (`files.beside`), the copy that lent nothing yet lends
/// what the asset carries (its facts), and the asset takes the first copy's.
pub(super) fn read_copy(
    db: &Db<'_>,
    id: i64,
    file_id: i64,
    facts: &MediaFacts,
    joined: bool,
) -> Result<(), StoreError> {
    let others = joined || db.one(OTHER_COPY, args!(id, file_id), |r| r.get::<bool>(0))?;
    if !others {
        return refresh(db, id, facts);
    }
    db.execute(db.pick(&LEND_ASSETS), args!(id, file_id))?;
    lend(db, file_id, facts)?;
    follow_first(db, id)
}

/// What file `file_id` lends its asset from its read `facts`.
fn lend(db: &Db<'_>, file_id: i64, facts: &MediaFacts) -> Result<(), StoreError> {
    let n = &facts.notes;
    let tags = serde_json::json!(n.tags).to_string();
    db.execute(
        db.pick(&LEND),
        args!(
            file_id,
            facts.taken_local.as_deref(),
            facts.taken_offset_minutes,
            facts.taken_at_source.map(TakenAtSource::as_str),
            facts.lat,
            facts.lon,
            n.rating,
            n.title.as_deref(),
            n.description.as_deref(),
            tags
        ),
    )?;
    Ok(())
}

/// Asset `id` takes what its present file of the lowest library and path lends, when that
/// file lends anything: after a copy went missing, showed another asset, went with its
/// library or brought the asset back. An asset shown by one file that lends nothing keeps
/// what it has (it carries that file's facts).
pub(super) fn follow_first(db: &Db<'_>, id: i64) -> Result<(), StoreError> {
    let lent: Option<Option<String>> = db.optional(FIRST_LENT, args!(id), |r| r.get(0))?;
    let Some(Some(lent)) = lent else {
        return Ok(());
    };
    db.execute(db.pick(&APPLY), args!(id, lent.as_str()))?;
    db.execute(DROP_TAGS, args!(id))?;
    db.execute(db.pick(&APPLY_TAGS), args!(id, lent.as_str()))?;
    Ok(())
}

/// The asset's tags, in the order they were written.
pub(super) fn load_tags(db: &Db<'_>, asset: &mut Asset) -> Result<(), StoreError> {
    asset.facts.notes.tags = db.all(TAGS, args!(asset.id), |r| r.get(0))?;
    Ok(())
}

#[cfg(test)]
mod plan_tests {
    // SQLite's own query plan (EXPLAIN QUERY PLAN): kept on rusqlite.
    use crate::clock::FakeClock;
    use crate::store::{Store, StoreOptions};

    /// The copies of one asset are found through the `files_asset` index: choosing the
    /// first copy costs the asset's rows, never a scan of the library's files.
    #[test]
    fn the_copies_of_an_asset_are_read_by_its_index() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = FakeClock::new(1_800_000_000_000);
        let store =
            Store::open(&dir.path().join("m.db"), clock, StoreOptions::default()).expect("open");
        for sql in [
            super::OTHER_COPY,
            super::FIRST_LENT,
            super::LEND_ASSETS.sqlite,
        ] {
            let plan = store
                .write_lite(move |conn, _| {
                    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
                    // Unbound parameters are NULL: the plan is what counts.
                    let mut rows = stmt.raw_query();
                    let mut plan = Vec::new();
                    while let Some(r) = rows.next()? {
                        plan.push(r.get::<_, String>(3)?);
                    }
                    Ok(plan)
                })
                .expect("plan");
            assert!(
                plan.iter().any(|step| step.contains("INDEX files_asset")),
                "{sql}: {plan:?}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::db::tests::on_both_schemas;
    use crate::store::rows::{ASSET_COLS, asset_from_row};

    fn an_asset(db: &Db<'_>) -> Result<i64, StoreError> {
        db.one(
            "INSERT INTO assets (checksum, size, created_at) VALUES (?1, 1, 1) RETURNING id",
            args!([1u8; 32]),
            |r| r.get(0),
        )
    }

    /// A present file of library `lib` at `path` showing `asset`.
    fn a_file(db: &Db<'_>, lib: i64, path: &str, asset: i64) -> Result<i64, StoreError> {
        db.one(
            "INSERT INTO files (library_id, rel_path, rel_path_text, size, mtime_ns, dev, inode,
                                asset_id, last_reason, first_seen_run, last_seen_run)
             VALUES (?1, ?2, ?3, 1, 1, 1, 1, ?4, 'new', 1, 1) RETURNING id",
            args!(lib, path.as_bytes(), path, asset),
            |r| r.get(0),
        )
    }

    fn the_asset(db: &Db<'_>, id: i64) -> Result<Asset, StoreError> {
        let sql = format!("SELECT {ASSET_COLS} FROM assets WHERE id = ?1");
        let mut asset = db.one(&sql, args!(id), asset_from_row)?;
        load_tags(db, &mut asset)?;
        Ok(asset)
    }

    fn facts(title: &str, tags: &[&str], offset: Option<i32>) -> MediaFacts {
        MediaFacts {
            taken_local: Some("2020-01-02T03:04:05".into()),
            taken_offset_minutes: offset,
            taken_at_source: Some(TakenAtSource::Xmp),
            lat: Some(1.5),
            lon: Some(-2.25),
            notes: Notes {
                rating: Some(-1),
                tags: tags.iter().map(|t| t.to_string()).collect(),
                title: Some(title.into()),
                description: None,
            },
            ..MediaFacts::default()
        }
    }

    fn a_file_alone_gives_its_asset_its_notes(db: &Db<'_>) -> Result<(), StoreError> {
        let lib = db.one(
            "INSERT INTO libraries (name, root, created_at) VALUES ('l', '/l', 1) RETURNING id",
            args!(),
            |r| r.get(0),
        )?;
        let id = an_asset(db)?;
        note_new(db, id, &Notes::default())?;
        assert_eq!(the_asset(db, id)?.facts.notes, Notes::default());
        let new = facts("t", &["b", "a", "B"], None).notes;
        note_new(db, id, &new)?;
        let notes = the_asset(db, id)?.facts.notes;
        assert_eq!(
            (notes.title.as_deref(), notes.rating),
            (Some("t"), Some(-1))
        );
        assert_eq!(notes.tags, vec!["b", "a"]);
        let file = a_file(db, lib, "x.jpg", id)?;
        read_copy(db, id, file, &facts("u", &["c"], Some(60)), false)?;
        let asset = the_asset(db, id)?;
        assert_eq!(asset.facts.notes.tags, vec!["c"]);
        assert_eq!(asset.facts.taken_offset_minutes, Some(60));
        assert_eq!(asset.facts.taken_at_source, Some(TakenAtSource::Xmp));
        let lent: Option<String> =
            db.one("SELECT beside FROM files WHERE id = ?1", args!(file), |r| {
                r.get(0)
            })?;
        assert_eq!(lent, None, "a file alone lends nothing");
        Ok(())
    }

    /// Two copies: each lends what it read, and the asset takes the first copy's (the
    /// lowest library and path), even when the other was read last.
    fn an_asset_of_several_copies_takes_the_first_copys_facts(
        db: &Db<'_>,
    ) -> Result<(), StoreError> {
        let lib = db.one(
            "INSERT INTO libraries (name, root, created_at) VALUES ('l', '/l', 1) RETURNING id",
            args!(),
            |r| r.get(0),
        )?;
        let id = an_asset(db)?;
        let first = a_file(db, lib, "a.jpg", id)?;
        read_copy(
            db,
            id,
            first,
            &facts("first", &["y", "x"], Some(-90)),
            false,
        )?;
        let second = a_file(db, lib, "b.jpg", id)?;
        read_copy(db, id, second, &facts("second", &["z"], None), true)?;
        let asset = the_asset(db, id)?;
        assert_eq!(asset.facts.notes.title.as_deref(), Some("first"));
        assert_eq!(asset.facts.notes.tags, vec!["y", "x"]);
        assert_eq!(asset.facts.taken_offset_minutes, Some(-90));
        assert_eq!((asset.facts.lat, asset.facts.lon), (Some(1.5), Some(-2.25)));
        assert_eq!(asset.facts.notes.rating, Some(-1));
        // The first copy goes missing: the asset follows the second.
        db.execute(
            "UPDATE files SET state = 'missing', missing_since = 5 WHERE id = ?1",
            args!(first),
        )?;
        follow_first(db, id)?;
        let asset = the_asset(db, id)?;
        assert_eq!(asset.facts.notes.title.as_deref(), Some("second"));
        assert_eq!(asset.facts.notes.tags, vec!["z"]);
        assert_eq!(asset.facts.taken_offset_minutes, None);
        Ok(())
    }

    on_both_schemas!(
        a_file_alone_gives_its_asset_its_notes,
        an_asset_of_several_copies_takes_the_first_copys_facts,
    );
}
