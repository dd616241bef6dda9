-- 0007: trash and restore moves are leased work (DESIGN.md sections 4 and 6). A move (one
-- asset's trash or restore: its intents, one per file, sharing a move id) is now held by a
-- `move` job; only the job's lease holder moves files or settles intents, and a move whose
-- holder died is finished or rolled back by whoever reclaims its expired lease.
-- Before this version a pending intent had no owner and every start replayed it. Each move
-- still pending becomes a queued move job here (due at once), so the next worker that claims
-- it carries it out under a lease like any other. One live move per asset (the unique key):
-- had an old journal two pending moves of one asset (its begin refused that), only the older
-- is queued and the other stays in the journal, untouched. A move is never given up (its
-- files would stay half moved): it gets attempts without end, as new moves do.
INSERT OR IGNORE INTO jobs (kind, unique_key, payload, max_attempts, run_at, created_at,
                            updated_at)
SELECT 'move', 'move:' || asset_id,
       json_object('asset', asset_id, 'action', action, 'move', move_id),
       1000000, min(created_at), min(created_at), min(created_at)
  FROM trash_intents WHERE state = 'pending'
 GROUP BY move_id ORDER BY move_id;
