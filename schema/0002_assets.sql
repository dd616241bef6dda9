-- 0002: assets and the files that show them, per-run provenance counts, the trash journal,
-- the library identity of the circuit breaker, and scan admission keys.
-- DESIGN.md sections 5 and 6. Times are milliseconds since the Unix epoch from the clock.

-- The identity of a library root, recorded at `library add` and compared by every full scan
-- (the circuit breaker): the device id of the root and the id in its `.mediadex-library`.
ALTER TABLE libraries ADD COLUMN root_dev INTEGER;
ALTER TABLE libraries ADD COLUMN marker_id TEXT;

-- A picture or video: unique per (owner, checksum), checksum = blake3 of the whole file.
-- A trashed asset keeps its row (it still catches duplicates) until the sweep deletes it.
CREATE TABLE assets (
    id                   INTEGER PRIMARY KEY,
    owner                TEXT    NOT NULL DEFAULT 'local',
    checksum             BLOB    NOT NULL CHECK (length(checksum) = 32),
    size                 INTEGER NOT NULL,
    mime                 TEXT,
    kind                 TEXT    CHECK (kind IN ('image', 'video', 'other')),
    width                INTEGER,
    height               INTEGER,
    display_width        INTEGER,
    display_height       INTEGER,
    taken_local          TEXT,
    taken_offset_minutes INTEGER,
    make                 TEXT,
    model                TEXT,
    lat                  REAL,
    lon                  REAL,
    orientation          INTEGER,
    duration_ms          INTEGER,
    video_codec          TEXT,
    created_at           INTEGER NOT NULL,
    trashed_at           INTEGER,
    trash_reason         TEXT    CHECK (trash_reason IN ('missing', 'replaced', 'user')),
    -- The scan run that created it, until a run of that library completes: an asset
    -- becomes visible only after the fenced completion (DESIGN.md section 4).
    pending_run          INTEGER,
    CHECK ((trashed_at IS NULL) = (trash_reason IS NULL)),
    UNIQUE (owner, checksum)
) STRICT;

CREATE INDEX assets_trashed ON assets (trashed_at) WHERE trashed_at IS NOT NULL;
CREATE INDEX assets_pending ON assets (pending_run) WHERE pending_run IS NOT NULL;

-- A path in a library. `rel_path` is the library-relative path as raw bytes (`/`-separated,
-- lossless for names that are not UTF-8); `rel_path_text` is its lossy rendering for display.
-- The stamp (size, mtime_ns, dev, inode) is what the diff compares. Run ids are not foreign
-- keys: runs are pruned, the files they saw are not.
CREATE TABLE files (
    id             INTEGER PRIMARY KEY,
    library_id     INTEGER NOT NULL REFERENCES libraries (id) ON DELETE CASCADE,
    rel_path       BLOB    NOT NULL,
    rel_path_text  TEXT    NOT NULL,
    size           INTEGER NOT NULL,
    mtime_ns       INTEGER NOT NULL,
    dev            INTEGER NOT NULL,
    inode          INTEGER NOT NULL,
    asset_id       INTEGER REFERENCES assets (id) ON DELETE SET NULL,
    state          TEXT    NOT NULL DEFAULT 'present' CHECK (state IN ('present', 'missing')),
    last_reason    TEXT    NOT NULL
                   CHECK (last_reason IN ('new', 'size', 'mtime', 'inode', 'forced', 'error')),
    error          TEXT,
    first_seen_run INTEGER NOT NULL,
    last_seen_run  INTEGER NOT NULL,
    missing_since  INTEGER,
    CHECK ((state = 'missing') = (missing_since IS NOT NULL)),
    UNIQUE (library_id, rel_path)
) STRICT;

CREATE INDEX files_asset ON files (asset_id) WHERE asset_id IS NOT NULL;

-- Why files were processed, per run: new, size, mtime, inode, forced, error, plus unchanged,
-- missing and duplicate. Goes with its run when the run is pruned.
CREATE TABLE scan_run_reasons (
    run_id  INTEGER NOT NULL REFERENCES scan_runs (id) ON DELETE CASCADE,
    reason  TEXT    NOT NULL
            CHECK (reason IN ('new', 'size', 'mtime', 'inode', 'forced', 'error',
                              'unchanged', 'missing', 'duplicate')),
    count   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, reason)
) STRICT, WITHOUT ROWID;

-- The trash journal: an intent row per file to move, then the move, then the commit.
-- Unfinished (pending) intents are replayed at start. `asset_id` is no foreign key: the
-- journal outlives a swept asset. Paths are library-relative bytes, like files.rel_path.
CREATE TABLE trash_intents (
    id          INTEGER PRIMARY KEY,
    asset_id    INTEGER NOT NULL,
    library_id  INTEGER NOT NULL REFERENCES libraries (id) ON DELETE CASCADE,
    action      TEXT    NOT NULL CHECK (action IN ('trash', 'restore')),
    from_path   BLOB    NOT NULL,
    to_path     BLOB    NOT NULL,
    state       TEXT    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done', 'aborted')),
    created_at  INTEGER NOT NULL,
    finished_at INTEGER
) STRICT;

CREATE INDEX trash_intents_pending ON trash_intents (asset_id) WHERE state = 'pending';

-- Admission idempotency: a key names one request and the run that answered it. The key goes
-- with its run when the run is pruned.
CREATE TABLE scan_requests (
    idempotency_key TEXT    PRIMARY KEY,
    library_id      INTEGER NOT NULL REFERENCES libraries (id) ON DELETE CASCADE,
    scope           TEXT    NOT NULL,
    trigger         TEXT    NOT NULL,
    run_id          INTEGER NOT NULL REFERENCES scan_runs (id) ON DELETE CASCADE,
    created_at      INTEGER NOT NULL
) STRICT;

CREATE INDEX scan_requests_run ON scan_requests (run_id);
-- `scan --force`: the run re-reads every file in scope; kept through coalescing and retries.
ALTER TABLE scan_runs ADD COLUMN forced INTEGER NOT NULL DEFAULT 0 CHECK (forced IN (0, 1));

-- The hourly limit counts a library's runs by acceptance time.
CREATE INDEX scan_runs_accepted ON scan_runs (library_id, accepted_at);
