-- Location-days per flag of bicycle_quality, and how many of them were faulty.
SELECT flag, count(*) AS n, count(*) FILTER (WHERE status = 'faulty') AS faulty
FROM (SELECT unnest(flags) AS flag, status FROM bicycle_quality)
GROUP BY flag
ORDER BY n DESC, flag
