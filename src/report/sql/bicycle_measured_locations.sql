-- Without a catalog: every location measured, with the cyclists it counted
-- and its completeness out of the $span_hours measured; no name or position.
SELECT location_id, NULL AS name, NULL AS authority, NULL AS longitude, NULL AS latitude,
       sum(cyclists) AS cyclists,
       round(count(DISTINCT measurement_hour) / $span_hours, 4) AS completeness
FROM report_location_hours
GROUP BY location_id
ORDER BY location_id
