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
import { setTimeout as sleep } from 'node:timers/promises';
import { pipeline as streamPipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { collect, configurationFault, statusOf } from './s3-client.js';
import { ConfigurationError, MissingObjectError, RunError, type RoadEtlError } from '../errors.js';
import { ObjectLock, type ConditionalWrites } from './object-lock.js';
import type { HeldLock, LockGuarantee, ObjectStore, StoredObject, Versioned } from './store.js';

/** Puts of one object, the first included, before a lost connection is reported. */
const UPLOAD_ATTEMPTS = 3;

/** Reads of one object whose body may be cut off before the read is trouble. */
const READ_ATTEMPTS = 5;

export interface S3Location {
  bucket: string;
  /** '' or ending in '/'. */
  prefix: string;
}

export class S3Store implements ObjectStore {
  readonly url: string;
  readonly #client: S3Client;
  readonly #at: S3Location;
  readonly #locks: ObjectLock;

  constructor(client: S3Client, at: S3Location) {
    this.#client = client;
    this.#at = at;
    this.url = `s3://${at.bucket}/${at.prefix}`;
    this.#locks = new ObjectLock(this.#conditional(), this.url);
  }

  #key(key: string): string {
    return this.#at.prefix + key;
  }

  /**
   * Storage trouble as the run reports it: the object, the status, S3's words;
   * a fault of configuration (no bucket, refused credentials) as bad
   * configuration, with what to fix (exit 2).
   */
  #trouble(what: string, key: string, error: unknown): RoadEtlError {
    const status = statusOf(error);
    const text = `${what} s3://${this.#at.bucket}/${this.#key(key)}: ${(error as Error).name}${status ? ` (status ${status})` : ''}: ${(error as Error).message}`;
    const fix = configurationFault(error);
    if (fix)
      return new ConfigurationError(`--output ${this.url}: ${fix} (${text})`, { cause: error });
    return new RunError(text, { cause: error });
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
      // No such object; a missing bucket (also 404) is bad configuration.
      if (statusOf(error) === 404 && configurationFault(error) === undefined) return undefined;
      throw this.#trouble('Cannot read', key, error);
    }
  }

  async read(key: string): Promise<Buffer | undefined> {
    return (await this.readVersioned(key))?.data;
  }

  async readVersioned(key: string): Promise<Versioned | undefined> {
    for (let attempt = 1; ; attempt++) {
      const got = await this.#get(key);
      if (!got) return undefined;
      try {
        const data = await collect(got.body);
        if (data.length === got.bytes) return { data, version: got.version };
        throw new Error(`${data.length} of its ${got.bytes} bytes came`);
      } catch (error) {
        // A body cut off (a store that writes objects in place, as s3rver does, or the
        // network) is read again from the start.
        if (attempt >= READ_ATTEMPTS) throw this.#trouble('Cannot read', key, error);
      }
    }
  }

  async download(key: string, file: string): Promise<StoredObject> {
    const got = await this.#get(key);
    if (!got) throw new MissingObjectError(this.url, key);
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

  /**
   * Writes the file as the object. The SDK does not retry a request whose body
   * is a stream, so a put that a connection lost (reset, timed out, a 5xx) is
   * made again here with the file read anew, UPLOAD_ATTEMPTS times in all.
   */
  async upload(file: string, key: string): Promise<StoredObject> {
    const { size } = await stat(file);
    for (let attempt = 1; ; attempt++) {
      try {
        const put = await this.#client.send(
          new PutObjectCommand({
            Bucket: this.#at.bucket,
            Key: this.#key(key),
            Body: createReadStream(file),
            ContentLength: size,
          }),
        );
        return { key, bytes: size, version: put.ETag ?? '' };
      } catch (error) {
        const status = statusOf(error) ?? 0;
        const lost = status >= 500 || (status === 0 && !configurationFault(error));
        if (!lost || attempt >= UPLOAD_ATTEMPTS) throw this.#trouble('Cannot write', key, error);
        await sleep(250 * 2 ** attempt);
      }
    }
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
  writeIf(key: string, body: string, version: string | undefined): Promise<string | undefined> {
    return this.#putIf(key, body, version);
  }

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

  /** Whether the store refuses a second create of one key (found once, with a probe object). */
  guarantee(): Promise<LockGuarantee> {
    return this.#locks.guarantee();
  }

  lock(pipeline: string): Promise<HeldLock> {
    return this.#locks.lock(pipeline);
  }

  #conditional(): ConditionalWrites {
    return {
      readVersioned: async (key) => {
        const got = await this.#get(key);
        return got
          ? { text: (await collect(got.body)).toString('utf8'), version: got.version }
          : undefined;
      },
      putIf: (key, body, version) => this.#putIf(key, body, version),
      remove: (keys) => this.remove(keys),
    };
  }
}
