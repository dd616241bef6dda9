-- 0004: indexes for the HTTP API's paged asset list (keyset pagination, newest taken first)
-- and for /metrics. No table changes.

-- The timeline: visible assets by capture time (undated last), then id, both descending.
-- The expression is repeated verbatim in src/store/queries.rs so the planner uses it.
CREATE INDEX assets_timeline ON assets (coalesce(taken_local, '') DESC, id DESC)
    WHERE pending_run IS NULL;

-- A camera filter is an equality on make and model.
CREATE INDEX assets_camera ON assets (make, model) WHERE pending_run IS NULL;

-- /metrics: the last completed scan of each library.
CREATE INDEX scan_runs_completed ON scan_runs (library_id, finished_at) WHERE state = 'completed';
