-- Partial sums of the hourly counts per Dutch local month (partition month, the
-- month's first day), from which bicycle_summary.sql makes the hour-of-day
-- profile and the per-location summary over everything that has landed. A
-- night adds to one month: only that month is summed again, however long the
-- history behind it.
--
-- bicycle_profile_months: per location, month, weekday or weekend (local),
--   local hour of the day, category and subcategory: the sum of the values and
--   the hours with a value.
-- bicycle_location_months: per location and month: the first and last hour
--   with a measurement, the hours with one, and its days judged ok, suspect
--   and faulty in bicycle_quality.
--
-- getvariable('partitions') lists the months to build (unset: all).

-- The local dates of those months, as a list of constants (so that DuckDB opens
-- the files of those dates only).
SET VARIABLE monthly_dates = (
    SELECT list(CAST(d AS DATE))
    FROM (
        SELECT unnest(range(CAST(m AS TIMESTAMP), CAST(m AS TIMESTAMP) + INTERVAL 1 MONTH, INTERVAL 1 DAY)) AS d
        FROM (SELECT unnest(getvariable('partitions')) AS m)
    )
);

CREATE TEMP VIEW monthly_hours AS
SELECT *, CAST(date_trunc('month', local_date) AS DATE) AS month
FROM bicycle_hourly
WHERE getvariable('monthly_dates') IS NULL OR list_contains(getvariable('monthly_dates'), local_date);

CREATE TABLE bicycle_profile_months AS
SELECT
    location_id,
    month,
    CASE WHEN isodow(local_date) >= 6 THEN 'weekend' ELSE 'weekday' END AS day_type,
    local_hour_of_day,
    category,
    subcategory,
    sum(value) AS sum_value,
    CAST(count(value) AS INTEGER) AS hours
FROM monthly_hours
GROUP BY ALL;

CREATE TABLE bicycle_location_months AS
WITH hours AS (
    SELECT
        location_id,
        month,
        min(measurement_hour) AS first_hour,
        max(measurement_hour) AS last_hour,
        CAST(count(DISTINCT measurement_hour) AS INTEGER) AS hours_present
    FROM monthly_hours
    GROUP BY ALL
),
days AS (
    SELECT
        location_id,
        CAST(date_trunc('month', local_date) AS DATE) AS month,
        CAST(count(*) FILTER (WHERE status = 'ok') AS INTEGER) AS days_ok,
        CAST(count(*) FILTER (WHERE status = 'suspect') AS INTEGER) AS days_suspect,
        CAST(count(*) FILTER (WHERE status = 'faulty') AS INTEGER) AS days_faulty
    FROM bicycle_quality
    WHERE getvariable('monthly_dates') IS NULL OR list_contains(getvariable('monthly_dates'), local_date)
    GROUP BY ALL
)
SELECT
    coalesce(h.location_id, d.location_id) AS location_id,
    coalesce(h.month, d.month) AS month,
    h.first_hour,
    h.last_hour,
    coalesce(h.hours_present, 0) AS hours_present,
    coalesce(d.days_ok, 0) AS days_ok,
    coalesce(d.days_suspect, 0) AS days_suspect,
    coalesce(d.days_faulty, 0) AS days_faulty
FROM hours h FULL JOIN days d ON d.location_id = h.location_id AND d.month = h.month;
