-- 0026: a completed full scan finds a live asset that no file row names at all (issue 25
-- finding 18; DESIGN.md section 6, the index heals itself).
--
-- The heal of a live asset without a present file starts from its library's missing rows
-- (0021). An asset whose every row was relinked to another (its paths read since as other
-- photos) has none left to start from, and finding every asset without a row would read
-- every asset at each scan. `unshown_assets` lists the assets that lost their last file
-- row to a relink, kept so by a trigger that no writer can forget; the scan's heal reads
-- it, trashes those that are live, and drops those that have a row again or are gone. No
-- foreign key: an entry may outlive its asset until the next heal drops it.
CREATE TABLE unshown_assets (asset_id INTEGER PRIMARY KEY) STRICT;

CREATE TRIGGER files_relinked AFTER UPDATE OF asset_id ON files
 WHEN OLD.asset_id IS NOT NULL AND OLD.asset_id IS NOT NEW.asset_id
  AND NOT EXISTS (SELECT 1 FROM files WHERE asset_id = OLD.asset_id)
BEGIN
    INSERT OR IGNORE INTO unshown_assets (asset_id) VALUES (OLD.asset_id);
END;

-- What an earlier version left: a restore made such an asset live (finding 18).
INSERT INTO unshown_assets (asset_id)
SELECT id FROM assets a WHERE NOT EXISTS (SELECT 1 FROM files f WHERE f.asset_id = a.id);
