/**
 * Views over the snapshots of today's API (signs_live_snapshots), made beside
 * the dataset's own wherever the output folder is opened (run, query, report):
 *
 * - signs_live_restrictions: the machine-readable conditions of the latest
 *   snapshot as a table: one row per sign, kind (`restriction`, `exemption`;
 *   `condition` numbers a sign's exemptions from 1) and vehicle type (NULL when
 *   the condition names none), with every other condition field of NDW's
 *   OpenAPI file (ConditionPropertiesDtoV5). Values are kept as received: an
 *   enum value NDW adds later is a row like any other.
 * - signs_live_history: one row per version of a sign, the snapshot moments
 *   between which it was current: `valid_from` (the first snapshot holding it)
 *   and `valid_to` (the first snapshot after it that does not: the next
 *   version's, or the one where the sign was gone; NULL while it is current).
 *   The signs as they were at moment T: `WHERE valid_from <= T AND
 *   (valid_to IS NULL OR valid_to > T)`. A version is the sign's typed values
 *   and position (its `fingerprint`, live.ts), and its properties where the
 *   snapshots kept them whole; a sign that is absent from a snapshot and back
 *   later starts a new version.
 */
const CONDITION_FIELDS = [
  'category',
  'time_validity',
  'emission_class',
  'fuel_type',
  'axle_weight',
  'height',
  'length',
  'weight',
  'width',
] as const;

function restrictionsSql(latest: string): string {
  const fields = CONDITION_FIELDS.map((f) => `c.${f}`).join(', ');
  const any = ['c.vehicle_type', 'c.category']
    .map((l) => `len(${l}) > 0`)
    .concat(CONDITION_FIELDS.slice(1).map((f) => `c.${f} IS NOT NULL`))
    .join(' OR ');
  return `SELECT sign_id, rvv_code, kind, "condition",
    unnest(CASE WHEN len(c.vehicle_type) > 0 THEN c.vehicle_type ELSE [NULL] END) AS vehicle_type,
    ${fields}
  FROM (
    SELECT sign_id, rvv_code, 'restriction' AS kind, 1 AS "condition", conditions.restrictions AS c
    FROM ${latest}
    UNION ALL
    SELECT sign_id, rvv_code, 'exemption', generate_subscripts(conditions.exemptions, 1), unnest(conditions.exemptions)
    FROM ${latest}
  )
  WHERE c IS NOT NULL AND (${any})`;
}

function historySql(all: string): string {
  return `WITH moments AS (
    SELECT snapshot, lead(snapshot) OVER (ORDER BY snapshot) AS next_snapshot
    FROM (SELECT DISTINCT snapshot FROM ${all})
  ),
  rows AS (
    SELECT s.*, m.next_snapshot
    FROM (
      SELECT *, fingerprint AS _version_hash,
        CASE WHEN properties IS NOT NULL THEN hash(properties::VARCHAR) END AS _kept_hash
      FROM ${all}
    ) AS s JOIN moments AS m USING (snapshot)
  ),
  marked AS (
    SELECT *,
      CASE WHEN lag(_version_hash) OVER w IS DISTINCT FROM _version_hash
             OR lag(_kept_hash) OVER w <> _kept_hash
             OR lag(next_snapshot) OVER w IS DISTINCT FROM snapshot THEN 1 ELSE 0 END AS _starts
    FROM rows WINDOW w AS (PARTITION BY sign_id ORDER BY snapshot)
  ),
  numbered AS (
    SELECT *, sum(_starts) OVER (PARTITION BY sign_id ORDER BY snapshot) AS _version
    FROM marked
  ),
  versions AS (
    SELECT sign_id, _version, min(snapshot) AS valid_from, arg_max(next_snapshot, snapshot) AS valid_to,
      arg_max(next_snapshot IS NULL, snapshot) AS _current
    FROM numbered GROUP BY ALL
  )
  SELECT v.valid_from, CASE WHEN v._current THEN NULL ELSE v.valid_to END AS valid_to,
    n.* EXCLUDE (snapshot, next_snapshot, _version_hash, _kept_hash, _starts, _version)
  FROM numbered AS n
  JOIN versions AS v ON v.sign_id = n.sign_id AND v._version = n._version AND n.snapshot = v.valid_from`;
}

/** The views of the dataset of live snapshots: name -> SQL, given its view and its latest snapshot's. */
export function liveViews(all: string, latest: string): Record<string, string> {
  return {
    signs_live_restrictions: restrictionsSql(latest),
    signs_live_history: historySql(all),
  };
}
