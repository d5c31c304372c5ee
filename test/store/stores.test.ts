/**
 * The storage seam against real stores: the local folder, S3 as s3rver
 * serves it (a real S3 server in Node, started here; it does not enforce
 * conditional writes, as older MinIO releases do not), and Azure Blob as
 * Microsoft's Azurite serves it (it enforces them).
 */
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gateUploads, startAzure, startS3, type StoreServer } from '../helpers/object-stores.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FolderInUseError } from '../../src/errors.js';
import { redactor } from '../../src/log.js';
import { LocalStore } from '../../src/store/local-store.js';
import { openStore, s3Location } from '../../src/store/open.js';
import { LEASE_MS } from '../../src/store/object-lock.js';
import type { ObjectStore } from '../../src/store/store.js';
import { testDir } from '../helpers/tmp.js';

let s3: StoreServer;
let azure: StoreServer;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  [s3, azure] = await Promise.all([startS3(['nightly']), startAzure(['nightly'])]);
  env = { ...s3.env, ...azure.env };
});
afterAll(async () => {
  await Promise.all([s3.close(), azure.close()]);
});

const stores: [string, () => Promise<ObjectStore>][] = [
  ['the local folder', async () => new LocalStore(join(await testDir(), 'output'))],
  ['S3 (s3rver)', () => openStore(`s3://nightly/road-etl/${randomBytes(4).toString('hex')}`, env)],
  [
    'Azure Blob (Azurite)',
    () => openStore(`az://nightly/road-etl/${randomBytes(4).toString('hex')}`, env),
  ],
];

