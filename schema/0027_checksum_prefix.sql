-- 0027: the checksum indexes keyed by an 8-byte prefix (issue 29). A first index inserts
-- random keys into `UNIQUE (owner, checksum)` and `assets_content_hash`, and every commit
-- rewrote most of their leaves: 20.4 GB written for a 0.6 GB index of 1,000,000 files.
-- Keyed by the first 8 bytes of the blake3 hash (entries ~3x smaller, so ~3x fewer leaves
-- to rewrite) they find the same rows; the full hash is compared on the row. An asset is
-- still unique per (owner, checksum): `store::assets::claim` looks the checksum up before
-- it inserts, inside the writer's IMMEDIATE transaction, so no second row can appear in
-- between (two processes are serialised by SQLite's write lock).
--
-- SQLite drops a UNIQUE constraint only by rebuilding the table: the procedure of 0020
-- (lang_altertable "otheralter"), its indexes and triggers made again word for word but
-- for the two above. Copying by rowid keeps every id; the AUTOINCREMENT counter keeps the
-- highest id ever issued. The text stays terse (store::vet's salvage reads the schema).
DROP TRIGGER faces_added;
DROP TRIGGER faces_removed;
CREATE TABLE assets_new (
id INTEGER PRIMARY KEY AUTOINCREMENT,
owner TEXT NOT NULL DEFAULT 'local',
checksum BLOB NOT NULL CHECK (length(checksum) = 32),
size INTEGER NOT NULL, mime TEXT,
kind TEXT CHECK (kind = 'image' OR kind = 'video' OR kind = 'other'),
width INTEGER, height INTEGER, display_width INTEGER, display_height INTEGER,
taken_local TEXT, taken_offset_minutes INTEGER, make TEXT, model TEXT, lat REAL, lon REAL,
orientation INTEGER, duration_ms INTEGER, video_codec TEXT, created_at INTEGER NOT NULL,
trashed_at INTEGER,
trash_reason TEXT CHECK (trash_reason = 'missing' OR trash_reason = 'replaced' OR trash_reason = 'user'),
pending_run INTEGER,
content_hash BLOB CHECK (content_hash IS NULL OR length(content_hash) = 32),
content_hash_scheme INTEGER, faces_scheme INTEGER,
taken_at_source TEXT CHECK (taken_at_source = 'exif' OR taken_at_source = 'xmp'
 OR taken_at_source = 'sidecar' OR taken_at_source = 'takeout' OR taken_at_source = 'quicktime'
 OR taken_at_source = 'filename' OR taken_at_source = 'mtime'),
rating INTEGER CHECK (rating >= -1 AND rating <= 5), title TEXT, description TEXT,
content_identifier TEXT, motion_offset INTEGER CHECK (motion_offset >= 0),
motion_length INTEGER CHECK (motion_length > 0),
live_video_id INTEGER REFERENCES assets (id) ON DELETE SET NULL,
has_faces INTEGER NOT NULL DEFAULT 0, phash INTEGER, phash_scheme INTEGER, embed_scheme INTEGER,
CHECK ((trashed_at IS NULL) = (trash_reason IS NULL))
) STRICT;
INSERT INTO assets_new (id, owner, checksum, size, mime, kind, width, height, display_width,
    display_height, taken_local, taken_offset_minutes, make, model, lat, lon, orientation,
    duration_ms, video_codec, created_at, trashed_at, trash_reason, pending_run, content_hash,
    content_hash_scheme, faces_scheme, taken_at_source, rating, title, description,
    content_identifier, motion_offset, motion_length, live_video_id, has_faces, phash,
    phash_scheme, embed_scheme)
SELECT id, owner, checksum, size, mime, kind, width, height, display_width,
    display_height, taken_local, taken_offset_minutes, make, model, lat, lon, orientation,
    duration_ms, video_codec, created_at, trashed_at, trash_reason, pending_run, content_hash,
    content_hash_scheme, faces_scheme, taken_at_source, rating, title, description,
    content_identifier, motion_offset, motion_length, live_video_id, has_faces, phash,
    phash_scheme, embed_scheme
  FROM assets ORDER BY id;
INSERT INTO sqlite_sequence (name, seq) SELECT 'assets_new', 0 WHERE NOT EXISTS
 (SELECT 1 FROM sqlite_sequence WHERE name = 'assets_new');
UPDATE sqlite_sequence SET seq = max(seq, coalesce((SELECT max(seq) FROM sqlite_sequence
 WHERE name = 'assets'), 0)) WHERE name = 'assets_new';
DROP TABLE assets;
ALTER TABLE assets_new RENAME TO assets;

CREATE INDEX assets_trashed ON assets (trashed_at) WHERE trashed_at IS NOT NULL;
CREATE INDEX assets_pending ON assets (pending_run) WHERE pending_run IS NOT NULL;
CREATE INDEX assets_checksum ON assets (substr(checksum, 1, 8));
CREATE INDEX assets_content_hash ON assets (substr(content_hash, 1, 8))
    WHERE content_hash IS NOT NULL;
CREATE INDEX assets_timeline ON assets (coalesce(taken_local, '') DESC, id DESC)
    WHERE pending_run IS NULL;
CREATE INDEX assets_content_identifier ON assets (content_identifier)
    WHERE content_identifier IS NOT NULL;
CREATE INDEX assets_live_video ON assets (live_video_id) WHERE live_video_id IS NOT NULL;
CREATE TRIGGER faces_added AFTER INSERT ON faces BEGIN
UPDATE assets SET has_faces = 1 WHERE id = NEW.asset_id AND faces_scheme = NEW.detector_version AND has_faces = 0;
END;
CREATE TRIGGER faces_removed AFTER DELETE ON faces BEGIN
UPDATE assets SET has_faces = EXISTS (SELECT 1 FROM faces WHERE faces.asset_id = assets.id
 AND detector_version = assets.faces_scheme) WHERE id = OLD.asset_id;
END;
CREATE TRIGGER faces_restamped AFTER UPDATE OF faces_scheme ON assets BEGIN
UPDATE assets SET has_faces = EXISTS (SELECT 1 FROM faces WHERE faces.asset_id = assets.id
 AND detector_version = assets.faces_scheme) WHERE id = NEW.id;
END;
CREATE INDEX assets_not_image_timeline ON assets (kind, coalesce(taken_local, '') DESC, id DESC)
    WHERE pending_run IS NULL AND trashed_at IS NULL AND kind <> 'image';
CREATE INDEX assets_make_timeline ON assets (make, coalesce(taken_local, '') DESC, id DESC)
    WHERE pending_run IS NULL AND trashed_at IS NULL AND make IS NOT NULL;
CREATE INDEX assets_model_timeline ON assets (model, coalesce(taken_local, '') DESC, id DESC)
    WHERE pending_run IS NULL AND trashed_at IS NULL AND model IS NOT NULL;
CREATE INDEX assets_gps_timeline ON assets (coalesce(taken_local, '') DESC, id DESC)
    WHERE pending_run IS NULL AND trashed_at IS NULL AND lat IS NOT NULL AND lon IS NOT NULL;
CREATE INDEX assets_faces_timeline ON assets (coalesce(taken_local, '') DESC, id DESC)
    WHERE pending_run IS NULL AND trashed_at IS NULL AND has_faces = 1;
CREATE INDEX assets_rated_timeline ON assets (coalesce(taken_local, '') DESC, id DESC)
    WHERE pending_run IS NULL AND trashed_at IS NULL AND rating IS NOT NULL;
CREATE INDEX assets_trash_timeline ON assets (coalesce(taken_local, '') DESC, id DESC)
    WHERE pending_run IS NULL AND trashed_at IS NOT NULL;
CREATE TRIGGER live_kinds_delete AFTER DELETE ON assets
WHEN OLD.trashed_at IS NULL AND OLD.pending_run IS NULL BEGIN
UPDATE live_kinds SET n = n - 1 WHERE kind = coalesce(OLD.kind, 'unknown');
END;
CREATE TRIGGER live_kinds_update AFTER UPDATE OF kind, trashed_at, pending_run ON assets BEGIN
UPDATE live_kinds SET n = n - 1 WHERE OLD.trashed_at IS NULL AND OLD.pending_run IS NULL
 AND kind = coalesce(OLD.kind, 'unknown');
INSERT INTO live_kinds SELECT coalesce(NEW.kind, 'unknown'), 1
 WHERE NEW.trashed_at IS NULL AND NEW.pending_run IS NULL ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE INDEX assets_phash0 ON assets (phash & 65535) WHERE phash IS NOT NULL;
CREATE INDEX assets_phash1 ON assets (phash >> 16 & 65535) WHERE phash IS NOT NULL;
CREATE INDEX assets_phash2 ON assets (phash >> 32 & 65535) WHERE phash IS NOT NULL;
CREATE INDEX assets_phash3 ON assets (phash >> 48 & 65535) WHERE phash IS NOT NULL;

