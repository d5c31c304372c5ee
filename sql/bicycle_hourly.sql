-- Hourly bicycle counts as a tidy table: one row per location, hour, category
-- and subcategory, whatever names the service sends. Hours are kept in UTC
-- (measurement_hour) and given in Dutch local time as well (Europe/Amsterdam):
-- local_date, and local_hour, the wall-clock start of the hour (it repeats for
-- one hour when summer time ends; measurement_hour tells the two apart).
--
-- $start, $end: the period [start, end) in UTC (YYYY-MM-DDTHH:mm:ssZ), or ''
-- for all the measurements there are.

CREATE TABLE bicycle_hourly AS
WITH hours AS (
    SELECT
        location_id,
        measurement_hour,
        timezone('Europe/Amsterdam', timezone('UTC', measurement_hour)) AS local_hour,
        measured_values
    FROM bicycle_measurements
    WHERE (nullif($start, '') IS NULL OR measurement_hour >= CAST(replace($start, 'Z', '') AS TIMESTAMP))
      AND (nullif($end, '') IS NULL OR measurement_hour < CAST(replace($end, 'Z', '') AS TIMESTAMP))
)
SELECT
    location_id,
    measurement_hour,
    local_hour,
    CAST(local_hour AS DATE) AS local_date,
    CAST(hour(local_hour) AS INTEGER) AS local_hour_of_day,
    v.category AS category,
    v.subcategory AS subcategory,
    v.value AS value
FROM (SELECT *, unnest(measured_values) AS v FROM hours)
ORDER BY location_id, measurement_hour, category, subcategory;
