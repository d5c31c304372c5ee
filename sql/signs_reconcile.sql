-- Compares the state built from the event feed with the downloaded current
-- state, as of the snapshot's moment (the download's Last-Modified, or its
-- latest publication_timestamp when the service sent none). One row per sign
-- that differs: only in the events, only in the snapshot, or with fields that
-- differ (listed in differing_fields). An empty table means they agree.

CREATE TEMP TABLE reconcile_moment AS
SELECT max(snapshot_moment) AS moment FROM signs_snapshot;

CREATE TEMP TABLE state_from_events AS
SELECT * EXCLUDE (latest)
FROM (
    SELECT *,
           row_number() OVER (PARTITION BY id ORDER BY publication_timestamp DESC, feed_index DESC) AS latest
    FROM signs_events
    WHERE publication_timestamp <= (SELECT moment FROM reconcile_moment)
)
WHERE latest = 1 AND type <> 'deleted';

CREATE OR REPLACE TABLE signs_reconcile AS
SELECT
    coalesce(e.id, s.id) AS id,
    CASE
        WHEN s.id IS NULL THEN 'only_in_events'
        WHEN e.id IS NULL THEN 'only_in_snapshot'
        ELSE 'fields_differ'
    END AS difference,
    CASE WHEN e.id IS NULL OR s.id IS NULL THEN []::VARCHAR[] ELSE list_filter([
        CASE WHEN e.type IS DISTINCT FROM s.type THEN 'type' END,
        CASE WHEN e.publication_timestamp IS DISTINCT FROM s.publication_timestamp THEN 'publication_timestamp' END,
        CASE WHEN e.validated IS DISTINCT FROM s.validated THEN 'validated' END,
        CASE WHEN e.validated_on IS DISTINCT FROM s.validated_on THEN 'validated_on' END,
        CASE WHEN e.user_id IS DISTINCT FROM s.user_id THEN 'user_id' END,
        CASE WHEN e.organisation_id IS DISTINCT FROM s.organisation_id THEN 'organisation_id' END,
        CASE WHEN e.rvv_code IS DISTINCT FROM s.rvv_code THEN 'rvv_code' END,
        CASE WHEN e.text_signs IS DISTINCT FROM s.text_signs THEN 'text_signs' END,
        CASE WHEN e.location_wgs84_latitude IS DISTINCT FROM s.location_wgs84_latitude THEN 'location_wgs84_latitude' END,
        CASE WHEN e.location_wgs84_longitude IS DISTINCT FROM s.location_wgs84_longitude THEN 'location_wgs84_longitude' END,
        CASE WHEN e.location_rd_x IS DISTINCT FROM s.location_rd_x THEN 'location_rd_x' END,
        CASE WHEN e.location_rd_y IS DISTINCT FROM s.location_rd_y THEN 'location_rd_y' END,
        CASE WHEN e.location_placement IS DISTINCT FROM s.location_placement THEN 'location_placement' END,
        CASE WHEN e.location_side IS DISTINCT FROM s.location_side THEN 'location_side' END,
        CASE WHEN e.location_road_name IS DISTINCT FROM s.location_road_name THEN 'location_road_name' END,
        CASE WHEN e.location_road_type IS DISTINCT FROM s.location_road_type THEN 'location_road_type' END,
        CASE WHEN e.location_road_number IS DISTINCT FROM s.location_road_number THEN 'location_road_number' END,
        CASE WHEN e.location_road_wvk_id IS DISTINCT FROM s.location_road_wvk_id THEN 'location_road_wvk_id' END,
        CASE WHEN e.location_county_code IS DISTINCT FROM s.location_county_code THEN 'location_county_code' END,
        CASE WHEN e.details_first_seen IS DISTINCT FROM s.details_first_seen THEN 'details_first_seen' END,
        CASE WHEN e.details_last_seen IS DISTINCT FROM s.details_last_seen THEN 'details_last_seen' END,
        CASE WHEN e.details_removed IS DISTINCT FROM s.details_removed THEN 'details_removed' END
    ], f -> f IS NOT NULL) END AS differing_fields,
    e.publication_timestamp AS events_publication_timestamp,
    s.publication_timestamp AS snapshot_publication_timestamp
FROM state_from_events AS e
FULL OUTER JOIN signs_snapshot AS s ON e.id = s.id
WHERE e.id IS NULL
   OR s.id IS NULL
   OR len(differing_fields) > 0
ORDER BY id;
