-- 0023: move numbers never go back (issue 25). A move's number names its trash folders
-- (`.mediadex-trash/<asset>-<move>/`), and was `max(move_id) + 1` over the journal; a
-- library's removal takes its journal rows with it, so a number could be issued again,
-- and a trash of a photo whose old folder of that number was still on disk in a library
-- added again was refused ("the destination exists already"). One row counts the numbers
-- issued; `store::trash::next_move` takes the next, `store::check` raises it past a number
-- an adopted trash folder names.
CREATE TABLE move_counter (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    last INTEGER NOT NULL
) STRICT;

INSERT INTO move_counter (id, last)
SELECT 1, coalesce(max(move_id), 0) FROM trash_intents;
