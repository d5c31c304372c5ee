-- Over every bicycle count that has landed, from the monthly sums of
-- bicycle_monthly.sql (run it first):
--
-- bicycle_hour_profile: per location, weekday or weekend (local), local hour of
--   the day, category and subcategory: the mean count and the hours averaged.
-- bicycle_location_summary: every location of the catalog (and any measured
--   location the catalog no longer lists) with its first and last hour, the
--   hours with a measurement out of the hours of the period the counts span
--   (from the first hour of any location to the last), the completeness and the
--   totals per category and subcategory (JSON), and its days judged ok,
--   suspect and faulty (bicycle_quality). A location without a
--   measurement has hours_present and completeness 0, and no first or last
--   hour and no totals (NULL).

-- The monthly sums added up once; the profile and the totals are made from them.
CREATE TEMP TABLE profile_sums AS
SELECT
    location_id,
    day_type,
    local_hour_of_day,
    category,
    subcategory,
    sum(sum_value) AS total,
    sum(hours) AS hours
FROM bicycle_profile_months
GROUP BY ALL;

CREATE TABLE bicycle_hour_profile AS
SELECT
    location_id,
    day_type,
    local_hour_of_day,
    category,
    subcategory,
    round(total / nullif(hours, 0), 2) AS mean_value,
    CAST(hours AS INTEGER) AS hours_averaged
FROM profile_sums;

CREATE TABLE bicycle_location_summary AS
WITH per_location AS (
    SELECT
        location_id,
        min(first_hour) AS first_hour,
        max(last_hour) AS last_hour,
        CAST(sum(hours_present) AS INTEGER) AS hours_present,
        CAST(sum(days_ok) AS INTEGER) AS days_ok,
        CAST(sum(days_suspect) AS INTEGER) AS days_suspect,
        CAST(sum(days_faulty) AS INTEGER) AS days_faulty
    FROM bicycle_location_months
    GROUP BY location_id
),
period AS (
    SELECT CAST(epoch(max(last_hour) + INTERVAL 1 HOUR - min(first_hour)) / 3600 AS INTEGER) AS hours
    FROM per_location
),
totals AS (
    SELECT location_id, json_group_object(category, subtotals) AS totals
    FROM (
        SELECT location_id, category, json_group_object(subcategory, total) AS subtotals
        FROM (
            SELECT location_id, category, subcategory, sum(total) AS total
            FROM profile_sums
            GROUP BY ALL
            ORDER BY location_id, category, subcategory
        )
        GROUP BY ALL
        ORDER BY location_id, category
    )
    GROUP BY location_id
)
SELECT
    coalesce(l.location_id, p.location_id) AS location_id,
    l.name,
    l.authority,
    -- What the catalog's values had wrong (a name mis-encoded, ...): [] for none.
    coalesce(l.typing_issues, []) AS typing_issues,
    l.location_type,
    l.equipment_type,
    l.longitude,
    l.latitude,
    l.geometry,
    p.first_hour,
    p.last_hour,
    -- A location without a measurement was counted in none of the period's hours: 0, not unknown.
    coalesce(p.hours_present, 0) AS hours_present,
    period.hours AS hours_in_period,
    round(coalesce(p.hours_present, 0) / period.hours, 4) AS completeness,
    -- Its days judged in bicycle_quality (0 for a location never judged).
    coalesce(p.days_ok, 0) AS days_ok,
    coalesce(p.days_suspect, 0) AS days_suspect,
    coalesce(p.days_faulty, 0) AS days_faulty,
    t.totals
FROM bicycle_locations l
FULL JOIN per_location p ON p.location_id = l.location_id
CROSS JOIN period
LEFT JOIN totals t ON t.location_id = coalesce(l.location_id, p.location_id)
ORDER BY 1;
