-- The mean cyclists of a location in each local hour of the day, on weekdays
-- and at weekends.
SELECT
    CASE WHEN isodow(local_date) >= 6 THEN 'weekend' ELSE 'weekday' END AS day_type,
    local_hour_of_day AS hour,
    round(avg(cyclists), 2) AS mean
FROM report_location_hours
GROUP BY ALL
