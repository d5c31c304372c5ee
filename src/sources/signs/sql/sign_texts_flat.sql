-- The fields of a traffic-sign record of the v1 API's CSV current state (flat
-- keys: "location.wgs84.latitude", ...), from sign_records (a JSON column raw,
-- and whatever else the landing keeps), for sql/sign_typing.sql: t, every
-- field's text out of one parse, nested as the event feed nests them, and
-- text_signs as JSON.
SELECT
    * EXCLUDE (f),
    {
        'id': f.id,
        'type': f.type,
        'schema_version': f.schema_version,
        'publication_timestamp': f.publication_timestamp,
        'validated': f.validated,
        'validated_on': f.validated_on,
        'user_id': f.user_id,
        'organisation_id': f.organisation_id,
        'rvv_code': f.rvv_code,
        'text_signs': f.text_signs,
        'location': {
            'wgs84': {
                'latitude': f."location.wgs84.latitude",
                'longitude': f."location.wgs84.longitude"
            },
            'rd': {
                'x': f."location.rd.x",
                'y': f."location.rd.y"
            },
            'placement': f."location.placement",
            'side': f."location.side",
            'road': {
                'name': f."location.road.name",
                'type': f."location.road.type",
                'number': f."location.road.number",
                'wvk_id': f."location.road.wvk_id"
            },
            'county': {
                'name': f."location.county.name",
                'code': f."location.county.code",
                'townname': f."location.county.townname"
            }
        },
        'details': {
            'image': f."details.image",
            'first_seen': f."details.first_seen",
            'last_seen': f."details.last_seen",
            'removed': f."details.removed"
        }
    } AS t,
    TRY_CAST(f.text_signs AS JSON) AS _j_text_signs
FROM (
    SELECT *, json_transform(raw, '{"id":"VARCHAR","type":"VARCHAR","schema_version":"VARCHAR","publication_timestamp":"VARCHAR","validated":"VARCHAR","validated_on":"VARCHAR","user_id":"VARCHAR","organisation_id":"VARCHAR","rvv_code":"VARCHAR","text_signs":"VARCHAR","location.wgs84.latitude":"VARCHAR","location.wgs84.longitude":"VARCHAR","location.rd.x":"VARCHAR","location.rd.y":"VARCHAR","location.placement":"VARCHAR","location.side":"VARCHAR","location.road.name":"VARCHAR","location.road.type":"VARCHAR","location.road.number":"VARCHAR","location.road.wvk_id":"VARCHAR","location.county.name":"VARCHAR","location.county.code":"VARCHAR","location.county.townname":"VARCHAR","details.image":"VARCHAR","details.first_seen":"VARCHAR","details.last_seen":"VARCHAR","details.removed":"VARCHAR"}') AS f
    FROM sign_records
)
