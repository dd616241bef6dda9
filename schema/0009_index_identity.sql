-- 0009: the index's identity, to tell it from another database's pages (issue 13, part 4).
--
-- A random number kept twice: in this row, and in the file header's application_id (set by
-- `migrate` in the same transaction; a pragma cannot take a value from a query). The header
-- lives on page 1, which a commit rewrites whenever the file grows or shrinks; this row's
-- page is written once. A WAL from another index replayed over this file brings its own
-- page 1 and not this row's page, so the two disagree and the start refuses the file.
CREATE TABLE index_identity (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    nonce INTEGER NOT NULL CHECK (nonce BETWEEN 1 AND 2147483647)
) STRICT;

INSERT INTO index_identity (id, nonce) VALUES (1, (random() & 2147483646) + 1);
