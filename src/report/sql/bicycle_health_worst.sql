-- The counters with the most faulty (then suspect) days, with their flags, most frequent first.
WITH per_location AS (
    SELECT
        location_id,
        count(*) AS judged,
        count(*) FILTER (WHERE status = 'faulty') AS faulty,
        count(*) FILTER (WHERE status = 'suspect') AS suspect
    FROM bicycle_quality
    GROUP BY location_id
),
worst AS (
    SELECT * FROM per_location
    WHERE faulty + suspect > 0
    ORDER BY faulty DESC, suspect DESC, location_id
    LIMIT $top
),
flags AS (
    SELECT location_id, flag, count(*) AS n
    FROM (SELECT location_id, unnest(flags) AS flag FROM bicycle_quality WHERE location_id IN (SELECT location_id FROM worst))
    GROUP BY ALL
)
SELECT w.location_id, w.judged, w.faulty, w.suspect,
       string_agg(f.flag || ' ' || f.n, ', ' ORDER BY f.n DESC, f.flag) AS flags
FROM worst w LEFT JOIN flags f USING (location_id)
GROUP BY w.location_id, w.judged, w.faulty, w.suspect
ORDER BY w.faulty DESC, w.suspect DESC, w.location_id
