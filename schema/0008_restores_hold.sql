-- 0008: a restore during a full scan holds (DESIGN.md sections 5 and 6).
--
-- `revived_in_run` is the scan run of the file's library that was running when the row came
-- back from `missing` (a restore put the file back, whoever wrote it). A full scan's
-- completion never marks such a row missing again: its walk may have passed the folder
-- before the file came back. The schema keeps it, so that no writer can forget it. It is no
-- foreign key: runs are pruned, the files they saw are not.
ALTER TABLE files ADD COLUMN revived_in_run INTEGER;

CREATE TRIGGER files_revived AFTER UPDATE OF state ON files
 WHEN OLD.state = 'missing' AND NEW.state = 'present'
BEGIN
    UPDATE files
       SET revived_in_run = (SELECT id FROM scan_runs
                              WHERE library_id = NEW.library_id AND state = 'running')
     WHERE id = NEW.id;
END;
