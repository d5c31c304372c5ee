-- The current state of every traffic sign: its latest event, signs whose latest
-- event is a deletion left out (upstream-api.md 4.6). Ties at one instant are
-- broken by feed order (feed_index).
--
-- $mode = 'events':   from the whole event history (signs_events).
-- $mode = 'snapshot': from the downloaded current state (signs_snapshot) plus the
--                     events published since it was taken (4.6 rule 4). Events
--                     from the snapshot's latest publication_timestamp on are
--                     applied; at one instant an event wins over the snapshot row.
--
-- The latest event is chosen on narrow columns first; the wide rows (with the
-- record as received) are read once, for the winners only, and streamed into
-- Parquet (the result is a view, so it is never held in memory as a whole).

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

CREATE TEMP TABLE current_winners AS
SELECT source_rank, event_hash
FROM (
    SELECT id, publication_timestamp, type, feed_index, event_hash, 1 AS source_rank
    FROM signs_events
    WHERE $mode = 'events'
       OR ($mode = 'snapshot' AND publication_timestamp >= (SELECT cutoff FROM snapshot_cutoff))
    UNION ALL
    SELECT id, publication_timestamp, type, NULL AS feed_index, event_hash, 0 AS source_rank
    FROM signs_snapshot
    WHERE $mode = 'snapshot'
)
QUALIFY row_number() OVER (
    PARTITION BY id
    ORDER BY publication_timestamp DESC, source_rank DESC, feed_index DESC NULLS LAST
) = 1
   AND type <> 'deleted';

CREATE OR REPLACE VIEW signs_current_state AS
SELECT * EXCLUDE (feed_index, publication_date)
FROM signs_events
WHERE event_hash IN (SELECT event_hash FROM current_winners WHERE source_rank = 1)
UNION ALL BY NAME
SELECT * EXCLUDE (snapshot_moment)
FROM signs_snapshot
WHERE event_hash IN (SELECT event_hash FROM current_winners WHERE source_rank = 0)
ORDER BY id;
