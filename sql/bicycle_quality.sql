-- The health of every counter's day: one row per location and Dutch local date
-- (Europe/Amsterdam) of the landed period, judged ok, suspect or faulty, with
-- the flags that say why and the figures the judgement rests on. Each location
-- is judged against its own history: the days of the same type (weekday, or
-- Saturday and Sunday) in the $history_days before, whole and complete, give
-- its usual level, peak hour, direction split and night share (medians, so
-- that a faulty day among them moves nothing).
--
-- The flags (docs/quality.md gives each rule with its source):
--   dead                 every hour delivered is zero, on a day the location
--                        usually counts at least $dead_min_expected
--   zero_run             $zero_run_hours or more consecutive daytime hours of
--                        zero (bicycle_counter_days.sql says which are daytime)
--   stuck                the same record (every value) sent for $stuck_hours
--                        or more consecutive hours (each counting enough:
--                        bicycle_counter_days.sql)
--   direction_missing    one direction counts nothing while the other counts
--                        $direction_min_count or more, at a location whose
--                        directions usually both count ($direction_min_share)
--   direction_imbalance  the first direction's share more than
--                        $direction_shift away from its usual share
--   spike                an hour above $spike_factor times the usual peak
--                        hour (and at least $spike_min_count)
--   night_activity       the night's hours (bicycle_counter_days.sql)
--                        hold more than $night_share_min of the day and
--                        $night_factor times the usual share
--   level_shift          the day's total below $level_low or above
--                        $level_high times the usual, $level_days days or
--                        more in a row
--   incomplete           hours of the landed period not delivered
--   implausible          an hour with a value that cannot be a count
--                        (negative, not a whole number, above max_count:
--                        bicycle_hourly.value_issue)
-- status: faulty with dead, zero_run, stuck, direction_missing or
-- implausible, or fewer than
-- $incomplete_faulty_below of the hours delivered; suspect with any other
-- flag; else ok.
--
-- A location is expected on a date when it delivered an hour on it or in the
-- $history_days before, and the catalog does not say it had ended (or not yet
-- begun): a counter that stops is reported as missing for that long. The
-- rules on the day's total (dead, direction, night, level) judge only days
-- that lie wholly in the landed period; those on hours (zero_run, stuck,
-- spike, incomplete) every day. Rules that compare with the usual need
-- $min_history_days days of history.
--
-- It reads what each counter delivered per day (bicycle_counter_days), never
-- the hourly counts. Kept by local date (partition local_date).
-- getvariable('partitions') lists the dates to judge (unset: all). A date's
-- judgement reads the $history_days + $level_days - 1 before it and the
-- $level_days - 1 after it.

