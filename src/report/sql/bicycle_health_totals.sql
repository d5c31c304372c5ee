-- Location-days judged in bicycle_quality, by status.
SELECT
    count(*) AS judged,
    count(*) FILTER (WHERE status = 'ok') AS ok,
    count(*) FILTER (WHERE status = 'suspect') AS suspect,
    count(*) FILTER (WHERE status = 'faulty') AS faulty,
    count(DISTINCT location_id) AS locations,
    strftime(min(local_date), '%Y-%m-%d') AS first,
    strftime(max(local_date), '%Y-%m-%d') AS last
FROM bicycle_quality
