-- 0028: the People list without counting every face (issue 28: "all photos of X" and the
-- people at 1M assets). Each person keeps the count of their face rows, kept by triggers on
-- `face_people` (a cascade from a swept asset or a re-detection fires them too), so that the
-- list reads `people` and subtracts only the faces in trashed photos, found from the trash's
-- own index. The cover face comes from one index range: the user's newest, else the newest.
ALTER TABLE people ADD COLUMN faces INTEGER NOT NULL DEFAULT 0;
UPDATE people SET faces = (SELECT count(*) FROM face_people WHERE person_id = people.id);

CREATE TRIGGER face_people_counted AFTER INSERT ON face_people BEGIN
    UPDATE people SET faces = faces + 1 WHERE id = NEW.person_id;
END;
CREATE TRIGGER face_people_uncounted AFTER DELETE ON face_people BEGIN
    UPDATE people SET faces = faces - 1 WHERE id = OLD.person_id;
END;
CREATE TRIGGER face_people_recounted AFTER UPDATE OF person_id ON face_people
    WHEN OLD.person_id <> NEW.person_id BEGIN
    UPDATE people SET faces = faces - 1 WHERE id = OLD.person_id;
    UPDATE people SET faces = faces + 1 WHERE id = NEW.person_id;
END;

CREATE INDEX face_people_cover ON face_people (person_id, confirmed, asset_id);
