-- 0001: libraries, the two lease-carrying work tables (jobs, scan_runs) and counters.
-- Times are milliseconds since the Unix epoch, taken from the injected clock (never SQL's).

CREATE TABLE libraries (
    id          INTEGER PRIMARY KEY,
    name        TEXT    NOT NULL UNIQUE,
    root        TEXT    NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL
) STRICT;

-- Walk chains and maintenance work. Protocol: DESIGN.md section 4.
CREATE TABLE jobs (
    id               INTEGER PRIMARY KEY,
    kind             TEXT    NOT NULL,
    unique_key       TEXT,
    payload          TEXT    NOT NULL DEFAULT '{}',
    state            TEXT    NOT NULL DEFAULT 'queued'
                     CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    generation       INTEGER NOT NULL DEFAULT 0,
    attempts         INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL DEFAULT 5 CHECK (max_attempts >= 1),
    run_at           INTEGER NOT NULL,
    lease_owner      TEXT,
    lease_expires_at INTEGER,
    heartbeat_at     INTEGER,
    checkpoint       TEXT,
    last_error       TEXT,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    finished_at      INTEGER,
    CHECK ((state = 'running') = (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL))
) STRICT;

-- One live (queued or running) job per unique key: enqueue_unique relies on this index,
-- never on check-then-insert.
CREATE UNIQUE INDEX jobs_one_live_per_key ON jobs (unique_key)
    WHERE unique_key IS NOT NULL AND state IN ('queued', 'running');
CREATE INDEX jobs_due ON jobs (state, run_at, id);
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;

-- One row per scan attempt: the user-visible history. A retry is a new row that names its
-- predecessor.
CREATE TABLE scan_runs (
    id               INTEGER PRIMARY KEY,
    library_id       INTEGER NOT NULL REFERENCES libraries (id) ON DELETE CASCADE,
    scope            TEXT    NOT NULL DEFAULT '',
    trigger          TEXT    NOT NULL
                     CHECK (trigger IN ('manual', 'boot', 'watch', 'schedule', 'api')),
    watch_event      TEXT,
    state            TEXT    NOT NULL DEFAULT 'accepted'
                     CHECK (state IN ('accepted', 'running', 'completed', 'suspect',
                                      'failed', 'cancelled', 'interrupted')),
    reason           TEXT,
    generation       INTEGER NOT NULL DEFAULT 0,
    attempt          INTEGER NOT NULL DEFAULT 1,
    run_at           INTEGER NOT NULL,
    lease_owner      TEXT,
    lease_expires_at INTEGER,
    heartbeat_at     INTEGER,
    progress         TEXT,
    requested_at     INTEGER NOT NULL,
    accepted_at      INTEGER NOT NULL,
    started_at       INTEGER,
    finished_at      INTEGER,
    updated_at       INTEGER NOT NULL,
    predecessor_id   INTEGER REFERENCES scan_runs (id) ON DELETE SET NULL,
    CHECK ((state = 'running') = (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL))
) STRICT;

-- At most one running and at most one waiting run per library.
CREATE UNIQUE INDEX scan_runs_one_running ON scan_runs (library_id) WHERE state = 'running';
CREATE UNIQUE INDEX scan_runs_one_waiting ON scan_runs (library_id) WHERE state = 'accepted';
CREATE INDEX scan_runs_history ON scan_runs (library_id, id);
CREATE INDEX scan_runs_predecessor ON scan_runs (predecessor_id) WHERE predecessor_id IS NOT NULL;

-- Monotonic counters for /metrics: fence rejections, reclaims, retries. Persisted so that
-- every process sharing the file (and `mediadex status`) sees the same figures.
CREATE TABLE counters (
    name  TEXT    PRIMARY KEY,
    value INTEGER NOT NULL DEFAULT 0
) STRICT, WITHOUT ROWID;
