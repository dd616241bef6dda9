//! What a photo takes from its XMP sidecar or Takeout JSON, on its asset (migration 0013):
//! the notes (rating, title and description on the row, tags in `asset_tags`) written with
//! a new asset, and the refresh of an asset that a read of its own file kept (a photo read
//! again because its sidecar changed has the same checksum: its claim is `Kept`, and the
//! facts the sidecar gave, the date and place it filled included, are rewritten in the
//! batch's fenced transaction). Runs inside the writer's transactions only; must not decide
//! what a sidecar says (`media::beside` does) or touch files.

use super::StoreError;
use crate::model::{Asset, MediaFacts, Notes, TakenAtSource};
use rusqlite::{Connection, params};

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
pub(super) fn refresh(conn: &Connection, id: i64, facts: &MediaFacts) -> Result<(), StoreError> {
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

/// The asset's tags, in the order they were written.
pub(super) fn load_tags(conn: &Connection, asset: &mut Asset) -> Result<(), StoreError> {
    asset.facts.notes.tags = conn
        .prepare_cached(TAGS)?
        .query_map([asset.id], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    Ok(())
}
