/**
 * Where an output folder lives: the storage seam. The local folder and object
 * stores (S3 and S3-compatible servers) implement one small interface: list,
 * read and write whole objects (each write atomic: a reader sees the old object
 * or the new one, never a part), remove, and the lock that gives the folder to
 * one run at a time. Keys are the folder's relative paths with `/`.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { LockInfo } from './folder-lock.js';
import { processIdentity } from '../util/process.js';

export interface StoredObject {
  key: string;
  bytes: number;
  /** What changes with the content (an S3 ETag, a local size and time). */
  version: string;
}

/** How far the store itself keeps two runs apart. */
export type LockGuarantee =
  /** The store refuses a second create of the lock (conditional writes, or the local folder's lock). */
  | 'enforced'
  /** The store accepts a second create: the lock is an owner and a lease, read back after writing. */
  | 'advisory';

/** The run that holds a lock: as the local folder's lock names it (LockInfo), with a token. */
export type LockOwner = LockInfo & { token: string };

export interface HeldLock {
  guarantee: LockGuarantee;
  /** Gives the lock back (if still held by this run). */
  release(): Promise<void>;
}

/** An object's bytes, and the version they are. */
export interface Versioned {
  data: Buffer;
  version: string;
}

export interface ObjectStore {
  /** The store as the user named it (`s3://bucket/prefix`, a folder). */
  readonly url: string;
  /** Every object under `prefix` ('' for all), sorted by key. */
  list(prefix?: string): Promise<StoredObject[]>;
  /** The object's bytes; undefined when there is none. */
  read(key: string): Promise<Buffer | undefined>;
  /** The object's bytes and the version they are; undefined when there is none. */
  readVersioned(key: string): Promise<Versioned | undefined>;
  /**
   * Writes `body` as `key` only if the object is still `version` (undefined:
   * only if there is none), with the store's own condition (S3 `If-Match` /
   * `If-None-Match`, Azure's, the local folder under its lock); resolves to
   * the new version, or undefined when the condition failed. A store that
   * ignores conditions (found by the lock's probe: `advisory`) writes all the same.
   */
  writeIf(key: string, body: string, version: string | undefined): Promise<string | undefined>;
  /** Copies the object to a local file (written whole, then renamed). */
  download(key: string, file: string): Promise<StoredObject>;
  /** Writes a local file as the object, whole. */
  upload(file: string, key: string): Promise<StoredObject>;
  /** Removes the objects (those absent are no error). */
  remove(keys: readonly string[]): Promise<void>;
  /** Takes the folder for one run, or fails with FolderInUseError naming the run that has it. */
  lock(pipeline: string): Promise<HeldLock>;
}

/** The owner a run writes into a lock: its process, so that a run on this host can tell it is gone. */
export async function lockOwner(pipeline: string): Promise<LockOwner> {
  const me = await processIdentity();
  return {
    token: randomUUID(),
    pipeline,
    hostname: hostname(),
    pid: process.pid,
    started_at: new Date().toISOString(),
    process_start: me.start,
    boot_id: me.boot,
  };
}
