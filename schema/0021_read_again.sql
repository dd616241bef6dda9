-- 0021: the index heals itself (DESIGN.md section 6; issue 25 item 2, defects 4 and 5).
--
-- `read_again` marks a present file that the next scan reads though its stamp is unchanged,
-- and says why; a scan's read of the file clears it:
-- * `back`: the row came back from `missing` by a writer that did not read the file (a
--   restore put it back, a trash was rolled back). While it was away its pairs (a stack, a
--   Live Photo) and what lies beside it may have changed. The trigger sets it, so that no
--   writer can forget it. A scan that reads a file writes its run into `last_seen_run`:
--   that tells the scan's own revival of a row (it has just read the file) from another's.
-- * `sidecar`: a sidecar or Takeout JSON of the photo was stored with a new stamp, in that
--   same transaction. The photo's re-read may land in a later batch, or in no batch of that
--   run at all (it ended first, or it was scoped to the sidecar): the mark outlives the run.
ALTER TABLE files ADD COLUMN read_again TEXT
    CHECK (read_again = 'back' OR read_again = 'sidecar');

CREATE TRIGGER files_back AFTER UPDATE OF state ON files
 WHEN OLD.state = 'missing' AND NEW.state = 'present'
  AND NEW.last_seen_run IS OLD.last_seen_run
BEGIN
    UPDATE files SET read_again = 'back' WHERE id = NEW.id;
END;

-- A full scan's completion looks for the live assets of its library that no present file
-- shows any more, from the library's missing rows (few) instead of every asset.
CREATE INDEX files_missing ON files (library_id, asset_id) WHERE state = 'missing';

-- The new file reason `back`, by the in-place CHECK edit of 0006 and 0013: the stored rows
-- stay valid.
PRAGMA writable_schema = ON;

UPDATE sqlite_schema
   SET sql = replace(sql,
       'OR last_reason = ''sidecar'')',
       'OR last_reason = ''sidecar'' OR last_reason = ''back'')')
 WHERE type = 'table' AND name = 'files';

UPDATE sqlite_schema
   SET sql = replace(sql,
       '''duplicate'', ''sidecar''))',
       '''duplicate'', ''sidecar'', ''back''))')
 WHERE type = 'table' AND name = 'scan_run_reasons';
