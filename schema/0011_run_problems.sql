-- 0011: a scan run's problems (issue 14 item 7): each file or folder the run could not list,
-- read or parse, with its error, in the order the run met them (`seq`, from 1). Written by
-- the run's lease holder in the same fenced transaction as the batch that met them, so a
-- stale worker adds none. A run keeps at most 10,000 (`store::problems::PER_RUN`); its
-- progress counts every one. Goes with its run when the run is pruned or its library removed.
CREATE TABLE scan_run_problems (
    run_id        INTEGER NOT NULL REFERENCES scan_runs (id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL CHECK (seq >= 1),
    rel_path      BLOB    NOT NULL,
    rel_path_text TEXT    NOT NULL,
    error         TEXT    NOT NULL,
    PRIMARY KEY (run_id, seq)
) STRICT, WITHOUT ROWID;
