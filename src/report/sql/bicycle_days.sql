-- Every local day (Europe/Amsterdam) of the span measured: its hours (23, 24
-- or 25) and those inside the landed period (fewer on its first and last day),
-- as bicycle_daily has them (NULL for a day without any count), the
-- hours with any measurement, and the cyclists of all locations.
WITH span AS (
    SELECT min(local_date) AS first, max(local_date) AS last FROM report_location_hours
),
dates AS (
    SELECT CAST(range AS DATE) AS local_date
    FROM range((SELECT first FROM span), (SELECT last FROM span) + INTERVAL 1 DAY, INTERVAL 1 DAY)
),
totals AS (
    SELECT local_date, sum(cyclists) AS total, count(DISTINCT measurement_hour) AS measured
    FROM report_location_hours GROUP BY 1
),
day_hours AS (
    SELECT local_date, max(hours_in_day) AS hours, max(hours_in_period) AS in_period FROM bicycle_daily GROUP BY 1
)
SELECT
    strftime(local_date, '%Y-%m-%d') AS date,
    coalesce(measured, 0) AS measured,
    day_hours.hours,
    day_hours.in_period,
    coalesce(total, 0) AS total
FROM dates
LEFT JOIN totals USING (local_date)
LEFT JOIN day_hours USING (local_date)
ORDER BY local_date
