-- 0015: RAW+JPEG stacks (issue 15 item 2). A camera RAW file and a JPEG or HEIC file with the
-- same name stem in the same folder, taken in the same second, are one stack: the grid shows
-- the JPEG/HEIC (the primary) once, with both files listed, and leaves the RAW's asset out
-- while the primary's file is present and its asset live. A row pairs two FILES, not two
-- assets: the pairing is by folder and name, and each file keeps its own asset (its checksum,
-- its duplicates). Whichever of the two is stored second writes the row, in the scan's fenced
-- batch. A RAW has at most one primary; a primary may head several RAWs. A file's rows go
-- with its file row. Pairs indexed before this migration are found when one of their files is
-- read again (a changed file, or `scan --force`).
CREATE TABLE stacks (
    raw_file_id     INTEGER PRIMARY KEY REFERENCES files (id) ON DELETE CASCADE,
    primary_file_id INTEGER NOT NULL REFERENCES files (id) ON DELETE CASCADE
) STRICT;

CREATE INDEX stacks_primary ON stacks (primary_file_id);
