-- Cyclists per location and local day.
SELECT location_id, strftime(local_date, '%Y-%m-%d') AS date, sum(cyclists) AS total
FROM report_location_hours
GROUP BY ALL
ORDER BY location_id, date
