-- 0014: Live Photos and motion photos (issue 15 item 3).
-- `content_identifier`: Apple's ContentIdentifier, the UUID a Live Photo's still (MakerNote
-- tag 0x0011) and its MOV (QuickTime key com.apple.quicktime.content.identifier) share.
-- `motion_offset`, `motion_length`: where the MP4 of a Google/Android motion photo sits in
-- the JPEG's bytes (from the start of the file), checked to start with `ftyp`.
-- `live_video_id`: on a still, the MOV asset that is its motion clip. The clip stays an asset
-- of its own (own checksum, own duplicates); the asset list leaves out a clip that a live
-- still names. A swept clip unlinks itself (ON DELETE SET NULL).
-- NULL on every asset indexed before this migration: a forced rescan reads them.
ALTER TABLE assets ADD COLUMN content_identifier TEXT;
ALTER TABLE assets ADD COLUMN motion_offset INTEGER CHECK (motion_offset >= 0);
ALTER TABLE assets ADD COLUMN motion_length INTEGER CHECK (motion_length > 0);
ALTER TABLE assets ADD COLUMN live_video_id INTEGER REFERENCES assets (id) ON DELETE SET NULL;
CREATE INDEX assets_content_identifier ON assets (content_identifier)
    WHERE content_identifier IS NOT NULL;
CREATE INDEX assets_live_video ON assets (live_video_id) WHERE live_video_id IS NOT NULL;
