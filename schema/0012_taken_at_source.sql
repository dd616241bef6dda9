-- 0012: where an asset's capture date came from (issue 15 item 6): `exif`, `xmp`, `sidecar`,
-- `takeout`, `quicktime`, `filename` or `mtime`, the first source of the chain that gave one
-- (`model::TakenAtSource`). NULL when the asset has no date, and on every asset indexed before
-- this migration: which of EXIF and XMP gave an old date is not known without reading the file
-- again, so nothing is guessed; a forced rescan records it. The CHECK is a chain of `=` and
-- not an `IN` list, which would build a temporary table on every insert (see 0006).
ALTER TABLE assets ADD COLUMN taken_at_source TEXT
    CHECK (taken_at_source = 'exif' OR taken_at_source = 'xmp' OR taken_at_source = 'sidecar'
           OR taken_at_source = 'takeout' OR taken_at_source = 'quicktime'
           OR taken_at_source = 'filename' OR taken_at_source = 'mtime');
