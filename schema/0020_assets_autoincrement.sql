-- 0020: moves tied to what they saw, and asset ids never reused (DESIGN.md section 6,
-- issue 25).
--
-- A trash intent records the stamp (size, mtime_ns, dev, inode) of the file it moves, as the
-- index knew it when the move began; nothing moves a file whose bytes or row no longer
-- match it (a photo re-saved under the same name and indexed as another asset stays where
-- it is). NULL on intents written before this version: those are checked against the file
-- row's stamp, as before.
ALTER TABLE trash_intents ADD COLUMN size INTEGER;
ALTER TABLE trash_intents ADD COLUMN mtime_ns INTEGER;
ALTER TABLE trash_intents ADD COLUMN dev INTEGER;
ALTER TABLE trash_intents ADD COLUMN inode INTEGER;

-- Asset ids are never reused: `assets.id` gets AUTOINCREMENT. The trash journal, the trash
-- folders, the thumbnail cache and the walks name an asset by its id; an id the sweep freed
-- and a new photo received would inherit all of those (a trash refused with "destination
-- exists", a restore picking up the swept photo's journal).
--
-- SQLite adds AUTOINCREMENT only by rebuilding the table: its twelve-step procedure
-- (lang_altertable "otheralter"). `migrate` runs it with foreign keys off (the DROP would
-- otherwise run every ON DELETE of files, faces, tags and live clips) and checks them
-- before the commit. The new table has the old columns in their order, with the same
-- CHECKs (the OR lists of 0006); copying by rowid keeps every id, so every key pointing at
-- an asset still points at it. The indexes and triggers on `assets` (0002, 0003, 0004,
-- 0014, 0017, 0019) go with the old table and are created again below, word for word; the
-- triggers on `faces` that name `assets` are dropped and made again around the rename.
-- The text stays terse: the schema must fit its first page (store::vet's salvage).
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
has_faces INTEGER NOT NULL DEFAULT 0, phash INTEGER, phash_scheme INTEGER,
CHECK ((trashed_at IS NULL) = (trash_reason IS NULL)),
UNIQUE (owner, checksum)
) STRICT;
INSERT INTO assets_new (id, owner, checksum, size, mime, kind, width, height, display_width,
    display_height, taken_local, taken_offset_minutes, make, model, lat, lon, orientation,
    duration_ms, video_codec, created_at, trashed_at, trash_reason, pending_run, content_hash,
    content_hash_scheme, faces_scheme, taken_at_source, rating, title, description,
    content_identifier, motion_offset, motion_length, live_video_id, has_faces, phash,
    phash_scheme)
SELECT id, owner, checksum, size, mime, kind, width, height, display_width,
    display_height, taken_local, taken_offset_minutes, make, model, lat, lon, orientation,
    duration_ms, video_codec, created_at, trashed_at, trash_reason, pending_run, content_hash,
    content_hash_scheme, faces_scheme, taken_at_source, rating, title, description,
    content_identifier, motion_offset, motion_length, live_video_id, has_faces, phash,
    phash_scheme
  FROM assets ORDER BY id;
DROP TABLE assets;
ALTER TABLE assets_new RENAME TO assets;

CREATE INDEX assets_trashed ON assets (trashed_at) WHERE trashed_at IS NOT NULL;
CREATE INDEX assets_pending ON assets (pending_run) WHERE pending_run IS NOT NULL;
CREATE INDEX assets_content_hash ON assets (content_hash) WHERE content_hash IS NOT NULL;
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

-- The next id is above every id ever issued that the index still names: the rows, the
-- journal (it outlives a swept asset) and the move jobs. An id swept before this version
-- and named nowhere any more cannot be told: a trash into its old folder never replaces a
-- file there (the move is refused and rolled back, naming the file).
DELETE FROM sqlite_sequence WHERE name = 'assets';
INSERT INTO sqlite_sequence (name, seq)
SELECT 'assets', max((SELECT coalesce(max(id), 0) FROM assets),
                     (SELECT coalesce(max(asset_id), 0) FROM trash_intents),
                     (SELECT coalesce(max(json_extract(payload, '$.asset')), 0) FROM jobs
                       WHERE kind = 'move'));
