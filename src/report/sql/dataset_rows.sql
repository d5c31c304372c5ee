-- The rows of a dataset (its view named $dataset).
SELECT count(*) AS n FROM query_table($dataset)
