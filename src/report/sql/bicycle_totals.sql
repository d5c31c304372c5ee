-- The counts over all: locations measured, location-hours, cyclists, first and last hour.
SELECT
    count(DISTINCT location_id) AS locations,
    count(*) AS hours,
    sum(cyclists) AS cyclists,
    strftime(min(measurement_hour), '%Y-%m-%dT%H:%M:%SZ') AS first,
    strftime(max(measurement_hour), '%Y-%m-%dT%H:%M:%SZ') AS last
FROM report_location_hours
