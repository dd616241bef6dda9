-- 0018: no trigger on an asset insert (issue 16). A trigger makes each INSERT INTO assets a
-- multi-row write that SQLite runs in a statement journal: every page the insert changes (its
-- leaf, one per index: 9 of 16 KiB) was copied there, spilling to a temp file, 5x the insert's
-- CPU. Every asset is inserted pending (store::assets::INSERT), so live_kinds_insert never
-- counted one: the publication (live_kinds_update) does.
DROP TRIGGER live_kinds_insert;
