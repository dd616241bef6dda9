//! Rows the checks of the asset families (assets, stacks, motion, walks, similar, faces and
//! their compositions) insert on either engine's schema, with plain statements: a library,
//! an asset, a file of it. Test-only; owns no behaviour.

use super::StoreError;
use super::db::Db;

/// Library `id`, rooted at `/l{id}`.
pub(super) fn library(db: &Db<'_>, id: i64) -> Result<(), StoreError> {
    db.execute(
        "INSERT INTO libraries (id, name, root, created_at) VALUES (?1, ?2, ?3, 0)",
        args!(id, format!("l{id}"), format!("/l{id}")),
    )?;
    Ok(())
}

/// Asset `id`, published and live, of `mime` taken at `taken` (its source EXIF).
pub(super) fn asset(
    db: &Db<'_>,
    id: i64,
    mime: &str,
    taken: Option<&str>,
) -> Result<(), StoreError> {
    db.execute(
        "INSERT INTO assets (id, checksum, size, created_at, mime, kind, taken_local,
                             taken_at_source)
         VALUES (?1, ?2, 1, 0, ?3, 'image', ?4, 'exif')",
        args!(id, [id as u8; 32], mime, taken),
    )?;
    Ok(())
}

/// Present file `id` of library `library` at `path`, showing `asset`.
pub(super) fn file(
    db: &Db<'_>,
    id: i64,
    library: i64,
    path: &str,
    asset: i64,
) -> Result<(), StoreError> {
    db.execute(
        "INSERT INTO files (id, library_id, rel_path, rel_path_text, size, mtime_ns, dev,
                            inode, asset_id, state, last_reason, first_seen_run, last_seen_run)
         VALUES (?1, ?2, ?3, ?4, 1, 1, 1, ?1, ?5, 'present', 'new', 1, 1)",
        args!(id, library, path.as_bytes(), path, asset),
    )?;
    Ok(())
}

/// The model of asset `id` with nothing loaded, for the functions that complete one.
pub(super) fn model(id: i64) -> crate::model::Asset {
    crate::model::Asset {
        id,
        owner: "local".into(),
        checksum: [id as u8; 32],
        size: 1,
        facts: crate::model::MediaFacts::default(),
        created_at: 0,
        trashed_at: None,
        trash_reason: None,
        paths: vec![],
        content_hash: None,
        faces_scheme: None,
        faces: vec![],
        live_clip: None,
        stack: vec![],
    }
}
