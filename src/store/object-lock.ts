/**
 * The lock of an output folder in an object store: an object, `.state/lock`,
 * created only if absent (`If-None-Match: *`) and renewed only if unchanged
 * (`If-Match`), so that a store that enforces these conditions never lets two
 * runs hold it. Its body names the run (as the local lock does) and when its
 * lease runs out: a lock of a run on this host that is gone is taken over at
 * once, one of another host when its lease (LEASE_MS) has run out. Where a
 * store ignores the conditions (found with a probe object written twice), the
 * lock is advisory: the owner is read back after writing, and the last writer
 * has it.
 */
import { randomUUID } from 'node:crypto';
import { FolderInUseError } from '../errors.js';
import { holderAlive, LOCK_STALE_MS } from './folder-lock.js';
import { lockOwner, type HeldLock, type LockGuarantee, type LockOwner } from './store.js';

/** A lock (of another host) whose lease has not been renewed for this long belongs to a run that is gone. */
export const LEASE_MS = LOCK_STALE_MS;
/** How often a held lock's lease is renewed. */
const RENEW_MS = 15_000;
const LOCK_KEY = '.state/lock';

/** What a store gives the lock: reads with the object's version, and conditional writes. */
export interface ConditionalWrites {
  readVersioned(key: string): Promise<{ text: string; version: string } | undefined>;
  /**
   * Writes `body` as `key` only if there is no such object (`version`
   * undefined) or it is still that version; resolves to the new version, or
   * undefined when the condition failed. A store that ignores conditions writes all the same.
   */
  putIf(key: string, body: string, version?: string): Promise<string | undefined>;
  remove(keys: readonly string[]): Promise<void>;
}

/** Whether the store refuses a second create of one key: a probe object, written twice, then removed. */
export async function probeGuarantee(store: ConditionalWrites): Promise<LockGuarantee> {
  const probe = `.state/probe-${randomUUID()}`;
  try {
    await store.putIf(probe, 'probe');
    const second = await store.putIf(probe, 'probe');
    return second === undefined ? 'enforced' : 'advisory';
  } finally {
    // (one a killed run left is removed by the next put: sync.ts)
    await store.remove([probe]);
  }
}

type LockBody = LockOwner & { expires_at: string };

function parseLock(text: string | undefined): LockBody | undefined {
  try {
    const value = JSON.parse(text ?? '') as Partial<LockBody>;
    return typeof value.token === 'string' && typeof value.expires_at === 'string'
      ? (value as LockBody)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Takes the folder's lock, or fails with FolderInUseError naming the run that holds it. */
export async function takeLock(
  store: ConditionalWrites,
  url: string,
  pipeline: string,
  guarantee: LockGuarantee,
): Promise<HeldLock> {
  const owner = await lockOwner(pipeline);
  const body = (): string =>
    JSON.stringify({ ...owner, expires_at: new Date(Date.now() + LEASE_MS).toISOString() });
  for (let attempt = 0; attempt < 3; attempt++) {
    const held = await store.readVersioned(LOCK_KEY);
    const other = parseLock(held?.text);
    // On this host its process is asked; on another, its lease must have run out.
    if (other && (await holderAlive(other, Date.parse(other.expires_at) - LEASE_MS, Date.now())))
      throw new FolderInUseError(
        `The output folder ${url} is in use by another road-etl run (pipeline ${other.pipeline}, pid ${other.pid} on ${other.hostname}, since ${other.started_at}); wait for it to finish (a lock whose lease of ${LEASE_MS / 1000} s runs out is taken over)`,
      );
    // No lock, or one of a run that is gone (or unreadable): taken over.
    const written = await store.putIf(LOCK_KEY, body(), held?.version);
    if (written === undefined) continue; // another run was quicker: look again
    // Read back: where the store ignores conditions, the last writer has it.
    if (parseLock((await store.readVersioned(LOCK_KEY))?.text)?.token !== owner.token) continue;
    return hold(store, owner.token, written, guarantee, body);
  }
  throw new FolderInUseError(`Could not take the lock of ${url}: another run keeps taking it`);
}

function hold(
  store: ConditionalWrites,
  token: string,
  first: string,
  guarantee: LockGuarantee,
  body: () => string,
): HeldLock {
  let version = first;
  let renewing = Promise.resolve();
  const renew = setInterval(() => {
    renewing = store.putIf(LOCK_KEY, body(), version).then(
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
      if (parseLock((await store.readVersioned(LOCK_KEY))?.text)?.token === token)
        await store.remove([LOCK_KEY]);
    },
  };
}

/** A store's lock: the probe asked once, then each lock taken with what it found. */
export class ObjectLock {
  readonly #writes: ConditionalWrites;
  readonly #url: string;
  #guarantee: Promise<LockGuarantee> | undefined;

  constructor(writes: ConditionalWrites, url: string) {
    this.#writes = writes;
    this.#url = url;
  }

  /** Whether the store refuses a second create of one key: asked once, with a probe object. */
  guarantee(): Promise<LockGuarantee> {
    this.#guarantee ??= probeGuarantee(this.#writes);
    return this.#guarantee;
  }

  async lock(pipeline: string): Promise<HeldLock> {
    return takeLock(this.#writes, this.#url, pipeline, await this.guarantee());
  }
}
