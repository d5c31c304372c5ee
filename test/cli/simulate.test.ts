import { readFile } from 'node:fs/promises';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { collect, runCli, startCli } from '../helpers/cli.js';
import { EVENTS_PATH } from '../helpers/simulator.js';

describe('road-etl simulate', () => {
  it('prints the ROAD_ETL_* lines, serves the upstream there, and stops cleanly on SIGTERM', async () => {
    const child = startCli([
      'simulate',
      '--seed',
      '4',
      '--signs',
      '200',
      '--username',
      'alice',
      '--password',
      'wonderland',
    ]);
    const done = collect(child);
    let printed = '';
    while (printed.split('\n').length <= 7) {
      const [chunk] = (await once(child.stdout!, 'data')) as [Buffer];
      printed += chunk.toString();
    }
    const env = Object.fromEntries(
      printed
        .trim()
        .split('\n')
        .map((line) => line.split(/=(.*)/s).slice(0, 2)),
    ) as Record<string, string>;
    expect(Object.keys(env).sort()).toEqual(
      [
        'ROAD_ETL_AUTH_URL',
        'ROAD_ETL_BICYCLE_URL',
        'ROAD_ETL_CLIENT_ID',
        'ROAD_ETL_PASSWORD',
        'ROAD_ETL_SIGNS_URL',
        'ROAD_ETL_SIGNS_V5_URL',
        'ROAD_ETL_USERNAME',
      ].sort(),
    );
    expect(env['ROAD_ETL_USERNAME']).toBe('alice');
    expect(env['ROAD_ETL_PASSWORD']).toBe('wonderland');
    const events = (await (
      await fetch(`${env['ROAD_ETL_SIGNS_URL']}${EVENTS_PATH}?limit=3`)
    ).json()) as unknown[];
    expect(events).toHaveLength(3);
    const login = await fetch(env['ROAD_ETL_AUTH_URL']!, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'password',
        client_id: env['ROAD_ETL_CLIENT_ID']!,
        username: 'alice',
        password: 'wonderland',
      }),
    });
    expect(login.status).toBe(200);
    child.kill('SIGTERM');
    const result = await done;
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('Simulator listening on');
  });

  it.each([
    [['simulate', '--error-rate', '2'], /faults.errorRate must be between 0 and 1/],
    [
      ['simulate', '--error-rate', '0.6', '--corrupt-gzip-rate', '0.6'],
      /the fault rates add up to 1.2, more than 1/,
    ],
    [['simulate', '--scale', 'huge'], /Invalid values:[\s\S]*scale/],
    [['simulate', '--bogus-flag'], /Unknown argument: bogus-flag/],
    [['simulate', '--burst-size', '10', '--burst-town', 'GM0000'], /not a known town code/],
    [['simulate', '--now', 'soon'], /now must be an ISO timestamp/],
  ])('refuses %j with exit 2 and says why', async (args, message) => {
    const result = await runCli(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(result.stdout).toBe('');
  });
});

describe('road-etl --help', () => {
  it('lists the commands (the bin itself, as a process)', async () => {
    const result = await runCli(['--help'], { process: true });
    expect(result.code).toBe(0);
    for (const command of ['run', 'validate', 'simulate', 'query'])
      expect(result.stdout).toContain(`road-etl ${command}`);
  });

  it('prints the version of package.json with --version (the bin itself, as a process)', async () => {
    const { version } = JSON.parse(
      await readFile(new URL('../../package.json', import.meta.url), 'utf8'),
    ) as { version: string };
    for (const flag of ['--version', '-V']) {
      const result = await runCli([flag], { process: true });
      expect(result.code, flag).toBe(0);
      expect(result.stdout.trim(), flag).toBe(version);
    }
  });

  it('refuses an unknown command with exit 2 (the bin itself, as a process)', async () => {
    const result = await runCli(['frobnicate'], { process: true });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/Unknown argument: frobnicate/);
  });
});
