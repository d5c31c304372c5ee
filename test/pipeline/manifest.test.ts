import { createHash } from 'node:crypto';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';
import { BICYCLE_SQL } from '../helpers/bicycle.js';
import { readManifest, runDefinition } from '../helpers/pipeline.js';
import { useSimulator } from '../helpers/simulator.js';
import { testDir } from '../helpers/tmp.js';
import { writeReport } from '../../src/report/index.js';

const simulator = await useSimulator({
  seed: 31,
  signs: { signs: 300 },
  bicycle: { locations: 20 },
});

async function shippedRun(
  dir: string,
  pipeline: string,
  sqlFiles: string[],
  params: Record<string, string>,
) {
  const sql = Object.fromEntries(
    await Promise.all(sqlFiles.map(async (f) => [f, await readFile(join(ROOT, 'sql', f), 'utf8')])),
  ) as Record<string, string>;
  const result = await runDefinition(
    dir,
    await readFile(join(ROOT, 'pipelines', pipeline), 'utf8'),
    sql,
    { env: { ...simulator.env }, params },
  );
  expect(result.summary.status, result.failure?.message).toBe('succeeded');
  return result.output;
}

/** Every file under exports/ with its size and sha256, computed here. */
async function onDisk(output: string): Promise<Map<string, { bytes: number; sha256: string }>> {
  const found = new Map<string, { bytes: number; sha256: string }>();
  for (const name of (await readdir(join(output, 'exports'), { recursive: true })).map(String)) {
    const data = await readFile(join(output, 'exports', name)).catch(() => undefined);
    if (!data) continue; // a folder
    found.set(`exports/${name}`, {
      bytes: data.length,
      sha256: createHash('sha256').update(data).digest('hex'),
    });
  }
  return found;
}

async function expectEveryExportListed(output: string): Promise<void> {
  const { manifest } = await readManifest(output);
  const disk = await onDisk(output);
  expect(manifest.exports.map((e) => e.path)).toEqual([...disk.keys()].sort());
  for (const e of manifest.exports) {
    expect({ bytes: e.bytes, sha256: e.sha256 }, e.path).toEqual(disk.get(e.path));
    // A CSV's rows are its lines but the header (the counts here hold no line breaks).
    if (e.format === 'csv' && e.rows !== null) {
      const text = await readFile(join(output, e.path), 'utf8');
      expect(text.split('\r\n').filter((l) => l !== '').length - 1, e.path).toBe(e.rows);
    }
  }
}

describe('one folder, several pipelines', () => {
  it('names in manifest.json every pipeline that wrote the folder and every file under exports/, night after night', async () => {
    const dir = await testDir();
    const bicycle = (start: string, end: string) =>
      shippedRun(join(dir, 'bicycle'), 'bicycle.yaml', BICYCLE_SQL, {
        start,
        end,
        prefixes: 'GAL',
      });
    const output = await bicycle('2026-10-29T00:00:00Z', '2026-11-01T00:00:00Z');
    // The other pipeline writes into the same folder.
    const live = await shippedRun(
      join(dir, 'bicycle'),
      'traffic-signs-live.yaml',
      ['signs_live_changes.sql'],
      {},
    );
    expect(live).toBe(output);

    const { manifest } = await readManifest(output);
    expect(Object.keys(manifest.pipelines).sort()).toEqual(['bicycle', 'traffic_signs_live']);
    expect(manifest.last_run).toMatchObject({
      pipeline: 'traffic_signs_live',
      status: 'succeeded',
    });
    expect(manifest.pipelines['bicycle']!.steps.map((s) => s.id)).toContain('bicycle_measurements');
    await expectEveryExportListed(output);
    const writers = new Map(manifest.exports.map((e) => [e.path, e.pipeline]));
    expect(writers.get('exports/signs_live.csv')).toBe('traffic_signs_live');
    expect(writers.get('exports/bicycle_hourly/2026-10.csv')).toBe('bicycle');
    expect(writers.get('exports/bicycle_daily/2026-11.csv')).toBe('bicycle');

    // The next night rewrites November's files, and October's bytes stay as they were (its
    // lookback may ask again for hours missing there); the manifest still names them all.
    const before = await onDisk(output);
    await bicycle('2026-11-01T00:00:00Z', '2026-11-02T00:00:00Z');
    const after = await onDisk(output);
    expect(after.get('exports/bicycle_hourly/2026-10.csv')).toEqual(
      before.get('exports/bicycle_hourly/2026-10.csv'),
    );
    expect(after.get('exports/bicycle_hourly/2026-11.csv')).not.toEqual(
      before.get('exports/bicycle_hourly/2026-11.csv'),
    );
    expect(after.get('exports/signs_live.fgb')).toEqual(before.get('exports/signs_live.fgb'));
    await expectEveryExportListed(output);
    const latest = await readManifest(output);
    expect(Object.keys(latest.manifest.pipelines).sort()).toEqual([
      'bicycle',
      'traffic_signs_live',
    ]);
    expect(latest.run.exports.map((e) => e.path)).toContain('exports/bicycle_hourly/2026-11.csv');
    // October's extract is written again only where the night asked for hours of October.
    const fetched = latest.run.steps.find((s) => s.id === 'bicycle_measurements')!.plan as {
      builds: { partitions: string[] }[];
    };
    const october = fetched.builds[0]!.partitions.some((d) => d.startsWith('2026-10'));
    expect(
      latest.run.exports.map((e) => e.path).includes('exports/bicycle_hourly/2026-10.csv'),
    ).toBe(october);

    // The same night again writes the same bytes: each extract keeps when it last changed.
    const modified = (m: Awaited<ReturnType<typeof readManifest>>['manifest']) =>
      new Map(m.exports.map((e) => [e.path, e.written_at]));
    const description = await readFile(join(output, 'exports/dataset.jsonld'), 'utf8');
    await bicycle('2026-11-01T00:00:00Z', '2026-11-02T00:00:00Z');
    expect(await onDisk(output)).toEqual(after);
    expect(modified((await readManifest(output)).manifest)).toEqual(modified(latest.manifest));
    expect(await readFile(join(output, 'exports/dataset.jsonld'), 'utf8')).toBe(description);

    // The report describes every pipeline of the folder.
    await writeReport(output);
    const html = await readFile(join(output, 'report/index.html'), 'utf8');
    expect(html).toContain('data-pipeline="bicycle"');
    expect(html).toContain('data-pipeline="traffic_signs_live"');
  });
});
