/**
 * The folder as the readers users use open it: pyarrow, pandas, polars and
 * geopandas themselves (test/python/read_datasets.py), on the demo's output
 * and on a folder of three nights of today's API. Every dataset opens, an
 * empty one too, with as many rows as DuckDB counts; identifiers and JSON are
 * text, instants UTC, partition columns dates.
 */
import { readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';
import { sharedDemo } from '../helpers/demo.js';
import { runDefinition } from '../helpers/pipeline.js';
import { NO_PYTHON, PYTHON, python } from '../helpers/python.js';
import { useSimulator } from '../helpers/simulator.js';
import { duck, testDir } from '../helpers/tmp.js';
import { readFile } from 'node:fs/promises';

if (!PYTHON) console.warn(`${import.meta.filename}: ${NO_PYTHON}`);

interface Read {
  rows?: number;
  types?: Record<string, string>;
  error?: string;
}

/** The dataset folders of an output (relative), each holding Parquet files itself or in partitions. */
async function datasets(output: string): Promise<string[]> {
  const found = new Set<string>();
  for (const file of (await readdir(output, { recursive: true })).map(String)) {
    if (!file.endsWith('.parquet') || file.split('/').some((p) => p.startsWith('.'))) continue;
    const parts = file.split('/').slice(0, -1);
    found.add((parts.at(-1)?.includes('=') ? parts.slice(0, -1) : parts).join('/'));
  }
  return [...found].sort();
}

/** What each reader gives of each dataset, checked against DuckDB's count and types. */
async function expectReadersAgree(output: string): Promise<Record<string, Record<string, Read>>> {
  const names = await datasets(output);
  const read = JSON.parse(
    await python([join(ROOT, 'test', 'python', 'read_datasets.py'), output, ...names], output),
  ) as Record<string, Record<string, Read>>;
  for (const name of names) {
    const glob = `${join(output, name)}/**/*.parquet`;
    const [count] = await duck(`SELECT count(*) AS n FROM read_parquet('${glob}')`);
    const columns = await duck(
      `SELECT column_name AS name, column_type AS type FROM (DESCRIBE SELECT * FROM read_parquet('${glob}', hive_partitioning = true, union_by_name = true))`,
    );
    const partition = (await readdir(join(output, name)))
      .find((n) => n.includes('='))
      ?.split('=')[0];
    for (const [reader, result] of Object.entries(read[name]!)) {
      const where = `${name} in ${reader}`;
      expect(result.error, where).toBeUndefined();
      expect(result.rows, where).toBe(Number(count?.['n']));
      if (reader === 'geopandas') {
        expect(result.types!['crs'], where).toMatch(/^(OGC:CRS84|EPSG:4326)$/);
        continue;
      }
      const types = result.types!;
      for (const { name: column, type } of columns as { name: string; type: string }[]) {
        const got = types[column];
        if (column === partition) {
          // The partition column: a date where the reader is given or finds its type.
          if (reader === 'pyarrow') expect(got, `${where}: ${column}`).toBe('date32[day]');
          if (reader === 'polars') expect(got, `${where}: ${column}`).toBe('Date');
        } else if (type === 'VARCHAR') {
          expect(got, `${where}: ${column}`).toMatch(/^(string|large_string|str|String)$/);
        } else if (type === 'TIMESTAMP WITH TIME ZONE') {
          expect(got, `${where}: ${column}`).toMatch(
            /^(timestamp\[us, tz=UTC\]|datetime64\[us, UTC\]|Datetime\(time_unit='us', time_zone='UTC'\))$/,
          );
        } else if (type === 'UBIGINT' || type === 'UINTEGER') {
          throw new Error(
            `${where}: ${column} is ${type}, which Java and Spark readers do not have`,
          );
        }
      }
    }
  }
  return read;
}

/** What rdflib finds in a folder's exports/dataset.jsonld (test/python/check_dcat.py). */
async function describedAs(output: string): Promise<{
  datasets: { node: string; blank: boolean; identifier: string }[];
  distributions: number;
  missing: string[];
  csv_schemas: Record<string, string | null>;
}> {
  const printed = await python(
    [join(ROOT, 'test', 'python', 'check_dcat.py'), join(output, 'exports', 'dataset.jsonld')],
    output,
  );
  return JSON.parse(printed) as Awaited<ReturnType<typeof describedAs>>;
}

describe.skipIf(!PYTHON)('the folder in pyarrow, pandas, polars and geopandas', () => {
  it("opens every dataset of the demo's folder alike, with DuckDB's rows and types", async () => {
    const { output } = await sharedDemo();
    const read = await expectReadersAgree(output);
    // Those with a position open in geopandas as points in WGS 84.
    expect(Object.keys(read).filter((name) => 'geopandas' in read[name]!)).toEqual(
      expect.arrayContaining([
        'bicycle/locations',
        'derived/signs_current_state',
        'signs/live_snapshots',
      ]),
    );
    // Counts are integers, sums of them too.
    for (const dataset of ['derived/bicycle_daily', 'derived/bicycle_counter_days']) {
      expect(read[dataset]?.['pyarrow']?.types?.['total'], dataset).toBe('int64');
      expect(read[dataset]?.['polars']?.types?.['total'], dataset).toBe('Int64');
    }
    // The demo's one night of today's API has no change yet: an empty dataset, opened alike.
    expect(read['derived/signs_live_changes']?.['pyarrow']?.rows).toBe(0);
  }, 120_000);

  it("describes the demo's extracts with every property DCAT-AP-NL 3.0 requires (rdflib)", async () => {
    const { output } = await sharedDemo();
    const dcat = await describedAs(output);
    expect(dcat.missing).toEqual([]);
    // One dataset, a named node: its identifier, kept by the folder.
    expect(dcat.datasets).toHaveLength(1);
    expect(dcat.datasets[0]).toMatchObject({ blank: false });
    expect(dcat.datasets[0]!.identifier).toMatch(/^urn:uuid:[0-9a-f-]{36}$/);
    expect(dcat.distributions).toBeGreaterThan(8);
    // Each CSV conforms to its CSVW metadata, which is there beside it.
    const csvs = Object.entries(dcat.csv_schemas);
    expect(csvs.length).toBeGreaterThan(3);
    for (const [csv, schema] of csvs) {
      expect(schema, csv).toBe(`file://${join(output, 'exports', csv)}-metadata.json`);
      await expect(
        readFile(join(output, 'exports', `${csv}-metadata.json`)),
      ).resolves.toBeDefined();
    }
  }, 60_000);

  it("opens every dataset of three nights of today's API alike", async () => {
    const live = await useSimulator({ seed: 38, signs: { signs: 300 }, bicycle: { locations: 5 } });
    const dir = await testDir();
    const yaml = await readFile(join(ROOT, 'pipelines', 'traffic-signs-live.yaml'), 'utf8');
    const sql = {
      'signs_live_changes.sql': await readFile(join(ROOT, 'sql', 'signs_live_changes.sql'), 'utf8'),
    };
    const start = live.world.now;
    let output = '';
    const identifiers: string[] = [];
    for (let night = 0; night < 3; night++) {
      live.world.setNow(new Date(start + night * 86_400_000).toISOString());
      const run = await runDefinition(dir, yaml, sql, { env: { ...live.env } });
      expect(run.summary.status, run.failure?.message).toBe('succeeded');
      output = run.output;
      identifiers.push((await describedAs(output)).datasets[0]!.identifier);
    }
    const read = await expectReadersAgree(output);
    expect(read['derived/signs_live_changes']?.['polars']?.rows).toBeGreaterThan(0);
    // docs/reading.md's pandas recipe of today's API, as written: one row per sign of the
    // latest snapshot, though the folder holds three.
    const page = await readFile(join(ROOT, 'docs', 'reading.md'), 'utf8');
    const recipe = /^# pandas: today's API[\s\S]*?^kept = .*$/m.exec(page)?.[0];
    expect(recipe).toBeDefined();
    const printed = await python(
      [
        '-c',
        `import json\nimport pandas as pd\n${recipe!}\nprint(len(snapshots), len(signs), signs["sign_id"].is_unique, len(joined))`,
      ],
      dirname(output),
    );
    const [all, latest, unique, joined] = printed.trim().split(' ');
    const snapshots = `read_parquet('${output}/signs/live_snapshots/*/*.parquet')`;
    const [count] = await duck(
      `SELECT count(*) AS n FROM ${snapshots} WHERE snapshot = (SELECT max(snapshot) FROM ${snapshots})`,
    );
    expect(Number(all)).toBeGreaterThan(2 * Number(count?.['n']));
    expect(Number(latest)).toBe(Number(count?.['n']));
    expect(unique).toBe('True');
    expect(Number(joined)).toBe(Number(count?.['n']));
    // The folder keeps its identifier from night to night; another folder has another.
    expect(new Set(identifiers).size).toBe(1);
    const { output: demo } = await sharedDemo();
    expect((await describedAs(demo)).datasets[0]!.identifier).not.toBe(identifiers[0]);
  }, 120_000);
});
