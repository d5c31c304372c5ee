/**
 * What a run may touch in a bucket or container: only what road-etl's own
 * commits wrote. Another team's objects at the bucket's root and inside the
 * prefix survive every run; a URL that names no folder, a bucket or container
 * that is not there and credentials the store refuses are bad configuration
 * (exit 2), with nothing written anywhere.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/open.js';
import type { ObjectStore } from '../../src/store/store.js';
import { readCommit } from '../../src/store/commit.js';
import { ROOT, collect, runCli, startCli } from '../helpers/cli.js';
import { startAzure, startS3, type StoreServer } from '../helpers/object-stores.js';
import { useSimulator } from '../helpers/simulator.js';
import { testDir } from '../helpers/tmp.js';

const simulator = await useSimulator({
  seed: 5,
  now: '2026-11-15T00:00:00Z',
  bicycle: { locations: 12 },
});

let servers: StoreServer[];
let env: Record<string, string>;

beforeAll(async () => {
  servers = await Promise.all([
    startS3(['shared', 'empty', 'other']),
    startAzure(['shared', 'empty', 'other']),
  ]);
  env = Object.assign({}, ...servers.map((server) => server.env)) as Record<string, string>;
});
afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
});

const BICYCLE = join(ROOT, 'pipelines', 'bicycle.yaml');
const night = (day: string) => [
  '--param', `start=${day}T00:00:00Z`, '--param', `end=${day}T06:00:00Z`, '--param', 'prefixes=UTR',
]; // prettier-ignore

/** Every object of a bucket or container, each with the sha256 of its bytes. */
async function contents(store: ObjectStore): Promise<Record<string, string>> {
  const found: Record<string, string> = {};
  for (const { key } of await store.list())
    found[key] = createHash('sha256')
      .update((await store.read(key)) ?? '')
      .digest('hex');
  return found;
}

/** Writes the objects (key -> text) into the store. */
async function place(store: ObjectStore, objects: Record<string, string>): Promise<void> {
  const dir = await testDir();
  for (const [key, text] of Object.entries(objects)) {
    const file = join(dir, key.replaceAll('/', '_'));
    await writeFile(file, text);
    await store.upload(file, key);
  }
}

/** A run in a folder of its own (so that a local folder made by mistake would be seen). */
async function run(args: string[], extra: Record<string, string | undefined> = {}) {
  const cwd = await testDir();
  const result = await runCli(args, {
    cwd,
    env: { ...simulator.env, ...env, HOME: cwd, TMPDIR: cwd, ...extra },
  });
  const left = (await readdir(cwd)).filter((name) => !name.startsWith('road-etl-'));
  const summary = JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '{}') as Record<
    string,
    unknown
  >;
  return { ...result, summary, left, cwd };
}

