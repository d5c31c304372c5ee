-- What each bicycle counter delivered on each Dutch local date (Europe/
-- Amsterdam): the figures its health is judged on (bicycle_quality.sql), one
-- row per location and local date with at least one hour.
--
--   hours_present       hours delivered
--   first_hour,         the first and last of them (UTC): where the landed
--   last_hour           period begins and ends, for bicycle_quality.sql
--   total, max_hour     the day's count and its busiest hour (an hour's count
--                       is the sum of $direction_category where the hour has
--                       it, else the median of its categories' sums: a
--                       category that is no count of passages, an indicator
--                       or an average, moves neither)
--   implausible_hours   hours with a value that cannot be a count (set apart:
--                       bicycle_hourly.value_issue)
--   night_total         the count of the night hours (00:00 to $night_end)
--   first_direction,    the counts of the two subcategories of
--   second_direction    $direction_category (the first by name)
--   longest_zero_run    the longest run of consecutive daytime hours
--                       ($day_start to $day_end) of zero
--   longest_stuck_run   the longest run of consecutive daytime hours sending
--                       the same record (every category, subcategory and
--                       value), each counting at least $stuck_min_count (a
--                       quiet night repeats itself without being stuck)
--
-- Kept by local date (partition local_date); getvariable('partitions') lists
-- the dates to build (unset: all): a night reads the hourly counts of the
-- dates it landed only.

-- The direction category's first subcategory (by name): its share is the one judged.
SET VARIABLE counter_first_direction = (
    SELECT min(subcategory) FROM bicycle_hourly
    WHERE category = $direction_category
      AND (getvariable('partitions') IS NULL OR list_contains(getvariable('partitions'), local_date))
);

-- Each hour a location delivered: its total (the direction category's sum, or
-- the median of the categories' sums), its two directions, whether a value
-- was set apart, and a hash of the whole record (of every category,
-- subcategory and value, in any order). Plain sums and hashes, so that DuckDB
-- can spill them to disk.
CREATE TEMP TABLE counter_hours AS
SELECT
    location_id,
    local_date,
    measurement_hour,
    CAST(epoch(measurement_hour) / 3600 AS BIGINT) AS hour_index,
    any_value(local_hour_of_day) AS hour_of_day,
    coalesce(max(category_total) FILTER (WHERE category = $direction_category),
             quantile_disc(category_total, 0.5)) AS total,
    max(first_direction) AS first_direction,
    max(second_direction) AS second_direction,
    bool_or(category_implausible) AS implausible,
    bit_xor(hash(category, category_record)) AS record
FROM (
    SELECT
        location_id,
        local_date,
        measurement_hour,
        local_hour_of_day,
        category,
        sum(value) AS category_total,
        sum(value) FILTER (WHERE category = $direction_category
                             AND subcategory = getvariable('counter_first_direction')) AS first_direction,
        sum(value) FILTER (WHERE category = $direction_category
                             AND subcategory <> getvariable('counter_first_direction')) AS second_direction,
        bool_or(value_issue IS NOT NULL) AS category_implausible,
        bit_xor(hash(subcategory, value)) AS category_record
    FROM bicycle_hourly
    WHERE getvariable('partitions') IS NULL OR list_contains(getvariable('partitions'), local_date)
    GROUP BY location_id, local_date, measurement_hour, local_hour_of_day, category
)
GROUP BY location_id, local_date, measurement_hour;

-- The longest run of daytime zeros, and of one record repeated, per location-day.
CREATE TEMP TABLE counter_runs AS
WITH zeros AS (
    SELECT location_id, local_date, count(*) AS run
    FROM (
        SELECT location_id, local_date,
               hour_index - row_number() OVER (PARTITION BY location_id, local_date ORDER BY hour_index) AS island
        FROM counter_hours
        WHERE total = 0 AND hour_of_day >= $day_start AND hour_of_day < $day_end
    )
    GROUP BY location_id, local_date, island
),
repeats AS (
    SELECT location_id, local_date, count(*) AS run
    FROM (
        SELECT location_id, local_date,
               sum(CASE WHEN record = previous_record AND hour_index = previous_hour + 1 THEN 0 ELSE 1 END)
                   OVER (PARTITION BY location_id, local_date ORDER BY hour_index) AS island
        FROM (
            SELECT location_id, local_date, hour_index, record,
                   lag(record) OVER w AS previous_record,
                   lag(hour_index) OVER w AS previous_hour
            FROM counter_hours
            WHERE total >= $stuck_min_count AND hour_of_day >= $day_start AND hour_of_day < $day_end
            WINDOW w AS (PARTITION BY location_id, local_date ORDER BY hour_index)
        )
    )
    GROUP BY location_id, local_date, island
)
SELECT location_id, local_date,
       CAST(max(zero_run) AS INTEGER) AS longest_zero_run,
       CAST(max(stuck_run) AS INTEGER) AS longest_stuck_run
FROM (
    SELECT location_id, local_date, run AS zero_run, NULL AS stuck_run FROM zeros
    UNION ALL
    SELECT location_id, local_date, NULL, run FROM repeats
)
GROUP BY ALL;

CREATE TABLE bicycle_counter_days AS
SELECT
    h.location_id,
    h.local_date,
    CAST(count(*) AS INTEGER) AS hours_present,
    min(h.measurement_hour) AS first_hour,
    max(h.measurement_hour) AS last_hour,
    sum(h.total) AS total,
    max(h.total) AS max_hour,
    sum(h.total) FILTER (WHERE h.hour_of_day < $night_end) AS night_total,
    sum(h.first_direction) AS first_direction,
    sum(h.second_direction) AS second_direction,
    coalesce(any_value(r.longest_zero_run), 0) AS longest_zero_run,
    coalesce(any_value(r.longest_stuck_run), 0) AS longest_stuck_run,
    CAST(count(*) FILTER (WHERE h.implausible) AS INTEGER) AS implausible_hours
FROM counter_hours h
LEFT JOIN counter_runs r USING (location_id, local_date)
GROUP BY h.location_id, h.local_date;
