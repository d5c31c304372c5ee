-- Today's traffic-sign API (v4, v5): each feature of live_members (live-members.ts:
-- one row per feature with its id as text, `p`, every property of NDW's schemas
-- as served, the scalars as text and the nested values typed, `properties`,
-- the properties kept whole where they are, the position, and raw, the
-- feature as received, where it is at hand) typed into a row of
-- signs/live_snapshots. The sign's UUID, its position (WGS 84), every property
-- of NDW's schemas in snake_case and typed (dates as DATE, numbers as numbers,
-- text signs, supplementary signs and conditions as nested values: a text that
-- does not type is NULL and named in typing_issues with the text as served,
-- as is a name that reads as UTF-8 decoded as Latin-1), and `properties` as
-- live_members has it. _problem says why a feature cannot be a row (no UUID,
-- no position, no RVV code: it goes to the quarantine with raw_feature, the
-- feature as received), else NULL.
--
-- A name is mis-encoded when it reads as UTF-8 read as Latin-1 or Windows-1252
-- and encoded again ("CuraÃ§aostraat" for "Curaçaostraat"): an accented letter
-- becomes Ã or Â and the character its second byte (0x80..0xBF) is in Latin-1
-- or in Windows-1252 (‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ: "Ã‰glise"); a typographic
-- quote or dash starts with "â€".
--
-- Bound: $api ('v4' or 'v5'), $downloaded_at (the snapshot's moment).
-- The columns are those of LIVE_COLUMNS in live.ts, in its order.
SELECT
    -- As text (canonical lowercase), as readers other than DuckDB read ids: a UUID is bytes to them.
    CAST(TRY_CAST(id AS UUID) AS VARCHAR) AS sign_id,
    longitude,
    latitude,
    nullif(p.rvvCode, '') AS rvv_code,
    nullif(p.countyCode, '') AS county_code,
    nullif(p.countyName, '') AS county_name,
    nullif(p.status, '') AS status,
    nullif(p.externalId, '') AS external_id,
    nullif(p.validated, '') AS validated,
    TRY_CAST(nullif(trim(p.validatedOn), '') AS DATE) AS validated_on,
    nullif(p.blackCode, '') AS black_code,
    nullif(p.zoneCode, '') AS zone_code,
    nullif(p.placement, '') AS placement,
    nullif(p.side, '') AS side,
    TRY_CAST(nullif(trim(p.bearing), '') AS INTEGER) AS bearing,
    nullif(p.nenTurningDirection, '') AS nen_turning_direction,
    TRY_CAST(nullif(trim(p.fraction), '') AS DOUBLE) AS fraction,
    nullif(p.drivingDirection, '') AS driving_direction,
    nullif(p.roadName, '') AS road_name,
    nullif(p.roadType, '') AS road_type,
    nullif(p.roadNumber, '') AS road_number,
    TRY_CAST(nullif(trim(p.roadSectionId), '') AS BIGINT) AS road_section_id,
    TRY_CAST(nullif(trim(p.nwbVersion), '') AS DATE) AS nwb_version,
    nullif(p.townName, '') AS town_name,
    nullif(p.bgtCode, '') AS bgt_code,
    nullif(p.imageUrl, '') AS image_url,
    TRY_CAST(nullif(trim(p.firstSeenOn), '') AS DATE) AS first_seen_on,
    TRY_CAST(nullif(trim(p.lastSeenOn), '') AS DATE) AS last_seen_on,
    TRY_CAST(nullif(trim(p.removedOn), '') AS DATE) AS removed_on,
    TRY_CAST(nullif(trim(p.placedOn), '') AS DATE) AS placed_on,
    TRY_CAST(nullif(trim(p.expectedPlacedOn), '') AS DATE) AS expected_placed_on,
    TRY_CAST(nullif(trim(p.expectedRemovedOn), '') AS DATE) AS expected_removed_on,
    nullif(p.trafficOrderUrl, '') AS traffic_order_url,
    TRY_CAST(nullif(trim(p.privateProperty), '') AS BOOLEAN) AS private_property,
    TRY_CAST(nullif(trim(p.missingRoadSection), '') AS BOOLEAN) AS missing_road_section,
    TRY_CAST(nullif(trim(p.registeredOn), '') AS DATE) AS registered_on,
    TRY_CAST(nullif(trim(p.lastModifiedOn), '') AS DATE) AS last_modified_on,
    nullif(p.trafficOrderId, '') AS traffic_order_id,
    nullif(p.ownerType, '') AS owner_type,
    nullif(p.ownerCode, '') AS owner_code,
    CASE WHEN p.textSigns IS NULL THEN NULL ELSE list_transform(p.textSigns,
        s -> {'type': s."type", 'text': s.text, 'opening_hours': s.openingHours}) END AS text_signs,
    CASE WHEN p.supplementarySigns IS NULL THEN NULL ELSE list_transform(p.supplementarySigns,
        s -> {'sign_code': s.signCode, 'text': s.text, 'opening_hours': s.openingHours, 'external_references': s.externalReferences, 'index': s."index"}) END AS supplementary_signs,
    CASE WHEN p.externalReferences IS NULL THEN NULL ELSE p.externalReferences END AS external_references,
    -- The struct made at once (a list of one made and taken apart again costs more).
    CASE WHEN p.conditions IS NULL THEN NULL ELSE {
        'restrictions': CASE WHEN p.conditions.restrictions IS NOT NULL THEN {'vehicle_type': p.conditions.restrictions.vehicleType, 'category': p.conditions.restrictions.category, 'time_validity': p.conditions.restrictions.timeValidity, 'emission_class': p.conditions.restrictions.emissionClass, 'fuel_type': p.conditions.restrictions.fuelType, 'axle_weight': p.conditions.restrictions.axleWeight, 'height': p.conditions.restrictions.height, 'length': p.conditions.restrictions.length, 'weight': p.conditions.restrictions.weight, 'width': p.conditions.restrictions.width} END,
        'exemptions': list_transform(p.conditions.exemptions, e -> {'vehicle_type': e.vehicleType, 'category': e.category, 'time_validity': e.timeValidity, 'emission_class': e.emissionClass, 'fuel_type': e.fuelType, 'axle_weight': e.axleWeight, 'height': e.height, 'length': e.length, 'weight': e.weight, 'width': e.width})} END AS conditions,
    CASE WHEN p.comments IS NULL THEN NULL ELSE p.comments END AS comments,
    properties,
    list_filter([
        CASE WHEN regexp_matches(p.countyName, '[ÃÂ][\x{80}-\x{BF}‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ]|â€') THEN 'county_name: mis-encoded UTF-8 (' || p.countyName || ')' END,
        CASE WHEN validated_on IS NULL AND nullif(trim(p.validatedOn), '') IS NOT NULL THEN 'validated_on: not typed (' || p.validatedOn || ')' END,
        CASE WHEN bearing IS NULL AND nullif(trim(p.bearing), '') IS NOT NULL THEN 'bearing: not typed (' || p.bearing || ')' END,
        CASE WHEN fraction IS NULL AND nullif(trim(p.fraction), '') IS NOT NULL THEN 'fraction: not typed (' || p.fraction || ')' END,
        CASE WHEN regexp_matches(p.roadName, '[ÃÂ][\x{80}-\x{BF}‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ]|â€') THEN 'road_name: mis-encoded UTF-8 (' || p.roadName || ')' END,
        CASE WHEN road_section_id IS NULL AND nullif(trim(p.roadSectionId), '') IS NOT NULL THEN 'road_section_id: not typed (' || p.roadSectionId || ')' END,
        CASE WHEN nwb_version IS NULL AND nullif(trim(p.nwbVersion), '') IS NOT NULL THEN 'nwb_version: not typed (' || p.nwbVersion || ')' END,
        CASE WHEN regexp_matches(p.townName, '[ÃÂ][\x{80}-\x{BF}‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ]|â€') THEN 'town_name: mis-encoded UTF-8 (' || p.townName || ')' END,
        CASE WHEN first_seen_on IS NULL AND nullif(trim(p.firstSeenOn), '') IS NOT NULL THEN 'first_seen_on: not typed (' || p.firstSeenOn || ')' END,
        CASE WHEN last_seen_on IS NULL AND nullif(trim(p.lastSeenOn), '') IS NOT NULL THEN 'last_seen_on: not typed (' || p.lastSeenOn || ')' END,
        CASE WHEN removed_on IS NULL AND nullif(trim(p.removedOn), '') IS NOT NULL THEN 'removed_on: not typed (' || p.removedOn || ')' END,
        CASE WHEN placed_on IS NULL AND nullif(trim(p.placedOn), '') IS NOT NULL THEN 'placed_on: not typed (' || p.placedOn || ')' END,
        CASE WHEN expected_placed_on IS NULL AND nullif(trim(p.expectedPlacedOn), '') IS NOT NULL THEN 'expected_placed_on: not typed (' || p.expectedPlacedOn || ')' END,
        CASE WHEN expected_removed_on IS NULL AND nullif(trim(p.expectedRemovedOn), '') IS NOT NULL THEN 'expected_removed_on: not typed (' || p.expectedRemovedOn || ')' END,
        CASE WHEN private_property IS NULL AND nullif(trim(p.privateProperty), '') IS NOT NULL THEN 'private_property: not typed (' || p.privateProperty || ')' END,
        CASE WHEN missing_road_section IS NULL AND nullif(trim(p.missingRoadSection), '') IS NOT NULL THEN 'missing_road_section: not typed (' || p.missingRoadSection || ')' END,
        CASE WHEN registered_on IS NULL AND nullif(trim(p.registeredOn), '') IS NOT NULL THEN 'registered_on: not typed (' || p.registeredOn || ')' END,
        CASE WHEN last_modified_on IS NULL AND nullif(trim(p.lastModifiedOn), '') IS NOT NULL THEN 'last_modified_on: not typed (' || p.lastModifiedOn || ')' END
    ], x -> x IS NOT NULL) AS typing_issues,
    CAST($api AS VARCHAR) AS api,
    CAST($downloaded_at AS TIMESTAMPTZ) AS downloaded_at,
    CASE WHEN isfinite(longitude) AND isfinite(latitude)
        THEN CAST('POINT (' || CAST(longitude AS VARCHAR) || ' ' || CAST(latitude AS VARCHAR) || ')' AS GEOMETRY)
    END AS geometry,
    CASE
        WHEN sign_id IS NULL THEN 'id is not a UUID: ' || coalesce(id, 'missing')
        WHEN longitude IS NULL OR latitude IS NULL THEN 'geometry is not a point with two coordinates'
        WHEN nullif(p.rvvCode, '') IS NULL THEN 'rvvCode is missing'
    END AS _problem,
    -- The feature as received, kept only where it goes to the quarantine.
    CASE WHEN _problem IS NOT NULL THEN raw END AS raw_feature
FROM live_members
