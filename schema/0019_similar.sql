-- 0019: similar photos (DESIGN.md section 8, issue 17). `phash`: a picture's 64-bit perceptual
-- hash (src/similar), NULL with a `phash_scheme` when it cannot be hashed. Four 16-bit bands,
-- each indexed: src/similar/index.rs finds the hashes within a distance through them.
ALTER TABLE assets ADD COLUMN phash INTEGER;
ALTER TABLE assets ADD COLUMN phash_scheme INTEGER;
CREATE INDEX assets_phash0 ON assets (phash & 65535) WHERE phash IS NOT NULL;
CREATE INDEX assets_phash1 ON assets (phash >> 16 & 65535) WHERE phash IS NOT NULL;
CREATE INDEX assets_phash2 ON assets (phash >> 32 & 65535) WHERE phash IS NOT NULL;
CREATE INDEX assets_phash3 ON assets (phash >> 48 & 65535) WHERE phash IS NOT NULL;
