-- The catalog's name of each location.
SELECT location_id, name FROM bicycle_locations
