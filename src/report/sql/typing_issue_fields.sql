-- The typing issues of a dataset ($dataset) counted by field and what is
-- wrong with it ("road_name: mis-encoded UTF-8"), the value quoted left out;
-- most frequent first.
SELECT 'field' AS ranking, coalesce(field, '(none)') AS label, count(*) AS n
FROM (
    SELECT regexp_replace(unnest(typing_issues), ' \(.*$', '', 's') AS field
    FROM query_table($dataset)
    WHERE len(typing_issues) > 0
)
GROUP BY ALL
ORDER BY n DESC, label
