/**
 * `exports/dataset.jsonld`: the extracts described for a data portal
 * (data.overheid.nl, PDOK, a bucket's catalogue) as a DCAT-AP-NL 3.0 Dataset
 * in JSON-LD: title, description, licence, publisher and contact (from the
 * definition's `publication`), the temporal and spatial coverage of the data
 * they are made from, and a Distribution per extract file with its media
 * type, byte size and SHA-256 (as the manifest lists them). Written at the end
 * of every run that finds extracts; the same folder gives the same bytes, so
 * that it changes only when the extracts do.
 */
import { join } from 'node:path';
import type { Publication } from '../config/schema.js';
import { quotedIdentifier, quotedString, type Database } from '../duckdb/database.js';
import { discoverDatasets } from '../duckdb/datasets.js';
import { partitionValues } from '../duckdb/partitions.js';
import { scratchFolder } from '../layout.js';
import type { ExportRecord } from '../manifest.js';
import { writeFileAtomic } from '../util/fs.js';
import type { FolderFiles } from '../duckdb/folder-files.js';

export const DATASET_DESCRIPTION = 'exports/dataset.jsonld';

const IANA = 'https://www.iana.org/assignments/media-types/';
const FILE_TYPE = 'http://publications.europa.eu/resource/authority/file-type/';

/** Media type and EU file type of each extract format. */
const FORMATS: Record<string, { mediaType: string; fileType?: string }> = {
  csv: { mediaType: 'text/csv', fileType: 'CSV' },
  geojson: { mediaType: 'application/geo+json', fileType: 'GEOJSON' },
  flatgeobuf: { mediaType: 'application/vnd.flatgeobuf' },
  parquet: { mediaType: 'application/vnd.apache.parquet', fileType: 'PARQUET' },
};

/** Where the data's instants are, by view: the coverage in time is their span. */
const TIMES: readonly (readonly [string, string])[] = [
  ['bicycle_measurements', 'measurement_hour'],
  ['signs_events', 'publication_timestamp'],
  ['signs_live_snapshots', 'downloaded_at'],
];

/** Where the data's positions are, by view: the coverage in space is their bounding box. */
const POSITIONS: readonly (readonly [string, string, string])[] = [
  ['bicycle_locations', 'longitude', 'latitude'],
  ['signs_current_state', 'location_wgs84_longitude', 'location_wgs84_latitude'],
  ['signs_live', 'longitude', 'latitude'],
];

interface Coverage {
  start: string | undefined;
  end: string | undefined;
  /** West, south, east, north (WGS 84). */
  box: [number, number, number, number] | undefined;
}

/**
 * A filter to the first and last partitions of a dataset kept by date or
 * instant, where its first and last instants lie: a year of partitions is not
 * read for two of them (nor fetched, in an object store). '' for any other.
 */
async function firstAndLast(
  { output, files }: { output: string; files: FolderFiles },
  name: string,
): Promise<string> {
  const dataset = (await discoverDatasets(output, files)).find((d) => d.name === name);
  if (!dataset?.partitioned) return '';
  const { column, values } = await partitionValues(dataset.folder, files);
  const type = column === undefined ? undefined : dataset.hiveTypes[column];
  if (column === undefined || type === undefined || values.length === 0) return '';
  values.sort();
  const ends = [values[0]!, values.at(-1)!].map((v) => `CAST(${quotedString(v)} AS ${type})`);
  return ` WHERE ${quotedIdentifier(column)} IN (${ends.join(', ')})`;
}

