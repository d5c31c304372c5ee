-- Daily counts per location, Dutch local date (Europe/Amsterdam), category and
-- subcategory: the total, the hours with a value, the hours that local day has
-- (23 when summer time starts, 25 when it ends, else 24), the hours of the day
-- inside the landed period and the completeness (hours_present /
-- hours_in_period). The landed period is every hour of a landed UTC date of
-- bicycle_measurements from the first hour landed to the last: the first and
-- last local day of what has landed have fewer hours in it than in the day, so
-- that an hour never asked for is not taken for a counter that was down.
-- quality_status and quality_flags are the location-day's judgement in
-- bicycle_quality (bicycle_quality.sql): a faulty day's total is not the
-- day's traffic.
--
-- Kept by local date (partition local_date); getvariable('partitions') lists
-- the dates to build (unset: all).

-- The landed UTC dates and the first and last hour landed, read for the UTC
-- dates of the dates built only (a local date begins on the UTC date before
-- it): whether any date landed before or after them is all that matters of
-- the rest. A partial build whose view of bicycle_measurements holds those
-- dates only (incremental.reads) knows every date landed from
-- getvariable('partitions_of_bicycle_measurements'); otherwise DuckDB answers
-- from the partitions' names.
SET VARIABLE daily_utc_dates = (
    SELECT list(DISTINCT CAST(d AS DATE)) FROM (SELECT unnest([p - 1, p]) AS d FROM (SELECT unnest(getvariable('partitions')) AS p))
);
CREATE TEMP TABLE daily_landed AS
WITH read AS (
    SELECT date, measurement_hour FROM bicycle_measurements
    WHERE getvariable('daily_utc_dates') IS NULL OR list_contains(getvariable('daily_utc_dates'), date)
)
SELECT
    (SELECT list(DISTINCT date) FROM read) AS dates,
    CASE WHEN getvariable('daily_utc_dates') IS NOT NULL AND coalesce(
             list_min(getvariable('partitions_of_bicycle_measurements')) < list_min(getvariable('daily_utc_dates')),
             EXISTS (SELECT 1 FROM bicycle_measurements WHERE date < list_min(getvariable('daily_utc_dates'))))
         THEN TIMESTAMPTZ '-infinity'
         ELSE (SELECT min(measurement_hour) FROM read) END AS first,
    CASE WHEN getvariable('daily_utc_dates') IS NOT NULL AND coalesce(
             list_max(getvariable('partitions_of_bicycle_measurements')) > list_max(getvariable('daily_utc_dates')),
             EXISTS (SELECT 1 FROM bicycle_measurements WHERE date > list_max(getvariable('daily_utc_dates'))))
         THEN TIMESTAMPTZ 'infinity'
         ELSE (SELECT max(measurement_hour) FROM read) END AS last;

CREATE TEMP TABLE daily_period AS
SELECT local_date, CAST(count(*) FILTER (
        WHERE list_contains(l.dates, CAST(timezone('UTC', hour) AS DATE))
          AND hour BETWEEN l.first AND l.last) AS INTEGER) AS hours_in_period
FROM (
    SELECT local_date, unnest(generate_series(
        timezone('Europe/Amsterdam', CAST(local_date AS TIMESTAMP)),
        timezone('Europe/Amsterdam', CAST(local_date + 1 AS TIMESTAMP)) - INTERVAL 1 HOUR,
        INTERVAL 1 HOUR)) AS hour
    FROM (SELECT DISTINCT local_date FROM bicycle_hourly
          WHERE getvariable('partitions') IS NULL OR list_contains(getvariable('partitions'), local_date))
), daily_landed l
GROUP BY local_date;

CREATE TABLE bicycle_daily AS
SELECT
    location_id,
    local_date,
    category,
    subcategory,
    total,
    hours_present,
    hours_in_day,
    hours_in_period,
    round(hours_present / hours_in_period, 4) AS completeness,
    q.status AS quality_status,
    q.flags AS quality_flags
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
    WHERE getvariable('partitions') IS NULL OR list_contains(getvariable('partitions'), local_date)
    GROUP BY location_id, local_date, category, subcategory
) JOIN daily_period USING (local_date)
LEFT JOIN (
    SELECT location_id, local_date, status, flags FROM bicycle_quality
    WHERE getvariable('partitions') IS NULL OR list_contains(getvariable('partitions'), local_date)
) q USING (location_id, local_date);
