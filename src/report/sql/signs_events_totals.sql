-- The event feed landed so far: events, distinct signs, first and last publication.
SELECT
    count(*) AS events,
    count(DISTINCT id) AS signs,
    strftime(min(publication_timestamp), '%Y-%m-%dT%H:%M:%SZ') AS first,
    strftime(max(publication_timestamp), '%Y-%m-%dT%H:%M:%SZ') AS last
FROM signs_events