async function coverage(
  db: Database,
  folder: { output: string; files: FolderFiles },
): Promise<Coverage> {
  const views = new Set(
    (await db.all(`SELECT view_name FROM duckdb_views() WHERE NOT internal`)).map((r) =>
      String(r['view_name']),
    ),
  );
  const times: string[] = [];
  for (const [view, column] of TIMES.filter(([name]) => views.has(name)))
    times.push(
      `SELECT min(${column}) AS lo, max(${column}) AS hi FROM ${view}${await firstAndLast(folder, view)}`,
    );
  let start: string | undefined;
  let end: string | undefined;
  if (times.length > 0) {
    const [span] = await db.all(
      `SELECT strftime(timezone('UTC', min(lo)), '%Y-%m-%dT%H:%M:%SZ') AS lo,
              strftime(timezone('UTC', max(hi)), '%Y-%m-%dT%H:%M:%SZ') AS hi
       FROM (${times.join(' UNION ALL ')})`,
    );
    start = (span?.['lo'] as string | null) ?? undefined;
    end = (span?.['hi'] as string | null) ?? undefined;
  }
  const positions = POSITIONS.filter(([view]) => views.has(view)).map(
    ([view, lon, lat]) =>
      `SELECT min(${lon}) AS w, min(${lat}) AS s, max(${lon}) AS e, max(${lat}) AS n FROM ${view}
       WHERE ${lon} BETWEEN -180 AND 180 AND ${lat} BETWEEN -90 AND 90`,
  );
  let box: Coverage['box'];
  if (positions.length > 0) {
    const [b] = await db.all(
      `SELECT min(w) AS w, min(s) AS s, max(e) AS e, max(n) AS n FROM (${positions.join(' UNION ALL ')})`,
    );
    if (b && b['w'] !== null) box = [b['w'], b['s'], b['e'], b['n']].map(Number) as Coverage['box'];
  }
  return { start, end, box };
}

/** Seven decimals, about a centimetre. */
const coordinate = (n: number): string => String(Math.round(n * 1e7) / 1e7);

const dateTime = (value: string) => ({ '@value': value, '@type': 'xsd:dateTime' });

/** dct:temporal and dct:spatial of what the folder covers. */
function coverageTerms(found: Coverage): Record<string, unknown> {
  const terms: Record<string, unknown> = {};
  if (found.start && found.end)
    terms['dct:temporal'] = {
      '@type': 'dct:PeriodOfTime',
      'dcat:startDate': dateTime(found.start),
      'dcat:endDate': dateTime(found.end),
    };
  if (found.box) {
    const [w, s, e, n] = found.box;
    const ring = [
      [w, s],
      [e, s],
      [e, n],
      [w, n],
      [w, s],
    ].map(([x, y]) => `${coordinate(x!)} ${coordinate(y!)}`);
    terms['dct:spatial'] = {
      '@type': 'dct:Location',
      'dcat:bbox': { '@value': `POLYGON((${ring.join(', ')}))`, '@type': 'gsp:wktLiteral' },
    };
  }
  return terms;
}

/** Who made the data (NDW), who publishes the extracts and whom to ask, as far as known. */
function agentTerms(publication: Publication): Record<string, unknown> {
  const agent = (name: string, uri?: string) => ({
    ...(uri ? { '@id': uri } : {}),
    '@type': 'foaf:Agent',
    'foaf:name': name,
  });
  return {
    'dct:creator': agent('Nationaal Dataportaal Wegverkeer (NDW)', 'https://www.ndw.nu/'),
    ...(publication.publisher
      ? { 'dct:publisher': agent(publication.publisher, publication.publisher_uri) }
      : {}),
    ...(publication.contact_email
      ? {
          'dcat:contactPoint': {
            '@type': 'vcard:Organization',
            'vcard:fn': publication.publisher ?? publication.contact_email,
            'vcard:hasEmail': { '@id': `mailto:${publication.contact_email}` },
          },
        }
      : {}),
  };
}

