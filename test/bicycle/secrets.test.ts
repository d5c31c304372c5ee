import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli } from '../helpers/cli.js';
import { useSimulator } from '../helpers/simulator.js';
import { testDir } from '../helpers/tmp.js';

const USERNAME = 'svc-secret-user-7Q2';
const PASSWORD = 'pw-SECRET-4242-zz';

// Tokens that live 2 s (refresh 4 s) and requests that take 40 ms: the run renews them.
const simulator = await useSimulator({
  seed: 12,
  auth: { username: USERNAME, password: PASSWORD, accessTokenSeconds: 2, refreshTokenSeconds: 4 },
  bicycle: { locations: 30, maxLocations: 4, maxPeriodDays: 2 },
  faults: { latencyMs: 40 },
});

async function filesUnder(folder: string): Promise<string[]> {
  const entries = await readdir(folder, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

/** Every place a secret must not be: stdout, stderr and every byte of every file written. */
async function leaks(
  output: string,
  streams: string[],
  secrets: string[],
): Promise<{ secret: string; where: string }[]> {
  const found: { secret: string; where: string }[] = [];
  const places: [string, Buffer][] = streams.map((s, i) => [`stream ${i}`, Buffer.from(s)]);
  for (const file of await filesUnder(output)) places.push([file, await readFile(file)]);
  for (const [where, bytes] of places)
    for (const secret of secrets) if (bytes.includes(secret)) found.push({ secret, where });
  return found;
}

describe('bicycle credentials and tokens', () => {
  it('appear in no log, output, manifest or state file of a run that renews its tokens', async () => {
    const dir = await testDir();
    const output = join(dir, 'output');
    const env = { ...simulator.env, ROAD_ETL_USERNAME: USERNAME, ROAD_ETL_PASSWORD: PASSWORD };
    const args = ['run', join(ROOT, 'pipelines', 'bicycle.yaml'), '--output', output];
    const params = ['--param', 'start=2026-05-01T00:00:00Z', '--param', 'end=2026-05-11T00:00:00Z'];
    const result = await runCli(
      [...args, ...params, '--param', 'prefixes=GAL,UTR', '--log-level', 'debug'],
      {
        env,
      },
    );
    expect(result.code, result.stderr).toBe(0);
    const tokens = simulator.auth.issuedTokens();
    expect(tokens.length).toBeGreaterThan(2); // renewed during the run
    expect(
      await leaks(output, [result.stdout, result.stderr], [USERNAME, PASSWORD, ...tokens]),
    ).toEqual([]);

    // And when the login is refused.
    const refused = await runCli([...args, ...params, '--param', 'prefixes=GAL'], {
      env: { ...env, ROAD_ETL_PASSWORD: 'wrong-SECRET-9876' },
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/Login to the bicycle API refused/);
    expect(
      await leaks(
        output,
        [refused.stdout, refused.stderr],
        [USERNAME, PASSWORD, 'wrong-SECRET-9876'],
      ),
    ).toEqual([]);
  });
});
