-- Every location of the catalog with its position, the cyclists it counted
-- and its completeness: the hours it has a count of, out of the $span_hours
-- measured (NULL where it has no count).
WITH totals AS (
    SELECT location_id, sum(cyclists) AS cyclists, count(DISTINCT measurement_hour) AS present
    FROM report_location_hours GROUP BY 1
)
SELECT location_id, l.name, l.authority, l.longitude, l.latitude, t.cyclists,
       round(t.present / $span_hours, 4) AS completeness
FROM bicycle_locations l
LEFT JOIN totals t USING (location_id)
ORDER BY location_id
