/**
 * Secrets, over every shipped pipeline: with recognisable credentials in the
 * environment, no username, password or token appears in stdout, stderr or any
 * file the run writes (logs, manifest, state, datasets, exports), in a good run
 * and in the error paths (a 401 that a new token does not cure, a refused
 * login). For the demo, whose embedded simulator makes its own credentials,
 * nothing shaped like a token (a JWT) may appear anywhere.
 */
import { readFile, readdir, rename } from 'node:fs/promises';
import { join } from 'node:path';
import type { PipelineRun } from '../../src/manifest.js';
import { readManifest } from '../helpers/pipeline.js';
import { describe, expect, it } from 'vitest';
import { SIGNS_AND_BICYCLE_SOURCE } from '../helpers/bicycle.js';
import { ROOT, runCli } from '../helpers/cli.js';
import { sharedDemo } from '../helpers/demo.js';
import { BICYCLE_PATH, useSimulator } from '../helpers/simulator.js';
import { pipelineProject, testDir } from '../helpers/tmp.js';

const USERNAME = 'svc-leak-check-user-5K';
const PASSWORD = 'pw-LEAK-CHECK-3141-qq';
const CLIENT_ID = 'client-LEAK-CHECK-271';
const JWT = /eyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,}/;

const simulator = await useSimulator({
  seed: 61,
  signs: { signs: 150 },
  auth: {
    username: USERNAME,
    password: PASSWORD,
    clientId: CLIENT_ID,
    accessTokenSeconds: 2,
    refreshTokenSeconds: 4,
  },
  bicycle: { locations: 20, maxLocations: 4, maxPeriodDays: 3 },
  faults: { latencyMs: 30 },
});
const env = {
  ...simulator.env,
  ROAD_ETL_USERNAME: USERNAME,
  ROAD_ETL_PASSWORD: PASSWORD,
  ROAD_ETL_CLIENT_ID: CLIENT_ID,
};

/** Where each secret (text or pattern) shows up: stdout, stderr and every byte of every file. */
async function leaks(
  output: string,
  streams: string[],
  secrets: (string | RegExp)[],
): Promise<string[]> {
  const found: string[] = [];
  const places: [string, string][] = streams.map((s, i) => [`stream ${i}`, s]);
  const entries = await readdir(output, { withFileTypes: true, recursive: true }).catch(() => []);
  for (const entry of entries.filter((e) => e.isFile())) {
    const file = join(entry.parentPath, entry.name);
    places.push([file, (await readFile(file)).toString('latin1')]);
  }
  for (const [where, text] of places) {
    for (const secret of secrets) {
      if (typeof secret === 'string' ? text.includes(secret) : secret.test(text))
        found.push(`${String(secret)} in ${where}`);
    }
  }
  return found;
}

const BICYCLE_PARAMS = [
  '--param',
  'start=2026-05-01T00:00:00Z',
  '--param',
  'end=2026-05-08T00:00:00Z',
  '--param',
  'prefixes=GAL,UTR',
];

/** A project whose pipeline, file and datasets are named by `word`, run with `word` as username and password. */
async function runWithWordCredentials(
  word: string,
): Promise<{ output: string; manifest: PipelineRun }> {
  const words = await useSimulator({
    seed: 62,
    signs: { signs: 40 },
    auth: { username: word, password: word },
    bicycle: { locations: 6 },
  });
  const { dir, output } = await pipelineProject(`name: ${word}
${SIGNS_AND_BICYCLE_SOURCE}steps:
  - { id: ${word}_snapshot, kind: signs.snapshot }
  - { id: ${word}_locations, kind: bicycle.locations }
  - id: ${word}_measurements
    kind: bicycle.measurements
    needs: [${word}_locations]
    options: { start: '2026-05-01T00:00:00Z', end: '2026-05-03T00:00:00Z', prefixes: [GAL] }
  - { id: ${word}_export, kind: export, needs: [${word}_locations], options: { table: bicycle_locations, path: ${word}/${word}.geojson } }
`);
  const definition = join(dir, 'pipelines', `${word}.yaml`);
  await rename(join(dir, 'pipelines', 'p.yaml'), definition);
  const result = await runCli(['run', definition, '--output', output], {
    env: { ...words.env },
    cwd: dir,
  });
  expect(result.code, result.stderr).toBe(0);
  const { run: manifest } = await readManifest(output);
  return { output, manifest };
}

