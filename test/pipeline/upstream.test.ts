import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { UpstreamChangedError } from '../../src/errors.js';
import { Simulator, type SimulatorInput } from '../../src/simulator/index.js';
import {
  BICYCLE_SOURCE,
  idsWithPrefix,
  landedMeasurements,
  truthMeasurements,
} from '../helpers/bicycle.js';
import { runCli } from '../helpers/cli.js';
import { runDefinition } from '../helpers/pipeline.js';
import { landedEventHashes, truthEventHashes } from '../helpers/signs.js';
import { testDir, writeFiles } from '../helpers/tmp.js';

/** Every file of the folder, .state included, with its sha256. */
async function everything(output: string): Promise<Map<string, string>> {
  const { readdir, readFile } = await import('node:fs/promises');
  const { createHash } = await import('node:crypto');
  const found = new Map<string, string>();
  for (const name of (await readdir(output, { recursive: true })).map(String).sort()) {
    const data = await readFile(join(output, name)).catch(() => undefined);
    if (data) found.set(name, createHash('sha256').update(data).digest('hex'));
  }
  return found;
}

const PERIOD = { start: '2026-03-01T00:00:00Z', end: '2026-03-03T00:00:00Z' };
const PIPELINE = `name: upstreams
${BICYCLE_SOURCE.replace('source:\n', "source:\n  signs: { url: '${env.ROAD_ETL_SIGNS_URL}', v5_url: '${env.ROAD_ETL_SIGNS_V5_URL}' }\n")}steps:
  - { id: signs_events, kind: signs.events, options: { concurrency: 2 } }
  - { id: signs_snapshot, kind: signs.snapshot }
  - { id: signs_live, kind: signs.live }
  - { id: bicycle_locations, kind: bicycle.locations }
  - id: bicycle_measurements
    kind: bicycle.measurements
    needs: [bicycle_locations]
    options: { start: '${PERIOD.start}', end: '${PERIOD.end}', prefixes: [GAL] }
`;

const simulators: Simulator[] = [];
afterAll(() => Promise.all(simulators.map((s) => s.close())));
async function start(input: SimulatorInput): Promise<Simulator> {
  const simulator = await Simulator.start(input);
  simulators.push(simulator);
  return simulator;
}

const WORLD: SimulatorInput = { seed: 71, signs: { signs: 400 }, bicycle: { locations: 20 } };

describe('an output folder knows its upstream', () => {
  it('continues with the same upstream at another port, refuses another one (exit 2, nothing written), and starts over when told', async () => {
    const dir = await testDir();
    const first = await start(WORLD);
    const landed = await runDefinition(dir, PIPELINE, {}, { env: { ...first.env } });
    expect(landed.summary.status, landed.failure?.message).toBe('succeeded');
    const output = landed.output;

    // The same world, restarted on another port: the same upstream, the run goes on.
    const again = await start(WORLD);
    expect(again.url).not.toBe(first.url);
    const continued = await runDefinition(dir, PIPELINE, {}, { env: { ...again.env } });
    expect(continued.summary.status, continued.failure?.message).toBe('succeeded');
    expect(await landedEventHashes(output)).toEqual(truthEventHashes(again));

    // Another world (another seed, as another service or an acceptance host would be).
    const other = await start({ ...WORLD, seed: 72 });
    const before = await everything(output);
    await writeFiles(dir, { 'pipelines/p.yaml': PIPELINE });
    const refused = await runCli(['run', join(dir, 'pipelines/p.yaml'), '--output', output], {
      env: { ...other.env },
    });
    expect(refused.code, refused.stderr).toBe(2);
    for (const step of ['signs_events', 'signs_snapshot', 'signs_live', 'bicycle_measurements'])
      expect(refused.stderr).toContain(`  ${step}: `);
    expect(refused.stderr).toContain(other.env.ROAD_ETL_SIGNS_URL);
    expect(refused.stderr).toContain(again.env.ROAD_ETL_SIGNS_URL);
    expect(refused.stderr).toContain(
      '--reset signs_events,signs_snapshot,signs_live,bicycle_measurements',
    );
    expect(JSON.parse(refused.stdout.trim().split('\n').at(-1)!)).toMatchObject({
      status: 'refused',
      exit_code: 2,
    });
    expect(await everything(output)).toEqual(before);
    await expect(runDefinition(dir, PIPELINE, {}, { env: { ...other.env } })).rejects.toThrow(
      UpstreamChangedError,
    );

    // Told to start over, the run lands the other world's data alone.
    const reset = await runDefinition(
      dir,
      PIPELINE,
      {},
      {
        env: { ...other.env },
        reset: ['signs_events', 'signs_snapshot', 'signs_live', 'bicycle_measurements'],
      },
    );
    expect(reset.summary.status, reset.failure?.message).toBe('succeeded');
    expect(await landedEventHashes(output)).toEqual(truthEventHashes(other));
    const ids = idsWithPrefix(other, 'GAL');
    expect(await landedMeasurements(output)).toEqual(
      truthMeasurements(other, ids, PERIOD.start, PERIOD.end).kept,
    );
  });
});
