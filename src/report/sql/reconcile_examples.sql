-- The first differences, by kind and sign id, with the fields that differ.
SELECT CAST(id AS VARCHAR) AS id, difference, array_to_string(differing_fields, ', ') AS fields
FROM signs_reconcile
ORDER BY difference, id
LIMIT 20
