-- Two rows of an answer for the same location and hour: the first is kept, the
-- others are quarantined (measurements_typed: the rows of
-- measurements_typing.sql). Run only when a count says there are repeats.
SELECT * REPLACE (
    CASE
        WHEN _problem IS NULL AND NOT _boundary
            AND row_number() OVER (PARTITION BY location_id, measurement_hour ORDER BY _n) > 1
            THEN 'another row for the same location and hour came first'
        ELSE _problem
    END AS _problem
)
FROM measurements_typed
