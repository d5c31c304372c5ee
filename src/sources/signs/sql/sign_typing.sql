-- A traffic-sign record of the v1 API typed (the DESIGN's flat schema: nested
-- fields joined with "_"), from sign_texts (the texts t of
-- sql/sign_texts_nested.sql or sign_texts_flat.sql, with what the landing
-- keeps: feed_index, event_hash).
-- Lenient: numbers from strings (a decimal comma too), dates as dd/MM/yyyy or
-- ISO, "" as NULL, text_signs as a list. A value that cannot be typed is NULL
-- and named in typing_issues (the text kept), as is a name (road,
-- municipality, town: where the feed's diacritics are) that reads as UTF-8
-- decoded as Latin-1; _problem says why a record cannot be a row (its id, type
-- or publication_timestamp), else NULL. raw_event keeps the record as received.
-- A name is mis-encoded when it reads as UTF-8 read as Latin-1 or Windows-1252
-- and encoded again ("CuraÃ§aostraat" for "Curaçaostraat"): an accented letter
-- becomes Ã or Â and the character its second byte (0x80..0xBF) is in Latin-1
-- or in Windows-1252 (‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ: "Ã‰glise"); a typographic
-- quote or dash starts with "â€".
-- The columns are those of typedColumns in schema.ts, in its order.
SELECT
    id,
    type,
    schema_version,
    publication_timestamp,
    validated,
    validated_on,
    user_id,
    organisation_id,
    rvv_code,
    text_signs,
    location_wgs84_latitude,
    location_wgs84_longitude,
    location_rd_x,
    location_rd_y,
    location_placement,
    location_side,
    location_road_name,
    location_road_type,
    location_road_number,
    location_road_wvk_id,
    location_county_name,
    location_county_code,
    location_county_townname,
    details_image,
    details_first_seen,
    details_last_seen,
    details_removed,
    COLUMNS(c -> c IN ('feed_index', 'event_hash')),
    list_filter([
        CASE WHEN id IS NULL AND _t_id IS NOT NULL AND trim(_t_id) <> '' THEN 'id: not a bigint' || ' (' || _t_id || ')' END,
        CASE WHEN publication_timestamp IS NULL AND _t_publication_timestamp IS NOT NULL AND trim(_t_publication_timestamp) <> '' THEN 'publication_timestamp: not a timestamp' || ' (' || _t_publication_timestamp || ')' END,
        CASE WHEN validated_on IS NULL AND _t_validated_on IS NOT NULL AND trim(_t_validated_on) <> '' THEN 'validated_on: not a date' || ' (' || _t_validated_on || ')' END,
        CASE WHEN user_id IS NULL AND _t_user_id IS NOT NULL AND trim(_t_user_id) <> '' THEN 'user_id: not a bigint' || ' (' || _t_user_id || ')' END,
        CASE WHEN organisation_id IS NULL AND _t_organisation_id IS NOT NULL AND trim(_t_organisation_id) <> '' THEN 'organisation_id: not a bigint' || ' (' || _t_organisation_id || ')' END,
        CASE WHEN text_signs IS NULL AND _t_text_signs IS NOT NULL AND trim(_t_text_signs) <> '' THEN 'text_signs: not a list' || ' (' || _t_text_signs || ')' END,
        CASE WHEN location_wgs84_latitude IS NULL AND _t_location_wgs84_latitude IS NOT NULL AND trim(_t_location_wgs84_latitude) <> '' THEN 'location_wgs84_latitude: not a double' || ' (' || _t_location_wgs84_latitude || ')' END,
        CASE WHEN location_wgs84_longitude IS NULL AND _t_location_wgs84_longitude IS NOT NULL AND trim(_t_location_wgs84_longitude) <> '' THEN 'location_wgs84_longitude: not a double' || ' (' || _t_location_wgs84_longitude || ')' END,
        CASE WHEN location_rd_x IS NULL AND _t_location_rd_x IS NOT NULL AND trim(_t_location_rd_x) <> '' THEN 'location_rd_x: not a double' || ' (' || _t_location_rd_x || ')' END,
        CASE WHEN location_rd_y IS NULL AND _t_location_rd_y IS NOT NULL AND trim(_t_location_rd_y) <> '' THEN 'location_rd_y: not a double' || ' (' || _t_location_rd_y || ')' END,
        CASE WHEN regexp_matches(_t_location_road_name, '[ÃÂ][\x{80}-\x{BF}‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ]|â€') THEN 'location_road_name: mis-encoded UTF-8 (' || _t_location_road_name || ')' END,
        CASE WHEN location_road_number IS NULL AND _t_location_road_number IS NOT NULL AND trim(_t_location_road_number) <> '' THEN 'location_road_number: not a bigint' || ' (' || _t_location_road_number || ')' END,
        CASE WHEN location_road_wvk_id IS NULL AND _t_location_road_wvk_id IS NOT NULL AND trim(_t_location_road_wvk_id) <> '' THEN 'location_road_wvk_id: not a bigint' || ' (' || _t_location_road_wvk_id || ')' END,
        CASE WHEN regexp_matches(_t_location_county_name, '[ÃÂ][\x{80}-\x{BF}‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ]|â€') THEN 'location_county_name: mis-encoded UTF-8 (' || _t_location_county_name || ')' END,
        CASE WHEN regexp_matches(_t_location_county_townname, '[ÃÂ][\x{80}-\x{BF}‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ]|â€') THEN 'location_county_townname: mis-encoded UTF-8 (' || _t_location_county_townname || ')' END,
        CASE WHEN details_first_seen IS NULL AND _t_details_first_seen IS NOT NULL AND trim(_t_details_first_seen) <> '' THEN 'details_first_seen: not a date' || ' (' || _t_details_first_seen || ')' END,
        CASE WHEN details_last_seen IS NULL AND _t_details_last_seen IS NOT NULL AND trim(_t_details_last_seen) <> '' THEN 'details_last_seen: not a date' || ' (' || _t_details_last_seen || ')' END,
        CASE WHEN details_removed IS NULL AND _t_details_removed IS NOT NULL AND trim(_t_details_removed) <> '' THEN 'details_removed: not a date' || ' (' || _t_details_removed || ')' END
    ], x -> x IS NOT NULL) AS typing_issues,
    raw AS raw_event,
    CASE WHEN isfinite(location_wgs84_longitude) AND isfinite(location_wgs84_latitude)
        THEN CAST('POINT (' || CAST(location_wgs84_longitude AS VARCHAR) || ' ' || CAST(location_wgs84_latitude AS VARCHAR) || ')' AS GEOMETRY)
    END AS geometry,
    CASE
        WHEN TRY_CAST(trim(_t_id) AS BIGINT) IS NULL THEN 'id is not an integer: ' || coalesce(_t_id, 'missing')
        WHEN TRY_CAST(trim(_t_publication_timestamp) AS TIMESTAMPTZ) IS NULL THEN 'publication_timestamp is not a timestamp: ' || coalesce(_t_publication_timestamp, 'missing')
        WHEN _t_type IS NULL OR _t_type NOT IN ('created', 'updated', 'deleted') THEN 'type is not created, updated or deleted: ' || coalesce(_t_type, 'missing')
    END AS _problem
FROM (
    SELECT
        *,
        TRY_CAST(trim(_t_id) AS BIGINT) AS id,
        CASE WHEN (_t_type IS NULL OR trim(_t_type) = '') THEN NULL ELSE _t_type END AS type,
        CASE WHEN (_t_schema_version IS NULL OR trim(_t_schema_version) = '') THEN NULL ELSE _t_schema_version END AS schema_version,
        TRY_CAST(trim(_t_publication_timestamp) AS TIMESTAMPTZ) AS publication_timestamp,
        CASE WHEN (_t_validated IS NULL OR trim(_t_validated) = '') THEN NULL ELSE _t_validated END AS validated,
        CASE WHEN (_t_validated_on IS NULL OR trim(_t_validated_on) = '') THEN NULL
        WHEN contains(_t_validated_on, '/') THEN TRY_STRPTIME(trim(_t_validated_on), '%d/%m/%Y')::DATE
        ELSE TRY_CAST(left(trim(_t_validated_on), 10) AS DATE) END AS validated_on,
        TRY_CAST(trim(_t_user_id) AS BIGINT) AS user_id,
        TRY_CAST(trim(_t_organisation_id) AS BIGINT) AS organisation_id,
        CASE WHEN (_t_rvv_code IS NULL OR trim(_t_rvv_code) = '') THEN NULL ELSE _t_rvv_code END AS rvv_code,
        CASE json_type(_j_text_signs)
        WHEN 'ARRAY' THEN json_extract_string(_j_text_signs, '$[*]')
        WHEN 'VARCHAR' THEN CASE WHEN trim(_j_text_signs ->> '$') = '' THEN NULL ELSE [_j_text_signs ->> '$'] END
        ELSE NULL END AS text_signs,
        TRY_CAST(replace(trim(_t_location_wgs84_latitude), ',', '.') AS DOUBLE) AS location_wgs84_latitude,
        TRY_CAST(replace(trim(_t_location_wgs84_longitude), ',', '.') AS DOUBLE) AS location_wgs84_longitude,
        TRY_CAST(replace(trim(_t_location_rd_x), ',', '.') AS DOUBLE) AS location_rd_x,
        TRY_CAST(replace(trim(_t_location_rd_y), ',', '.') AS DOUBLE) AS location_rd_y,
        CASE WHEN (_t_location_placement IS NULL OR trim(_t_location_placement) = '') THEN NULL ELSE _t_location_placement END AS location_placement,
        CASE WHEN (_t_location_side IS NULL OR trim(_t_location_side) = '') THEN NULL ELSE _t_location_side END AS location_side,
        CASE WHEN (_t_location_road_name IS NULL OR trim(_t_location_road_name) = '') THEN NULL ELSE _t_location_road_name END AS location_road_name,
        CASE WHEN (_t_location_road_type IS NULL OR trim(_t_location_road_type) = '') THEN NULL ELSE _t_location_road_type END AS location_road_type,
        TRY_CAST(trim(_t_location_road_number) AS BIGINT) AS location_road_number,
        TRY_CAST(trim(_t_location_road_wvk_id) AS BIGINT) AS location_road_wvk_id,
        CASE WHEN (_t_location_county_name IS NULL OR trim(_t_location_county_name) = '') THEN NULL ELSE _t_location_county_name END AS location_county_name,
        CASE WHEN (_t_location_county_code IS NULL OR trim(_t_location_county_code) = '') THEN NULL ELSE _t_location_county_code END AS location_county_code,
        CASE WHEN (_t_location_county_townname IS NULL OR trim(_t_location_county_townname) = '') THEN NULL ELSE _t_location_county_townname END AS location_county_townname,
        CASE WHEN (_t_details_image IS NULL OR trim(_t_details_image) = '') THEN NULL ELSE _t_details_image END AS details_image,
        CASE WHEN (_t_details_first_seen IS NULL OR trim(_t_details_first_seen) = '') THEN NULL
        WHEN contains(_t_details_first_seen, '/') THEN TRY_STRPTIME(trim(_t_details_first_seen), '%d/%m/%Y')::DATE
        ELSE TRY_CAST(left(trim(_t_details_first_seen), 10) AS DATE) END AS details_first_seen,
        CASE WHEN (_t_details_last_seen IS NULL OR trim(_t_details_last_seen) = '') THEN NULL
        WHEN contains(_t_details_last_seen, '/') THEN TRY_STRPTIME(trim(_t_details_last_seen), '%d/%m/%Y')::DATE
        ELSE TRY_CAST(left(trim(_t_details_last_seen), 10) AS DATE) END AS details_last_seen,
        CASE WHEN (_t_details_removed IS NULL OR trim(_t_details_removed) = '') THEN NULL
        WHEN contains(_t_details_removed, '/') THEN TRY_STRPTIME(trim(_t_details_removed), '%d/%m/%Y')::DATE
        ELSE TRY_CAST(left(trim(_t_details_removed), 10) AS DATE) END AS details_removed
    FROM (
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
            t.details.removed AS _t_details_removed
        FROM sign_texts
    )
)
