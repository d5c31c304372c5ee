-- The signs of report_signs with a position.
SELECT count(*) AS n FROM report_signs WHERE lon IS NOT NULL AND lat IS NOT NULL