describe.each([
  ['S3 (s3rver)', 's3'],
  ['Azure Blob (Azurite)', 'az'],
])('a folder in %s, beside other teams’ objects', (_name, scheme) => {
  it('a run at a bucket root or a prefix holding others’ objects is refused; a run beside them leaves them be', async () => {
    const bucket = await openStore(`${scheme}://shared`, env);
    await place(bucket, {
      'team-a/data.csv': 'a,b\n1,2\n',
      'keep.txt': 'kept',
      'r/sub/keep2.txt': 'kept too',
    });
    const before = await contents(bucket);

    // At the root of a bucket that holds anything, and inside a prefix that does: exit 2, untouched.
    for (const url of [`${scheme}://shared`, `${scheme}://shared/r`]) {
      const refused = await run(['run', BICYCLE, '--output', url, ...night('2026-10-01')]);
      expect(refused.code, refused.stderr).toBe(2);
      expect(refused.stderr).toMatch(/did not write .*choose an empty prefix/);
      expect(refused.summary['status']).toBe('refused');
      expect(await contents(bucket)).toEqual(before);
    }

    // Beside them, in a prefix of its own: two nights; then an object someone adds inside it.
    const url = `${scheme}://shared/road-etl`;
    for (const day of ['2026-10-01']) {
      const ran = await run(['run', BICYCLE, '--output', url, ...night(day)]);
      expect(ran.code, ran.stderr).toBe(0);
    }
    await place(bucket, { 'road-etl/notes/readme.txt': 'ours, not road-etl’s' });
    const third = await run(['run', BICYCLE, '--output', url, ...night('2026-10-03')]);
    expect(third.code, third.stderr).toBe(0);
    const after = await contents(bucket);
    for (const [key, sha] of Object.entries(before)) expect(after[key], key).toBe(sha);
    expect(after['road-etl/notes/readme.txt']).toBeDefined();
    expect(Object.keys(after).some((k) => k.startsWith('road-etl/bicycle/measurements/'))).toBe(
      true,
    );
    // No lock, probe or put of a run is left.
    expect(Object.keys(after).filter((k) => /\.state\/(lock|probe-|put)/.test(k))).toEqual([]);
  }, 240_000);

  it.runIf(scheme === 's3')(
    'the local copy a killed run left in TMPDIR is removed by the next run',
    async () => {
      const url = `${scheme}://shared/killed`;
      const worker = await testDir();
      const env_ = { ...simulator.env, ...env, HOME: worker, TMPDIR: worker };
      const child = startCli(['run', BICYCLE, '--output', url, ...night('2026-10-01')], {
        env: env_,
      });
      const ended = collect(child);
      // Killed once its local copy is there.
      while ((await readdir(worker)).length === 0 && child.exitCode === null)
        await new Promise((resolve) => setImmediate(resolve));
      child.kill('SIGKILL');
      await ended;
      expect((await readdir(worker)).filter((n) => n.startsWith('road-etl-output-'))).toHaveLength(
        1,
      );
      const next = await runCli(['run', BICYCLE, '--output', url, ...night('2026-10-01')], {
        env: env_,
        cwd: worker,
      });
      expect(next.code, next.stderr).toBe(0);
      expect(await readdir(worker)).toEqual([]);
    },
    120_000,
  );

  it.runIf(scheme === 's3')(
    'a run at the root of an empty bucket is a folder like any other',
    async () => {
      const ran = await run([
        'run',
        BICYCLE,
        '--output',
        `${scheme}://empty`,
        ...night('2026-10-01'),
      ]);
      expect(ran.code, ran.stderr).toBe(0);
      const keys = Object.keys(await contents(await openStore(`${scheme}://empty`, env)));
      expect(keys).toContain('.state/commit.json');
      expect(keys).toContain('manifest.json');
    },
    120_000,
  );

  it.each([
    [`${scheme}:///re`, /no (bucket|container) is named/],
    [`${scheme}:/other/re`, new RegExp(`starts with ${scheme}://`)],
    [`${scheme}://other/re?versionId=3`, /no query string/],
    [`${scheme}://other/../re`, /no "\." or "\.\."/],
    [`${scheme}://no-such-place/re`, /does not exist/],
  ])('refuses --output %s with exit 2, writing nothing anywhere', async (url, why) => {
    const other = await openStore(`${scheme}://other`, env);
    const before = await contents(other);
    // In this process: a local folder made by mistake would be in its working folder.
    const refused = await runCli(['run', BICYCLE, '--output', url, ...night('2026-10-01')], {
      env: { ...simulator.env, ...env },
    });
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toMatch(why);
    expect(JSON.parse(refused.stdout.trim().split('\n').at(-1)!)).toMatchObject({
      status: 'refused',
    });
    // No local folder by mistake ("s3:", "az:"), nothing in the store.
    expect(existsSync(join(process.cwd(), `${scheme}:`))).toBe(false);
    expect(await contents(other)).toEqual(before);
  });
});

