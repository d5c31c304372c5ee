-- The signs of the current state built from the event feed
-- (signs_current_state) as the report shows them: one row per sign with its
-- position (WGS 84), RVV code, road, town, text and image.
CREATE OR REPLACE TEMP VIEW report_signs AS
SELECT
    CAST(id AS VARCHAR) AS id,
    CAST(location_wgs84_longitude AS DOUBLE) AS lon,
    CAST(location_wgs84_latitude AS DOUBLE) AS lat,
    rvv_code AS code,
    location_road_name AS road,
    location_county_townname AS town,
    array_to_string(text_signs, ' / ') AS text,
    details_image AS image
FROM signs_current_state
