-- The signs of report_signs with a position, to draw: all of them, or beyond
-- $limit a repeatable sample (the same signs on every report of the same
-- data), in id order. The sample is chosen on the narrow columns (id and
-- position) and the rest of its rows fetched by a semi join: a top-n over
-- the wide rows held about 600 MB at national scale.
WITH sample AS (
    SELECT id
    FROM report_signs
    WHERE lon IS NOT NULL AND lat IS NOT NULL
    ORDER BY hash(id), id
    LIMIT $limit
)
SELECT id, lon, lat, code, road, town, text, image
FROM report_signs
SEMI JOIN sample USING (id)
WHERE lon IS NOT NULL AND lat IS NOT NULL
ORDER BY id
