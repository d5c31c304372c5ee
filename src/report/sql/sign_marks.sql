-- The signs of report_signs with a position, to draw: all of them, or beyond
-- $limit a repeatable sample (the same signs on every report of the same
-- data), in id order; `total` counts the signs with a position.
SELECT * FROM (
    SELECT id, lon, lat, code, road, town, text, image, count(*) OVER () AS total
    FROM report_signs
    WHERE lon IS NOT NULL AND lat IS NOT NULL
    ORDER BY hash(id), id
    LIMIT $limit
)
ORDER BY id
