-- The calendar of counter health: the last $days local dates judged, for the
-- $rows counters with the most faulty (then suspect) days among them (every
-- counter when there are no more).
WITH dates AS (
    SELECT DISTINCT local_date FROM bicycle_quality ORDER BY local_date DESC LIMIT $days
),
recent AS (
    SELECT * FROM bicycle_quality WHERE local_date IN (SELECT local_date FROM dates)
),
shown AS (
    SELECT location_id, row_number() OVER (
        ORDER BY count(*) FILTER (WHERE status = 'faulty') DESC,
                 count(*) FILTER (WHERE status = 'suspect') DESC,
                 location_id) AS rank
    FROM recent
    GROUP BY location_id
    QUALIFY rank <= $rows
)
-- Worst first, each counter's dates in order.
SELECT location_id, strftime(local_date, '%Y-%m-%d') AS date, status, array_to_string(flags, ', ') AS flags
FROM recent JOIN shown USING (location_id)
ORDER BY rank, local_date
