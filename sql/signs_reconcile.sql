-- Compares the state built from the event feed with the downloaded current
-- state, as of the snapshot's moment (the download's Last-Modified, or its
-- latest publication_timestamp when the service sent none). One row per sign
-- that differs: only in the events, only in the snapshot, or with fields that
-- differ (listed in differing_fields, in the dataset's column order). An empty
-- table means they agree.
--
-- Scales with the feed, not with memory: both sides are compared on narrow
-- rows (id and a hash of the compared fields); only the signs that differ are
-- then read whole, to name their differing fields.

SET VARIABLE reconcile_fields = [
    'type', 'publication_timestamp', 'validated', 'validated_on', 'user_id', 'organisation_id',
    'rvv_code', 'text_signs', 'location_wgs84_latitude', 'location_wgs84_longitude',
    'location_rd_x', 'location_rd_y', 'location_placement', 'location_side',
    'location_road_name', 'location_road_type', 'location_road_number', 'location_road_wvk_id',
    'location_county_code', 'details_first_seen', 'details_last_seen', 'details_removed'
];

CREATE TEMP TABLE reconcile_moment AS
SELECT max(snapshot_moment) AS moment FROM signs_snapshot;

-- The latest event of each sign as of the moment, by its narrow keys.
CREATE TEMP TABLE reconcile_latest AS
SELECT id, publication_timestamp, feed_index
FROM signs_events
WHERE publication_timestamp <= (SELECT moment FROM reconcile_moment)
QUALIFY row_number() OVER (PARTITION BY id ORDER BY publication_timestamp DESC, feed_index DESC) = 1
    AND type <> 'deleted';

CREATE TEMP VIEW reconcile_event_rows AS
SELECT e.*
FROM signs_events AS e
SEMI JOIN reconcile_latest AS l
    ON e.id = l.id AND e.publication_timestamp = l.publication_timestamp AND e.feed_index = l.feed_index;

CREATE TEMP TABLE reconcile_differences AS
SELECT
    coalesce(e.id, s.id) AS id,
    CASE
        WHEN s.id IS NULL THEN 'only_in_events'
        WHEN e.id IS NULL THEN 'only_in_snapshot'
        ELSE 'fields_differ'
    END AS difference,
    e.publication_timestamp AS events_publication_timestamp,
    s.publication_timestamp AS snapshot_publication_timestamp
FROM (
    SELECT id, publication_timestamp,
           hash(*COLUMNS(c -> list_contains(getvariable('reconcile_fields'), c))) AS fingerprint
    FROM reconcile_event_rows
) AS e
FULL OUTER JOIN (
    SELECT id, publication_timestamp,
           hash(*COLUMNS(c -> list_contains(getvariable('reconcile_fields'), c))) AS fingerprint
    FROM signs_snapshot
) AS s ON e.id = s.id
WHERE e.id IS NULL OR s.id IS NULL OR e.fingerprint <> s.fingerprint;

-- Field by field, for the signs present on both sides that differ (few).
CREATE TEMP TABLE reconcile_fields_differ AS
WITH
    changed AS (SELECT id FROM reconcile_differences WHERE difference = 'fields_differ'),
    event_values AS (
        FROM (
            SELECT id, COLUMNS(c -> list_contains(getvariable('reconcile_fields'), c))::VARCHAR
            FROM reconcile_event_rows SEMI JOIN changed USING (id)
        ) UNPIVOT INCLUDE NULLS (value FOR field IN (COLUMNS(* EXCLUDE (id))))
    ),
    snapshot_values AS (
        FROM (
            SELECT id, COLUMNS(c -> list_contains(getvariable('reconcile_fields'), c))::VARCHAR
            FROM signs_snapshot SEMI JOIN changed USING (id)
        ) UNPIVOT INCLUDE NULLS (value FOR field IN (COLUMNS(* EXCLUDE (id))))
    )
SELECT e.id,
       list(e.field ORDER BY list_position(getvariable('reconcile_fields'), e.field)) AS differing_fields
FROM event_values AS e
JOIN snapshot_values AS s USING (id, field)
WHERE e.value IS DISTINCT FROM s.value
GROUP BY e.id;

CREATE OR REPLACE TABLE signs_reconcile AS
SELECT
    d.id,
    d.difference,
    coalesce(f.differing_fields, []::VARCHAR[]) AS differing_fields,
    d.events_publication_timestamp,
    d.snapshot_publication_timestamp
FROM reconcile_differences AS d
LEFT JOIN reconcile_fields_differ AS f USING (id)
WHERE d.difference <> 'fields_differ' OR f.id IS NOT NULL
ORDER BY d.id;
