-- The rows of a measurements answer (bicycle_body: one JSON object a row in
-- `json`, its place in the answer in `_n`) typed into rows of
-- bicycle/measurements: the location, the hour (UTC), the counts as
-- (category, subcategory, value, issue) with the answer's object kept whole,
-- the fields the schema does not know in extra_fields, and typing_issues. A
-- value that cannot be a count of passages (not a number, not a whole number,
-- negative, or above $max_count in a location-hour) is set apart: its value
-- NULL, never rounded or clipped, its issue saying why, the row copied to the
-- quarantine with the reason (_implausible). _problem says why a row
-- cannot be kept, else NULL; _boundary marks a row of the hour that starts at
-- the period's end, which a service reading endTime as inclusive sends: it
-- belongs to the next window, which asks for it again.
--
-- Bound: $requested (the location ids asked for), $from and $to (the period),
-- $max_count (the most passages a location counts in an hour).
SELECT
    *,
    CASE
        WHEN location_id IS NULL THEN 'locationId is missing'
        WHEN measurement_hour IS NULL THEN 'measurementHour is not a timestamp: ' || coalesce(_hour_text, 'missing')
        WHEN NOT list_contains(CAST($requested AS VARCHAR[]), location_id) THEN 'locationId was not requested: ' || location_id
        WHEN _boundary THEN NULL
        WHEN measurement_hour < CAST($from AS TIMESTAMPTZ) OR measurement_hour > CAST($to AS TIMESTAMPTZ)
            THEN 'measurementHour is outside the requested period: ' || _hour_text
        WHEN date_trunc('hour', measurement_hour) <> measurement_hour THEN 'measurementHour is not a whole hour: ' || _hour_text
    END AS _problem,
    CASE WHEN list_bool_or(list_transform(measured_values, v -> v.issue IS NOT NULL)) THEN
        'implausible count: ' || array_to_string(list_transform(
            list_filter(measured_values, v -> v.issue IS NOT NULL),
            v -> v.category || '/' || v.subcategory || ' (' || v.issue || ')'), ', ')
    END AS _implausible
FROM (
    SELECT
        location_id,
        measurement_hour,
        list_transform(_flat, e -> {category: e.category, subcategory: e.subcategory,
            value: CASE WHEN e.issue IS NULL THEN e.value END, issue: e.issue}) AS measured_values,
        measured_values_full,
        CASE WHEN NOT list_has_all(['locationId', 'measurementHour', 'measuredValuesFull'], _keys)
            THEN nullif(json_merge_patch(raw, '{"locationId":null,"measurementHour":null,"measuredValuesFull":null}'), '{}')
        END AS extra_fields,
        list_concat(
            CASE WHEN measured_values_full IS NOT NULL AND json_type(measured_values_full) <> 'NULL' AND _map IS NULL
                THEN ['measuredValuesFull is not an object of categories'] END,
            CASE WHEN list_bool_or(list_transform(map_values(_map), x -> x IS NULL))
                THEN list_transform(
                    list_filter(map_keys(_map), k -> json_type(measured_values_full -> ('$.' || to_json(k)::VARCHAR)) NOT IN ('OBJECT', 'NULL')),
                    k -> 'measuredValuesFull.' || k || ' is not an object of subcategories') END,
            list_transform(list_filter(_flat, e -> e.issue IS NOT NULL),
                e -> e.category || '/' || e.subcategory || ' is not a count (' || e.issue || ')')
        ) AS typing_issues,
        raw,
        _n,
        _hour_text,
        coalesce(date_trunc('hour', measurement_hour) = CAST($to AS TIMESTAMPTZ), false) AS _boundary
    FROM (
        -- Each leaf once: its text, its count, and why the text cannot be one.
        SELECT
            *,
            flatten(list_transform(map_entries(_map), c -> list_transform(map_entries(c.value), s -> {
                category: c.key,
                subcategory: s.key,
                text: s.value,
                value: TRY_CAST(TRY_CAST(s.value AS DOUBLE) AS BIGINT),
                issue: CASE
                    WHEN s.value IS NULL THEN NULL
                    WHEN TRY_CAST(s.value AS DOUBLE) IS NULL OR NOT isfinite(TRY_CAST(s.value AS DOUBLE)) THEN 'not a number: ' || s.value
                    WHEN TRY_CAST(s.value AS DOUBLE) <> trunc(TRY_CAST(s.value AS DOUBLE)) THEN 'not a whole number: ' || s.value
                    WHEN TRY_CAST(s.value AS DOUBLE) < 0 THEN 'negative: ' || s.value
                    WHEN TRY_CAST(s.value AS DOUBLE) > CAST($max_count AS DOUBLE)
                        THEN 'above max_count ' || CAST($max_count AS BIGINT) || ': ' || s.value
                END
            }))) AS _flat
        FROM (
            SELECT
                *,
                nullif(trim(_v[1]), '') AS location_id,
                _v[2] AS _hour_text,
                TRY_CAST(trim(_v[2]) AS TIMESTAMPTZ) AS measurement_hour,
                TRY_CAST(measured_values_full AS MAP(VARCHAR, MAP(VARCHAR, VARCHAR))) AS _map
            FROM (
                SELECT
                    json AS raw,
                    _n,
                    json_extract_string(json, ['$.locationId', '$.measurementHour']) AS _v,
                    json_extract(json, '$.measuredValuesFull') AS measured_values_full,
                    json_keys(json) AS _keys
                FROM bicycle_body
            )
        )
    )
)
