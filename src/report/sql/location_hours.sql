-- Cyclists per location and hour, from bicycle_hourly: the largest of its
-- categories' sums. Every category divides the same passages (by direction,
-- vehicle, speed, length), and a category the equipment does not measure has
-- no values, so the largest sum is the count of cyclists.
CREATE OR REPLACE TEMP TABLE report_location_hours AS
SELECT location_id, measurement_hour, local_date, local_hour_of_day, max(category_sum) AS cyclists
FROM (
    SELECT location_id, measurement_hour, local_date, local_hour_of_day, category, sum(value) AS category_sum
    FROM bicycle_hourly
    GROUP BY ALL
)
GROUP BY ALL
