-- A quarantine dataset ($dataset): its rows and one reason as an example.
SELECT count(*) AS n, any_value(reason) AS example FROM query_table($dataset)
