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
