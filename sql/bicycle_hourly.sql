-- Hourly bicycle counts as a tidy table: one row per location, hour, category
-- and subcategory, whatever names the service sends. value_issue says why a
-- value the service sent is NULL (not a number, not a whole number, negative,
-- above the step's max_count): it cannot be a count of passages. measurement_hour is the
-- UTC instant the hour starts; the Dutch local time (Europe/Amsterdam) is given
-- as local_date, local_hour_of_day and local_hour, the wall-clock start of the
-- hour with its UTC offset (2026-10-25T02:00:00+02:00, and an hour later
-- 2026-10-25T02:00:00+01:00, when summer time ends), so that it cannot be
-- taken for UTC.
--
-- Kept by local date (partition local_date). getvariable('partitions') lists
-- the local dates to build, whole; unset, all of them. A local date spans two
-- UTC dates (the partitions of bicycle_measurements), so each is built from both.

-- The UTC dates to read, as a list of constants (so that DuckDB opens no other
-- date's file): each local date to build, and the date before it.
SET VARIABLE hourly_utc_dates = (
    SELECT list(DISTINCT d)
    FROM (SELECT unnest([p - 1, p]) AS d FROM (SELECT unnest(getvariable('partitions')) AS p))
);

CREATE TABLE bicycle_hourly AS
WITH hours AS (
    SELECT
        location_id,
        measurement_hour,
        timezone('Europe/Amsterdam', measurement_hour) AS wall_clock,
        measured_values
    FROM bicycle_measurements
    WHERE getvariable('hourly_utc_dates') IS NULL OR list_contains(getvariable('hourly_utc_dates'), date)
)
SELECT
    location_id,
    measurement_hour,
    strftime(wall_clock, '%Y-%m-%dT%H:%M:%S')
        || printf('%+03d:00', CAST((epoch(wall_clock) - epoch(measurement_hour)) / 3600 AS INTEGER)) AS local_hour,
    CAST(wall_clock AS DATE) AS local_date,
    CAST(hour(wall_clock) AS INTEGER) AS local_hour_of_day,
    v.category AS category,
    v.subcategory AS subcategory,
    v.value AS value,
    v.issue AS value_issue
FROM (SELECT *, unnest(measured_values) AS v FROM hours)
WHERE getvariable('partitions') IS NULL
   OR list_contains(getvariable('partitions'), CAST(wall_clock AS DATE));
