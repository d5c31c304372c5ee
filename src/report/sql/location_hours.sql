-- Cyclists per location and hour, from bicycle_hourly: the median of its
-- categories' sums. Every category of passages divides the same passages (by
-- direction, vehicle, speed, length), so their sums agree; a category the
-- equipment does not measure has no values, and one that is no count of
-- passages (an indicator, an average) is outvoted.
CREATE OR REPLACE TEMP TABLE report_location_hours AS
SELECT location_id, measurement_hour, local_date, local_hour_of_day, quantile_disc(category_sum, 0.5) AS cyclists
FROM (
    SELECT location_id, measurement_hour, local_date, local_hour_of_day, category, sum(value) AS category_sum
    FROM bicycle_hourly
    GROUP BY ALL
)
GROUP BY ALL
