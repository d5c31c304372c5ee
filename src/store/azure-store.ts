/**
 * An output folder in Azure Blob Storage: `az://CONTAINER/PREFIX`, with
 * AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT and
 * AZURE_STORAGE_KEY (the account's endpoint, or AZURE_STORAGE_BLOB_ENDPOINT
 * for another, such as Azurite). A block blob is written whole: its blocks
 * are staged, then committed at once, so a reader sees the old blob or the
 * new one. The lock is a blob created with `If-None-Match: *` and renewed with
 * `If-Match` (object-lock.ts), conditions Azure enforces.
 */
import { rename, rm, stat } from 'node:fs/promises';
import {
  BlobServiceClient,
  RestError,
  StorageSharedKeyCredential,
  type ContainerClient,
} from '@azure/storage-blob';
import {
  ConfigurationError,
  InputError,
  MissingObjectError,
  RunError,
  type RoadEtlError,
} from '../errors.js';
import { ObjectLock, type ConditionalWrites } from './object-lock.js';
import type { HeldLock, LockGuarantee, ObjectStore, StoredObject, Versioned } from './store.js';

/** Reads of one blob that a write in between may spoil before the read is trouble. */
const READ_ATTEMPTS = 5;

export interface AzureLocation {
  container: string;
  /** '' or ending in '/'. */
  prefix: string;
}

/** The container the Azure variables describe. */
export function azureContainer(env: NodeJS.ProcessEnv, container: string): ContainerClient {
  const connection = env['AZURE_STORAGE_CONNECTION_STRING'];
  if (connection) {
    try {
      return BlobServiceClient.fromConnectionString(connection).getContainerClient(container);
    } catch (error) {
      throw new InputError(`AZURE_STORAGE_CONNECTION_STRING: ${(error as Error).message}`);
    }
  }
  const account = env['AZURE_STORAGE_ACCOUNT'];
  const key = env['AZURE_STORAGE_KEY'];
  if (!account || !key)
    throw new ConfigurationError(
      '--output az://...: set AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY',
    );
  const endpoint = env['AZURE_STORAGE_BLOB_ENDPOINT'] ?? `https://${account}.blob.core.windows.net`;
  return new BlobServiceClient(
    endpoint,
    new StorageSharedKeyCredential(account, key),
  ).getContainerClient(container);
}

function statusOf(error: unknown): number | undefined {
  return error instanceof RestError ? error.statusCode : undefined;
}

/** What to fix, when an Azure error says the configuration is wrong (not trouble that passes). */
function configurationFault(error: unknown): string | undefined {
  const code = error instanceof RestError ? error.code : undefined;
  if (code === 'ContainerNotFound')
    return 'the container does not exist: create it, or correct the container in --output';
  if (code === 'AccountIsDisabled') return 'the storage account is disabled';
  if (statusOf(error) === 403)
    return 'the store refuses the credentials (403): check AZURE_STORAGE_CONNECTION_STRING (or AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY) and their rights on the container';
  return undefined;
}

export class AzureStore implements ObjectStore {
  readonly url: string;
  readonly #container: ContainerClient;
  readonly #prefix: string;
  readonly #locks: ObjectLock;

  constructor(container: ContainerClient, at: AzureLocation) {
    this.#container = container;
    this.#prefix = at.prefix;
    this.url = `az://${at.container}/${at.prefix}`;
    this.#locks = new ObjectLock(this.#conditional(), this.url);
  }