/** The Distribution of one extract file. */
function distribution(
  extract: ExportRecord,
  license: string,
  url: string,
): Record<string, unknown> {
  const format = FORMATS[extract.format];
  return {
    '@type': 'dcat:Distribution',
    'dct:title': extract.path.replace(/^exports\//, ''),
    'dcat:accessURL': { '@id': url },
    'dcat:downloadURL': { '@id': url },
    'dct:license': { '@id': license },
    ...(format ? { 'dcat:mediaType': { '@id': `${IANA}${format.mediaType}` } } : {}),
    ...(format?.fileType ? { 'dct:format': { '@id': `${FILE_TYPE}${format.fileType}` } } : {}),
    'dcat:byteSize': { '@value': String(extract.bytes), '@type': 'xsd:nonNegativeInteger' },
    'spdx:checksum': {
      '@type': 'spdx:Checksum',
      'spdx:algorithm': { '@id': 'spdx:checksumAlgorithm_sha256' },
      'spdx:checksumValue': { '@value': extract.sha256, '@type': 'xsd:hexBinary' },
    },
    ...(extract.written_at ? { 'dct:modified': dateTime(extract.written_at) } : {}),
  };
}

const CONTEXT = {
  dcat: 'http://www.w3.org/ns/dcat#',
  dct: 'http://purl.org/dc/terms/',
  foaf: 'http://xmlns.com/foaf/0.1/',
  vcard: 'http://www.w3.org/2006/vcard/ns#',
  spdx: 'http://spdx.org/rdf/terms#',
  xsd: 'http://www.w3.org/2001/XMLSchema#',
  gsp: 'http://www.opengis.net/ont/geosparql#',
};

const EU = 'http://publications.europa.eu/resource/authority/';

/** The JSON-LD of the dataset, from what the folder holds. */
export function describeDataset(
  publication: Publication,
  fallback: { title: string; description: string },
  extracts: readonly ExportRecord[],
  found: Coverage,
): Record<string, unknown> {
  const base = publication.base_url?.replace(/\/?$/, '/');
  const url = (path: string): string => `${base ?? ''}${path.replace(/^exports\//, '')}`;
  const modified = extracts
    .map((e) => e.written_at)
    .filter((t): t is string => t !== undefined)
    .sort()
    .at(-1);
  return {
    '@context': CONTEXT,
    '@type': 'dcat:Dataset',
    ...(base ? { '@id': `${base}dataset.jsonld` } : {}),
    'dct:conformsTo': { '@id': 'https://docs.geostandaarden.nl/dcat/dcat-ap-nl30/' },
    'dct:identifier': base ? `${base}dataset.jsonld` : 'road-etl extracts',
    'dct:title': { '@value': publication.title ?? fallback.title, '@language': 'en' },
    'dct:description': {
      '@value': publication.description ?? fallback.description,
      '@language': 'en',
    },
    'dct:license': { '@id': publication.license },
    'dct:accessRights': { '@id': `${EU}access-right/PUBLIC` },
    'dcat:theme': { '@id': `${EU}data-theme/TRAN` },
    'dct:language': { '@id': `${EU}language/NLD` },
    ...agentTerms(publication),
    ...(modified ? { 'dct:modified': dateTime(modified) } : {}),
    ...coverageTerms(found),
    'dcat:distribution': extracts.map((e) => distribution(e, publication.license, url(e.path))),
  };
}

/** The extracts a data portal distributes: not their sidecars (CSVW, CSVT) nor the description itself. */
export function distributed(exports: readonly ExportRecord[]): ExportRecord[] {
  return exports.filter((e) => FORMATS[e.format] !== undefined);
}

/**
 * Writes exports/dataset.jsonld for the extracts on disk (`exports`, as the
 * manifest lists them), their coverage from `db` (the folder's views); nothing
 * when there are none. Resolves to whether it wrote.
 */
export async function writeDatasetDescription(
  db: Database,
  folder: { output: string; files: FolderFiles },
  pipeline: { name: string; description: string | undefined; publication: Publication },
  exports: readonly ExportRecord[],
): Promise<boolean> {
  const extracts = distributed(exports);
  if (extracts.length === 0) return false;
  const found = await coverage(db, folder);
  const { output } = folder;
  const description = describeDataset(
    pipeline.publication,
    {
      title: pipeline.description ?? `NDW road data: the extracts of ${pipeline.name}`,
      description:
        'Extracts of the Dutch national road data of NDW (traffic signs, bicycle counts), written by road-etl: ' +
        extracts.map((e) => e.path.replace(/^exports\//, '')).join(', '),
    },
    extracts,
    found,
  );
  await writeFileAtomic(
    join(output, DATASET_DESCRIPTION),
    `${JSON.stringify(description, null, 2)}\n`,
    scratchFolder(output),
  );
  return true;
}
