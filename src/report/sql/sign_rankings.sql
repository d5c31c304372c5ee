-- The signs of report_signs counted by RVV category (the letters the code
-- starts with: A, B, ..., OB), by RVV code and by town, most frequent first.
SELECT 'category' AS ranking, coalesce(nullif(regexp_extract(upper(code), '^[A-Z]+'), ''), '(none)') AS label, count(*) AS n
FROM report_signs GROUP BY ALL
UNION ALL
SELECT 'code', coalesce(code, '(none)'), count(*) FROM report_signs GROUP BY ALL
UNION ALL
SELECT 'town', coalesce(town, '(none)'), count(*) FROM report_signs GROUP BY ALL
ORDER BY ranking, n DESC, label
