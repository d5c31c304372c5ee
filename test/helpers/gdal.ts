/**
 * GDAL, as a reader of the spatial extracts: Debian's gdal-bin (ogrinfo,
 * ogr2ogr), which CI installs. Without it the tests that need it are skipped,
 * with a warning that says how to have them.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const OGRINFO: string | undefined = ['/usr/bin/ogrinfo', '/usr/local/bin/ogrinfo'].find(
  (p) => existsSync(p),
);
export const NO_GDAL =
  'no GDAL (ogrinfo, ogr2ogr): the tests that open the spatial extracts with it are skipped (apt-get install gdal-bin)';

/** A bounding box: west, south, east, north. */
export type Box = [number, number, number, number];

export interface LayerSummary {
  name: string;
  count: number;
  /** The authority code GDAL gives the layer's CRS (e.g. EPSG 4326). */
  crs: string | undefined;
  extent: Box | undefined;
  /** Field name to GDAL's type, as ogrinfo shows it (`Integer64`, `Integer(Boolean)`, `DateTime`...). */
  fields: Record<string, string>;
}

/** What ogrinfo says of the file's only layer (with a spatial filter: of the features it finds). */
export async function ogrSummary(file: string, box?: Box): Promise<LayerSummary> {
  const spat = box ? ['-spat', ...box.map(String)] : [];
  const { stdout } = await run(OGRINFO!, ['-ro', '-so', '-al', ...spat, file], {
    maxBuffer: 64 * 1024 * 1024,
  });
  const extent = /^Extent: \((\S+), (\S+)\) - \((\S+), (\S+)\)$/m.exec(stdout);
  const ids = [...stdout.matchAll(/ID\["(\w+)",(\d+)\]\]?$/gm)];
  const last = ids.at(-1); // the CRS's own (the last ID of its WKT)
  const fieldsAt = stdout.indexOf('Data axis to CRS axis mapping');
  const fields: Record<string, string> = {};
  for (const [, name, type] of stdout
    .slice(fieldsAt)
    .matchAll(/^(\w+): ([A-Za-z0-9()]+) \(\d+\.\d+\)$/gm))
    fields[name!] = type!;
  return {
    name: /^Layer name: (.*)$/m.exec(stdout)?.[1] ?? '',
    count: Number(/^Feature Count: (\d+)$/m.exec(stdout)?.[1]),
    crs: last ? `${last[1]}:${last[2]}` : undefined,
    extent: extent ? (extent.slice(1, 5).map(Number) as Box) : undefined,
    fields,
  };
}

export interface GdalFeature {
  properties: Record<string, unknown>;
  geometry: { type: string; coordinates: [number, number] } | null;
}

/** Every feature of the file as GDAL reads it (converted by ogr2ogr to GeoJSON), or those in a box. */
export async function ogrFeatures(file: string, box?: Box): Promise<GdalFeature[]> {
  const ogr2ogr = join(dirname(OGRINFO!), 'ogr2ogr');
  const spat = box ? ['-spat', ...box.map(String)] : [];
  const { stdout } = await run(
    ogr2ogr,
    ['-f', 'GeoJSON', '-lco', 'COORDINATE_PRECISION=15', ...spat, '/vsistdout/', file],
    { maxBuffer: 1024 * 1024 * 1024 },
  );
  return (JSON.parse(stdout) as { features: GdalFeature[] }).features;
}
