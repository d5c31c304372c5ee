-- The fields of a traffic-sign record of the v1 API as the event feed and the
-- JSON current state send it (nested objects: location.wgs84.latitude, ...),
-- from sign_records (a JSON column raw, and whatever else the landing keeps),
-- for sql/sign_typing.sql: t, every field's text out of one parse, and
-- text_signs as JSON.
SELECT
    *,
    json_transform(raw, '{"id":"VARCHAR","type":"VARCHAR","schema_version":"VARCHAR","publication_timestamp":"VARCHAR","validated":"VARCHAR","validated_on":"VARCHAR","user_id":"VARCHAR","organisation_id":"VARCHAR","rvv_code":"VARCHAR","text_signs":"VARCHAR","location":{"wgs84":{"latitude":"VARCHAR","longitude":"VARCHAR"},"rd":{"x":"VARCHAR","y":"VARCHAR"},"placement":"VARCHAR","side":"VARCHAR","road":{"name":"VARCHAR","type":"VARCHAR","number":"VARCHAR","wvk_id":"VARCHAR"},"county":{"name":"VARCHAR","code":"VARCHAR","townname":"VARCHAR"}},"details":{"image":"VARCHAR","first_seen":"VARCHAR","last_seen":"VARCHAR","removed":"VARCHAR"}}') AS t,
    raw -> '$.text_signs' AS _j_text_signs
FROM sign_records
