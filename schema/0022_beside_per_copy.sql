-- 0022: an asset shown by several files has the sidecar facts of one of them (issue 25,
-- finding 13 of its simulation).
--
-- What lies beside a file (its XMP sidecar, its Takeout JSON) belongs to that file, not to
-- the asset its bytes show: two byte copies may carry two sidecars. `beside` keeps what a
-- file lends its asset from beside it and from its name or mtime (date with its source,
-- place, rating, title, description, tags: a JSON object), but only for the present files
-- of an asset that several present files show; the asset shows the `beside` of its present
-- file of the lowest library and path. The writer chooses it in its own statements
-- (`store::sidecars`) when a copy is read, joins, goes missing, changes asset or goes with
-- its library. A file alone in showing its asset (almost every file) keeps NULL: its
-- asset carries its facts already, and its insert costs nothing more.
ALTER TABLE files ADD COLUMN beside TEXT;

-- Copies read before this: each present copy of an asset shown by several is read again
-- (reason `sidecar`) by the next scan, which fills its `beside` and chooses again.
UPDATE files SET read_again = 'sidecar'
 WHERE state = 'present' AND read_again IS NULL
   AND asset_id IN (SELECT asset_id FROM files WHERE state = 'present' AND asset_id IS NOT NULL
                     GROUP BY asset_id HAVING count(*) > 1);
