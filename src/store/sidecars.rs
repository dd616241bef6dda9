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
use crate::model::{Asset, MediaFacts, Notes, TakenAtSource};
use rusqlite::{Connection, OptionalExtension, params};

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
const LEND: &str = "
    UPDATE files SET beside = json_object('taken_local', ?2, 'offset', ?3, 'source', ?4,
                                          'lat', ?5, 'lon', ?6, 'rating', ?7, 'title', ?8,
                                          'description', ?9, 'tags', json(?10))
     WHERE id = ?1";
/// The other present copies of asset ?1 that lend nothing yet: the one file that showed it
/// alone until now, whose facts the asset carries.
const LEND_ASSETS: &str = "
    UPDATE files SET beside =
        (SELECT json_object('taken_local', a.taken_local, 'offset', a.taken_offset_minutes,
                            'source', a.taken_at_source, 'lat', a.lat, 'lon', a.lon,
                            'rating', a.rating, 'title', a.title, 'description', a.description,
                            'tags', (SELECT json_group_array(t.tag ORDER BY t.rowid)
                                       FROM asset_tags t WHERE t.asset_id = a.id))
           FROM assets a WHERE a.id = files.asset_id)
     WHERE asset_id = ?1 AND state = 'present' AND id <> ?2 AND beside IS NULL";
/// What the present file of asset ?1 of the lowest library and path lends it.
const FIRST_LENT: &str = "
    SELECT beside FROM files WHERE asset_id = ?1 AND state = 'present'
     ORDER BY library_id, rel_path LIMIT 1";
const APPLY: &str = "
    UPDATE assets SET taken_local = ?2 ->> 'taken_local',
                      taken_offset_minutes = ?2 ->> 'offset', taken_at_source = ?2 ->> 'source',
                      lat = ?2 ->> 'lat', lon = ?2 ->> 'lon', rating = ?2 ->> 'rating',
                      title = ?2 ->> 'title', description = ?2 ->> 'description'
     WHERE id = ?1";
const APPLY_TAGS: &str = "
    INSERT INTO asset_tags (asset_id, tag)
    SELECT ?1, value FROM json_each(?2, '$.tags') ORDER BY key ON CONFLICT DO NOTHING";

fn is_empty(notes: &Notes) -> bool {
    notes == &Notes::default()
}

fn add_tags(conn: &Connection, id: i64, tags: &[String]) -> Result<(), StoreError> {
    let mut stmt = conn.prepare_cached(ADD_TAG)?;
    for tag in tags {
        stmt.execute(params![id, tag])?;
    }
    Ok(())
}

/// The notes of a new asset. A photo with nothing beside it (most of a first index) costs
/// no statement.
pub(super) fn note_new(conn: &Connection, id: i64, notes: &Notes) -> Result<(), StoreError> {
    if is_empty(notes) {
        return Ok(());
    }
    conn.prepare_cached(SET_NOTES)?.execute(params![
        id,
        notes.rating,
        notes.title,
        notes.description
    ])?;
    add_tags(conn, id, &notes.tags)
}

/// Rewrites what the read `facts` of the asset's own file say beside its bytes: the date
/// with its source, the place, and the notes with the tags.
fn refresh(conn: &Connection, id: i64, facts: &MediaFacts) -> Result<(), StoreError> {
    let n = &facts.notes;
    conn.prepare_cached(REFRESH)?.execute(params![
        id,
        facts.taken_local,
        facts.taken_offset_minutes,
        facts.taken_at_source.map(TakenAtSource::as_str),
        facts.lat,
        facts.lon,
        n.rating,
        n.title,
        n.description
    ])?;
    conn.prepare_cached(DROP_TAGS)?.execute([id])?;
    add_tags(conn, id, &n.tags)
}

/// The asset `id` of file `file_id`, read with `facts` and kept, joined (`joined`: a
/// duplicate) or restored by it: alone in showing it, the file gives it its facts; one of
/// several copies, it lends them (`files.beside`), the copy that lent nothing yet lends
/// what the asset carries (its facts), and the asset takes the first copy's.
pub(super) fn read_copy(
    conn: &Connection,
    id: i64,
    file_id: i64,
    facts: &MediaFacts,
    joined: bool,
) -> Result<(), StoreError> {
    let others = joined
        || conn
            .prepare_cached(OTHER_COPY)?
            .query_row(params![id, file_id], |r| r.get::<_, bool>(0))?;
    if !others {
        return refresh(conn, id, facts);
    }
    conn.prepare_cached(LEND_ASSETS)?
        .execute(params![id, file_id])?;
    let n = &facts.notes;
    let tags = serde_json::to_string(&n.tags)
        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    conn.prepare_cached(LEND)?.execute(params![
        file_id,
        facts.taken_local,
        facts.taken_offset_minutes,
        facts.taken_at_source.map(TakenAtSource::as_str),
        facts.lat,
        facts.lon,
        n.rating,
        n.title,
        n.description,
        tags
    ])?;
    follow_first(conn, id)
}

/// Asset `id` takes what its present file of the lowest library and path lends, when that
/// file lends anything: after a copy went missing, showed another asset, went with its
/// library or brought the asset back. An asset shown by one file that lends nothing keeps
/// what it has (it carries that file's facts).
pub(super) fn follow_first(conn: &Connection, id: i64) -> Result<(), StoreError> {
    let lent: Option<Option<String>> = conn
        .prepare_cached(FIRST_LENT)?
        .query_row([id], |r| r.get(0))
        .optional()?;
    let Some(Some(lent)) = lent else {
        return Ok(());
    };
    conn.prepare_cached(APPLY)?.execute(params![id, lent])?;
    conn.prepare_cached(DROP_TAGS)?.execute([id])?;
    conn.prepare_cached(APPLY_TAGS)?
        .execute(params![id, lent])?;
    Ok(())
}

/// The asset's tags, in the order they were written.
pub(super) fn load_tags(conn: &Connection, asset: &mut Asset) -> Result<(), StoreError> {
    asset.facts.notes.tags = conn
        .prepare_cached(TAGS)?
        .query_map([asset.id], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    Ok(())
}

#[cfg(test)]
mod plan_tests {
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
        for sql in [super::OTHER_COPY, super::FIRST_LENT, super::LEND_ASSETS] {
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
