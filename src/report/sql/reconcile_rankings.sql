-- The differences between the current state built from the feed and the
-- monthly download (signs_reconcile), counted by kind of difference and by
-- field that differs, most frequent first.
SELECT 'difference' AS ranking, coalesce(CAST(difference AS VARCHAR), '(none)') AS label, count(*) AS n
FROM signs_reconcile GROUP BY ALL
UNION ALL
SELECT 'field', coalesce(field, '(none)'), count(*)
FROM (SELECT unnest(differing_fields) AS field FROM signs_reconcile) GROUP BY ALL
ORDER BY ranking, n DESC, label