  #blob(key: string) {
    return this.#container.getBlockBlobClient(this.#prefix + key);
  }

  /** Storage trouble as the run reports it; a fault of configuration as bad configuration (exit 2). */
  #trouble(what: string, key: string, error: unknown): RoadEtlError {
    const status = statusOf(error);
    const code = error instanceof RestError && error.code ? error.code : (error as Error).name;
    const text = `${what} ${this.url}${key}: ${code}${status ? ` (status ${status})` : ''}: ${(error as Error).message.split('\n')[0]}`;
    const fix = configurationFault(error);
    if (fix)
      return new ConfigurationError(`--output ${this.url}: ${fix} (${text})`, { cause: error });
    return new RunError(text, { cause: error });
  }

  async list(prefix = ''): Promise<StoredObject[]> {
    const found: StoredObject[] = [];
    try {
      for await (const blob of this.#container.listBlobsFlat({ prefix: this.#prefix + prefix }))
        found.push({
          key: blob.name.slice(this.#prefix.length),
          bytes: blob.properties.contentLength ?? 0,
          version: blob.properties.etag,
        });
    } catch (error) {
      throw this.#trouble('Cannot list', prefix, error);
    }
    return found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async #readVersioned(key: string): Promise<{ data: Buffer; version: string } | undefined> {
    const blob = this.#blob(key);
    for (let attempt = 1; ; attempt++) {
      try {
        // One GET: the bytes and the version they are. A body cut off is read on only
        // from that version (the SDK sends If-Match), so a write in between fails it
        // with 412, and the read starts again from the version now there.
        const got = await blob.download(0);
        const chunks: Buffer[] = [];
        for await (const chunk of got.readableStreamBody ?? []) chunks.push(chunk as Buffer);
        return { data: Buffer.concat(chunks), version: got.etag ?? '' };
      } catch (error) {
        // No such blob; a missing container (also 404) is bad configuration.
        if (statusOf(error) === 404 && configurationFault(error) === undefined) return undefined;
        if (statusOf(error) === 412 && attempt < READ_ATTEMPTS) continue;
        throw this.#trouble('Cannot read', key, error);
      }
    }
  }

  async read(key: string): Promise<Buffer | undefined> {
    return (await this.#readVersioned(key))?.data;
  }

  readVersioned(key: string): Promise<Versioned | undefined> {
    return this.#readVersioned(key);
  }

  async writeIf(
    key: string,
    body: string,
    version: string | undefined,
  ): Promise<string | undefined> {
    try {
      const put = await this.#blob(key).upload(body, Buffer.byteLength(body), {
        conditions: version === undefined ? { ifNoneMatch: '*' } : { ifMatch: version },
      });
      return put.etag ?? '';
    } catch (error) {
      // 409: the blob is there; 412: it is another version now.
      if (statusOf(error) === 409 || statusOf(error) === 412) return undefined;
      throw this.#trouble('Cannot write', key, error);
    }
  }

  async download(key: string, file: string): Promise<StoredObject> {
    const partial = `${file}.download-${process.pid}`;
    try {
      const got = await this.#blob(key).downloadToFile(partial);
      await rename(partial, file);
      return { key, bytes: got.contentLength ?? 0, version: got.etag ?? '' };
    } catch (error) {
      await rm(partial, { force: true });
      if (statusOf(error) === 404 && configurationFault(error) === undefined)
        throw new MissingObjectError(this.url, key, { cause: error });
      throw this.#trouble('Cannot read', key, error);
    }
  }

  async upload(file: string, key: string): Promise<StoredObject> {
    const { size } = await stat(file);
    try {
      const put = await this.#blob(key).uploadFile(file);
      return { key, bytes: size, version: put.etag ?? '' };
    } catch (error) {
      throw this.#trouble('Cannot write', key, error);
    }
  }

  async remove(keys: readonly string[]): Promise<void> {
    for (const key of keys)
      await this.#blob(key)
        .deleteIfExists()
        .catch((error: unknown) => {
          throw this.#trouble('Cannot remove', key, error);
        });
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
        const got = await this.#readVersioned(key);
        return got ? { text: got.data.toString('utf8'), version: got.version } : undefined;
      },
      putIf: (key, body, version) => this.writeIf(key, body, version),
      remove: (keys) => this.remove(keys),
    };
  }
}
