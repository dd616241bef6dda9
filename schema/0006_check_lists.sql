-- 0006: the CHECKs of `assets` and `files` that a first index evaluates for every file say
-- `x = 'a' OR x = 'b' OR …` instead of `x IN ('a', 'b', …)`. The two are equivalent (a NULL
-- passes both), but SQLite builds a temporary b-tree for an IN list of more than two
-- constants on every execution of the statement, which cost a third of a first index's
-- writer time.
--
-- The tables are not rebuilt: this is SQLite's documented in-place edit for CHECK changes
-- that leave the stored rows valid (lang_altertable "otheralter"). The migration turns
-- writable_schema on and rewrites the CREATE text; `migrate` then finishes the procedure
-- (bumps schema_version, turns writable_schema off with RESET so this connection reloads
-- the schema, and parses the edited tables again before the commit).
PRAGMA writable_schema = ON;

UPDATE sqlite_schema
   SET sql = replace(replace(sql,
       'CHECK (kind IN (''image'', ''video'', ''other''))',
       'CHECK (kind = ''image'' OR kind = ''video'' OR kind = ''other'')'),
       'CHECK (trash_reason IN (''missing'', ''replaced'', ''user''))',
       'CHECK (trash_reason = ''missing'' OR trash_reason = ''replaced'' OR trash_reason = ''user'')')
 WHERE type = 'table' AND name = 'assets';

UPDATE sqlite_schema
   SET sql = replace(sql,
       'CHECK (last_reason IN (''new'', ''size'', ''mtime'', ''inode'', ''forced'', ''error''))',
       'CHECK (last_reason = ''new'' OR last_reason = ''size'' OR last_reason = ''mtime''
                          OR last_reason = ''inode'' OR last_reason = ''forced''
                          OR last_reason = ''error'')')
 WHERE type = 'table' AND name = 'files';
