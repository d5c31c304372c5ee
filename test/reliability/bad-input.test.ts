/**
 * The catalogue of bad input: definitions, params and command lines a user can
 * get wrong. Each is refused with exit code 2 and a message that says what is
 * wrong and where, and writes nothing: an output folder that holds data is left
 * exactly as it was (no lock, no manifest, no state), and one that does not
 * exist is not created.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, runCli } from '../helpers/cli.js';
import { writeFiles } from '../helpers/tmp.js';
import { FOLDER_FORMAT } from '../../src/store/folder-format.js';

// The cases run concurrently: their folders are removed after all of them.
const folders: string[] = [];
afterAll(() => Promise.all(folders.map((f) => rm(f, { recursive: true, force: true }))));
async function caseDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'road-etl-bad-input-'));
  folders.push(dir);
  return dir;
}

/** Every file and folder below dir, with size and modification time. */
async function fingerprint(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (folder: string): Promise<void> => {
    for (const entry of await readdir(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      const info = await stat(path);
      out.push(`${relative(dir, path)} ${entry.isDirectory() ? 'dir' : info.size} ${info.mtimeMs}`);
      if (entry.isDirectory()) await walk(path);
    }
  };
  await walk(dir);
  return out.sort();
}

const GOOD_SQL = 'CREATE OR REPLACE TABLE t AS SELECT 1 AS x;\n';
const step = `steps:\n  - id: s\n    kind: sql\n    options: { file: ok.sql, outputs: [t] }\n`;
const BICYCLE = join(ROOT, 'pipelines', 'bicycle.yaml');
const SIGNS = join(ROOT, 'pipelines', 'traffic-signs.yaml');
// Never reached: every case is refused before anything is asked of the service.
const ENV = {
  ROAD_ETL_BICYCLE_URL: 'http://127.0.0.1:9',
  ROAD_ETL_AUTH_URL: 'http://127.0.0.1:9/token',
  ROAD_ETL_USERNAME: 'user',
  ROAD_ETL_PASSWORD: 'secret',
  ROAD_ETL_SIGNS_URL: 'http://127.0.0.1:9',
};
/** `road-etl run pipelines/bicycle.yaml` with these --param values. */
const bicycle = (...params: string[]) => ['run', BICYCLE, ...params.flatMap((p) => ['--param', p])];
const START = 'start=2026-01-01T00:00:00Z';
const END = 'end=2026-01-08T00:00:00Z';

interface Case {
  /** Definition files below the case folder (pipelines/p.yaml is `P`). */
  files?: Record<string, string>;
  /** Command line; `P` is the case's pipelines/p.yaml, `D` the case folder. */
  args: string[];
  message: RegExp;
}

const P = 'P';
const polygon = (ring: number[][]) => JSON.stringify({ type: 'Polygon', coordinates: [ring] });

const CASES: Record<string, Case> = {
  // definitions
  'malformed YAML': {
    files: { P: 'name: p\nsteps: [\n' },
    args: ['run', P],
    message: /p\.yaml:\d+: invalid YAML/,
  },
  'a YAML alias bomb': {
    files: {
      P: [
        'a: &a [x, x, x, x, x, x, x, x, x]',
        ...['b', 'c', 'd', 'e', 'f', 'g'].map(
          (k, i) => `${k}: &${k} [${Array(9).fill(`*${'abcdefg'[i]!}`).join(', ')}]`,
        ),
        'name: p',
        step,
      ].join('\n'),
    },
    args: ['run', P],
    message: /p\.yaml: invalid YAML: its aliases expand beyond what a definition needs/,
  },
  'a YAML alias bomb, planned': {
    files: {
      P: `a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [${Array(12).fill('*a').join(', ')}]\nc: [${Array(12).fill('*b').join(', ')}]\nname: p\n${step}`,
    },
    args: ['plan', P],
    message: /p\.yaml: invalid YAML: its aliases expand beyond what a definition needs/,
  },
  'a --repair path that is no data file, in a dry run': {
    args: [...bicycle(START, END, 'prefixes=GAL'), '--dry-run', '--repair', 'notes.txt'],
    message: /--repair notes\.txt: names a Parquet file of a dataset/,
  },
  'a --reset of a step that does not run, planned': {
    args: [
      'plan',
      BICYCLE,
      '--param',
      START,
      '--param',
      END,
      '--param',
      'prefixes=GAL',
      '--reset',
      'ghost',
    ],
    message: /--reset: ghost is not among the steps that run/,
  },
  'a list instead of a mapping': {
    files: { P: '- a\n- b\n' },
    args: ['run', P],
    message: /p\.yaml:1: .*expected object/i,
  },
  'a definition without a name': {
    files: { P: step },
    args: ['run', P],
    message: /p\.yaml:1: name: .*expected string/i,
  },
  'an unknown top-level key': {
    files: { P: `name: p\nstepz: []\n${step}` },
    args: ['run', P],
    message: /p\.yaml:2: stepz: unknown key/,
  },
  'an unknown step kind': {
    files: { P: 'name: p\nsteps:\n  - id: s\n    kind: sqll\n' },
    args: ['run', P],
    message: /p\.yaml:4: steps\[0\]\.kind: unknown step kind "sqll"/,
  },
  'a cycle in needs': {
    files: {
      P: 'name: p\nsteps:\n  - { id: a, kind: sql, needs: [b], options: { file: ok.sql, outputs: [t] } }\n  - { id: b, kind: sql, needs: [a], options: { file: ok.sql, outputs: [u] } }\n',
    },
    args: ['run', P],
    message: /needs form a cycle: a -> b -> a/,
  },
  'a need that is no step': {
    files: {
      P: 'name: p\nsteps:\n  - { id: a, kind: sql, needs: [ghost], options: { file: ok.sql, outputs: [t] } }\n',
    },
    args: ['run', P],
    message: /p\.yaml:3: steps\[0\]\.needs\[0\]: needs "ghost", which is not a step/,
  },
  'two steps with one id': {
    files: {
      P: 'name: p\nsteps:\n  - { id: a, kind: sql, options: { file: ok.sql, outputs: [t] } }\n  - { id: a, kind: sql, options: { file: ok.sql, outputs: [u] } }\n',
    },
    args: ['run', P],
    message: /p\.yaml:4: steps\[1\]\.id: duplicate step id "a"/,
  },
  'an unknown option': {
    files: {
      P: 'name: p\nsteps:\n  - id: s\n    kind: sql\n    options: { fil: ok.sql, file: ok.sql, outputs: [t] }\n',
    },
    args: ['run', P],
    message: /p\.yaml:5: steps\[0\]\.options\.fil: unknown option/,
  },
  'a SQL file that does not exist': {
    files: {
      P: 'name: p\nsteps:\n  - id: s\n    kind: sql\n    options: { file: missing.sql, outputs: [t] }\n',
    },
    args: ['run', P],
    message: /p\.yaml:5: steps\[0\]\.options\.file: .*missing\.sql does not exist/,
  },
  'an incremental sql step with neither partitions nor a fold': {
    files: {
      P: 'name: p\nsteps:\n  - id: s\n    kind: sql\n    options: { file: ok.sql, outputs: [t], incremental: { from: x } }\n',
    },
    args: ['run', P],
    message:
      /p\.yaml:5: steps\[0\]\.options\.incremental: incremental needs partition_by \(and touches\) or, for outputs kept whole, fold/,
  },
  'an incremental sql step that reads without touches': {
    files: {
      P: "name: p\nsteps:\n  - id: s\n    kind: sql\n    options: { file: ok.sql, outputs: [t], incremental: { from: x, fold: ok.sql, reads: '[d]' } }\n",
    },
    args: ['run', P],
    message:
      /p\.yaml:5: steps\[0\]\.options\.incremental\.reads: reads goes with partition_by and touches/,
  },
  'a fold file that does not exist': {
    files: {
      P: 'name: p\nsteps:\n  - id: s\n    kind: sql\n    options: { file: ok.sql, outputs: [t], incremental: { from: x, fold: gone.sql } }\n',
    },
    args: ['run', P],
    message: /p\.yaml:5: steps\[0\]\.options\.incremental\.fold: .*gone\.sql does not exist/,
  },
  'a SQL file reached with ../': {
    files: {
      P: 'name: p\nsteps:\n  - id: s\n    kind: sql\n    options: { file: ../pipelines/evil.sql, outputs: [t] }\n',
    },
    args: ['run', P],
    message: /p\.yaml:5: steps\[0\]\.options\.file: must be a file inside/,
  },
  'an export path that leaves the output folder': {
    files: {
      P: 'name: p\nsteps:\n  - id: e\n    kind: export\n    options: { table: t, path: ../../etc/x.csv }\n',
    },
    args: ['run', P],
    message:
      /p\.yaml:5: steps\[0\]\.options\.path: must be a relative path inside the output folder/,
  },
  'an absolute export path': {
    files: {
      P: 'name: p\nsteps:\n  - id: e\n    kind: export\n    options: { table: t, path: /tmp/x.csv }\n',
    },
    args: ['run', P],
    message:
      /p\.yaml:5: steps\[0\]\.options\.path: must be a relative path inside the output folder/,
  },
  'an export into the state folder': {
    files: {
      P: 'name: p\nsteps:\n  - id: e\n    kind: export\n    options: { table: t, path: .state/x.csv }\n',
    },
    args: ['run', P],
    message: /p\.yaml:5: steps\[0\]\.options\.path: .*must not write into a hidden folder/,
  },
  'an export table name carrying SQL': {
    files: {
      P: 'name: p\nsteps:\n  - id: e\n    kind: export\n    options: { table: "t; DROP TABLE x", path: exports/x.csv }\n',
    },
    args: ['run', P],
    message: /p\.yaml:5: steps\[0\]\.options\.table: must be a table or dataset name/,
  },
  'a param substituted into SQL text': {
    files: {
      P: `name: p\nparams:\n  x: { type: string, default: a }\nsteps:\n  - id: e\n    kind: export\n    options: { query: "SELECT '\${params.x}'", path: exports/x.csv }\n`,
    },
    args: ['run', P],
    message: /p\.yaml:7: steps\[0\]\.options\.query: .*SQL text takes no \$\{\.\.\.\}/,
  },
  'an environment variable that is not set': {
    files: {
      P: 'name: p\nsteps:\n  - id: s\n    kind: sql\n    options: { file: "${env.ROAD_ETL_NOT_SET}", outputs: [t] }\n',
    },
    args: ['run', P],
    message:
      /p\.yaml:5: steps\[0\]\.options\.file: .*environment variable ROAD_ETL_NOT_SET is not set/,
  },
  'a definition file that does not exist': {
    args: ['run', 'D/nope.yaml'],
    message: /nope\.yaml: cannot read the definition: ENOENT/,
  },
  // params
  'a timestamp in local time': {
    args: bicycle('start=2026-01-01T00:00:00', END, 'prefixes=GAL'),
    message: /--param start: must be in UTC with a Z/,
  },
  'a timestamp with an offset': {
    args: bicycle('start=2026-01-01T01:00:00+01:00', END, 'prefixes=GAL'),
    message: /--param start: must be in UTC with a Z/,
  },
  'a timestamp in another format': {
    args: bicycle('start=01/01/2026', END, 'prefixes=GAL'),
    message: /--param start: must be a UTC timestamp YYYY-MM-DDTHH:mm:ssZ/,
  },
  'an impossible date': {
    args: bicycle('start=2026-02-30T00:00:00Z', END, 'prefixes=GAL'),
    message: /--param start: must be a UTC timestamp/,
  },
  'a start that is not a whole hour': {
    args: bicycle('start=2026-01-01T00:30:00Z', END, 'prefixes=GAL'),
    message: /steps\[1\]\.options\.start: .*whole hour/,
  },
  'an end before the start': {
    args: bicycle('start=2026-01-08T00:00:00Z', 'end=2026-01-01T00:00:00Z', 'prefixes=GAL'),
    message: /steps\[1\]\.options\.end: must be after start/,
  },
  'a period in the future': {
    args: bicycle('start=2099-01-01T00:00:00Z', 'end=2099-01-02T00:00:00Z', 'prefixes=GAL'),
    message: /steps\[1\]\.options\.start: .*future/,
  },
  'a prefix under 3 characters': {
    args: bicycle(START, END, 'prefixes=GAL,UT'),
    message: /steps\[1\]\.options\.prefixes\[1\]: a prefix has at least 3 characters, got "UT"/,
  },
  'two selections at once': {
    args: bicycle(START, END, 'prefixes=GAL', 'locations=A1'),
    message:
      /bicycle\.yaml:\d+: steps\[1\]\.options\.prefixes: give one selection only, not locations and prefixes/,
  },
  'no selection': {
    args: bicycle(START, END),
    message:
      /bicycle\.yaml:\d+: steps\[1\]\.options: needs one selection: locations, prefixes or polygon/,
  },
  'an empty location list': {
    args: bicycle(START, END, 'locations='),
    message: /--param locations: .*empty|steps\[1\]\.options\.locations: .*empty/,
  },
  "a filter on NDW's bulk file (the whole country)": {
    files: {
      P: 'name: p\nsource:\n  signs: { url: http://127.0.0.1:9 }\nsteps:\n  - id: live\n    kind: signs.live\n    options: { file: signs.csv.gz, api: v4, format: csv, county_code: GM0363 }\n',
    },
    args: ['run', P],
    message:
      /p\.yaml:\d+: steps\[0\]\.options\.county_code: a bulk file holds the whole country: filters apply to the API only/,
  },
  'a polygon file that does not exist': {
    args: bicycle(START, END, 'polygon=D/none.geojson'),
    message: /none\.geojson.*(does not exist|ENOENT)/,
  },
  'a polygon file that is not JSON': {
    files: { 'area.geojson': '{"type": "Polygon", coordinates' },
    args: bicycle(START, END, 'polygon=D/area.geojson'),
    message: /bicycle\.yaml:\d+: steps\[1\]\.options\.polygon: .*area\.geojson is not JSON/,
  },
  'a polygon file holding a Point': {
    files: { 'area.geojson': JSON.stringify({ type: 'Point', coordinates: [5, 52] }) },
    args: bicycle(START, END, 'polygon=D/area.geojson'),
    message: /steps\[1\]\.options\.polygon: .*Polygon.*Point/,
  },
  'a polygon in RD New coordinates without its crs member': {
    files: {
      'area.geojson': polygon([
        [120000, 480000],
        [140000, 480000],
        [140000, 500000],
        [120000, 480000],
      ]),
    },
    args: bicycle(START, END, 'polygon=D/area.geojson'),
    message:
      /steps\[1\]\.options\.polygon: coordinates such as \[120000, 480000\] cannot be WGS 84 .*RD New \(EPSG:28992\) needs its crs member.*urn:ogc:def:crs:EPSG::28992/,
  },
  'a polygon in a coordinate system road-etl does not know': {
    files: {
      'area.geojson': JSON.stringify({
        type: 'Polygon',
        crs: { type: 'name', properties: { name: 'urn:ogc:def:crs:EPSG::3857' } },
        coordinates: [
          [
            [4, 52],
            [5, 52],
            [5, 53],
            [4, 52],
          ],
        ],
      }),
    },
    args: bicycle(START, END, 'polygon=D/area.geojson'),
    message: /steps\[1\]\.options\.polygon: crs: "urn:ogc:def:crs:EPSG::3857" is not supported/,
  },
  'a self-intersecting polygon': {
    files: {
      'area.geojson': polygon([
        [4, 52],
        [5, 53],
        [5, 52],
        [4, 53],
        [4, 52],
      ]),
    },
    args: bicycle(START, END, 'polygon=D/area.geojson'),
    message: /steps\[1\]\.options\.polygon: coordinates\[0\]: ring intersects itself/,
  },
  'a polygon that is not closed': {
    files: {
      'area.geojson': polygon([
        [4, 52],
        [5, 52],
        [5, 53],
        [4, 53],
      ]),
    },
    args: bicycle(START, END, 'polygon=D/area.geojson'),
    message: /steps\[1\]\.options\.polygon: coordinates\[0\]: .*not closed/,
  },
  'a param the pipeline does not have': {
    args: bicycle(START, END, 'prefixes=GAL', 'prefix=GAL'),
    message: /--param prefix: the pipeline has no such param/,
  },
  'a --param without a value': {
    args: bicycle(START, END, 'prefixes'),
    message: /--param "prefixes": expected NAME=VALUE/,
  },
  'a param given twice': {
    args: bicycle(START, START, END, 'prefixes=GAL'),
    message: /--param start: given twice/,
  },
  'a town code carrying SQL': {
    args: ['run', SIGNS, '--param', "town_code=GM0363'; DROP TABLE x; --"],
    message:
      /traffic-signs\.yaml:\d+: steps\[0\]\.options\.town_code: a town code is GM and four digits/,
  },
  'an unknown current-state mode': {
    args: ['run', SIGNS, '--param', 'current_state_from=yesterday'],
    message: /--param current_state_from: must be one of events, snapshot, got "yesterday"/,
  },
  // the command line
  'an unknown flag': {
    args: [...bicycle(), '--outptu', 'x'],
    message: /Unknown argument: outptu/,
  },
  'an unknown command': {
    args: ['runn', BICYCLE],
    message: /Unknown argument: runn|Did you mean run/,
  },
  'run without a pipeline': { args: ['run'], message: /Not enough non-option arguments/ },
  'a --select of a step that is not there': {
    args: [...bicycle(START, END, 'prefixes=GAL'), '--select', 'bicycle_measurment'],
    message:
      /--select: no step named bicycle_measurment in .*bicycle\.yaml \(steps: bicycle_locations, /,
  },
  'a --reset of a step that is not there': {
    args: [...bicycle(START, END, 'prefixes=GAL'), '--reset', 'ghost'],
    message: /--reset: ghost is not among/,
  },
  'an unknown log level': {
    args: [...bicycle(), '--log-level', 'loud'],
    message: /log-level.*Invalid values|Invalid values:.*log-level/s,
  },
  'an empty --output': {
    args: [...bicycle(START, END, 'prefixes=GAL'), '--output', ''],
    message: /--output: must name a folder/,
  },
};

/** A folder with the case's files (and sql/ok.sql), and its command line with P and D/ resolved. */
async function setUpCase(
  files: Case['files'],
  args: string[],
): Promise<{ dir: string; argv: string[] }> {
  const dir = await caseDir();
  await writeFiles(dir, {
    'sql/ok.sql': GOOD_SQL,
    ...Object.fromEntries(
      Object.entries(files ?? {}).map(([k, v]) => [k === P ? 'pipelines/p.yaml' : k, v]),
    ),
  });
  const argv = args.map((a) =>
    a === P
      ? join(dir, 'pipelines/p.yaml')
      : a.replace(/^D\//, `${dir}/`).replace(/=D\//, `=${dir}/`),
  );
  return { dir, argv };
}

describe('bad input: exit 2, what and where, nothing written', () => {
  it('has at least 30 cases', () => {
    expect(Object.keys(CASES).length).toBeGreaterThanOrEqual(30);
  });

  it.concurrent.each(Object.entries(CASES))(
    'refuses %s',
    async (_name, { files, args, message }) => {
      const { dir, argv } = await setUpCase(files, args);
      // An output folder holding earlier data, state and a manifest: left exactly as it was.
      const output = join(dir, 'out');
      await writeFiles(output, {
        'bicycle/measurements/date=2026-01-01/data.parquet': 'PAR1 earlier data',
        '.state/bicycle_measurements.json': '{"version":1}',
        '.state/format.json': `{"format":${FOLDER_FORMAT}}`,
        'manifest.json': '{}',
      });
      const before = await fingerprint(output);
      const hasOutput = argv.includes('--output');
      const result = await runCli(hasOutput ? argv : [...argv, '--output', output], { env: ENV });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stderr).toMatch(/^road-etl: /);
      // A refused run still ends stdout with its one-line summary (Airflow's XCom); other commands print none.
      const summaries = result.stdout
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const refusal = expect.objectContaining({
        status: 'refused',
        exit_code: 2,
        steps: [],
        error: expect.stringMatching(message) as unknown,
      }) as unknown;
      expect(summaries).toEqual(argv[0] === 'run' ? [refusal] : []);
      expect(summaries.filter((s) => 'manifest' in s)).toEqual([]);
      expect(await fingerprint(output)).toEqual(before);
    },
  );

  it.concurrent.each([
    ['written before layouts were named', undefined],
    ['of an older layout', '{"format":1}'],
    ['of a layout it does not know', '{"format":"x"}'],
  ])(
    'refuses a folder %s with the way to rebuild it, and leaves it as it was',
    async (_name, format) => {
      const output = join(await caseDir(), 'out');
      await writeFiles(output, {
        'bicycle/measurements/date=2026-01-01/data.parquet': 'PAR1 earlier data',
        '.state/bicycle_measurements.json': '{"version":1}',
        'manifest.json': '{}',
        ...(format === undefined ? {} : { '.state/format.json': format }),
      });
      const before = await fingerprint(output);
      const result = await runCli([...bicycle(START, END, 'prefixes=GAL'), '--output', output], {
        env: ENV,
      });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toMatch(
        new RegExp(
          `folder format \\d+; this version writes format ${FOLDER_FORMAT}.*Rebuild it: run the pipelines into a new, empty --output`,
        ),
      );
      expect(await fingerprint(output)).toEqual(before);
    },
  );

  it('refuses a folder whose commit is gone in the same words from run, --dry-run and plan (exit 1), writing nothing', async () => {
    const output = join(await caseDir(), 'out');
    await writeFiles(output, {
      'bicycle/measurements/date=2026-01-01/data.v20260102T031500Z-3f9a1c.parquet': 'PAR1 earlier',
      'manifest.json': '{}',
      'views.sql': '-- views\n',
    });
    const before = await fingerprint(output);
    const said: string[] = [];
    for (const argv of [
      bicycle(START, END, 'prefixes=GAL'),
      [...bicycle(START, END, 'prefixes=GAL'), '--dry-run'],
      ['plan', BICYCLE, '--param', START, '--param', END, '--param', 'prefixes=GAL'],
      ['query', 'SELECT 1'],
    ]) {
      const result = await runCli([...argv, '--output', output], { env: ENV });
      expect(result.code, `${argv.join(' ')}: ${result.stderr}`).toBe(1);
      said.push(result.stderr.split('\n')[0]!);
      expect(await fingerprint(output)).toEqual(before);
    }
    expect(said[0]).toMatch(
      /\.state\/commit\.json is missing, though the folder holds 1 data file\(s\) .*restore it from the store's versions/,
    );
    expect(new Set(said).size).toBe(1);
  });

  /** Outputs refused, with what the refusal says: URLs of no store it writes, and names a store would refuse. */
  const BAD_OUTPUTS: [string, string][] = [
    ['gs://b/p', '--output: gs://b/p is a gs: URL'],
    ['https://example.org/x', '--output: https://example.org/x is a https: URL'],
    ['ftp://host/p', '--output: ftp://host/p is a ftp: URL'],
    // S3 and Azure are stores it works in; a name the store would refuse is bad input.
    ['s3://Not_A_Bucket/x', '"Not_A_Bucket" is not an S3 bucket name'],
    ['az://Not--A-Container/x', '"Not--A-Container" is not an Azure container name'],
  ];

  // Every command reads --output alike (cli/common.ts): each bad output is tried on run.
  it.concurrent.each([
    [
      'run',
      (out: string) => [...bicycle(START, END, 'prefixes=GAL'), '--output', out],
      BAD_OUTPUTS,
    ],
    ['query', (out: string) => ['query', 'SELECT 1', '--output', out], BAD_OUTPUTS.slice(0, 1)],
    // validate reads the folder as query does (pipeline/session.ts).
    ['report', (out: string) => ['report', '--output', out], BAD_OUTPUTS.slice(0, 1)],
  ] as const)(
    'refuses an output that is a URL of no store it writes (%s): exit 2, and no local folder named after it',
    async (_command, argv, outputs) => {
      const dir = await caseDir();
      for (const [url, said] of outputs) {
        const result = await runCli(argv(url), { env: ENV, cwd: dir });
        expect(result.code, result.stderr).toBe(2);
        expect(result.stderr).toContain(said);
      }
      // A store without its credentials: said, before anything is asked of it.
      const bare = await runCli(argv('az://nightly/x'), { env: ENV, cwd: dir });
      expect(bare.code).toBe(2);
      expect(bare.stderr).toMatch(/set AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT/);
      expect(await readdir(dir)).toEqual([]);
      // file:// names a local path.
      const local = await runCli(['validate', BICYCLE, '--output', `file://${join(dir, 'out')}`], {
        env: ENV,
      });
      expect(local.stderr).not.toMatch(/URL/);
    },
  );

  it.concurrent.each(['an end before the start', 'an unknown flag'])(
    'names the pipeline in the summary of a run refused for %s',
    async (name) => {
      const { args } = CASES[name]!;
      const { dir, argv } = await setUpCase(undefined, args);
      const result = await runCli([...argv, '--output', join(dir, 'out')], { env: ENV });
      expect(result.code).toBe(2);
      const summary = JSON.parse(result.stdout.trim().split('\n').at(-1)!) as Record<
        string,
        unknown
      >;
      // bicycle.yaml says name: bicycle
      expect(summary).toMatchObject({ status: 'refused', pipeline: 'bicycle' });
    },
  );

  it.concurrent.each([
    'an unknown step kind',
    'an end before the start',
    'a self-intersecting polygon',
    'an unknown flag',
  ])('does not create the output folder for %s', async (name) => {
    const { files, args } = CASES[name]!;
    const { dir, argv } = await setUpCase(files, args);
    const output = join(dir, 'fresh');
    const result = await runCli([...argv, '--output', output], { env: ENV });
    expect(result.code).toBe(2);
    expect(existsSync(output)).toBe(false);
  });
});