-- The local dates to read, as a list of constants (so that DuckDB opens no
-- other date's file); NULL: all.
SET VARIABLE quality_dates = (
    SELECT list(CAST(d AS DATE))
    FROM (
        SELECT unnest(range(
            CAST(first AS TIMESTAMP) - to_days(CAST($history_days + $level_days - 1 AS INTEGER)),
            CAST(last AS TIMESTAMP) + to_days(CAST($level_days AS INTEGER)),
            INTERVAL 1 DAY)) AS d
        FROM (SELECT min(p) AS first, max(p) AS last FROM (SELECT unnest(getvariable('partitions')) AS p))
        WHERE first IS NOT NULL
    )
);

-- The dates whose usual is wanted: those judged, and the $level_days - 1
-- either side; NULL: all.
SET VARIABLE quality_wanted = (
    SELECT list(DISTINCT p + CAST(k AS INTEGER))
    FROM (SELECT unnest(getvariable('partitions')) AS p),
         (SELECT unnest(range(1 - $level_days, $level_days)) AS k)
);

-- What each location delivered on the dates read (bicycle_counter_days.sql).
CREATE TEMP TABLE quality_counter_days AS
SELECT * FROM bicycle_counter_days
WHERE getvariable('quality_dates') IS NULL OR list_contains(getvariable('quality_dates'), local_date);

-- The landed period, as bicycle_daily.sql counts it: every hour of a landed UTC
-- date (one with a count) from the first hour landed to the last. Read from
-- the location-days read: a UTC date with a count holds the first or the last
-- hour of a location-day; of the rest, all that matters is whether any date
-- has a count before or after them, which getvariable('inputs') answers: the
-- dates bicycle_counter_days holds, set by the step with 'partitions' (a
-- statement over the table itself would list its year of partitions).
CREATE TEMP TABLE quality_landed AS
SELECT
    (SELECT list(DISTINCT CAST(timezone('UTC', hour) AS DATE))
     FROM (SELECT first_hour AS hour FROM quality_counter_days
           UNION ALL SELECT last_hour FROM quality_counter_days)) AS dates,
    CASE WHEN getvariable('quality_dates') IS NOT NULL
              AND list_min(getvariable('inputs')) < list_min(getvariable('quality_dates'))
         THEN TIMESTAMPTZ '-infinity'
         ELSE (SELECT min(first_hour) FROM quality_counter_days) END AS first,
    CASE WHEN getvariable('quality_dates') IS NOT NULL
              AND list_max(getvariable('inputs')) > list_max(getvariable('quality_dates'))
         THEN TIMESTAMPTZ 'infinity'
         ELSE (SELECT max(last_hour) FROM quality_counter_days) END AS last;

CREATE TEMP TABLE quality_period_hours AS
SELECT local_date, hour,
       list_contains(l.dates, CAST(timezone('UTC', hour) AS DATE)) AND hour BETWEEN l.first AND l.last AS in_period
FROM (
    SELECT local_date, unnest(generate_series(
        timezone('Europe/Amsterdam', CAST(local_date AS TIMESTAMP)),
        timezone('Europe/Amsterdam', CAST(local_date + 1 AS TIMESTAMP)) - INTERVAL 1 HOUR,
        INTERVAL 1 HOUR)) AS hour
    FROM (SELECT DISTINCT local_date FROM quality_counter_days)
), quality_landed l;

CREATE TEMP TABLE quality_period AS
SELECT local_date,
       CAST(count(*) AS INTEGER) AS hours_in_day,
       CAST(count(*) FILTER (WHERE in_period) AS INTEGER) AS hours_in_period
FROM quality_period_hours
GROUP BY local_date;

-- The location-days to judge: where a location delivered an hour on the date
-- or in the days before it, with the hours of the landed period inside its
-- validity in the catalog (fewer on the day it began or ended).
CREATE TEMP TABLE quality_location_days AS
WITH delivered AS (SELECT location_id, local_date FROM quality_counter_days),
expected AS (
    SELECT DISTINCT d.location_id, p.local_date, p.hours_in_day, p.hours_in_period
    FROM quality_period p
    JOIN delivered d ON d.local_date BETWEEN p.local_date - CAST($history_days AS INTEGER) AND p.local_date
    WHERE getvariable('partitions') IS NULL OR list_contains(getvariable('partitions'), p.local_date)
    UNION
    -- A date not judged is history: only its days with data count.
    SELECT d.location_id, p.local_date, p.hours_in_day, p.hours_in_period
    FROM quality_period p
    JOIN delivered d USING (local_date)
    WHERE NOT list_contains(getvariable('partitions'), p.local_date)
),
catalog AS (
    SELECT
        location_id,
        valid_from,
        valid_until,
        CAST(timezone('Europe/Amsterdam', valid_from) AS DATE) AS from_date,
        CAST(timezone('Europe/Amsterdam', valid_until) AS DATE) AS until_date
    FROM bicycle_locations
),
-- The first and last local day of a location's validity hold only part of
-- their hours: counted hour by hour (equi-joins on the date, so that a
-- catalog of thousands costs no more than its edges).
edges AS (
    SELECT e.location_id, e.local_date,
           CAST(count(*) FILTER (WHERE h.in_period AND (c.valid_from IS NULL OR h.hour >= c.valid_from)
                                   AND (c.valid_until IS NULL OR h.hour < c.valid_until)) AS INTEGER) AS hours_in_period
    FROM (
        SELECT location_id, from_date AS local_date FROM catalog WHERE from_date IS NOT NULL
        UNION
        SELECT location_id, until_date FROM catalog WHERE until_date IS NOT NULL
    ) e
    JOIN catalog c USING (location_id)
    JOIN quality_period_hours h ON h.local_date = e.local_date
    GROUP BY e.location_id, e.local_date
)
SELECT x.location_id, x.local_date, x.hours_in_day,
       coalesce(g.hours_in_period, x.hours_in_period) AS hours_in_period
FROM expected x
LEFT JOIN catalog c USING (location_id)
LEFT JOIN edges g USING (location_id, local_date)
WHERE (c.from_date IS NULL OR x.local_date >= c.from_date)
  AND (c.until_date IS NULL OR x.local_date <= c.until_date)
  AND coalesce(g.hours_in_period, x.hours_in_period) > 0;

-- What each location-day with data delivered, and how it compares with the
-- location's own history.
CREATE TEMP TABLE quality_days AS
WITH days AS (
    SELECT
        e.location_id,
        e.local_date,
        CASE WHEN isodow(e.local_date) >= 6 THEN 'weekend' ELSE 'weekday' END AS day_type,
        e.hours_in_day,
        e.hours_in_period,
        coalesce(h.hours_present, 0) AS hours_present,
        h.total,
        h.max_hour,
        h.night_total,
        h.first_direction,
        h.second_direction,
        h.longest_zero_run,
        h.longest_stuck_run,
        coalesce(h.implausible_hours, 0) AS implausible_hours
    FROM quality_location_days e
    LEFT JOIN quality_counter_days h USING (location_id, local_date)
),
measured AS (
    SELECT
        *,
        hours_in_period = hours_in_day AS whole_day,
        hours_present / hours_in_period >= $level_min_completeness AS complete,
        -- A day a usual may be taken from: whole, complete, and every value a count.
        hours_in_period = hours_in_day AND hours_present / hours_in_period >= $level_min_completeness
            AND implausible_hours = 0 AS sound,
        -- The day's total as if every hour had come, for comparison with the usual.
        total * hours_in_day / nullif(hours_present, 0) AS total_estimate,
        first_direction / nullif(first_direction + second_direction, 0) AS direction_share,
        night_total / nullif(total, 0) AS night_share
    FROM days
),
-- The days a usual is taken from: whole and complete.
history AS (
    SELECT location_id, day_type, local_date, total_estimate, max_hour, night_share,
           CASE WHEN first_direction + second_direction >= $direction_min_count THEN direction_share END AS direction_share
    FROM measured
    WHERE sound
),
-- The days whose usual is wanted: those judged, and the $level_days - 1 either
-- side of them (whose level makes a run with theirs).
wanted AS (
    SELECT * FROM measured
    WHERE getvariable('quality_wanted') IS NULL OR list_contains(getvariable('quality_wanted'), local_date)
),
-- Each wanted day's usual: the medians of its history. Built whole, over a
-- window (one sort per location); built for a few dates, from their history
-- alone (a window would compute every date read). The same figures either way.
usual AS (
    SELECT
        location_id,
        local_date,
        count(CASE WHEN sound THEN 1 END) OVER history AS history_days,
        median(CASE WHEN sound THEN total_estimate END) OVER history AS expected_total,
        median(CASE WHEN sound THEN max_hour END) OVER history AS usual_peak,
        median(CASE WHEN sound AND first_direction + second_direction >= $direction_min_count
                    THEN direction_share END) OVER history AS usual_direction_share,
        median(CASE WHEN sound THEN night_share END) OVER history AS usual_night_share
    FROM measured
    WHERE getvariable('quality_wanted') IS NULL
    WINDOW history AS (
        PARTITION BY location_id, day_type ORDER BY local_date
        RANGE BETWEEN to_days(CAST($history_days AS INTEGER)) PRECEDING AND INTERVAL 1 DAY PRECEDING)
    UNION ALL
    SELECT
        w.location_id,
        w.local_date,
        count(h.local_date),
        median(h.total_estimate),
        median(h.max_hour),
        median(h.direction_share),
        median(h.night_share)
    FROM wanted w
    LEFT JOIN history h
      ON h.location_id = w.location_id AND h.day_type = w.day_type
     AND h.local_date BETWEEN w.local_date - CAST($history_days AS INTEGER) AND w.local_date - 1
    WHERE getvariable('quality_wanted') IS NOT NULL
    GROUP BY w.location_id, w.local_date
)
SELECT
    w.*,
    u.* EXCLUDE (location_id, local_date),
    CASE
        WHEN whole_day AND complete AND history_days >= $min_history_days AND expected_total >= $level_min_expected
        THEN CASE
            WHEN total_estimate < $level_low * expected_total THEN 'low'
            WHEN total_estimate > $level_high * expected_total THEN 'high'
        END
    END AS level
FROM wanted w
JOIN usual u USING (location_id, local_date);

-- Days in a run of $level_days or more low (or high) days in a row.
CREATE TEMP TABLE quality_level_runs AS
SELECT location_id, local_date
FROM (
    SELECT location_id, local_date,
           count(*) OVER (PARTITION BY location_id, level, island) AS run
    FROM (
        SELECT location_id, local_date, level,
               local_date - CAST(row_number() OVER (PARTITION BY location_id, level ORDER BY local_date) AS INTEGER) AS island
        FROM quality_days
        WHERE level IS NOT NULL
    )
)
WHERE run >= $level_days;

CREATE TABLE bicycle_quality AS
WITH judged AS (
    SELECT
        q.location_id,
        q.local_date,
        q.hours_present,
        q.hours_in_period,
        q.hours_in_day,
        q.total,
        q.max_hour,
        q.direction_share,
        q.night_share,
        coalesce(q.longest_zero_run, 0) AS longest_zero_run,
        coalesce(q.longest_stuck_run, 0) AS longest_stuck_run,
        q.implausible_hours,
        q.history_days,
        q.expected_total,
        q.usual_peak,
        q.usual_direction_share,
        q.usual_night_share,
        q.whole_day,
        l.local_date IS NOT NULL AS in_level_run
    FROM quality_days q
    LEFT JOIN quality_level_runs l USING (location_id, local_date)
    WHERE getvariable('partitions') IS NULL OR list_contains(getvariable('partitions'), q.local_date)
),
flagged AS (
    SELECT
        *,
        list_filter([
            CASE WHEN whole_day AND total = 0 AND hours_present * 2 >= hours_in_period
                      AND coalesce(expected_total, $dead_min_expected) >= $dead_min_expected THEN 'dead' END,
            CASE WHEN longest_zero_run >= $zero_run_hours AND NOT (whole_day AND total = 0) THEN 'zero_run' END,
            CASE WHEN longest_stuck_run >= $stuck_hours THEN 'stuck' END,
            CASE WHEN whole_day AND history_days >= $min_history_days
                      AND usual_direction_share BETWEEN $direction_min_share AND 1 - $direction_min_share
                      AND direction_share IN (0, 1) AND total >= $direction_min_count THEN 'direction_missing' END,
            CASE WHEN whole_day AND history_days >= $min_history_days AND total >= $direction_min_count
                      AND direction_share NOT IN (0, 1)
                      AND abs(direction_share - usual_direction_share) > $direction_shift THEN 'direction_imbalance' END,
            CASE WHEN history_days >= $min_history_days AND max_hour >= $spike_min_count
                      AND max_hour > $spike_factor * usual_peak THEN 'spike' END,
            CASE WHEN whole_day AND total >= $night_min_count
                      AND night_share > greatest($night_share_min,
                          CASE WHEN history_days >= $min_history_days THEN $night_factor * usual_night_share ELSE 0 END)
                 THEN 'night_activity' END,
            CASE WHEN in_level_run THEN 'level_shift' END,
            CASE WHEN hours_present < hours_in_period THEN 'incomplete' END,
            CASE WHEN implausible_hours > 0 THEN 'implausible' END
        ], f -> f IS NOT NULL) AS flags
    FROM judged
)
SELECT
    location_id,
    local_date,
    CASE
        WHEN list_has_any(flags, ['dead', 'zero_run', 'stuck', 'direction_missing', 'implausible'])
          OR hours_present < $incomplete_faulty_below * hours_in_period THEN 'faulty'
        WHEN len(flags) > 0 THEN 'suspect'
        ELSE 'ok'
    END AS status,
    flags,
    hours_present,
    hours_in_period,
    hours_in_day,
    round(hours_present / hours_in_period, 4) AS completeness,
    total,
    round(expected_total, 1) AS expected_total,
    round(total * hours_in_day / nullif(hours_present, 0) / nullif(expected_total, 0), 3) AS level_ratio,
    max_hour,
    round(usual_peak, 1) AS usual_peak,
    round(direction_share, 3) AS direction_share,
    round(usual_direction_share, 3) AS usual_direction_share,
    round(night_share, 3) AS night_share,
    round(usual_night_share, 3) AS usual_night_share,
    longest_zero_run,
    longest_stuck_run,
    implausible_hours,
    CAST(history_days AS INTEGER) AS history_days
FROM flagged;
