-- No hourly counts: report_location_hours empty, so that the locations are
-- listed without counts.
CREATE OR REPLACE TEMP TABLE report_location_hours (
    location_id VARCHAR,
    measurement_hour TIMESTAMPTZ,
    local_date DATE,
    local_hour_of_day INTEGER,
    cyclists HUGEINT
)
