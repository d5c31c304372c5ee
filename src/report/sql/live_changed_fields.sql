-- The fields that changed between snapshots, counted, most frequent first.
SELECT 'field' AS ranking, coalesce(field, '(none)') AS label, count(*) AS n
FROM (SELECT unnest(changed_fields) AS field FROM signs_live_changes)
GROUP BY ALL
ORDER BY n DESC, label
