-- The signs added, removed and changed from one snapshot to the next, per snapshot.
SELECT
    strftime(to_moment, '%Y-%m-%dT%H:%M:%SZ') AS moment,
    count(*) FILTER (WHERE change = 'added') AS added,
    count(*) FILTER (WHERE change = 'removed') AS removed,
    count(*) FILTER (WHERE change = 'changed') AS changed
FROM signs_live_changes
GROUP BY to_moment
ORDER BY to_moment
