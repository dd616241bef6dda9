-- 0010: transient retries of a job, apart from its attempts (issue 14, item 2).
--
-- A failure that passes by itself (another process holding the write lock, a NAS that
-- dropped off) spends no attempt: a night with the NAS away must not use up a walk's ten
-- attempts and fail it for good. Its wait still grows with every such retry in a row, by
-- the same backoff as a failed attempt (capped), so a cause that lasts costs one try per
-- capped backoff, never a busy loop. The count is this row's: a chain's next row starts at 0.
ALTER TABLE jobs ADD COLUMN retries INTEGER NOT NULL DEFAULT 0 CHECK (retries >= 0);
