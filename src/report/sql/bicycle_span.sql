-- The hours from the first measured hour of any location to the last, both included.
SELECT CAST(epoch(max(measurement_hour) - min(measurement_hour)) / 3600 + 1 AS INTEGER) AS hours
FROM report_location_hours
