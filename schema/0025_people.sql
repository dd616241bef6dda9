-- 0025: people (DESIGN.md section 8, issue 28). The embedding walk's stamp and vectors, the
-- people, who each face is, and what the user said, which no re-clustering undoes.

-- The embedder version whose vectors this asset's faces (those of its `faces_scheme`) have;
-- NULL: not embedded since its faces were last detected (`store::faces::replace` clears it).
ALTER TABLE assets ADD COLUMN embed_scheme INTEGER;

-- One descriptor per face and embedder version: 128 little-endian float32 (512 bytes), NULL
-- when the face cannot be cut into a chip (the walk does not try it again). Kept across an
-- embedder upgrade, so a rollback and the next upgrade re-embed only what they lack.
CREATE TABLE face_vectors (
    face_id          INTEGER NOT NULL REFERENCES faces (id) ON DELETE CASCADE,
    embedder_version INTEGER NOT NULL,
    vector           BLOB CHECK (vector IS NULL OR length(vector) = 512),
    PRIMARY KEY (face_id, embedder_version)
) STRICT, WITHOUT ROWID;

-- A person: what the user named, or a group the clustering found. Ids are never reused, so a
-- stale page or script never renames someone else. `hidden`: the user does not want to see
-- them in the list (their faces stay theirs).
CREATE TABLE people (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT,
    hidden     INTEGER NOT NULL DEFAULT 0 CHECK (hidden IN (0, 1)),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

-- Who each face is now. `confirmed`: the user put it there (moved it, merged its person,
-- said so in the viewer): a re-clustering keeps it, whatever the distances say. The others
-- are the clustering's and are replaced by each re-clustering. `asset_id` is the face's, so
-- that "all photos of X" is one index range and "who is in this photo" another.
CREATE TABLE face_people (
    face_id   INTEGER PRIMARY KEY REFERENCES faces (id) ON DELETE CASCADE,
    person_id INTEGER NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    asset_id  INTEGER NOT NULL REFERENCES assets (id) ON DELETE CASCADE,
    confirmed INTEGER NOT NULL DEFAULT 0 CHECK (confirmed IN (0, 1))
) STRICT;
CREATE INDEX face_people_person ON face_people (person_id, asset_id);
CREATE INDEX face_people_asset ON face_people (asset_id);

-- The user said this face is not this person: no clustering puts it there again.
CREATE TABLE face_rejections (
    face_id   INTEGER NOT NULL REFERENCES faces (id) ON DELETE CASCADE,
    person_id INTEGER NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    PRIMARY KEY (face_id, person_id)
) STRICT, WITHOUT ROWID;
