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
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Publication } from '../config/schema.js';
import type { Database } from '../duckdb/database.js';
import { coverage, type Coverage } from './dataset-coverage.js';
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
  schema: string | undefined,
): Record<string, unknown> {
  const format = FORMATS[extract.format];
  return {
    '@type': 'dcat:Distribution',
    'dct:title': extract.path.replace(/^exports\//, ''),
    ...(schema ? { 'dct:conformsTo': { '@id': schema } } : {}),
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

/** The JSON-LD of the dataset, from what the folder holds (`extracts`: with their sidecars). */
export function describeDataset(
  publication: Publication,
  fallback: { title: string; description: string; identifier?: string },
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
  const identifier =
    publication.identifier ?? (base ? `${base}dataset.jsonld` : (fallback.identifier ?? ''));
  const sidecars = new Set(extracts.map((e) => e.path));
  return {
    '@context': CONTEXT,
    '@type': 'dcat:Dataset',
    ...(identifier ? { '@id': identifier } : {}),
    'dct:conformsTo': { '@id': 'https://docs.geostandaarden.nl/dcat/dcat-ap-nl30/' },
    'dct:identifier': identifier,
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
    'dcat:distribution': distributed(extracts).map((e) => {
      // A CSV's CSVW metadata (its columns and their types) is the schema it conforms to.
      const metadata = e.path.replace(/\.csv$/, '.csv-metadata.json');
      const schema = e.format === 'csv' && sidecars.has(metadata) ? url(metadata) : undefined;
      return distribution(e, publication.license, url(e.path), schema);
    }),
  };
}

/** The extracts a data portal distributes: not their sidecars (CSVW, CSVT) nor the description itself. */
export function distributed(exports: readonly ExportRecord[]): ExportRecord[] {
  return exports.filter((e) => FORMATS[e.format] !== undefined);
}

/**
 * The folder's own identifier: the urn:uuid its last description gave it, or
 * a new one (the next description keeps it).
 */
async function keptIdentifier(output: string, files: FolderFiles): Promise<string> {
  const path = join(output, DATASET_DESCRIPTION);
  if (files.size(path) !== undefined) {
    await files.bring([path]);
    const last = await readFile(path, 'utf8')
      .then((text) => (JSON.parse(text) as Record<string, unknown>)['dct:identifier'])
      .catch(() => undefined);
    if (typeof last === 'string' && /^urn:uuid:[0-9a-f-]{36}$/.test(last)) return last;
  }
  return `urn:uuid:${randomUUID()}`;
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
  const names = extracts.map((e) => e.path.replace(/^exports\//, ''));
  const holds = [
    ...(names.some((n) => n.includes('sign')) ? ['traffic signs'] : []),
    ...(names.some((n) => n.includes('bicycle')) ? ['bicycle counts'] : []),
  ];
  const description = describeDataset(
    pipeline.publication,
    {
      title: pipeline.description ?? `NDW road data: the extracts of ${pipeline.name}`,
      description: `Extracts of the Dutch national road data of NDW${holds.length > 0 ? ` (${holds.join(', ')})` : ''}, written by road-etl: ${names.join(', ')}`,
      identifier: await keptIdentifier(output, folder.files),
    },
    exports,
    found,
  );
  await writeFileAtomic(
    join(output, DATASET_DESCRIPTION),
    `${JSON.stringify(description, null, 2)}\n`,
    scratchFolder(output),
  );
  return true;
}

/** The publisher the shipped pipelines name: a setting still to fill. */
const PLACEHOLDER_PUBLISHER = 'Your organisation';

/**
 * What a data portal will miss in the description of a pipeline's extracts:
 * DCAT-AP-NL 3.0 requires a publisher and a contact point, which only the
 * operator can name (`publication:`). Empty where both are set.
 */
export function publicationWarnings(publication: Publication): string[] {
  const warnings: string[] = [];
  const { publisher, contact_email: email } = publication;
  if (!publisher || publisher === PLACEHOLDER_PUBLISHER)
    warnings.push(
      `publication.publisher is ${publisher ? `still the placeholder "${publisher}"` : 'not set'}: name who publishes the extracts (exports/dataset.jsonld; DCAT-AP-NL 3.0 requires dct:publisher)`,
    );
  // RFC 2606's example domains are no one's address.
  if (!email || /@example\.(org|com|net)$/i.test(email))
    warnings.push(
      `publication.contact_email is ${email ? `still the placeholder ${email}` : 'not set'}: give the address for questions about the extracts (DCAT-AP-NL 3.0 requires dcat:contactPoint)`,
    );
  return warnings;
}
