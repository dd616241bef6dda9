-- 0005: the trash journal's move id (DESIGN.md section 6). The intents one begin call wrote
-- (one trash or one restore of an asset) share a move id; a move is told from the last by
-- its id, never by the time it began (two moves can begin in one millisecond).
-- Existing rows were grouped by (asset_id, action, created_at): each such group becomes one
-- move, numbered by its first intent's id, so an old journal keeps its meaning and its order.
-- New moves take the next number above every move id in the journal.

ALTER TABLE trash_intents ADD COLUMN move_id INTEGER NOT NULL DEFAULT 0;

UPDATE trash_intents
   SET move_id = (SELECT min(g.id) FROM trash_intents g
                   WHERE g.asset_id = trash_intents.asset_id
                     AND g.action = trash_intents.action
                     AND g.created_at = trash_intents.created_at);

-- The next move id (max), the intents of one move, and an asset's latest move.
CREATE INDEX trash_intents_move ON trash_intents (move_id);
CREATE INDEX trash_intents_asset_move ON trash_intents (asset_id, action, state, move_id);
