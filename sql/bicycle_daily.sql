-- Daily and per-location views of bicycle_hourly (run bicycle_hourly.sql first).
--
-- bicycle_daily: per location, Dutch local date (Europe/Amsterdam), category and
--   subcategory: the total, the hours with a value, the hours that local day has
--   (23 when summer time starts, 25 when it ends, else 24) and the completeness
--   (hours_present / hours_in_day).
-- bicycle_hour_profile: per location, weekday or weekend (local), local hour of
--   the day, category and subcategory: the mean count and the days averaged.
-- bicycle_location_summary: every location of the catalog (and any measured
--   location the catalog no longer lists) with, over the period, its first and
--   last hour, the hours with a measurement out of the hours of the period and
--   the totals per category and subcategory (JSON); NULL where the location has
--   no measurement in the period.
--
-- $start, $end: the period [start, end) in UTC, or '' for the span of the data.

CREATE TABLE bicycle_daily AS
SELECT
    location_id,
    local_date,
    category,
    subcategory,
    total,
    hours_present,
    hours_in_day,
    round(hours_present / hours_in_day, 4) AS completeness
FROM (
    SELECT
        location_id,
        local_date,
        category,
        subcategory,
        sum(value) AS total,
        CAST(count(value) AS INTEGER) AS hours_present,
        CAST((epoch(timezone('Europe/Amsterdam', CAST(local_date + 1 AS TIMESTAMP)))
            - epoch(timezone('Europe/Amsterdam', CAST(local_date AS TIMESTAMP)))) / 3600 AS INTEGER) AS hours_in_day
    FROM bicycle_hourly
    GROUP BY location_id, local_date, category, subcategory
)
ORDER BY location_id, local_date, category, subcategory;

CREATE TABLE bicycle_hour_profile AS
SELECT
    location_id,
    CASE WHEN isodow(local_date) >= 6 THEN 'weekend' ELSE 'weekday' END AS day_type,
    local_hour_of_day,
    category,
    subcategory,
    round(avg(value), 2) AS mean_value,
    CAST(count(value) AS INTEGER) AS hours_averaged
FROM bicycle_hourly
GROUP BY ALL
ORDER BY location_id, day_type, local_hour_of_day, category, subcategory;

CREATE TABLE bicycle_location_summary AS
WITH period AS (
    SELECT
        coalesce(CAST(replace(nullif($start, ''), 'Z', '') AS TIMESTAMP), min(measurement_hour)) AS period_start,
        coalesce(CAST(replace(nullif($end, ''), 'Z', '') AS TIMESTAMP), max(measurement_hour) + INTERVAL 1 HOUR) AS period_end
    FROM bicycle_hourly
),
per_location AS (
    SELECT
        location_id,
        min(measurement_hour) AS first_hour,
        max(measurement_hour) AS last_hour,
        CAST(count(DISTINCT measurement_hour) AS INTEGER) AS hours_present
    FROM bicycle_hourly
    GROUP BY location_id
),
totals AS (
    SELECT location_id, json_group_object(category, subtotals) AS totals
    FROM (
        SELECT location_id, category, json_group_object(subcategory, total) AS subtotals
        FROM (
            SELECT location_id, category, subcategory, sum(value) AS total
            FROM bicycle_hourly
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
    l.location_type,
    l.equipment_type,
    l.longitude,
    l.latitude,
    p.first_hour,
    p.last_hour,
    p.hours_present,
    CAST(epoch(period.period_end - period.period_start) / 3600 AS INTEGER) AS hours_in_period,
    CASE WHEN p.location_id IS NOT NULL
        THEN round(p.hours_present / (epoch(period.period_end - period.period_start) / 3600), 4) END AS completeness,
    t.totals
FROM bicycle_locations l
FULL JOIN per_location p ON p.location_id = l.location_id
CROSS JOIN period
LEFT JOIN totals t ON t.location_id = coalesce(l.location_id, p.location_id)
ORDER BY 1;
