-- 0003: the walk chains (DESIGN.md sections 7 and 8): the content hash and face stamps on
-- assets, the walk record per kind, and the faces found per asset and detector version.

-- blake3 over the picture's essence (the bytes a metadata edit does not touch) and the rule
-- version that computed it. NULL until the scan or the content-hash walk has stamped it.
ALTER TABLE assets ADD COLUMN content_hash BLOB
    CHECK (content_hash IS NULL OR length(content_hash) = 32);
ALTER TABLE assets ADD COLUMN content_hash_scheme INTEGER;
-- The detector version whose results the `faces` rows of this asset hold; NULL: never run.
ALTER TABLE assets ADD COLUMN faces_scheme INTEGER;

CREATE INDEX assets_content_hash ON assets (content_hash) WHERE content_hash IS NOT NULL;

-- One record per walk kind ('content-hash', 'faces'). `scheme`: the last scheme a walk
-- covered to the end (a completion never lowers it). `seen`: the highest scheme any binary
-- has run on this file (above this binary's scheme means a rollback).
CREATE TABLE walks (
    kind         TEXT    PRIMARY KEY,
    scheme       INTEGER NOT NULL DEFAULT 0,
    seen         INTEGER NOT NULL DEFAULT 0,
    completed_at INTEGER,
    updated_at   INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- Faces found in an asset by one detector version, in original-image pixel coordinates.
-- `landmarks` is a JSON array of five [x, y] pairs. Deleted with their asset (the sweep).
CREATE TABLE faces (
    id               INTEGER PRIMARY KEY,
    asset_id         INTEGER NOT NULL REFERENCES assets (id) ON DELETE CASCADE,
    detector_version INTEGER NOT NULL,
    x                REAL    NOT NULL,
    y                REAL    NOT NULL,
    w                REAL    NOT NULL,
    h                REAL    NOT NULL,
    score            REAL    NOT NULL,
    landmarks        TEXT    NOT NULL DEFAULT '[]'
) STRICT;

CREATE INDEX faces_asset ON faces (asset_id, detector_version);
