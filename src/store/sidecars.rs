//! What a photo takes from its XMP sidecar or Takeout JSON, on its asset (migration 0013):
//! the notes (rating, title and description on the row, tags in `asset_tags`) written with
//! a new asset, and what each file read lends its asset from beside it (`files.beside`,
//! migration 0022, written with the file's row). The asset shows the `beside` of its
//! present file of the lowest library and path: the migration's triggers choose it again
//! whenever a row of the asset is read, goes, comes back or moves to another asset, so a
//! copy deleted takes its sidecar's facts along (finding 13). Runs inside the writer's
//! transactions only; must not decide what a sidecar says (`media::beside` does) or touch
//! files.

use super::StoreError;
use crate::model::{Asset, MediaFacts, Notes, TakenAtSource};
use rusqlite::{Connection, params};

const SET_NOTES: &str = "UPDATE assets SET rating = ?2, title = ?3, description = ?4 WHERE id = ?1";
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

/// What the asset of a file read with `facts` takes from beside it and from its name or
/// mtime, for `files.beside` (migration 0022: its triggers give the asset the `beside` of
/// its first present file). JSON, a key left out when it says nothing.
pub(super) fn beside(facts: &MediaFacts) -> String {
    let n = &facts.notes;
    let mut out = serde_json::Map::new();
    let mut put = |key: &str, value: serde_json::Value| {
        if !value.is_null() {
            out.insert(key.to_string(), value);
        }
    };
    put("taken_local", facts.taken_local.clone().into());
    put("offset", facts.taken_offset_minutes.into());
    put(
        "source",
        facts.taken_at_source.map(TakenAtSource::as_str).into(),
    );
    put("lat", facts.lat.into());
    put("lon", facts.lon.into());
    put("rating", n.rating.into());
    put("title", n.title.clone().into());
    put("description", n.description.clone().into());
    if !n.tags.is_empty() {
        put("tags", n.tags.clone().into());
    }
    serde_json::Value::Object(out).to_string()
}

/// The asset's tags, in the order they were written.
pub(super) fn load_tags(conn: &Connection, asset: &mut Asset) -> Result<(), StoreError> {
    asset.facts.notes.tags = conn
        .prepare_cached(TAGS)?
        .query_map([asset.id], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    Ok(())
}
