-- The history of each sign from the daily current states of today's API: for
-- each pair of consecutive snapshots (signs_live_snapshots, one file per
-- download, its moment in `snapshot`, its UTC date the partition
-- snapshot_date), one row per sign that was added, removed or changed between
-- them, with the properties that changed, named as the columns of signs_live
-- are (NDW's camelCase in snake_case: rvvCode is rvv_code; "geometry" when the
-- sign moved).
--
-- Kept by the later snapshot of each pair: its moment `to_moment`, its UTC
-- date the partition `to_date`. A new download adds one pair, and only the
-- pairs ending on the dates built are compared.
-- getvariable('partitions') lists the to_date of the pairs to build (unset:
-- all of them). getvariable('inputs') lists the snapshot dates there are,
-- which spares reading every snapshot to find them; unset, they are read.

-- The dates whose snapshots are read: those built, and the date before each
-- (where the first pair of a date begins).
SET VARIABLE live_dates = (
    SELECT list(d ORDER BY d)
    FROM (
        SELECT d, lead(d) OVER (ORDER BY d) AS next_d
        FROM (
            SELECT unnest(getvariable('inputs')) AS d
            UNION ALL
            SELECT DISTINCT snapshot_date FROM signs_live_snapshots WHERE getvariable('inputs') IS NULL
        )
    )
    WHERE getvariable('partitions') IS NULL
        OR list_contains(getvariable('partitions'), d)
        OR list_contains(getvariable('partitions'), next_d)
);

CREATE TEMP TABLE live_pairs AS
SELECT lag(snapshot) OVER (ORDER BY snapshot) AS from_moment, snapshot AS to_moment,
    CAST(timezone('UTC', snapshot) AS DATE) AS to_date
FROM (
    SELECT DISTINCT snapshot FROM signs_live_snapshots
    WHERE list_contains(getvariable('live_dates'), snapshot_date)
)
QUALIFY from_moment IS NOT NULL
    AND (getvariable('partitions') IS NULL OR list_contains(getvariable('partitions'), to_date));

-- The snapshots to read, as constants, so that DuckDB opens no other snapshot's files.
SET VARIABLE live_pair_ends = (SELECT list(to_moment) FROM live_pairs);
SET VARIABLE live_pair_starts = (SELECT list(from_moment) FROM live_pairs);
SET VARIABLE live_pair_dates = (
    SELECT list(DISTINCT CAST(timezone('UTC', m) AS DATE))
    FROM (SELECT unnest(list_concat(getvariable('live_pair_starts'), getvariable('live_pair_ends'))) AS m)
);

-- The signs that differ between the two snapshots of a pair, found from a
-- fingerprint of each sign (its properties' 64-bit hash and its position), so
-- that the millions of signs that did not change are never compared whole.
CREATE TEMP TABLE live_differing AS
WITH
before AS (
    SELECT p.to_moment AS pair, s.sign_id, hash(s.properties::VARCHAR) AS fingerprint, s.longitude, s.latitude
    FROM live_pairs AS p
    JOIN signs_live_snapshots AS s ON s.snapshot = p.from_moment
    WHERE list_contains(getvariable('live_pair_dates'), s.snapshot_date) AND list_contains(getvariable('live_pair_starts'), s.snapshot)
),
after AS (
    SELECT p.to_moment AS pair, s.sign_id, hash(s.properties::VARCHAR) AS fingerprint, s.longitude, s.latitude
    FROM live_pairs AS p
    JOIN signs_live_snapshots AS s ON s.snapshot = p.to_moment
    WHERE list_contains(getvariable('live_pair_dates'), s.snapshot_date) AND list_contains(getvariable('live_pair_ends'), s.snapshot)
)
SELECT coalesce(a.pair, b.pair) AS pair, coalesce(a.sign_id, b.sign_id) AS sign_id
FROM after AS a
FULL OUTER JOIN before AS b ON a.pair = b.pair AND a.sign_id = b.sign_id
WHERE a.sign_id IS NULL OR b.sign_id IS NULL
    OR a.fingerprint <> b.fingerprint
    OR (a.longitude, a.latitude) IS DISTINCT FROM (b.longitude, b.latitude);

CREATE TABLE signs_live_changes AS
WITH
before AS (
    SELECT p.to_moment AS pair, s.sign_id, s.rvv_code, s.county_code, s.longitude, s.latitude, s.geometry, s.properties
    FROM live_pairs AS p
    JOIN signs_live_snapshots AS s ON s.snapshot = p.from_moment
    SEMI JOIN live_differing AS d ON d.pair = p.to_moment AND d.sign_id = s.sign_id
    WHERE list_contains(getvariable('live_pair_dates'), s.snapshot_date) AND list_contains(getvariable('live_pair_starts'), s.snapshot)
),
after AS (
    SELECT p.to_moment AS pair, s.sign_id, s.rvv_code, s.county_code, s.longitude, s.latitude, s.geometry, s.properties
    FROM live_pairs AS p
    JOIN signs_live_snapshots AS s ON s.snapshot = p.to_moment
    SEMI JOIN live_differing AS d ON d.pair = p.to_moment AND d.sign_id = s.sign_id
    WHERE list_contains(getvariable('live_pair_dates'), s.snapshot_date) AND list_contains(getvariable('live_pair_ends'), s.snapshot)
),
compared AS (
    SELECT
        coalesce(a.pair, b.pair) AS pair,
        coalesce(a.sign_id, b.sign_id) AS sign_id,
        CASE WHEN b.sign_id IS NULL THEN 'added' WHEN a.sign_id IS NULL THEN 'removed' ELSE 'changed' END AS change,
        CASE WHEN a.sign_id IS NOT NULL AND b.sign_id IS NOT NULL THEN
            list_sort(list_transform(list_filter(
                list_distinct(list_concat(json_keys(b.properties), json_keys(a.properties))),
                k -> (b.properties -> k)::VARCHAR IS DISTINCT FROM (a.properties -> k)::VARCHAR
            ), k -> lower(regexp_replace(k, '([a-z0-9])([A-Z])', '\1_\2', 'g')))
            || CASE WHEN (a.longitude, a.latitude) IS DISTINCT FROM (b.longitude, b.latitude) THEN ['geometry'] ELSE [] END)
        END AS changed_fields,
        coalesce(a.rvv_code, b.rvv_code) AS rvv_code,
        coalesce(a.county_code, b.county_code) AS county_code,
        coalesce(a.longitude, b.longitude) AS longitude,
        coalesce(a.latitude, b.latitude) AS latitude,
        coalesce(a.geometry, b.geometry) AS geometry
    FROM after AS a
    FULL OUTER JOIN before AS b ON a.pair = b.pair AND a.sign_id = b.sign_id
)
SELECT
    p.from_moment,
    p.to_moment,
    p.to_date,
    c.sign_id,
    c.change,
    c.changed_fields,
    c.rvv_code,
    c.county_code,
    c.longitude,
    c.latitude,
    c.geometry
FROM compared AS c
JOIN live_pairs AS p ON p.to_moment = c.pair
WHERE c.change <> 'changed' OR len(c.changed_fields) > 0;
