-- The signs of today's API (signs_live) as the report shows them: one row per
-- sign with its position (WGS 84), RVV code, road, town, text and image.
-- v5 names the municipality only (county_name); v4 also the town.
CREATE OR REPLACE TEMP VIEW report_signs AS
SELECT
    CAST(sign_id AS VARCHAR) AS id,
    CAST(longitude AS DOUBLE) AS lon,
    CAST(latitude AS DOUBLE) AS lat,
    rvv_code AS code,
    road_name AS road,
    coalesce(town_name, county_name) AS town,
    array_to_string(list_transform(text_signs, t -> t.text), ' / ') AS text,
    image_url AS image
FROM signs_live
