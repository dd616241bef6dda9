-- 0022: an asset's sidecar facts are those of one present file of its bytes (issue 25,
-- finding 13 of its simulation).
--
-- What lies beside a file (its XMP sidecar, its Takeout JSON) belongs to that file, not to
-- the asset its bytes show: two byte copies may carry two sidecars. `beside` keeps, for each
-- file a scan read, what its asset takes from beside it and from its name or mtime (the
-- date with its source, the place, rating, title, description and tags: JSON, keys left
-- out when NULL). The asset shows the `beside` of its present file of the lowest library and
-- path, whatever order the copies were read in. The triggers choose it again whenever a
-- row starts or stops showing the asset, is read with new facts, goes missing or comes
-- back, whichever writer did it (a scan, a move, a check, a library's removal). A row with
-- no `beside` (read before this migration, or never readable) is passed over; an asset
-- none of whose present rows has one keeps what it has.
ALTER TABLE files ADD COLUMN beside TEXT;

-- Rows read before: each present copy of an asset shown by several is read again (reason
-- `sidecar`) by the next scan, which fills its `beside`.
UPDATE files SET read_again = 'sidecar'
 WHERE state = 'present' AND read_again IS NULL
   AND asset_id IN (SELECT asset_id FROM files WHERE state = 'present' AND asset_id IS NOT NULL
                     GROUP BY asset_id HAVING count(*) > 1);

-- The same three statements in each trigger, for the asset ids in its `IN` list. A new
-- row alone in showing an asset this run made (most files of a first index) costs no
-- statement: the asset was inserted with this file's facts.
CREATE TRIGGER files_beside_new AFTER INSERT ON files
 WHEN NEW.beside IS NOT NULL AND NEW.state = 'present' AND NEW.asset_id IS NOT NULL
  AND (EXISTS (SELECT 1 FROM files o
                WHERE o.asset_id = NEW.asset_id AND o.id <> NEW.id AND o.state = 'present')
       OR NOT EXISTS (SELECT 1 FROM assets a
                       WHERE a.id = NEW.asset_id AND a.pending_run IS NEW.last_seen_run))
BEGIN
    UPDATE assets SET (taken_local, taken_offset_minutes, taken_at_source, lat, lon,
                       rating, title, description) =
        (SELECT f.beside ->> 'taken_local', f.beside ->> 'offset', f.beside ->> 'source',
                f.beside ->> 'lat', f.beside ->> 'lon', f.beside ->> 'rating',
                f.beside ->> 'title', f.beside ->> 'description'
           FROM files f WHERE f.asset_id = assets.id AND f.state = 'present' AND f.beside IS NOT NULL
          ORDER BY f.library_id, f.rel_path LIMIT 1)
     WHERE id IN (NEW.asset_id);
    DELETE FROM asset_tags WHERE asset_id IN (NEW.asset_id);
    INSERT INTO asset_tags (asset_id, tag)
    SELECT a.id, j.value FROM assets a,
           json_each((SELECT f.beside FROM files f
                       WHERE f.asset_id = a.id AND f.state = 'present' AND f.beside IS NOT NULL
                       ORDER BY f.library_id, f.rel_path LIMIT 1), '$.tags') j
     WHERE a.id IN (NEW.asset_id) ORDER BY a.id, j.key
        ON CONFLICT DO NOTHING;
END;

CREATE TRIGGER files_beside_changed AFTER UPDATE OF state, asset_id, beside ON files
 WHEN OLD.state IS NOT NEW.state OR OLD.asset_id IS NOT NEW.asset_id
   OR OLD.beside IS NOT NEW.beside
BEGIN
    UPDATE assets SET (taken_local, taken_offset_minutes, taken_at_source, lat, lon,
                       rating, title, description) =
        (SELECT f.beside ->> 'taken_local', f.beside ->> 'offset', f.beside ->> 'source',
                f.beside ->> 'lat', f.beside ->> 'lon', f.beside ->> 'rating',
                f.beside ->> 'title', f.beside ->> 'description'
           FROM files f WHERE f.asset_id = assets.id AND f.state = 'present' AND f.beside IS NOT NULL
          ORDER BY f.library_id, f.rel_path LIMIT 1)
     WHERE id IN (OLD.asset_id, NEW.asset_id)
       AND EXISTS (SELECT 1 FROM files f
                    WHERE f.asset_id = assets.id AND f.state = 'present' AND f.beside IS NOT NULL);
    DELETE FROM asset_tags WHERE asset_id IN (OLD.asset_id, NEW.asset_id)
       AND EXISTS (SELECT 1 FROM files f WHERE f.asset_id = asset_tags.asset_id
                      AND f.state = 'present' AND f.beside IS NOT NULL);
    INSERT INTO asset_tags (asset_id, tag)
    SELECT a.id, j.value FROM assets a,
           json_each((SELECT f.beside FROM files f
                       WHERE f.asset_id = a.id AND f.state = 'present' AND f.beside IS NOT NULL
                       ORDER BY f.library_id, f.rel_path LIMIT 1), '$.tags') j
     WHERE a.id IN (OLD.asset_id, NEW.asset_id) ORDER BY a.id, j.key
        ON CONFLICT DO NOTHING;
END;

CREATE TRIGGER files_beside_gone AFTER DELETE ON files
 WHEN OLD.state = 'present' AND OLD.asset_id IS NOT NULL
BEGIN
    UPDATE assets SET (taken_local, taken_offset_minutes, taken_at_source, lat, lon,
                       rating, title, description) =
        (SELECT f.beside ->> 'taken_local', f.beside ->> 'offset', f.beside ->> 'source',
                f.beside ->> 'lat', f.beside ->> 'lon', f.beside ->> 'rating',
                f.beside ->> 'title', f.beside ->> 'description'
           FROM files f WHERE f.asset_id = assets.id AND f.state = 'present' AND f.beside IS NOT NULL
          ORDER BY f.library_id, f.rel_path LIMIT 1)
     WHERE id IN (OLD.asset_id)
       AND EXISTS (SELECT 1 FROM files f
                    WHERE f.asset_id = assets.id AND f.state = 'present' AND f.beside IS NOT NULL);
    DELETE FROM asset_tags WHERE asset_id IN (OLD.asset_id)
       AND EXISTS (SELECT 1 FROM files f WHERE f.asset_id = asset_tags.asset_id
                      AND f.state = 'present' AND f.beside IS NOT NULL);
    INSERT INTO asset_tags (asset_id, tag)
    SELECT a.id, j.value FROM assets a,
           json_each((SELECT f.beside FROM files f
                       WHERE f.asset_id = a.id AND f.state = 'present' AND f.beside IS NOT NULL
                       ORDER BY f.library_id, f.rel_path LIMIT 1), '$.tags') j
     WHERE a.id IN (OLD.asset_id) ORDER BY a.id, j.key
        ON CONFLICT DO NOTHING;
END;
