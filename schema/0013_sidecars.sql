-- 0013: what an XMP sidecar or a Google Takeout JSON beside a photo says of it (issue 15
-- items 4 and 5). The photo's asset carries the result of the merge (`media::beside`):
-- `rating` (-1 rejected .. 5), `title` and `description` on the row, and its tags in
-- `asset_tags`, one row per tag, compared without ASCII case (`tag=` filters by it through
-- `asset_tags_by_tag`; rowid order is the order written). A sidecar file keeps its own file
-- row (no asset, as any file that is no picture or video); nothing else of it is stored:
-- the photo's asset is rewritten whenever the photo is read again, and a change to the
-- sidecar makes the scan read the photo again (reason `sidecar`).
ALTER TABLE assets ADD COLUMN rating INTEGER CHECK (rating >= -1 AND rating <= 5);
ALTER TABLE assets ADD COLUMN title TEXT;
ALTER TABLE assets ADD COLUMN description TEXT;

CREATE TABLE asset_tags (
    asset_id INTEGER NOT NULL REFERENCES assets (id) ON DELETE CASCADE,
    tag      TEXT    NOT NULL COLLATE NOCASE,
    PRIMARY KEY (asset_id, tag)
) STRICT;

CREATE INDEX asset_tags_by_tag ON asset_tags (tag, asset_id);

-- The new file reason `sidecar` (a photo read again because its sidecar or Takeout JSON was
-- created, changed or deleted), by the in-place CHECK edit of 0006: the stored rows stay
-- valid.
PRAGMA writable_schema = ON;

UPDATE sqlite_schema
   SET sql = replace(sql,
       'OR last_reason = ''error'')',
       'OR last_reason = ''error'' OR last_reason = ''sidecar'')')
 WHERE type = 'table' AND name = 'files';

UPDATE sqlite_schema
   SET sql = replace(sql,
       '''unchanged'', ''missing'', ''duplicate''))',
       '''unchanged'', ''missing'', ''duplicate'', ''sidecar''))')
 WHERE type = 'table' AND name = 'scan_run_reasons';
