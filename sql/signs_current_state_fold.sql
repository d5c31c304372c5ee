-- The current state of every traffic sign, from the previous one
-- (previous_signs_current_state) and the partitions of signs_events added or
-- rewritten since it was built (getvariable('partitions'): publication months,
-- each at or after the last one built on). What signs_current_state.sql gives
-- over everything, at the cost of the new events and the signs, not of the
-- whole feed.
--
-- Every event of those partitions is at least as late as any event of the
-- others, so a sign that has one there has its latest record there: its row
-- is that record (or none, when it is a deletion); every other sign keeps its
-- row. In $mode 'snapshot', events before the snapshot's latest
-- publication_timestamp are left out, as signs_current_state.sql does (a
-- changed snapshot builds everything with that file).

CREATE TEMP TABLE snapshot_cutoff AS
SELECT
    CASE
        WHEN $mode NOT IN ('events', 'snapshot')
            THEN error('signs_current_state_fold.sql: mode must be events or snapshot, got ' || $mode)
    END AS guard,
    max(publication_timestamp) AS cutoff
FROM signs_snapshot;

-- The latest event of each sign among the new partitions, by its narrow keys.
CREATE TEMP TABLE folded_winners AS
SELECT id, publication_timestamp, feed_index, type
FROM signs_events
WHERE list_contains(getvariable('partitions'), publication_month)
  AND ($mode = 'events' OR publication_timestamp >= (SELECT cutoff FROM snapshot_cutoff))
QUALIFY row_number() OVER (PARTITION BY id ORDER BY publication_timestamp DESC, feed_index DESC) = 1;

CREATE OR REPLACE VIEW signs_current_state AS
SELECT p.*
FROM previous_signs_current_state AS p
ANTI JOIN folded_winners AS w ON p.id = w.id
UNION ALL BY NAME
SELECT e.* EXCLUDE (feed_index, publication_date, publication_month)
FROM signs_events AS e
SEMI JOIN folded_winners AS w
    ON e.id = w.id
   AND e.publication_timestamp = w.publication_timestamp
   AND e.feed_index = w.feed_index
   AND w.type <> 'deleted'
WHERE list_contains(getvariable('partitions'), e.publication_month);
