-- 0016: HEIC, HEIF and AVIF pictures get their faces looked for again (issue 15 item 1).
-- Before, the face walk could not decode them and stamped them "detected, no faces" under
-- face scheme 1, the scheme this binary still uses: its walk would never visit them again,
-- and their faces (found now through heif-dec) would stay missing. Only the stamp of a HEIF
-- with no face goes: one with faces was stamped by a binary that could read it. The walk
-- sees the unstamped assets at the next start and detects them (or, without heif-dec here,
-- leaves them unstamped until the program is installed).
UPDATE assets SET faces_scheme = NULL
 WHERE (mime = 'image/heic' OR mime = 'image/heif' OR mime = 'image/avif')
   AND faces_scheme IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM faces WHERE faces.asset_id = assets.id);