describe.each(stores)('%s', (_name, make) => {
  it('lists, reads, downloads and removes whole objects, as uploaded', async () => {
    const store = await make();
    const dir = await testDir();
    const data = randomBytes(300_000);
    await writeFile(join(dir, 'a.parquet'), data);
    await writeFile(join(dir, 'm.json'), '{"ok":true}\n');
    const keys = [
      'signs/events/publication_month=2026-11-01/signs_events-1-0.parquet',
      'derived/signs_live_changes/to_date=2026-11-26/data.parquet',
    ];
    for (const key of keys) await store.upload(join(dir, 'a.parquet'), key);
    await store.upload(join(dir, 'm.json'), 'manifest.json');

    const listed = await store.list();
    expect(listed.map((o) => o.key)).toEqual([...keys, 'manifest.json'].sort());
    expect(listed.every((o) => o.bytes === (o.key.endsWith('.json') ? 12 : data.length))).toBe(
      true,
    );
    expect((await store.list('signs/')).map((o) => o.key)).toEqual([keys[0]]);
    expect((await store.read('manifest.json'))?.toString()).toBe('{"ok":true}\n');
    expect(await store.read('no/such/object')).toBeUndefined();
    await store.download(keys[0]!, join(dir, 'b.parquet'));
    expect((await readFile(join(dir, 'b.parquet'))).equals(data)).toBe(true);

    await store.remove([keys[1]!, 'no/such/object']);
    expect((await store.list()).map((o) => o.key)).toEqual(['manifest.json', keys[0]]);
  });

  it('gives the folder to one run at a time, and again once it is released', async () => {
    const store = await make();
    const first = await store.lock('bicycle');
    const refused = await store.lock('traffic_signs_live').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(FolderInUseError);
    expect(String(refused)).toMatch(/in use by another road-etl run \(pipeline bicycle, pid \d+/);
    await first.release();
    const second = await store.lock('traffic_signs_live');
    await second.release();
  });
});

// s3rver writes an object in place, so a read during a write sees part of it; S3,
// Azure Blob and the local folder replace an object whole.
describe.each(stores.filter(([name]) => !name.startsWith('S3')))('%s', (_name, make) => {
  it('reads an object whole while another run writes it again and again', async () => {
    const store = await make();
    const dir = await testDir();
    const versions = [randomBytes(20_000), randomBytes(30_000)];
    for (const [i, data] of versions.entries()) await writeFile(join(dir, `${i}.bin`), data);
    await store.upload(join(dir, '0.bin'), '.state/lock');
    const stop = new AbortController();
    const writer = (async () => {
      for (let i = 1; !stop.signal.aborted; i++)
        await store.upload(join(dir, `${i % 2}.bin`), '.state/lock');
    })();
    const read: Buffer[] = [];
    try {
      for (let i = 0; i < 60; i++) read.push((await store.read('.state/lock'))!);
    } finally {
      stop.abort();
      await writer;
    }
    expect(read.every((data) => versions.some((v) => v.equals(data)))).toBe(true);
  });
});

describe('S3 (s3rver)', () => {
  it('is found not to enforce conditional writes: the lock is advisory, and says so', async () => {
    const store = await openStore(`s3://nightly/probe-${randomBytes(4).toString('hex')}`, env);
    const held = await store.lock('bicycle');
    expect(held.guarantee).toBe('advisory');
    await held.release();
    // The probe leaves nothing behind.
    expect(await store.list()).toEqual([]);
  });

  it('takes over a lock whose lease has run out (a run killed on another worker)', async () => {
    const prefix = `stale-${randomBytes(4).toString('hex')}`;
    const store = await openStore(`s3://nightly/${prefix}`, env);
    const dir = await testDir();
    const gone = {
      token: 'dead-run',
      pipeline: 'bicycle',
      hostname: 'worker-that-died',
      pid: 4242,
      started_at: new Date(Date.now() - 3 * LEASE_MS).toISOString(),
      expires_at: new Date(Date.now() - LEASE_MS).toISOString(),
    };
    await writeFile(join(dir, 'lock'), JSON.stringify(gone));
    await store.upload(join(dir, 'lock'), '.state/lock');
    const held = await store.lock('bicycle');
    const now = JSON.parse((await store.read('.state/lock'))!.toString()) as { token: string };
    expect(now.token).not.toBe('dead-run');
    await held.release();
    expect(await store.read('.state/lock')).toBeUndefined();
    // A live lease is respected.
    await writeFile(
      join(dir, 'lock'),
      JSON.stringify({ ...gone, expires_at: new Date(Date.now() + LEASE_MS).toISOString() }),
    );
    await store.upload(join(dir, 'lock'), '.state/lock');
    await expect(store.lock('bicycle')).rejects.toThrow(/worker-that-died/);
  });

  it('puts an object again when its connection is lost, and names it when that lasts', async () => {
    const gate = await gateUploads(s3);
    try {
      const store = await openStore(
        `s3://nightly/road-etl/${randomBytes(4).toString('hex')}`,
        gate.env,
      );
      const dir = await testDir();
      const data = randomBytes(100_000);
      await writeFile(join(dir, 'a.parquet'), data);
      const key = 'bicycle/measurements/date=2026-10-01/data.parquet';
      gate.drop(2);
      await store.upload(join(dir, 'a.parquet'), key);
      expect(await store.read(key)).toEqual(data);
      gate.drop(3);
      await expect(store.upload(join(dir, 'a.parquet'), key)).rejects.toThrow(
        /Cannot write s3:\/\/nightly\/road-etl\/[0-9a-f]+\/bicycle\/measurements\/date=2026-10-01\/data\.parquet/,
      );
    } finally {
      await gate.close();
    }
  });

  it('names the object and the status when the bucket is not there', async () => {
    const store = await openStore('s3://no-such-bucket/road-etl', env);
    await expect(store.list()).rejects.toThrow(
      /Cannot list s3:\/\/no-such-bucket\/road-etl\/: NoSuchBucket \(status 404\)/,
    );
  });
});

describe('Azure Blob (Azurite)', () => {
  it('enforces conditional writes: the lock is enforced', async () => {
    const store = await openStore(`az://nightly/probe-${randomBytes(4).toString('hex')}`, env);
    const held = await store.lock('bicycle');
    expect(held.guarantee).toBe('enforced');
    await held.release();
    expect(await store.list()).toEqual([]);
  });
});

describe('the stores’ secrets', () => {
  it('are masked in whatever road-etl writes, in every form, once a store is opened', async () => {
    const key = 'k3y/with+slash==';
    const sas = 'sv=2024-01-01&sig=abc%2Fdef';
    await openStore('az://nightly/x', {
      AZURE_STORAGE_CONNECTION_STRING: `DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=${key};SharedAccessSignature=${sas};EndpointSuffix=core.windows.net`,
    });
    await openStore('s3://nightly/x', {
      AWS_ACCESS_KEY_ID: 'AKIAEXAMPLE',
      AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG',
    });
    for (const secret of [
      key,
      encodeURIComponent(key),
      Buffer.from(key).toString('base64'),
      sas,
      'wJalrXUtnFEMI/K7MDENG',
    ])
      expect(redactor.text(`failed: ${secret}.`), secret).toBe('failed: ***.');
    // The access key id is no secret: it names the account.
    expect(redactor.text('AKIAEXAMPLE')).toBe('AKIAEXAMPLE');
  });
});

describe('s3Location', () => {
  it('reads the bucket and the prefix, and refuses a bucket name S3 would', () => {
    expect(s3Location('s3://nightly/road-etl/')).toEqual({
      bucket: 'nightly',
      prefix: 'road-etl/',
    });
    expect(s3Location('s3://nightly')).toEqual({ bucket: 'nightly', prefix: '' });
    expect(s3Location('/data/road-etl')).toBeUndefined();
    expect(() => s3Location('s3://Not_A_Bucket/x')).toThrow(/is not an S3 bucket name/);
  });
});
