-- Daily counts per location, Dutch local date (Europe/Amsterdam), category and
-- subcategory: the total, the hours with a value, the hours that local day has
-- (23 when summer time starts, 25 when it ends, else 24) and the completeness
-- (hours_present / hours_in_day). A day the counts do not wholly cover yet (the
-- first and last of what has landed) has a completeness below 1.
--
-- Kept by local date (partition local_date); getvariable('partitions') lists
-- the dates to build (unset: all).

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
    WHERE getvariable('partitions') IS NULL OR list_contains(getvariable('partitions'), local_date)
    GROUP BY location_id, local_date, category, subcategory
);
