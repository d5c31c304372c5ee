-- Events per ISO week (from Monday, UTC) by type, every week of the span
-- listed (0 where none); `partial` marks a week the feed read so far begins
-- or ends inside.
WITH per_week AS (
    SELECT
        CAST(date_trunc('week', publication_timestamp) AS DATE) AS week,
        count(*) FILTER (WHERE type = 'created') AS created,
        count(*) FILTER (WHERE type = 'updated') AS updated,
        count(*) FILTER (WHERE type = 'deleted') AS deleted
    FROM signs_events GROUP BY 1
),
weeks AS (
    SELECT CAST(range AS DATE) AS week
    FROM range((SELECT min(week) FROM per_week), (SELECT max(week) FROM per_week) + INTERVAL 7 DAY, INTERVAL 7 DAY)
)
SELECT
    strftime(w.week, '%Y-%m-%d') AS week,
    coalesce(created, 0) AS created,
    coalesce(updated, 0) AS updated,
    coalesce(deleted, 0) AS deleted,
    b.first > w.week OR b.last < w.week + INTERVAL 7 DAY AS partial
FROM weeks w
LEFT JOIN per_week USING (week)
CROSS JOIN (SELECT min(publication_timestamp) AS first, max(publication_timestamp) AS last FROM signs_events) b
ORDER BY w.week
