-- The text of every field of a traffic-sign record of the v1 API as the event
-- feed and the JSON current state send it (nested objects: location.wgs84.
-- latitude, ...), from sign_records (a JSON column raw, and whatever else the
-- landing keeps), for sql/sign_typing.sql: _t_<column> per field, out of one
-- parse, and text_signs as JSON.
SELECT
    * EXCLUDE (t),
    t.id AS _t_id,
    t.type AS _t_type,
    t.schema_version AS _t_schema_version,
    t.publication_timestamp AS _t_publication_timestamp,
    t.validated AS _t_validated,
    t.validated_on AS _t_validated_on,
    t.user_id AS _t_user_id,
    t.organisation_id AS _t_organisation_id,
    t.rvv_code AS _t_rvv_code,
    t.text_signs AS _t_text_signs,
    t.location.wgs84.latitude AS _t_location_wgs84_latitude,
    t.location.wgs84.longitude AS _t_location_wgs84_longitude,
    t.location.rd.x AS _t_location_rd_x,
    t.location.rd.y AS _t_location_rd_y,
    t.location.placement AS _t_location_placement,
    t.location.side AS _t_location_side,
    t.location.road.name AS _t_location_road_name,
    t.location.road.type AS _t_location_road_type,
    t.location.road.number AS _t_location_road_number,
    t.location.road.wvk_id AS _t_location_road_wvk_id,
    t.location.county.name AS _t_location_county_name,
    t.location.county.code AS _t_location_county_code,
    t.location.county.townname AS _t_location_county_townname,
    t.details.image AS _t_details_image,
    t.details.first_seen AS _t_details_first_seen,
    t.details.last_seen AS _t_details_last_seen,
    t.details.removed AS _t_details_removed,
    raw -> '$.text_signs' AS _j_text_signs
FROM (
    SELECT *, json_transform(raw, '{"id":"VARCHAR","type":"VARCHAR","schema_version":"VARCHAR","publication_timestamp":"VARCHAR","validated":"VARCHAR","validated_on":"VARCHAR","user_id":"VARCHAR","organisation_id":"VARCHAR","rvv_code":"VARCHAR","text_signs":"VARCHAR","location":{"wgs84":{"latitude":"VARCHAR","longitude":"VARCHAR"},"rd":{"x":"VARCHAR","y":"VARCHAR"},"placement":"VARCHAR","side":"VARCHAR","road":{"name":"VARCHAR","type":"VARCHAR","number":"VARCHAR","wvk_id":"VARCHAR"},"county":{"name":"VARCHAR","code":"VARCHAR","townname":"VARCHAR"}},"details":{"image":"VARCHAR","first_seen":"VARCHAR","last_seen":"VARCHAR","removed":"VARCHAR"}}') AS t
    FROM sign_records
)
