-- The snapshots of today's API landed: how many, the first and the latest.
SELECT count(*) AS n, CAST(min(snapshot) AS VARCHAR) AS first, CAST(max(snapshot) AS VARCHAR) AS latest
FROM (SELECT DISTINCT snapshot FROM signs_live_snapshots)
