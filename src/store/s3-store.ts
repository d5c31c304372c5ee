/**
 * An output folder in S3 or an S3-compatible store (MinIO, Ceph, s3rver):
 * `s3://BUCKET/PREFIX`, with the standard AWS variables (AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_REGION; AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL
 * for another server, addressed path-style). A PUT replaces an object whole,
 * so every write is atomic for readers.
 *
 * The lock is an object, `.state/lock`, created with `If-None-Match: *` and
 * renewed with `If-Match`: S3 refuses a second create, so two runs never hold
 * it. Not every S3-compatible server enforces these conditions (s3rver does
 * not, nor do older MinIO releases): a run finds that out once, with a probe
 * object written twice, and then holds an advisory lock (its owner read back
 * after writing), saying so.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { pipeline as streamPipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { collect, statusOf } from './s3-client.js';
import { randomUUID } from 'node:crypto';
import { FolderInUseError, RunError } from '../errors.js';
import { holderAlive, LOCK_STALE_MS } from '../pipeline/state.js';
import {
  lockOwner,
  type HeldLock,
  type LockOwner,
  type LockGuarantee,
  type ObjectStore,
  type StoredObject,
} from './store.js';

/** A lock (of another host) whose lease has not been renewed for this long belongs to a run that is gone. */
export const LEASE_MS = LOCK_STALE_MS;
/** How often a held lock's lease is renewed. */
const RENEW_MS = 15_000;
const LOCK_KEY = '.state/lock';

export interface S3Location {
  bucket: string;
  /** '' or ending in '/'. */
  prefix: string;
}

export class S3Store implements ObjectStore {
  readonly url: string;
  readonly #client: S3Client;
  readonly #at: S3Location;
  #guarantee: Promise<LockGuarantee> | undefined;

  constructor(client: S3Client, at: S3Location) {
    this.#client = client;
    this.#at = at;
    this.url = `s3://${at.bucket}/${at.prefix}`;
  }

