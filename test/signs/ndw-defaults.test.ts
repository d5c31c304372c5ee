import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { exists } from '../../src/util/fs.js';
import { runCli } from '../helpers/cli.js';
import { useSimulator } from '../helpers/simulator.js';
import { outputHashes, testDir } from '../helpers/tmp.js';

const simulator = await useSimulator({ seed: 9, signs: { signs: 300 } });

/** The environment of a user who has set nothing of road-etl's. */
const NOTHING_SET = Object.fromEntries(
  Object.keys(process.env)
    .filter((name) => name.startsWith('ROAD_ETL_'))
    .map((name) => [name, undefined]),
);

describe('with nothing set, the shipped pipelines point at NDW', () => {
  it('validate names NDW’s production hosts for the traffic-sign API, v1/v4 and v5', async () => {
    const dir = await testDir();
    const v1 = await runCli(
      ['validate', 'pipelines/traffic-signs.yaml', '--output', join(dir, 'a')],
      {
        env: NOTHING_SET,
      },
    );
    expect(v1.code).toBe(0);
    expect(v1.stdout).toContain('Upstream: traffic signs at https://data.ndw.nu');
    const live = await runCli(
      ['validate', 'pipelines/traffic-signs-live.yaml', '--output', join(dir, 'b')],
      { env: NOTHING_SET },
    );
    expect(live.code).toBe(0);
    expect(live.stdout).toContain(
      'Upstream: traffic signs at https://data.ndw.nu (v5 current state at https://wegkenmerken.ndw.nu)',
    );
  });

  it('validate works without credentials and says what a run needs; a run refuses and writes nothing', async () => {
    const dir = await testDir();
    const args = [
      'pipelines/bicycle.yaml',
      '--param',
      'start=2026-10-01T00:00:00Z',
      '--param',
      'end=2026-10-02T00:00:00Z',
      '--param',
      'prefixes=GAL02',
      '--output',
      join(dir, 'out'),
    ];
    const validate = await runCli(['validate', ...args], { env: NOTHING_SET });
    expect(validate.code).toBe(0);
    expect(validate.stdout).toContain(
      'Upstream: bicycle data at https://dexter.ndwcloud.nu, token from https://keycloak.ndwcloud.nu/auth/realms/ndw/protocol/openid-connect/token (client dexter)',
    );
    expect(validate.stdout).toContain('A run needs ROAD_ETL_USERNAME, ROAD_ETL_PASSWORD');
    const run = await runCli(['run', ...args], { env: NOTHING_SET });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/environment variable ROAD_ETL_USERNAME is not set/);
    expect(await exists(join(dir, 'out'))).toBe(false);
  });
});

describe('a service that no longer serves v1', () => {
  const server = createServer((req, res) => {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ status: 404, error: 'Not Found', path: req.url }));
  });
  server.listen(0, '127.0.0.1');
  afterAll(() => {
    server.close();
  });

  it('is told plainly, with the pipeline for today’s API (exit 1), and what landed before stays', async () => {
    if (!server.listening) await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const dir = await testDir();
    const output = join(dir, 'out');
    const args = [
      'run',
      'pipelines/traffic-signs.yaml',
      '--select',
      'signs_events',
      '--output',
      output,
    ];
    const landed = await runCli(args, {
      env: { ...NOTHING_SET, ROAD_ETL_SIGNS_URL: simulator.env.ROAD_ETL_SIGNS_URL },
    });
    expect(landed.code).toBe(0);
    const before = await outputHashes(output, ['manifest.json']);
    expect([...before.keys()].some((f) => f.startsWith('signs/events/'))).toBe(true);
    const run = await runCli(args, {
      env: { ...NOTHING_SET, ROAD_ETL_SIGNS_URL: `http://127.0.0.1:${port}` },
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /no longer serves API v1 \(GET http:\/\/127\.0\.0\.1:\d+\/api\/rest\/static-road-data\/traffic-signs\/v1\/events\?.* answered 404\)\. Today's API .* pipelines\/traffic-signs-live\.yaml/,
    );
    expect(await outputHashes(output, ['manifest.json'])).toEqual(before);
  });
});
