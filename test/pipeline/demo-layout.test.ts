import { readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { readManifest } from '../helpers/pipeline.js';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli } from '../helpers/cli.js';
import { copyOfDemo } from '../helpers/demo.js';
import { duck } from '../helpers/tmp.js';

/** Parquet files below a folder (by their names in its commit), by the folder that holds them. */
async function parquetByFolder(root: string): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>();
  const walk = async (folder: string): Promise<void> => {
    for (const entry of await readdir(folder, { withFileTypes: true })) {
      if (entry.isDirectory()) {
        if (entry.name !== '.state') await walk(join(folder, entry.name));
      } else if (entry.name.endsWith('.parquet')) {
        // Each file by its name in the folder's commit (on disk: its version's object).
        const key = relative(root, folder);
        const name = entry.name.replace(/\.v\d{8}T\d{6}Z-[0-9a-f]{6}\.parquet$/, '.parquet');
        found.set(key, [...(found.get(key) ?? []), name].sort());
      }
    }
  };
  await walk(root);
  return found;
}

describe('the layout of the demo output', () => {
  it('holds at most one file per partition, a month of the sparse event feed in one, and a rerun adds none', async () => {
    // The first run is the shared one, on a copy of its output: the second runs on that copy.
    const { run: first, output } = await copyOfDemo();
    const args = ['run', join(ROOT, 'pipelines', 'demo.yaml'), '--output', output];
    expect(first.code, first.stderr).toBe(0);

    const files = await parquetByFolder(output);
    const crowded = [...files].filter(([, names]) => names.length > 1);
    expect(crowded).toEqual([]);
    // The sparse demo feed (a few events a day, over years) is one file per month.
    const days = [...files.keys()].filter((f) => f.startsWith('signs/events/publication_month='));
    expect(days.length).toBeGreaterThan(12);
    const [spread] = await duck(
      `SELECT count(DISTINCT publication_date)::INTEGER AS dates, count(*)::INTEGER AS n
       FROM read_parquet('${output}/signs/events/*/*.parquet')`,
    );
    expect(spread!['dates']).toBeGreaterThan(10 * days.length);
    expect(spread!['n']).toBeGreaterThan(100 * days.length);
    // Every event is there once, and the manifest lists exactly the files that are there.
    const { run: manifest } = await readManifest(output);
    const events = manifest.steps.find((s) => s.id === 'signs_events')!;
    const [counted] = await duck(
      `SELECT count(*)::INTEGER AS n, count(DISTINCT event_hash)::INTEGER AS distinct_events
       FROM read_parquet('${output}/signs/events/**/*.parquet')`,
    );
    expect(counted).toEqual({ n: events.rows_out, distinct_events: events.rows_out });
    const listed = events.files.map((f) => f.path).filter((p) => p.startsWith('signs/events/'));
    expect(listed.sort()).toEqual(
      days.flatMap((day) => files.get(day)!.map((name) => `${day}/${name}`)).sort(),
    );

    const second = await runCli(args, { env: {} });
    expect(second.code, second.stderr).toBe(0);
    expect(await parquetByFolder(output)).toEqual(files);
  }, 120_000);
});
