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
-- Scales with the feed, not with memory: the latest event is chosen on narrow
-- columns (id, instant, feed position), and the wide rows (with the record as
-- received) are read once, kept by a semi join on those narrow keys, and
-- streamed into Parquet. The result is not sorted (sorting wide rows is what
-- would not fit): order in the query that reads it.

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

-- The latest record of each sign, by its narrow keys. A snapshot row has no feed
-- position: it is known by its id, instant and a hash of its content.
CREATE TEMP TABLE current_winners AS
SELECT id, publication_timestamp, source_rank, feed_index, row_hash
FROM (
    SELECT id, publication_timestamp, type, feed_index, NULL::UBIGINT AS row_hash, 1 AS source_rank
    FROM signs_events
    WHERE $mode = 'events'
       OR ($mode = 'snapshot' AND publication_timestamp >= (SELECT cutoff FROM snapshot_cutoff))
    UNION ALL
    SELECT id, publication_timestamp, type, NULL AS feed_index, hash(event_hash) AS row_hash, 0 AS source_rank
    FROM signs_snapshot
    WHERE $mode = 'snapshot'
)
QUALIFY row_number() OVER (
    PARTITION BY id
    ORDER BY publication_timestamp DESC, source_rank DESC, feed_index DESC NULLS LAST
) = 1
   AND type <> 'deleted';

CREATE TEMP TABLE winning_events AS
SELECT id, publication_timestamp, feed_index FROM current_winners WHERE source_rank = 1;

CREATE TEMP TABLE winning_snapshot_rows AS
SELECT id, publication_timestamp, row_hash FROM current_winners WHERE source_rank = 0;

DROP TABLE current_winners;

CREATE OR REPLACE VIEW signs_current_state AS
SELECT e.* EXCLUDE (feed_index, publication_date, publication_month)
FROM signs_events AS e
SEMI JOIN winning_events AS w
    ON e.id = w.id
   AND e.publication_timestamp = w.publication_timestamp
   AND e.feed_index = w.feed_index
UNION ALL BY NAME
SELECT s.* EXCLUDE (snapshot_moment)
FROM signs_snapshot AS s
SEMI JOIN winning_snapshot_rows AS w
    ON s.id = w.id
   AND s.publication_timestamp = w.publication_timestamp
   AND hash(s.event_hash) = w.row_hash;