describe('credentials that are ordinary words', () => {
  it.each(['demo', 'bicycle', 'signs'])(
    'with %s as username and password, names and paths stay in the clear',
    async (word) => {
      const { manifest } = await runWithWordCredentials(word);
      expect(manifest.pipeline).toBe(word);
      expect(manifest.definition.endsWith(join('pipelines', `${word}.yaml`))).toBe(true);
      expect(manifest.steps.map((s) => s.id)).toEqual(
        ['snapshot', 'locations', 'measurements', 'export'].map((s) => `${word}_${s}`),
      );
      const paths = [
        ...manifest.steps.flatMap((s) => s.files.map((f) => f.path)),
        ...manifest.exports.map((e) => e.path),
      ];
      expect(paths).toContain(join('signs', 'snapshot', 'data.parquet'));
      expect(paths).toContain(join('bicycle', 'locations', 'data.parquet'));
      expect(paths).toContain(join(word, `${word}.geojson`));
      expect(JSON.stringify(manifest)).not.toContain('***');
    },
    60_000,
  );
});

describe('secrets appear nowhere', () => {
  it.each([
    ['bicycle.yaml', BICYCLE_PARAMS],
    ['traffic-signs.yaml', []],
  ])('in a run of pipelines/%s', async (file, params) => {
    const output = join(await testDir(), 'output');
    const result = await runCli(
      ['run', join(ROOT, 'pipelines', file), '--output', output, '--log-level', 'debug', ...params],
      { env },
    );
    expect(result.code, result.stderr).toBe(0);
    const tokens = simulator.auth.issuedTokens();
    expect(
      await leaks(output, [result.stdout, result.stderr], [USERNAME, PASSWORD, ...tokens, JWT]),
    ).toEqual([]);
  });

  it('in a run of pipelines/demo.yaml (the embedded simulator and its tokens)', async () => {
    // The shared run (helpers/demo.ts), at log level debug, into a folder named like the
    // pipeline: its name, paths and messages stay in the clear.
    const result = await sharedDemo();
    const { output } = result;
    expect(result.code, result.stderr).toBe(0);
    expect(await leaks(output, [result.stdout, result.stderr], [JWT, /Bearer \S/])).toEqual([]);
    // the manifest (and the report) still name its pipeline and files
    const { run: manifest } = await readManifest(output);
    expect(manifest.pipeline).toBe('demo');
    expect(manifest.definition).toBe(join(ROOT, 'pipelines', 'demo.yaml'));
    expect(JSON.stringify(manifest)).not.toContain('***');
    expect(await readFile(join(output, 'report', 'index.html'), 'utf8')).not.toContain('***');
    expect(result.stderr).not.toContain('***');
    expect(result.stderr).toContain(join(output, 'report', 'index.html'));
  }, 90_000);

  it('when a 401 persists after a new token', async () => {
    const output = join(await testDir(), 'output');
    simulator.inject({ kind: 'error', status: 401, path: BICYCLE_PATH, count: 1000 });
    const result = await runCli(
      ['run', join(ROOT, 'pipelines', 'bicycle.yaml'), '--output', output, ...BICYCLE_PARAMS],
      { env },
    );
    simulator.faults.clearQueue();
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /Request refused after a new token: POST \S+bicycle-data with status 401/,
    );
    const tokens = simulator.auth.issuedTokens();
    expect(
      await leaks(output, [result.stdout, result.stderr], [USERNAME, PASSWORD, ...tokens, JWT]),
    ).toEqual([]);
  });

  it('when the login is refused', async () => {
    const output = join(await testDir(), 'output');
    const wrong = 'wrong-LEAK-CHECK-1618';
    const result = await runCli(
      ['run', join(ROOT, 'pipelines', 'bicycle.yaml'), '--output', output, ...BICYCLE_PARAMS],
      { env: { ...env, ROAD_ETL_PASSWORD: wrong } },
    );
    // Bad configuration: exit 2, which a scheduler does not retry; asked before anything is written.
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/Login to the bicycle API refused: POST \S+ answered 401/);
    expect(await readdir(output).catch(() => [])).toEqual([]);
    expect(
      await leaks(output, [result.stdout, result.stderr], [USERNAME, PASSWORD, wrong, JWT]),
    ).toEqual([]);
  });
});