  #key(key: string): string {
    return this.#at.prefix + key;
  }

  /** Storage trouble as the run reports it: the object, the status, S3's words. */
  #trouble(what: string, key: string, error: unknown): RunError {
    const status = statusOf(error);
    return new RunError(
      `${what} s3://${this.#at.bucket}/${this.#key(key)}: ${(error as Error).name}${status ? ` (status ${status})` : ''}: ${(error as Error).message}`,
      { cause: error },
    );
  }

  async list(prefix = ''): Promise<StoredObject[]> {
    const found: StoredObject[] = [];
    let token: string | undefined;
    do {
      const page = await this.#client
        .send(
          new ListObjectsV2Command({
            Bucket: this.#at.bucket,
            Prefix: this.#key(prefix),
            ContinuationToken: token,
          }),
        )
        .catch((error: unknown) => {
          throw this.#trouble('Cannot list', prefix, error);
        });
      for (const o of page.Contents ?? [])
        if (o.Key !== undefined)
          found.push({
            key: o.Key.slice(this.#at.prefix.length),
            bytes: o.Size ?? 0,
            version: o.ETag ?? '',
          });
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    return found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async #get(key: string): Promise<{ body: Readable; version: string; bytes: number } | undefined> {
    try {
      const answer = await this.#client.send(
        new GetObjectCommand({ Bucket: this.#at.bucket, Key: this.#key(key) }),
      );
      return {
        body: answer.Body as Readable,
        version: answer.ETag ?? '',
        bytes: answer.ContentLength ?? 0,
      };
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw this.#trouble('Cannot read', key, error);
    }
  }

  async read(key: string): Promise<Buffer | undefined> {
    const got = await this.#get(key);
    return got ? collect(got.body) : undefined;
  }

  async download(key: string, file: string): Promise<StoredObject> {
    const got = await this.#get(key);
    if (!got) throw this.#trouble('Cannot read', key, new Error('no such object'));
    const partial = `${file}.download-${process.pid}`;
    try {
      await streamPipeline(got.body, createWriteStream(partial));
      await rename(partial, file);
    } catch (error) {
      await rm(partial, { force: true });
      throw this.#trouble('Cannot read', key, error);
    }
    return { key, bytes: got.bytes, version: got.version };
  }

  async upload(file: string, key: string): Promise<StoredObject> {
    const { size } = await stat(file);
    const put = await this.#client
      .send(
        new PutObjectCommand({
          Bucket: this.#at.bucket,
          Key: this.#key(key),
          Body: createReadStream(file),
          ContentLength: size,
        }),
      )
      .catch((error: unknown) => {
        throw this.#trouble('Cannot write', key, error);
      });
    return { key, bytes: size, version: put.ETag ?? '' };
  }

  async remove(keys: readonly string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 1000) {
      const batch = keys.slice(i, i + 1000);
      await this.#client
        .send(
          new DeleteObjectsCommand({
            Bucket: this.#at.bucket,
            Delete: { Objects: batch.map((k) => ({ Key: this.#key(k) })), Quiet: true },
          }),
        )
        .catch((error: unknown) => {
          throw this.#trouble('Cannot remove', batch[0]!, error);
        });
    }
  }

  /**
   * Writes `body` as `key` only if there is no such object (`version`
   * undefined) or it is still that version; resolves to the new version, or
   * undefined when the condition failed. A store that ignores the condition
   * writes all the same.
   */
  async #putIf(key: string, body: string, version?: string): Promise<string | undefined> {
    try {
      const put = await this.#client.send(
        new PutObjectCommand({
          Bucket: this.#at.bucket,
          Key: this.#key(key),
          Body: body,
          ...(version === undefined ? { IfNoneMatch: '*' } : { IfMatch: version }),
        }),
      );
      return put.ETag ?? '';
    } catch (error) {
      // 412: the condition failed; 409: a conditional write of the same key in flight.
      if (statusOf(error) === 412 || statusOf(error) === 409) return undefined;
      throw this.#trouble('Cannot write', key, error);
    }
  }

  /** Whether the store refuses a second create of one key: asked once, with a probe object. */
  guarantee(): Promise<LockGuarantee> {
    this.#guarantee ??= (async () => {
      const probe = `.state/probe-${randomUUID()}`;
      await this.#putIf(probe, 'probe');
      const second = await this.#putIf(probe, 'probe');
      await this.remove([probe]);
      return second === undefined ? 'enforced' : 'advisory';
    })();
    return this.#guarantee;
  }

  async lock(pipeline: string): Promise<HeldLock> {
    const guarantee = await this.guarantee();
    const owner = await lockOwner(pipeline);
    const body = (): string =>
      JSON.stringify({ ...owner, expires_at: new Date(Date.now() + LEASE_MS).toISOString() });
    for (let attempt = 0; attempt < 3; attempt++) {
      const held = await this.#get(LOCK_KEY);
      let version: string | undefined;
      if (held) {
        const other = parseLock((await collect(held.body)).toString('utf8'));
        // On this host its process is asked; on another, its lease must have run out.
        if (
          other &&
          (await holderAlive(other, Date.parse(other.expires_at) - LEASE_MS, Date.now()))
        )
          throw new FolderInUseError(
            `The output folder ${this.url} is in use by another road-etl run (pipeline ${other.pipeline}, pid ${other.pid} on ${other.hostname}, since ${other.started_at}); wait for it to finish (a lock whose lease of ${LEASE_MS / 1000} s runs out is taken over)`,
          );
        version = held.version; // a lease run out, or unreadable: taken over
      }
      const written = await this.#putIf(LOCK_KEY, body(), version);
      if (written === undefined) continue; // another run was quicker: look again
      // Read back: where the store ignores conditions, the last writer has it.
      const back = parseLock((await this.read(LOCK_KEY))?.toString('utf8') ?? '');
      if (back?.token !== owner.token) continue;
      return this.#hold(owner.token, written, guarantee, body);
    }
    throw new FolderInUseError(
      `Could not take the lock of ${this.url}: another run keeps taking it`,
    );
  }

  #hold(token: string, first: string, guarantee: LockGuarantee, body: () => string): HeldLock {
    let version = first;
    let renewing = Promise.resolve();
    const renew = setInterval(() => {
      renewing = this.#putIf(LOCK_KEY, body(), version).then(
        (next) => {
          if (next !== undefined) version = next;
        },
        () => undefined, // a failed renewal is tried again at the next beat
      );
    }, RENEW_MS);
    renew.unref();
    return {
      guarantee,
      release: async () => {
        clearInterval(renew);
        await renewing;
        const now = parseLock((await this.read(LOCK_KEY))?.toString('utf8') ?? '');
        if (now?.token === token) await this.remove([LOCK_KEY]);
      },
    };
  }
}

type LockBody = LockOwner & { expires_at: string };

function parseLock(text: string): LockBody | undefined {
  try {
    const value = JSON.parse(text) as Partial<LockBody>;
    return typeof value.token === 'string' && typeof value.expires_at === 'string'
      ? (value as LockBody)
      : undefined;
  } catch {
    return undefined;
  }
}
