/**
 * A night killed at each boundary of its commit, in a bucket (s3rver behind a
 * proxy that holds the request where the test kills the run): before the
 * commit, while it is written (the store has it, the run never hears so),
 * after it while its descriptions are not yet written, and while the objects
 * of the commit before are removed. After each, `road-etl query` on the URL
 * and plain DuckDB through views.sql over a copy of the prefix read the same
 * whole commit, the one the store holds; the manifest names that commit, or
 * (killed before it was written again) the one before, whose id tells the
 * reader so; the next night on an empty worker lands what one run does.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/open.js';
import type { ObjectStore } from '../../src/store/store.js';
import { collect, ROOT, runCli, startCli } from '../helpers/cli.js';
import { ONE_COMMIT } from '../helpers/committed.js';
import {
  copyOfPrefix,
  gateUploads,
  startS3,
  type StoreServer,
  type UploadGate,
} from '../helpers/object-stores.js';
import { plainDuckDb } from '../helpers/plain-duckdb.js';
import { useSimulator } from '../helpers/simulator.js';
import { testDir } from '../helpers/tmp.js';

const simulator = await useSimulator({
  seed: 26,
  now: '2026-11-15T00:00:00Z',
  bicycle: { locations: 12 },
});

let server: StoreServer;
let gate: UploadGate;
beforeAll(async () => {
  server = await startS3(['nightly']);
  gate = await gateUploads(server);
});
afterAll(async () => {
  await gate.close();
  await server.close();
});

const BICYCLE = join(ROOT, 'pipelines', 'bicycle.yaml');
const night = (url: string, day: number) => [
  'run', BICYCLE, '--output', url, '--log-format', 'json',
  '--param', `start=2026-10-1${day}T00:00:00Z`, '--param', `end=2026-10-1${day + 1}T00:00:00Z`,
  '--param', 'prefixes=UTR',
]; // prettier-ignore

/** A process of its own with a fresh HOME and TMPDIR (a worker whose disk is empty), through the gate. */
async function worker(): Promise<Record<string, string>> {
  const home = await testDir();
  return { ...simulator.env, ...gate.env, HOME: home, TMPDIR: home };
}

/** The measurements `road-etl query` reads on the URL, and views.sql over a copy of the prefix. */
async function reads(url: string, store: ObjectStore) {
  const queried = await runCli(
    ['query', ONE_COMMIT.replace('SELECT (SELECT count(*) FROM bicycle_daily) AS daily', 'SELECT (SELECT count(*) FROM bicycle_measurements) AS n'), '--output', url, '--format', 'json'],
    { env: { ...server.env } },
  );
  expect(queried.code, queried.stderr).toBe(0);
  const [viaQuery] = JSON.parse(queried.stdout) as { n: unknown; apart: unknown }[];
  const [[viaViews]] = (await plainDuckDb(
    await copyOfPrefix(store),
    [ONE_COMMIT.replace('SELECT (SELECT count(*) FROM bicycle_daily) AS daily', 'SELECT (SELECT count(*) FROM bicycle_measurements) AS n')],
    { views: true },
  )) as [[{ n: string; apart: string }]];
  const named = (key: string) => store.read(key).then((text) => (JSON.parse(text!.toString()) as Record<string, unknown>));
  return {
    query: { n: Number(viaQuery!.n), apart: Number(viaQuery!.apart) },
    views: { n: Number(viaViews.n), apart: Number(viaViews.apart) },
    commit: (await named('.state/commit.json'))['id'] as string,
    manifest: (await named('manifest.json'))['commit'] as string,
  };
} // prettier-ignore

type Match = (method: string, url: string) => boolean;
const isCommitPut: Match = (method, url) =>
  method === 'PUT' && url.split('?')[0]!.endsWith('/.state/commit.json');
const commitPut = (): Match => isCommitPut;
const descriptionPut = (): Match => (method, url) =>
  method === 'PUT' && /\/(views\.sql|manifest\.json)$/.test(url.split('?')[0]!);
/** The first removal once the commit is written (a run removes lock probes before it). */
const removal = (): Match => {
  let committed = false;
  return (method, url) => {
    if (isCommitPut(method, url)) committed = true;
    return committed && (method === 'DELETE' || (method === 'POST' && /[?&]delete/.test(url)));
  };
};

let once: Promise<Awaited<ReturnType<typeof reads>>> | undefined;
/** What one run over both nights reads, in a prefix of its own (made once for every case). */
const onceOverBothNights = () =>
  (once ??= (async () => {
    const url = 's3://nightly/once';
    for (const day of [0, 1]) {
      const whole = await runCli(night(url, day), { env: await worker(), process: true });
      expect(whole.code, whole.stderr).toBe(0);
    }
    return reads(url, await openStore(url, { ...server.env }));
  })());

describe('a night in a bucket killed at each boundary of its commit', () => {
  it.each([
    ['before the commit', commitPut, false, { read: 'before', manifest: 'before' }],
    ['while the commit is written', commitPut, true, { read: 'after', manifest: 'before' }],
    ['after the commit, before its descriptions', descriptionPut, false, { read: 'after', manifest: 'before' }],
    ['while the objects of the commit before are removed', removal, false, { read: 'after', manifest: 'after' }],
  ] as const)('%s: query and views.sql read the commit the store holds; the next night lands one run’s data', async (_name, match, answered, expected) => {
    const url = `s3://nightly/${Math.random().toString(36).slice(2, 8)}`;
    const store = await openStore(url, { ...server.env });
    const first = await runCli(night(url, 0), { env: await worker(), process: true });
    expect(first.code, first.stderr).toBe(0);
    const before = await reads(url, store);
    expect(before.query.apart).toBe(0);
    const after = await onceOverBothNights();

    const reached = gate.hold(match(), answered);
    const child = startCli(night(url, 1), { env: await worker() });
    const done = collect(child);
    await Promise.race([reached, done]);
    child.kill('SIGKILL');
    const killed = await done;
    gate.free();
    expect(killed.signal).toBe('SIGKILL');

    const now = await reads(url, store);
    const counts = { before: before.query.n, after: after.query.n };
    expect(counts.after).toBeGreaterThan(counts.before);
    expect(before.manifest).toBe(before.commit);
    expect(now.query).toEqual({ n: counts[expected.read], apart: 0 });
    expect(now.views).toEqual(now.query);
    expect(now.commit).toBe(expected.read === 'before' ? before.commit : now.commit);
    expect(now.commit === before.commit).toBe(expected.read === 'before');
    expect(now.manifest).toBe(expected.manifest === 'before' ? before.commit : now.commit);

    const again = await runCli(night(url, 1), { env: await worker(), process: true });
    expect(again.code, again.stderr).toBe(0);
    const healed = await reads(url, store);
    expect(healed.query).toEqual({ n: counts.after, apart: 0 });
    expect(healed.views).toEqual({ n: counts.after, apart: 0 });
    expect(healed.manifest).toBe(healed.commit);
    // Every file the commit names by its content holds that content in the store.
    const { files } = JSON.parse((await store.read('.state/commit.json'))!.toString()) as {
      files: Record<string, { key: string; sha256?: string }>;
    };
    const byContent = Object.entries(files).filter(([, file]) => file.sha256 !== undefined);
    const held = await Promise.all(
      byContent.map(async ([path, file]) => [
        path,
        createHash('sha256').update((await store.read(file.key))!).digest('hex'),
      ]),
    );
    expect(Object.fromEntries(held)).toEqual(
      Object.fromEntries(byContent.map(([path, file]) => [path, file.sha256])),
    );
  }, 300_000); // prettier-ignore
});
