-- A quarantine's rows counted by reason, without the value the reason quotes
-- ("id is not an integer: x7" -> "id is not an integer"), most frequent first.
SELECT 'reason' AS ranking, coalesce(trim(regexp_replace(reason, '[:(].*$', '', 's')), '(none)') AS label, count(*) AS n
FROM query_table($dataset)
GROUP BY ALL
ORDER BY n DESC, label
