-- 0024: a decode that ran to its deadline is remembered for the file it read (issue 26
-- deliverable 8). `heif-dec` killed at its full, size-scaled deadline will take as long
-- again on the same bytes: the face walk, the similar walk, the thumbnail job and a
-- request for a thumbnail or preview consult this row and skip the decode, saying
-- "decoding timed out after N s". It holds while a present file of the asset still has the
-- stamp (size, mtime) that was decoded: a re-saved or touched file is read again by the
-- next scan, its stamp changes and the fact no longer applies; `scan --force` deletes it
-- when it reads the file. A decode stopped from outside (a shutdown, the OOM killer, a lost
-- lease) is not a timeout and is never written here. Written by a walk batch's or a
-- thumbnail batch's fenced commit (and by a request, which holds no lease: a fact about
-- bytes, not a step of work). Goes with its asset (the sweep).
CREATE TABLE decode_timeouts (
    asset_id INTEGER PRIMARY KEY REFERENCES assets (id) ON DELETE CASCADE,
    size     INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    seconds  INTEGER NOT NULL CHECK (seconds >= 0),
    at       INTEGER NOT NULL
) STRICT;
