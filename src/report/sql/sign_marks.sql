-- The signs of report_signs with a position, to draw: all of them, or beyond
-- $limit a repeatable sample (the same signs on every report of the same
-- data), in id order.
SELECT * FROM (
    SELECT id, lon, lat, code, road, town, text, image
    FROM report_signs
    WHERE lon IS NOT NULL AND lat IS NOT NULL
    ORDER BY hash(id), id
    LIMIT $limit
)
ORDER BY id