describe.each([
  ['S3 (s3rver)', 's3'],
  ['Azure Blob (Azurite)', 'az'],
])('a folder in %s that lost an object or its commit', (_name, scheme) => {
  it('says which, exits 1, leaves its data and no scratch copy behind, and says so again the next time', async () => {
    const url = `${scheme}://shared/damaged`;
    for (const day of ['2026-10-01']) {
      const ran = await run(['run', BICYCLE, '--output', url, ...night(day)]);
      expect(ran.code, ran.stderr).toBe(0);
    }
    const store = await openStore(url, env);
    const path = 'bicycle/measurements/date=2026-10-01/data.parquet';
    // The object that holds that file in the commit (a data file's version is an object of its own).
    const lost = (await readCommit(store))!.files[path]!.key;
    expect(lost).toMatch(/^bicycle\/measurements\/date=2026-10-01\/data\.v.+\.parquet$/);
    expect((await store.list()).map((o) => o.key)).toContain(lost);
    await store.remove([lost]);
    const data = async () =>
      Object.fromEntries(
        Object.entries(await contents(store)).filter(([key]) => key.endsWith('.parquet')),
      );
    const before = await data();
    for (let attempt = 0; attempt < 2; attempt++) {
      const failed = await run(['run', BICYCLE, '--output', url, ...night('2026-10-03')]);
      expect(failed.code, failed.stderr).toBe(1);
      expect(failed.stderr).toContain(`${url}/${lost}`);
      expect(failed.stderr).toMatch(/no longer has it/);
      expect(failed.stderr).toContain(`--repair ${path}`);
      expect(failed.stderr).not.toMatch(/a bug|ENOTEMPTY/);
      // It stopped at the first step that reads the dataset: no data written, the lost object still named.
      expect(failed.summary['status']).toBe('failed');
      expect((await readCommit(store))!.files[path]!.key).toBe(lost);
      // Its scratch copy is gone with it (the worker's TMPDIR is the run's folder).
      expect(await readdir(failed.cwd)).toEqual([]);
      expect(await data()).toEqual(before);
    }

    // A commit cut short: named, with what to do.
    const commit = (await store.read('.state/commit.json'))!;
    const dir = await testDir();
    await writeFile(join(dir, 'cut'), commit.subarray(0, Math.floor(commit.length / 2)));
    await store.upload(join(dir, 'cut'), '.state/commit.json');
    const cut = await run(['run', BICYCLE, '--output', url, ...night('2026-10-03')]);
    expect(cut.code, cut.stderr).toBe(1);
    expect(cut.stderr).toMatch(/\.state\/commit\.json is damaged .*not JSON.*restore it/);
    expect(cut.stderr).not.toMatch(/a bug/);
  }, 240_000);
});

describe('credentials a store refuses', () => {
  it.each([
    [
      'S3, no credentials at all',
      's3://other/no-keys',
      {
        AWS_ACCESS_KEY_ID: undefined,
        AWS_SECRET_ACCESS_KEY: undefined,
        AWS_PROFILE: 'road-etl-none',
        AWS_EC2_METADATA_DISABLED: 'true',
      },
    ],
    [
      'Azure, no credentials at all',
      'az://other/no-keys',
      { AZURE_STORAGE_CONNECTION_STRING: undefined },
    ],
  ])('%s: exit 2, saying what to set, nothing written', async (_name, url, extra) => {
    const refused = await run(['run', BICYCLE, '--output', url, ...night('2026-10-01')], extra);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toMatch(/AWS_SECRET_ACCESS_KEY|AWS_ACCESS_KEY_ID|AZURE_STORAGE/);
    expect(refused.left).toEqual([]);
    expect(await (await openStore(url, env)).list()).toEqual([]);
  });

  it('Azure, a wrong account key: exit 2, the key never shown', async () => {
    const wrong = Buffer.from('not the account key of this account, at all').toString('base64');
    const connection = env['AZURE_STORAGE_CONNECTION_STRING']!.replace(
      /AccountKey=[^;]+/,
      `AccountKey=${wrong}`,
    );
    const refused = await run(
      ['run', BICYCLE, '--output', 'az://other/wrong-key', ...night('2026-10-01')],
      { AZURE_STORAGE_CONNECTION_STRING: connection },
    );
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toMatch(/refuses the credentials/);
    expect(refused.stderr + refused.stdout).not.toContain(wrong.slice(0, 12));
    expect(await (await openStore('az://other/wrong-key', env)).list()).toEqual([]);
  });
});
