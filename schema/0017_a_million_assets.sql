-- 0017: the asset list at a million assets (issue 16). A filter that matches few rows seeks
-- them in timeline order instead of reading the whole timeline for them (a million-row read:
-- 0.3-18 s for `kind=video`, `has_gps=true`, `has_faces=true`, `model=`, `rating_min=`, `tag=`
-- on 1M assets). Each index holds only the side of its filter a library has few of, so it costs
-- an index entry only for the assets that have it: a kind other than image, GPS, a current
-- face, a rating, the trash; a make or a model only where the EXIF names one. The other side
-- (images, no GPS, no face) reads the timeline, where a page finds its rows at once. Measured
-- on 1M assets: indexing every filter with full indexes instead made a scan's completion 12x
-- slower (138 s against 11.7 s) and the database 45% bigger; these cost what their rows cost.
-- The expressions are repeated verbatim in src/store/queries.rs so that the planner uses them.

-- Whether the asset has a face of the detector version it was last run with: the
-- `has_faces` filter as a column, kept by the triggers below whatever writes the faces.
ALTER TABLE assets ADD COLUMN has_faces INTEGER NOT NULL DEFAULT 0;
UPDATE assets SET has_faces = 1
 WHERE EXISTS (SELECT 1 FROM faces f WHERE f.asset_id = assets.id
                                      AND f.detector_version = assets.faces_scheme);

-- (SQLite keeps each CREATE's text in the schema, which must stay within its first page for a
-- damaged index's libraries to be salvaged: store::vet. Hence the terse triggers.)
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

-- Replaced by the make and the model indexes below, which also keep the timeline's order.
DROP INDEX assets_camera;

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

-- /metrics' live assets by kind, kept by triggers instead of counted at each scrape (a
-- million-row count: 418 ms at 1M assets). Visible means published and not trashed, the
-- condition of the count it replaces. Measured on 1M assets, a trigger of this kind adds 1.3 us per
-- asset to a scan's completion (6.5 s against 5.2 s for publishing 1M).
CREATE TABLE live_kinds (
    kind TEXT    NOT NULL PRIMARY KEY,
    n    INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO live_kinds (kind, n)
    SELECT coalesce(kind, 'unknown'), count(*) FROM assets
     WHERE trashed_at IS NULL AND pending_run IS NULL GROUP BY 1;

CREATE TRIGGER live_kinds_insert AFTER INSERT ON assets
WHEN NEW.trashed_at IS NULL AND NEW.pending_run IS NULL BEGIN
INSERT INTO live_kinds VALUES (coalesce(NEW.kind, 'unknown'), 1) ON CONFLICT DO UPDATE SET n = n + 1;
END;
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
