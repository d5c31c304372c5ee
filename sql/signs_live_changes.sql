-- The history of each sign from the daily current states of today's API: for
-- each pair of consecutive snapshots (signs_live_snapshots, one file per
-- download, its moment in `snapshot`, its UTC date the partition
-- snapshot_date), one row per sign that was added, removed or changed between
-- them, with the properties that changed: the columns of signs_live whose
-- values differ (NDW's camelCase in snake_case: rvvCode is rvv_code;
-- "geometry" when the sign moved; a property whose text does not type, by the
-- text its typing issue quotes) and, where both snapshots kept the properties
-- whole, the properties the schemas do not know.
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

-- The signs that differ between the two snapshots of a pair, found from each
-- sign's fingerprint (a 64-bit hash of its typed values, which the snapshot
-- holds) and, where both snapshots kept the properties whole, theirs, so that
-- the millions of signs that did not change are never compared whole. The
-- snapshots of `moments`, each read once, narrow; the id as a UUID, 16 bytes to
-- join on.
CREATE OR REPLACE TEMP MACRO live_fingerprints(moments) AS TABLE
SELECT snapshot, CAST(sign_id AS UUID) AS id, fingerprint,
    CASE WHEN properties IS NOT NULL THEN hash(properties::VARCHAR) END AS kept
FROM signs_live_snapshots
WHERE list_contains(getvariable('live_pair_dates'), snapshot_date) AND list_contains(moments, snapshot);

CREATE TEMP TABLE live_differing AS
WITH
before AS (
    SELECT p.to_moment AS pair, s.*
    FROM live_pairs AS p JOIN live_fingerprints(getvariable('live_pair_starts')) AS s ON s.snapshot = p.from_moment
),
after AS (
    SELECT p.to_moment AS pair, s.*
    FROM live_pairs AS p JOIN live_fingerprints(getvariable('live_pair_ends')) AS s ON s.snapshot = p.to_moment
)
SELECT coalesce(a.pair, b.pair) AS pair, CAST(coalesce(a.id, b.id) AS VARCHAR) AS sign_id
FROM after AS a
FULL OUTER JOIN before AS b ON a.pair = b.pair AND a.id = b.id
WHERE a.id IS NULL OR b.id IS NULL
    OR a.fingerprint <> b.fingerprint
    OR a.kept <> b.kept;

-- The signs that differ, whole, out of the snapshots of `moments` (their ids
-- filter the scan first, which spares some of the other signs' values).
CREATE OR REPLACE TEMP MACRO live_differing_rows(moments) AS TABLE
SELECT * EXCLUDE (snapshot_date, api, downloaded_at, bbox, fingerprint)
FROM signs_live_snapshots
WHERE list_contains(getvariable('live_pair_dates'), snapshot_date) AND list_contains(moments, snapshot)
    AND sign_id IN (SELECT sign_id FROM live_differing);

-- Each side of each pair.
CREATE TEMP TABLE live_before AS
SELECT p.to_moment AS pair, s.* EXCLUDE (snapshot)
FROM live_pairs AS p
JOIN live_differing_rows(getvariable('live_pair_starts')) AS s ON s.snapshot = p.from_moment
SEMI JOIN live_differing AS d ON d.pair = p.to_moment AND d.sign_id = s.sign_id;

CREATE TEMP TABLE live_after AS
SELECT p.to_moment AS pair, s.* EXCLUDE (snapshot)
FROM live_pairs AS p
JOIN live_differing_rows(getvariable('live_pair_ends')) AS s ON s.snapshot = p.to_moment
SEMI JOIN live_differing AS d ON d.pair = p.to_moment AND d.sign_id = s.sign_id;

CREATE TABLE signs_live_changes AS
WITH
-- Each compared value of a sign as text (a NULL value is no row), on either side.
values_before AS (
    UNPIVOT (SELECT pair, sign_id, COLUMNS(* EXCLUDE (pair, sign_id, geometry, typing_issues, properties))::VARCHAR FROM live_before)
    ON COLUMNS(* EXCLUDE (pair, sign_id)) INTO NAME field VALUE value
),
values_after AS (
    UNPIVOT (SELECT pair, sign_id, COLUMNS(* EXCLUDE (pair, sign_id, geometry, typing_issues, properties))::VARCHAR FROM live_after)
    ON COLUMNS(* EXCLUDE (pair, sign_id)) INTO NAME field VALUE value
),
typed_fields AS (
    SELECT coalesce(a.pair, b.pair) AS pair, coalesce(a.sign_id, b.sign_id) AS sign_id,
        list(DISTINCT CASE WHEN coalesce(a.field, b.field) IN ('longitude', 'latitude') THEN 'geometry' ELSE coalesce(a.field, b.field) END) AS fields
    FROM values_after AS a
    FULL OUTER JOIN values_before AS b ON a.pair = b.pair AND a.sign_id = b.sign_id AND a.field = b.field
    WHERE a.value IS DISTINCT FROM b.value
    GROUP BY ALL
),
compared AS (
    SELECT
        coalesce(a.pair, b.pair) AS pair,
        coalesce(a.sign_id, b.sign_id) AS sign_id,
        CASE WHEN b.sign_id IS NULL THEN 'added' WHEN a.sign_id IS NULL THEN 'removed' ELSE 'changed' END AS change,
        CASE WHEN a.sign_id IS NOT NULL AND b.sign_id IS NOT NULL THEN
            list_sort(list_distinct(
                coalesce(t.fields, [])
                -- a text that does not type, by the issue that quotes it
                || list_transform(
                    list_concat(
                        list_filter(coalesce(a.typing_issues, []), i -> NOT list_contains(coalesce(b.typing_issues, []), i)),
                        list_filter(coalesce(b.typing_issues, []), i -> NOT list_contains(coalesce(a.typing_issues, []), i))),
                    i -> split_part(i, ':', 1))
                -- the properties kept whole on both sides, by their names in snake_case
                || CASE WHEN a.properties IS NOT NULL AND b.properties IS NOT NULL THEN
                    list_transform(list_filter(
                        list_distinct(list_concat(json_keys(b.properties), json_keys(a.properties))),
                        k -> (b.properties -> k)::VARCHAR IS DISTINCT FROM (a.properties -> k)::VARCHAR
                    ), k -> lower(regexp_replace(k, '([a-z0-9])([A-Z])', '\1_\2', 'g')))
                ELSE [] END))
        END AS changed_fields,
        coalesce(a.rvv_code, b.rvv_code) AS rvv_code,
        coalesce(a.county_code, b.county_code) AS county_code,
        coalesce(a.longitude, b.longitude) AS longitude,
        coalesce(a.latitude, b.latitude) AS latitude,
        coalesce(a.geometry, b.geometry) AS geometry
    FROM live_after AS a
    FULL OUTER JOIN live_before AS b ON a.pair = b.pair AND a.sign_id = b.sign_id
    LEFT JOIN typed_fields AS t ON t.pair = coalesce(a.pair, b.pair) AND t.sign_id = coalesce(a.sign_id, b.sign_id)
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
