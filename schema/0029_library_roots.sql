-- 0029: libraries seen from several hosts (issue 30 item 4). A library is known by its
-- identity (the id in its `.mediadex-library` marker, `libraries.marker_id`); each host
-- that sees it says where, in `library_roots`, with the root's device id there (a mount's
-- device differs per host). `libraries.root` and `libraries.root_dev` stay as the root and
-- device where the library was first added, read by no one but a damaged index's salvage.
--
-- The roots of an index from before hosts go to host '' here: the first host that opens
-- the index takes them as its own (`store::libraries::take_unhosted`).
CREATE TABLE library_roots (
library_id INTEGER NOT NULL REFERENCES libraries (id) ON DELETE CASCADE,
host TEXT NOT NULL, root TEXT NOT NULL, root_dev INTEGER,
PRIMARY KEY (library_id, host), UNIQUE (host, root)
) STRICT;
INSERT INTO library_roots (library_id, host, root, root_dev)
SELECT id, '', root, root_dev FROM libraries;
CREATE INDEX libraries_marker ON libraries (marker_id) WHERE marker_id IS NOT NULL;
