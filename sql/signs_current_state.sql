-- The current state of every traffic sign: its latest event, signs whose latest
-- event is a deletion left out (upstream-api.md 4.6). Ties at one instant are
-- broken by feed order (feed_index).
--
-- $mode = 'events':   from the whole event history (signs_events).
-- $mode = 'snapshot': from the downloaded current state (signs_snapshot) plus the
--                     events published since it was taken (4.6 rule 4). Events
--                     from the snapshot's latest publication_timestamp on are
--                     applied; at one instant an event wins over the snapshot row.

CREATE TEMP TABLE snapshot_cutoff AS
SELECT
    CASE
        WHEN $mode NOT IN ('events', 'snapshot')
            THEN error('signs_current_state.sql: mode must be events or snapshot, got ' || $mode)
        WHEN $mode = 'snapshot' AND count(*) = 0
            THEN error('signs_current_state.sql: mode snapshot needs signs/snapshot: run the signs.snapshot step first')
    END AS guard,
    max(publication_timestamp) AS cutoff
FROM signs_snapshot;

CREATE TEMP TABLE current_candidates AS
SELECT * EXCLUDE (publication_date), 1 AS source_rank
FROM signs_events
WHERE $mode = 'events'
   OR ($mode = 'snapshot' AND publication_timestamp >= (SELECT cutoff FROM snapshot_cutoff))
UNION ALL BY NAME
SELECT * EXCLUDE (snapshot_moment), NULL::INTEGER AS feed_index, 0 AS source_rank
FROM signs_snapshot
WHERE $mode = 'snapshot';

CREATE OR REPLACE TABLE signs_current_state AS
SELECT * EXCLUDE (source_rank, feed_index, latest)
FROM (
    SELECT *,
           row_number() OVER (
               PARTITION BY id
               ORDER BY publication_timestamp DESC, source_rank DESC, feed_index DESC NULLS LAST
           ) AS latest
    FROM current_candidates
)
WHERE latest = 1 AND type <> 'deleted'
ORDER BY id;
