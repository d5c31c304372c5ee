-- A dataset ($dataset) with typing_issues: its rows, and those with an issue.
SELECT count(*) AS n, count(*) FILTER (WHERE len(typing_issues) > 0) AS with_issues
FROM query_table($dataset)
