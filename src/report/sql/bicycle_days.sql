-- Every local day (Europe/Amsterdam) of the span measured: its hours (23, 24
-- or 25), the hours with any measurement, and the cyclists of all locations.
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
)
SELECT
    strftime(local_date, '%Y-%m-%d') AS date,
    coalesce(measured, 0) AS measured,
    CAST((epoch(timezone('Europe/Amsterdam', CAST(local_date + 1 AS TIMESTAMP)))
        - epoch(timezone('Europe/Amsterdam', CAST(local_date AS TIMESTAMP)))) / 3600 AS INTEGER) AS hours,
    coalesce(total, 0) AS total
FROM dates
LEFT JOIN totals USING (local_date)
ORDER BY local_date
