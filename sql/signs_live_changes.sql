-- The history of each sign from the daily current states of today's API: for
-- each pair of consecutive snapshots (signs_live_snapshots, one per download),
-- one row per sign that was added, removed or changed between them, with the
-- properties that changed (upstream names; "geometry" when the sign moved).
-- Rebuilt whole from the snapshots, so a run that adds no snapshot adds nothing.

CREATE TEMP TABLE live_pairs AS
SELECT
    lag(snapshot) OVER (ORDER BY snapshot) AS from_snapshot,
    lag(downloaded_at) OVER (ORDER BY snapshot) AS from_moment,
    snapshot AS to_snapshot,
    downloaded_at AS to_moment
FROM (SELECT snapshot, min(downloaded_at) AS downloaded_at FROM signs_live_snapshots GROUP BY snapshot)
QUALIFY from_snapshot IS NOT NULL;

CREATE OR REPLACE TABLE signs_live_changes AS
WITH
before AS (
    SELECT p.to_snapshot AS pair, s.sign_id, s.rvv_code, s.county_code, s.longitude, s.latitude, s.properties
    FROM live_pairs AS p
    JOIN signs_live_snapshots AS s ON s.snapshot = p.from_snapshot
),
after AS (
    SELECT p.to_snapshot AS pair, s.sign_id, s.rvv_code, s.county_code, s.longitude, s.latitude, s.properties
    FROM live_pairs AS p
    JOIN signs_live_snapshots AS s ON s.snapshot = p.to_snapshot
),
compared AS (
    SELECT
        coalesce(a.pair, b.pair) AS pair,
        coalesce(a.sign_id, b.sign_id) AS sign_id,
        CASE WHEN b.sign_id IS NULL THEN 'added' WHEN a.sign_id IS NULL THEN 'removed' ELSE 'changed' END AS change,
        CASE WHEN a.sign_id IS NOT NULL AND b.sign_id IS NOT NULL THEN
            list_sort(list_filter(
                list_distinct(list_concat(json_keys(b.properties), json_keys(a.properties))),
                k -> (b.properties -> k)::VARCHAR IS DISTINCT FROM (a.properties -> k)::VARCHAR
            ) || CASE WHEN (a.longitude, a.latitude) IS DISTINCT FROM (b.longitude, b.latitude) THEN ['geometry'] ELSE [] END)
        END AS changed_fields,
        coalesce(a.rvv_code, b.rvv_code) AS rvv_code,
        coalesce(a.county_code, b.county_code) AS county_code,
        coalesce(a.longitude, b.longitude) AS longitude,
        coalesce(a.latitude, b.latitude) AS latitude
    FROM after AS a
    FULL OUTER JOIN before AS b ON a.pair = b.pair AND a.sign_id = b.sign_id
)
SELECT
    p.from_moment,
    p.to_moment,
    c.sign_id,
    c.change,
    c.changed_fields,
    c.rvv_code,
    c.county_code,
    c.longitude,
    c.latitude
FROM compared AS c
JOIN live_pairs AS p ON p.to_snapshot = c.pair
WHERE c.change <> 'changed' OR len(c.changed_fields) > 0;
